"""`bertology serve`: the CLI stays light, mistakes exit 2 naming the culprit, SIGTERM lets every
queued request finish and then exits 0."""

import pytest
import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request

from live import Server

from bertology.cli import main


def test_the_cli_imports_no_server_stack_and_no_torch():
    code = "import sys, bertology.cli; print([m for m in ('torch', 'starlette', 'uvicorn') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_mistakes_exit_2_naming_the_culprit(checkpoints, tmp_path, capsys):
    assert main(["serve", "--model", str(checkpoints["backbone"]), "--port", "70000"]) == 2
    assert "--port 70000: must be in [0, 65535]" in capsys.readouterr().err
    assert main(["serve", "--model", str(tmp_path / "nothing")]) == 2
    assert "nothing: not a model directory" in capsys.readouterr().err
    assert main(["serve", "--model", str(checkpoints["backbone"]), "--max-batch-tokens", "0"]) == 2
    assert "--max-batch-tokens 0: must be ≥ 1" in capsys.readouterr().err
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert main(["serve", "--model", str(checkpoints["backbone"]), "--port", str(port)]) == 2
        assert f"--host 127.0.0.1 --port {port}: cannot listen there" in capsys.readouterr().err


def post(url: str, body: dict) -> tuple[int, object]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as r:
        return r.status, json.loads(r.read())


def queue_depth(url: str) -> int:
    with urllib.request.urlopen(url + "metrics", timeout=60) as r:
        return int(re.search(r"^bertology_queue_depth (\d+)$", r.read().decode(), re.M).group(1))


@pytest.mark.integration
def test_sigterm_answers_every_queued_request_then_exits_0(checkpoints):
    # the worker holds its first batch open for 3 s, so the requests are still queued when SIGTERM comes
    with Server(checkpoints["classify"], "--max-wait-ms", "3000") as server:
        texts = [f"the cat sat on mat number {i}" for i in range(4)]
        answers = {}
        threads = [
            threading.Thread(target=lambda t=t: answers.setdefault(t, post(server.url + "predict", {"inputs": t})))
            for t in texts
        ]
        for t in threads:
            t.start()
        for _ in range(1000):
            if queue_depth(server.url) == len(texts):
                break
            time.sleep(0.01)
        assert queue_depth(server.url) == len(texts)
        status = server.terminate()
        for t in threads:
            t.join(60)
        tail = server.process.stdout.read()
    assert status == 0 and "stopped by SIGTERM" in tail
    assert sorted(answers) == sorted(texts)
    assert all(code == 200 and len(ranked) == 3 for code, ranked in answers.values())


def test_device_cuda_without_a_gpu_fails_before_the_port_is_held(checkpoints, capsys):
    import pytest
    import torch

    if torch.cuda.is_available():
        pytest.skip("checks the error where no CUDA GPU is")
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    assert main(["serve", "--model", str(checkpoints["backbone"]), "--port", str(port), "--device", "cuda"]) == 2
    assert "--device cuda: no CUDA GPU is available" in capsys.readouterr().err
    with socket.create_server(("127.0.0.1", port)):  # free: nothing was bound
        pass
    assert main(["serve", "--model", str(checkpoints["backbone"]), "--device", "tpu"]) == 2
    assert "--device 'tpu': must be auto, cpu, cuda or cuda:N" in capsys.readouterr().err


@pytest.mark.parametrize(
    "before, torch_first, capacity", [(None, False, "16"), ("1024", False, "1024"), (None, True, None)]
)
def test_serve_bounds_onednn_primitive_cache_unless_told_otherwise(before, torch_first, capacity):
    """Every batch is a new shape for oneDNN (the packed rows differ), so its default cache of 1,024
    primitives grew the server's RSS through a soak; serve caps it before torch loads, keeps a capacity the
    user set, and leaves a process that loaded torch already alone (oneDNN would not read it now)."""
    import os
    import subprocess
    import sys

    code = f"{'import torch' if torch_first else ''}\nfrom bertology.serve.cli import bound_primitive_cache\n"
    code += "bound_primitive_cache()\nimport os\nprint(os.environ.get('ONEDNN_PRIMITIVE_CACHE_CAPACITY'))"
    env = {k: v for k, v in os.environ.items() if k != "ONEDNN_PRIMITIVE_CACHE_CAPACITY"}
    env |= {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": before} if before else {}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(capacity)
