"""Two data-parallel processes (torchrun, gloo) equal one process with the same global batch."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bertology

from ddp_worker import main as run_single
from helpers import single_and_two_ranks, wiki_head

pytestmark = pytest.mark.integration  # whole jobs: `make test-integration`

HERE = Path(__file__).parent


def test_two_processes_equal_one(tmp_path):
    steps = 4
    run_single(str(tmp_path / "single"), steps)
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",  # the sources under test, then the worker's helpers
        "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(HERE)])),
    }
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(HERE / "ddp_worker.py"),
        str(tmp_path / "ddp"),
        str(steps),
    ]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    single = json.loads((tmp_path / "single" / "losses.json").read_text())
    ddp = json.loads((tmp_path / "ddp" / "losses.json").read_text())
    assert len(single) == len(ddp) == steps
    for a, b in zip(single, ddp):
        assert abs(a - b) < 1e-5, (single, ddp)
    # Checkpoints are written once (rank 0), and the final weights agree.
    assert [p.name for p in (tmp_path / "ddp" / "checkpoints").iterdir()] == [f"step-{steps:08d}"]
    a = bertology.load(tmp_path / "single" / "checkpoints" / f"step-{steps:08d}")
    b = bertology.load(tmp_path / "ddp" / "checkpoints" / f"step-{steps:08d}")
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert (p - q).abs().max() < 1e-5, name
    assert len((tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()) == steps


def test_a_time_budget_stops_every_rank_at_the_same_step(tmp_path):
    """Each rank's clock runs at its own speed (ddp_worker.budgeted): the stop is agreed, so no rank hangs."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(HERE)])),
    }
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    cmd += [str(HERE / "ddp_worker.py"), str(tmp_path), "budget"]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    steps = [json.loads((tmp_path / f"steps-{rank}.json").read_text()) for rank in (0, 1)]
    assert steps[0] == steps[1] >= 1


def test_xlnet_memory_of_every_rank_reaches_the_checkpoint(tmp_path):
    """Each rank carries its own batch rows' memory; a checkpoint holds all rows, as one process's does."""
    from safetensors.torch import load_file

    corpus = wiki_head(tmp_path / "corpus.txt", 120_000)
    args = [
        "pretrain",
        "--family",
        "xlnet",
        "--preset",
        "tiny",
        "--corpus",
        str(corpus),
        "--vocab-size",
        "600",
        "--steps",
        "3",
        "--batch-size",
        "4",
        "--max-length",
        "32",
        "--warmup",
        "1",
        "--heldout",
        "2",
        "--dropout",
        "0",
        "--quiet",
    ]
    single_and_two_ranks(args, tmp_path)
    a, b = (
        load_file(str(tmp_path / d / "checkpoints" / "step-00000003" / "mems.safetensors")) for d in ("single", "ddp")
    )
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].shape[1] == 4 and (b[name].abs().sum(-1) > 0).all(), name  # every row, from both ranks
        assert (a[name] - b[name]).abs().max() < 1e-4, name


# Loaded first by every process whose PYTHONPATH starts at its folder: logs each atomic write with its rank.
WRITES_HOOK = """
import contextlib, os
if os.environ.get("WRITES_LOG"):
    import bertology.io as io
    atomic_path = io.atomic_path

    @contextlib.contextmanager
    def logged(path):
        with open(os.environ["WRITES_LOG"], "a") as log:
            log.write(f"{os.environ.get('RANK', '0')} {os.path.abspath(path)}\\n")
        with atomic_path(path) as tmp:
            yield tmp

    io.atomic_path = logged
"""


def test_a_torchrun_job_writes_its_final_files_once_from_rank_0(tmp_path):
    """XLNet's job (the permutation LM, which once saved its model from every rank): the final model,
    summary.json and tokenizer.json are written once, by rank 0; both ranks ran to the end."""
    corpus = wiki_head(tmp_path / "corpus.txt", 120_000)
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(WRITES_HOOK)
    log, out = tmp_path / "writes.log", tmp_path / "out"
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "WRITES_LOG": str(log),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "hook"), os.environ.get("PYTHONPATH")])),
    }
    args = ["pretrain", "--family", "xlnet", "--preset", "tiny", "--corpus", str(corpus), "--vocab-size", "600",
            "--steps", "2", "--batch-size", "4", "--max-length", "32", "--warmup", "1", "--heldout", "2", "--quiet",
            "--out", str(out)]  # fmt: skip
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "bertology"]
    result = subprocess.run(cmd + args, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    writes = [line.split(" ", 1) for line in log.read_text().splitlines()]
    finals = {"summary.json", "model.safetensors", "config.json", "tokenizer.json"}
    written = sorted(
        (Path(path).name, rank) for rank, path in writes if Path(path).parent == out and Path(path).name in finals
    )
    assert written == sorted((name, "0") for name in finals), written
    assert {rank for rank, _ in writes} == {"0"}  # checkpoints and metrics too: rank 1 writes nothing
