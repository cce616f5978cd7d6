"""Every error code of the API, in text-embeddings-inference's shape {"error", "error_type"}, naming the culprit."""

import threading

import pytest
from serve_client import make_client


def error(response, status: int, error_type: str, *fragments: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "error_type"} and body["error_type"] == error_type
    for f in fragments:
        assert f in body["error"], body["error"]
    return body["error"]


@pytest.mark.parametrize(
    "path,body,fragments",
    [
        ("/embed", b"{not json", ["not JSON"]),
        ("/embed", b"\xff\xfe", ["not JSON"]),
        ("/embed", [1, 2], ["JSON object, got a list"]),
        ("/embed", {}, ["missing field 'inputs'"]),
        ("/embed", {"inputs": 42}, ["inputs should be a string or a list of strings, got a number"]),
        ("/embed", {"inputs": ""}, ["inputs is empty"]),
        ("/embed", {"inputs": ["fine", "   "]}, ["inputs[1] is empty"]),
        ("/embed", {"inputs": []}, ["empty list"]),
        ("/embed", {"inputs": "x", "normalize": "yes"}, ["normalize should be true or false"]),
        ("/tokenize", {"inputs": ["a", None]}, ["inputs[1] should be a string, got null"]),
        ("/v1/embeddings", {"input": "x", "encoding_format": "int8"}, ["encoding_format"]),
        ("/attention", {"inputs": "x", "format": "svg"}, ["format should be"]),
    ],
)
def test_malformed_bodies_are_422(clients, path, body, fragments):
    kw = {"content": body} if isinstance(body, bytes) else {"json": body}
    error(clients["mlm"].post(path, **kw), 422, "Validation", *fragments)


def test_too_long_without_truncate_says_the_length_and_the_limit(clients):
    long = " ".join(["the cat sat on the mat"] * 20)
    message = error(
        clients["mlm"].post("/embed", json={"inputs": ["short", long]}),
        422,
        "Validation",
        "input 1 is",
        "limit of 64",
        "truncate",
    )
    assert int(message.split("input 1 is ")[1].split()[0]) > 64
    assert clients["mlm"].post("/embed", json={"inputs": long, "truncate": True}).status_code == 200
    error(clients["classify"].post("/predict", json={"inputs": long}), 422, "Validation", "limit of 48")
    error(clients["mlm"].post("/attention", json={"inputs": long}), 422, "Validation", "limit of 64")
    assert len(clients["classify"].post("/predict", json={"inputs": long, "truncate": True}).json()) == 3


def test_head_specific_input_errors(clients):
    error(
        clients["mlm"].post("/fill-mask", json={"inputs": ["a [MASK] b", "no mask here"]}),
        422,
        "Validation",
        "input 1 has no [MASK] token",
    )
    error(clients["mlm"].post("/fill-mask", json={"inputs": "a [MASK]", "top_k": 0}), 422, "Validation", "top_k")
    error(clients["pair"].post("/predict", json={"inputs": "one text"}), 422, "Validation", "text pairs")
    error(clients["qa"].post("/qa", json={"question": "Where?"}), 422, "Validation", "missing field 'context'")
    error(
        clients["qa"].post("/qa", json={"question": "why " * 70, "context": "because"}),
        422,
        "Validation",
        "cannot fit question",
    )


def test_request_size_limits_are_413(checkpoints):
    with make_client(checkpoints["backbone"], max_body_bytes=200, max_client_batch_size=3, max_batch_tokens=20) as c:
        error(c.post("/embed", json={"inputs": "x" * 300}), 413, "Validation", "--max-body-bytes 200")
        chunked = c.post("/embed", content=iter([b'{"inputs": "', b"y" * 300, b'"}']))  # no Content-Length
        error(chunked, 413, "Validation", "--max-body-bytes 200")
        error(
            c.post("/embed", json={"inputs": ["a", "b", "c", "d"]}),
            413,
            "Validation",
            "batch size 4 > maximum allowed batch size 3",
        )
        error(
            c.post("/embed", json={"inputs": "the cat sat on the mat and it was a very tired cat"}),
            413,
            "Validation",
            "--max-batch-tokens 20",
        )
        assert c.post("/embed", json={"inputs": ["a", "b", "c"]}).status_code == 200


def test_endpoints_the_head_does_not_serve_and_unknown_paths_are_404(clients):
    error(
        clients["classify"].post("/qa", json={"question": "a", "context": "b"}),
        404,
        "NotFound",
        "BertForSequenceClassification does not serve",
        "/predict",
    )
    error(clients["backbone"].post("/fill-mask", json={"inputs": "a [MASK]"}), 404, "NotFound")
    error(clients["backbone"].post("/predict", json={"inputs": "a"}), 404, "NotFound")
    error(clients["backbone"].get("/no-such-thing"), 404, "NotFound", "no such endpoint")
    assert clients["backbone"].get("/embed").status_code == 405


def test_a_full_queue_is_429(checkpoints):
    with make_client(checkpoints["backbone"], max_concurrent_requests=2) as c:
        batcher = c.app.state.batcher
        gate, entered, run = threading.Event(), threading.Event(), batcher.run

        def held(op, requests):
            entered.set()
            gate.wait(30)
            return run(op, requests)

        batcher.run = held
        answers = []
        threads = [
            threading.Thread(target=lambda: answers.append(c.post("/embed", json={"inputs": "a"}).status_code))
            for _ in range(2)
        ]
        threads[0].start()
        assert entered.wait(30)
        threads[1].start()
        for _ in range(3000):  # until the second request is queued (depth counts queued and running)
            if batcher.depth == 2:
                break
            threading.Event().wait(0.01)
        assert batcher.depth == 2
        error(c.post("/embed", json={"inputs": "a"}), 429, "Overloaded", "--max-concurrent-requests 2")
        gate.set()
        for t in threads:
            t.join(30)
        assert answers == [200, 200]
        assert 'bertology_requests_total{endpoint="/embed",status="429"} 1' in c.get("/metrics").text
