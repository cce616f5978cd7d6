"""A test client over a checkpoint: its own module (not conftest.py), because `from conftest import`
binds to whichever directory's conftest was imported last when the whole suite runs."""

from __future__ import annotations


def make_client(path, **options):
    from starlette.testclient import TestClient

    from bertology.serve.app import create_app
    from bertology.serve.engine import Engine
    from bertology.serve.options import ServeOptions

    o = ServeOptions(model=str(path), **options)
    return TestClient(create_app(Engine.load(o.model, o.tokenizer, o.pooling, o.bf16), o), raise_server_exceptions=True)
