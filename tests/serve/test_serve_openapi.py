"""GET /openapi.json and GET /docs describe every route the app has (each route's answers and example body
are held against the description in test_serve_routes.py)."""

from starlette.routing import Route


def app_routes(client) -> set[tuple[str, str]]:
    return {
        (method, r.path)
        for r in client.app.routes
        if isinstance(r, Route)
        for method in r.methods
        if method != "HEAD"  # Starlette adds HEAD to every GET
    }


def test_the_description_lists_every_route(clients):
    client = clients["classify"]
    description = client.get("/openapi.json").json()
    described = {(method.upper(), path) for path, ops in description["paths"].items() for method in ops}
    assert described == app_routes(client)
    assert description["openapi"].startswith("3.1")
    info = description["info"]["description"]
    assert "BertForSequenceClassification (classifier)" in info and "/predict" in info
    for path, ops in description["paths"].items():
        for method, op in ops.items():
            assert op["summary"] and op["description"].startswith("served by: "), (method, path)
            assert "4XX" in op["responses"], (method, path)
            if method == "post":
                assert op["requestBody"]["content"]["application/json"]["schema"], (method, path)


def test_each_route_says_which_heads_serve_it_from_the_table_of_handlers(clients):
    from bertology.serve.handlers import COMMON, HANDLERS

    paths = clients["backbone"].get("/openapi.json").json()["paths"]
    for name, handler in HANDLERS.items():
        for op in handler.ops:
            assert name in paths["/" + op]["post"]["description"].removeprefix("served by: ").split(", "), (name, op)
    for op in COMMON:
        assert paths["/" + op]["post"]["description"] == "served by: any head", op
    assert paths["/rerank"]["post"]["description"] == "served by: pair"


def test_the_docs_page_shows_every_route_without_fetching_anything(clients):
    response = clients["backbone"].get("/docs")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    page = response.text
    for method, path in app_routes(clients["backbone"]):
        assert f"<code>{method} {path}</code>" in page, (method, path)
    assert "<script" not in page and "http://" not in page and "https://" not in page


def test_the_keyed_server_keeps_its_description_behind_the_key(checkpoints):
    from serve_client import make_client

    with make_client(checkpoints["backbone"], api_key="k" * 16) as client:
        assert client.get("/openapi.json").status_code == 401
        assert client.get("/docs", headers={"Authorization": "Bearer " + "k" * 16}).status_code == 200


def test_the_examples_use_the_loaded_models_mask_token(clients):
    paths = clients["roberta-mlm"].get("/openapi.json").json()["paths"]
    example = paths["/fill-mask"]["post"]["requestBody"]["content"]["application/json"]["examples"]["any"]["value"]
    assert example["inputs"] == "a <mask> client"
    assert clients["roberta-mlm"].post("/fill-mask", json=example).status_code == 200
