"""The server left running: the API key (text-embeddings-inference's --api-key, 401 in its error shape,
/health open), no anonymous server on a reachable address, and time limits for clients that stall
(a slow request head or body, an answer left unread) also at SIGTERM."""

import os
import socket
import time

import pytest
from live import Server
from serve_client import make_client

from bertology.cli import main
from bertology.options import OptionError
from bertology.serve.options import ServeOptions

KEY = "s3cret-Key_0123"


@pytest.fixture(scope="module")
def keyed(checkpoints):
    with make_client(checkpoints["mlm"], api_key=KEY) as client:
        yield client


@pytest.mark.parametrize(
    "method,path,body",
    [
        ("POST", "/embed", {"inputs": "a cat"}),
        ("POST", "/fill-mask", {"inputs": "a [MASK]"}),
        ("POST", "/v1/embeddings", {"input": "a cat"}),
        ("POST", "/tokenize", {"inputs": "a"}),
        ("POST", "/attention", {"inputs": "a"}),
        ("GET", "/info", None),
        ("GET", "/metrics", None),
        ("POST", "/nowhere", {}),
    ],
)
def test_every_route_but_health_needs_the_key(keyed, method, path, body):
    for headers, sent in (
        ({}, False),
        ({"Authorization": "Bearer wrong"}, True),
        ({"Authorization": KEY}, True),
        ({"Authorization": f"Basic {KEY}"}, True),
    ):
        r = keyed.request(method, path, json=body, headers=headers)
        assert r.status_code == 401, (headers, r.text)
        assert r.headers["www-authenticate"].startswith("Bearer")
        answer = r.json()
        assert set(answer) == {"error", "error_type"} and answer["error_type"] == "Unauthorized"
        assert path in answer["error"] and KEY not in answer["error"]
        assert ("not the server's key" in answer["error"]) == sent
    r = keyed.request(method, path, json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == (404 if path == "/nowhere" else 200), r.text


def test_health_and_the_page_are_open_and_the_page_asks_for_the_key(keyed):
    assert keyed.get("/health").json() == {"status": "ok"}
    page = keyed.get("/")
    assert page.status_code == 200 and 'id="keyform"' in page.text and "Authorization: `Bearer ${key}`" in page.text
    assert keyed.post("/", json={}).status_code == 401  # only reading the page is open


def test_refusals_are_counted_per_known_endpoint_only(keyed):
    keyed.post("/embed", json={"inputs": "x"})
    keyed.post("/x" * 50, json={})
    metrics = keyed.get("/metrics", headers={"Authorization": f"Bearer {KEY}"}).text
    assert 'bertology_requests_total{endpoint="/embed",status="401"}' in metrics
    assert "/x/x" not in metrics


def test_a_reachable_host_needs_a_key_or_allow_anonymous(checkpoints, capsys, monkeypatch):
    monkeypatch.delenv("BERTOLOGY_API_KEY", raising=False)
    model = str(checkpoints["backbone"])
    assert main(["serve", "--model", model, "--host", "0.0.0.0", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "--host 0.0.0.0: other machines could use the server without a key" in err and "--allow-anonymous" in err
    for host in ("127.0.0.1", "localhost", "::1", "127.8.9.1"):
        ServeOptions(model=model, host=host)
    for host in ("0.0.0.0", "::", "192.168.1.4", "example.org"):
        with pytest.raises(OptionError, match="without a key"):
            ServeOptions(model=model, host=host)
        ServeOptions(model=model, host=host, allow_anonymous=True)
        ServeOptions(model=model, host=host, api_key=KEY)
    for bad in ("", "two words", "tab\tkey", "clé"):
        with pytest.raises(OptionError, match="--api-key: ") as e:
            ServeOptions(model=model, api_key=bad)
        assert bad not in str(e.value) or not bad


def test_time_limits_are_options_with_ranges(checkpoints):
    with pytest.raises(OptionError, match="--read-timeout 0.0: must be > 0"):
        ServeOptions(model=str(checkpoints["backbone"]), read_timeout=0.0)
    with pytest.raises(OptionError, match="--shutdown-grace -1.0: must be ≥ 0"):
        ServeOptions(model=str(checkpoints["backbone"]), shutdown_grace=-1.0)


def raw(url: str, data: bytes, rcvbuf: int | None = None) -> socket.socket:
    host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect((host, int(port)))
    s.sendall(data)
    return s


_TEXT = b'{"inputs": "' + b" ".join([b"the cat sat on the mat"] * 3) + b'"}'
ATTENTION = (
    b"POST /attention HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n" % len(_TEXT) + _TEXT
)


def read_all(s: socket.socket, timeout: float) -> bytes:
    s.settimeout(timeout)
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return out


@pytest.mark.integration
def test_the_key_from_the_environment_and_a_real_hugging_face_client(checkpoints):
    hub = pytest.importorskip("huggingface_hub")
    os.environ["BERTOLOGY_API_KEY"] = KEY
    try:
        server = Server(checkpoints["backbone"])
    finally:
        del os.environ["BERTOLOGY_API_KEY"]
    with server:
        vectors = hub.InferenceClient(model=server.url + "embed", api_key=KEY).feature_extraction("a cat sat")
        assert vectors.shape == (1, 32)
        with pytest.raises(hub.errors.HfHubHTTPError) as e:
            hub.InferenceClient(model=server.url + "embed", api_key="not-it").feature_extraction("a cat sat")
        assert e.value.response.status_code == 401
        assert e.value.response.json()["error_type"] == "Unauthorized"
        assert KEY not in " ".join(server.process.args)  # the key stayed out of the process list


@pytest.mark.integration
def test_stalled_clients_are_cut_off_and_do_not_hold_sigterm(checkpoints):
    with Server(checkpoints["mlm"], "--read-timeout", "1", "--write-timeout", "1", "--shutdown-grace", "2") as server:
        started = time.monotonic()
        half_head = raw(server.url, b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: appl")
        answer = read_all(half_head, 30)
        assert answer.startswith(b"HTTP/1.1 408") and b'"error_type": "Timeout"' in answer
        half_body = raw(
            server.url,
            b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"inputs": ',
        )
        answer = read_all(half_body, 30)
        assert answer.startswith(b"HTTP/1.1 408") and b"did not arrive within --read-timeout 1s" in answer
        silent = raw(server.url, b"")
        assert read_all(silent, 30) == b""  # an idle connection is closed without an answer
        assert time.monotonic() - started < 25
        # 60 pipelined requests for ~140 kB answers each, more than the kernel's buffers hold, never read
        stalled = raw(server.url, ATTENTION * 60, rcvbuf=2048)
        time.sleep(6)  # past --write-timeout
        got = read_all(stalled, 10)
        assert 0 < got.count(b"HTTP/1.1 200") < 60  # cut off, not served in full
        gone = raw(
            server.url,
            b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"inputs": ',
        )
        gone.close()  # a client that leaves mid-body
        assert main_is_healthy(server.url)
        assert server.terminate() == 0
    assert "Traceback" not in server.process.stdout.read()  # nothing above was a server error
    with Server(
        checkpoints["mlm"], "--read-timeout", "600", "--write-timeout", "600", "--shutdown-grace", "1"
    ) as server:
        hanging = raw(
            server.url,
            b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
        )  # the body never comes
        stalled = raw(server.url, ATTENTION * 60, rcvbuf=2048)
        time.sleep(1)
        started = time.monotonic()
        assert server.terminate(timeout=60) == 0
        assert time.monotonic() - started < 30  # the grace, not the 600 s limits
        tail = server.process.stdout.read()
        assert "stopped by SIGTERM" in tail
        hanging.close(), stalled.close()


def main_is_healthy(url: str) -> bool:
    import urllib.request

    with urllib.request.urlopen(url + "health", timeout=30) as r:
        return r.status == 200
