"""The serving page's client examples: each names the model it needs on its first line (`# needs: KIND`), and
the integration tier runs each, as written, against a real `bertology serve` of such a model: a Python block's
claims (its comments) checked on its values, a shell session's commands run by bash and curl, each answer
against the one the page shows (the same JSON shape, the same error, the same metric lines); and the block that
starts a server with a key, its lines as written."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "serving.md"
BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)
# a shell session: `$ command`, then its output (a console block; the page's other shell blocks are test_docs_shell's)
SESSION = re.compile(r"^```(?:console[^\n]*)?\n(# needs: .*?)^```", re.S | re.M)
NEEDS = re.compile(r"^# needs: ([\w-]+)")
PAGE_URL = "http://127.0.0.1:8080"
# the model each kind names: the real all-MiniLM-L6-v2 for embeddings, else conftest's checkpoint of that head
CHECKPOINT_OF = {"fill-mask": "mlm", "classifier": "classify", "tagger": "tag", "qa": "qa"}
KINDS = {"embedding", *CHECKPOINT_OF}


def client_examples() -> list[tuple[str, str]]:
    """(kind, code) of every Python block of the page that talks to a running server."""
    out = []
    for code in BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        if PAGE_URL in code:
            needs = NEEDS.match(code)
            out.append((needs.group(1) if needs else None, code))
    return out


def test_every_client_example_names_the_model_it_needs():
    examples = client_examples()
    assert examples, "the serving page shows no client example"
    for kind, code in examples:
        assert kind in KINDS, f"a client example without '# needs: <{'|'.join(sorted(KINDS))}>':\n{code}"
    assert {k for k, _ in examples} == KINDS, "one example per kind of model"


def check_claim(kind: str, ns: dict, printed: str) -> None:
    if kind == "embedding":
        assert ns["vectors"].shape == (1, 384) and len(ns["embeddings"].data[0].embedding) == 384, printed
        related, unrelated = ns["scores"]  # the page prints 0.57… and 0.19…
        assert round(related, 2) == 0.57 and round(unrelated, 2) == 0.19, printed
    elif kind == "fill-mask":
        assert len(ns["candidates"]) == 3 and all(isinstance(c.token_str, str) for c in ns["candidates"]), printed
    elif kind == "classifier":
        labels = [x.label for x in ns["labels"]]
        scores = [x.score for x in ns["labels"]]
        assert len(labels) == 2 and set(labels) <= {"games", "mail", "net"} and scores == sorted(scores, reverse=True)
        assert ns["vectors"].shape == (1, 32), "the classifier's encoder vectors through /embed"
    elif kind == "tagger":
        assert printed.startswith("[") and "entity_group" in printed, printed
    elif kind == "qa":
        context = "John Smith lives in Paris."
        answer = ns["answer"]
        assert answer.answer == context[answer.start : answer.end] and answer.answer, printed


@pytest.mark.integration
@pytest.mark.parametrize("kind,code", client_examples(), ids=[k or "unnamed" for k, _ in client_examples()])
def test_each_client_example_runs_against_the_model_it_names(kind, code, checkpoints, monkeypatch):
    from live import Server

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # the client then refuses every URL, ours included
    import huggingface_hub.constants as hub_constants

    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)  # read once, at its import
    if kind == "embedding":
        from bertology.demo.stages import minilm_path

        model = minilm_path()
    else:
        model = checkpoints[CHECKPOINT_OF[kind]]
    with Server(model) as server:
        ns: dict = {"__name__": "__docs__"}
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code.replace(PAGE_URL, server.url.rstrip("/")), f"serving.md ({kind})", "exec"), ns)
    check_claim(kind, ns, printed.getvalue())


def sessions() -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """(kind, [(command, the output lines the page shows)]) of each shell session with curl."""
    out = []
    for block in SESSION.findall(PAGE.read_text(encoding="utf-8")):
        lines = block.splitlines()
        steps: list[tuple[str, list[str]]] = []
        for line in lines[1:]:
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        out.append((NEEDS.match(lines[0]).group(1), steps))
    return out


def shown_json(text: str):
    """The page's answer with its elisions (`, … 8 more`, `, …`) left out: a prefix of the real answer."""
    return json.loads(re.sub(r",\s*…[^\]}]*", "", text))


def same_shape(shown, got, where: str) -> None:
    """The keys and value types of every element the page shows, in the answer (labels, ids, scores differ
    from model to model)."""
    assert type(shown) is type(got) or {type(shown), type(got)} <= {int, float}, f"{where}: {shown!r} vs {got!r}"
    if isinstance(shown, dict):
        assert shown.keys() == got.keys(), f"{where}: keys {list(shown)} vs {list(got)}"
        for k in shown:
            same_shape(shown[k], got[k], f"{where}.{k}")
    elif isinstance(shown, list):
        assert len(got) >= min(len(shown), 1), f"{where}: {got!r}"
        # element by element; where the lengths differ (another tokenizer's pieces), the first and the last
        pairs = zip(shown, got) if len(shown) == len(got) else [(shown[0], got[0]), (shown[-1], got[-1])][: len(shown)]
        for i, (a, b) in enumerate(pairs):
            same_shape(a, b, f"{where}[{i}]")


def test_every_shell_session_names_the_model_it_needs():
    found = sessions()
    assert found, "the serving page shows no curl session"
    for kind, steps in found:
        assert kind in KINDS and steps and all("localhost:8080" in cmd for cmd, _ in steps), (kind, steps)


@pytest.mark.integration
@pytest.mark.parametrize("kind,steps", sessions(), ids=[k for k, _ in sessions()])
def test_each_shell_session_runs_against_the_model_it_names(kind, steps, checkpoints):
    from live import Server

    if shutil.which("curl") is None:
        pytest.skip("the page's sessions call curl, and it is not installed")
    with Server(checkpoints[CHECKPOINT_OF[kind]]) as server:
        address = server.url.split("//")[1].rstrip("/")
        for command, shown in steps:
            run = subprocess.run(
                ["bash", "-c", command.replace("localhost:8080", address)], capture_output=True, text=True, timeout=60
            )
            got, where = run.stdout.strip(), f"`{command}`"
            if shown[0].startswith("bertology_"):  # metric lines: exactly these, for the requests made above
                assert got.splitlines() == shown, f"{where}:\n{got}"
                continue
            assert len(shown) == 1, where
            expect, answer = shown_json(shown[0]), json.loads(got)
            if isinstance(expect, dict) and "error" in expect:  # the same error, numbers aside (lengths in tokens)
                assert set(answer) == {"error", "error_type"} and answer["error_type"] == expect["error_type"], got
                assert re.sub(r"\d+", "N", answer["error"]) == re.sub(r"\d+", "N", expect["error"]), got
            else:
                same_shape(expect, answer, where)


def keyed_block() -> list[str]:
    """The commands of the page's block that starts a server with a key (comments dropped)."""
    text = PAGE.read_text(encoding="utf-8")
    block = re.search(r"^```(?:bash[^\n]*)?\n(export BERTOLOGY_API_KEY=.*?)^```", text, re.S | re.M).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines()]


@pytest.mark.integration
def test_the_keyed_server_block_runs_as_written(checkpoints, monkeypatch):
    """export the key, start the server with the page's flags (on the classifier it names, any free port),
    then the page's curl: answered with the key, refused without it."""
    from live import Server

    export, serve, call = keyed_block()
    key = subprocess.run(["bash", "-c", f'{export} && printf %s "$BERTOLOGY_API_KEY"'], capture_output=True, text=True)
    assert re.fullmatch(r"[0-9a-f]{32}", key.stdout), key
    monkeypatch.setenv("BERTOLOGY_API_KEY", key.stdout)
    flags = serve.split("--model runs/debian", 1)[1].split()
    assert flags == ["--host", "0.0.0.0"], serve
    with Server(checkpoints["classify"], *flags) as server:
        address = "localhost:" + server.url.rstrip("/").rsplit(":", 1)[1]
        answered = subprocess.run(
            ["bash", "-c", call.replace("localhost:8080", address)], capture_output=True, text=True
        )
        vectors = json.loads(answered.stdout)
        assert len(vectors) == 1 and len(vectors[0]) == 32, answered.stdout
        without = call.replace("localhost:8080", address).replace('-H "Authorization: Bearer $BERTOLOGY_API_KEY"', "")
        refused = json.loads(subprocess.run(["bash", "-c", without], capture_output=True, text=True).stdout)
        assert refused["error_type"] == "Unauthorized", refused
