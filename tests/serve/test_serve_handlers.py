"""The table of handlers: each head finds its entry, and a task added to the table is served with no other change."""

import pytest

from bertology.serve.engine import Engine
from bertology.serve.handlers import COMMON, HANDLERS, Handler, Op
from bertology.serve.schemas import parse_tokenize

EXPECTED = {
    "backbone": "embedding",
    "mlm": "fill-mask",
    "roberta-mlm": "fill-mask",
    "classify": "classify",
    "pair": "pair",
    "regress": "regress",
    "tag": "tag",
    "qa": "qa",
    "choice": "choice",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_head_finds_its_handler(checkpoints, name):
    engine = Engine.load(checkpoints[name])
    assert engine.handler is HANDLERS[EXPECTED[name]]
    assert engine.endpoints == set(COMMON) | set(engine.handler.ops)


def test_a_task_added_to_the_table_is_served(checkpoints, monkeypatch):
    from serve_client import make_client

    def count_words(engine, requests):
        return [[len(t.split()) for t in r.texts] for r in requests]

    counting = Handler("counter", {"words": Op(parse_tokenize, lambda engine, r: len(r.texts), count_words)}, "words")
    monkeypatch.setitem(HANDLERS, "classify", counting)
    with make_client(checkpoints["classify"]) as client:
        assert client.get("/info").json()["kind"] == "counter"
        assert client.post("/", json={"inputs": ["a b c", "d"]}).json() == [3, 1]  # POST / is the handler's root
        assert client.post("/words", json={"inputs": "a b"}).json() == [2]  # and its operation has its route
        assert client.post("/predict", json={"inputs": "a b"}).status_code == 404  # what the old entry served is gone
