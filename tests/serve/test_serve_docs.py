"""The serving page's client examples: each names the model it needs on its first line (`# needs: KIND`), and
the integration tier runs each, as written, against a real `bertology serve` of such a model, checking the
claim its comments make."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "serving.md"
BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)
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
        related, unrelated = ns["scores"]
        assert related > unrelated, (
            f"'a mail client' should be closer to 'IMAP email client' than to 'a game': {printed}"
        )
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
