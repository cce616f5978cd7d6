"""Dynamic batching: grouping by the token budget, answers to the right callers, one bad request failing
alone, draining on shutdown; and through the app, concurrent requests answered as if one by one."""

import asyncio
import threading

import pytest

from bertology.serve.batching import Batcher, BatchLimits
from bertology.serve.engine import error_of
from serve_client import make_client


class Fake:
    """prepare: a request "tN…" costs N tokens; run: echoes, records each batch; "bad" fails a batch;
    the first batch waits for `gate` so that the rest queue up behind it."""

    def __init__(self):
        self.batches, self.gate, self.entered = [], threading.Event(), threading.Event()

    def prepare(self, op, request):
        if request == "refuse":
            raise ValueError("refused: this request alone")
        return int(request.split(":")[0][1:])

    def run(self, op, requests):
        self.batches.append((op, list(requests)))
        if len(self.batches) == 1:
            self.entered.set()
            self.gate.wait(30)
        if "t1:bad" in requests:
            raise ValueError("t1:bad is bad")
        return [f"{op}({r})" for r in requests]


async def until(condition, tries: int = 10_000):
    """Yield to the event loop until `condition()` holds (bounded: a broken server fails, never hangs)."""
    for _ in range(tries):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the condition never held")


async def queued(batcher: Batcher, fake: Fake, jobs: list[tuple[str, str]]):
    """Submit a first job that holds the worker, then `jobs`, then let the worker go; every answer or error."""
    first = asyncio.ensure_future(batcher.submit("op", "t1:first"))
    await asyncio.to_thread(fake.entered.wait, 30)
    rest = [asyncio.ensure_future(batcher.submit(op, r)) for op, r in jobs]
    await until(lambda: batcher.depth == 1 + len(jobs))
    fake.gate.set()
    return await asyncio.gather(first, *rest, return_exceptions=True)


def run_batcher(limits: BatchLimits, jobs, stop_early: bool = False):
    fake = Fake()
    batcher = Batcher(fake.prepare, fake.run, limits, error_of)

    async def main():
        batcher.start()
        try:
            return await queued(batcher, fake, jobs)
        finally:
            await asyncio.to_thread(batcher.stop)

    return asyncio.run(main()), fake.batches


def test_requests_are_grouped_by_the_token_budget_in_order():
    jobs = [("op", f"t5:{i}") for i in range(5)]
    answers, batches = run_batcher(BatchLimits(max_batch_tokens=12, max_batch_requests=64), jobs)
    assert answers == ["op(t1:first)"] + [f"op(t5:{i})" for i in range(5)]
    assert [b[1] for b in batches] == [["t1:first"], ["t5:0", "t5:1"], ["t5:2", "t5:3"], ["t5:4"]]


def test_one_request_per_batch_when_batching_is_off():
    answers, batches = run_batcher(BatchLimits(max_batch_requests=1), [("op", f"t2:{i}") for i in range(3)])
    assert [len(b[1]) for b in batches] == [1, 1, 1, 1]
    assert answers[1:] == [f"op(t2:{i})" for i in range(3)]


def test_operations_run_separately_within_a_batch():
    answers, batches = run_batcher(BatchLimits(), [("a", "t1:x"), ("b", "t1:y"), ("a", "t1:z")])
    assert answers[1:] == ["a(t1:x)", "b(t1:y)", "a(t1:z)"]
    assert batches[1:] == [("a", ["t1:x", "t1:z"]), ("b", ["t1:y"])]


def test_a_bad_request_fails_alone():
    answers, batches = run_batcher(BatchLimits(), [("op", "t1:a"), ("op", "t1:bad"), ("op", "refuse"), ("op", "t1:b")])
    assert answers[1] == "op(t1:a)" and answers[4] == "op(t1:b)"
    assert answers[2].status == 422 and "t1:bad is bad" in answers[2].message
    assert answers[3].status == 422 and "this request alone" in answers[3].message
    assert batches[1] == ("op", ["t1:a", "t1:bad", "t1:b"])  # "refuse" never joined a batch
    assert batches[2:] == [("op", ["t1:a"]), ("op", ["t1:bad"]), ("op", ["t1:b"])]  # then each alone


def test_a_request_over_the_whole_budget_is_413():
    answers, _ = run_batcher(BatchLimits(max_batch_tokens=10), [("op", "t11:x"), ("op", "t10:y")])
    assert answers[1].status == 413 and "--max-batch-tokens 10" in answers[1].message
    assert answers[2] == "op(t10:y)"


def test_stop_finishes_what_was_queued():
    fake = Fake()
    batcher = Batcher(fake.prepare, fake.run, BatchLimits(max_batch_requests=2), error_of)

    async def main():
        batcher.start()
        first = asyncio.ensure_future(batcher.submit("op", "t1:first"))
        await asyncio.to_thread(fake.entered.wait, 30)
        rest = [asyncio.ensure_future(batcher.submit("op", f"t1:{i}")) for i in range(5)]
        await until(lambda: batcher.depth == 6)
        stopping = asyncio.ensure_future(asyncio.to_thread(batcher.stop))  # SIGTERM's path: drain, then end
        await until(lambda: not batcher.running)
        late = await asyncio.gather(batcher.submit("op", "t1:late"), return_exceptions=True)
        fake.gate.set()
        await stopping
        return late[0], await asyncio.gather(first, *rest)

    late, answers = asyncio.run(main())
    assert answers == ["op(t1:first)"] + [f"op(t1:{i})" for i in range(5)]
    assert late.status == 503 and not batcher.running


def test_concurrent_requests_through_the_app_equal_one_by_one(checkpoints):
    httpx = pytest.importorskip("httpx")

    texts = [("The cat sat on the mat. " * (i % 2 + 1)).strip() for i in range(12)]  # mixed lengths
    with make_client(checkpoints["classify"]) as client:  # one by one
        alone = [client.post("/predict", json={"inputs": t}).json() for t in texts]
        app = client.app
    batcher = app.state.batcher
    gate, entered, run = threading.Event(), threading.Event(), None

    async def main():
        nonlocal run
        async with app.router.lifespan_context(app):
            run = batcher.run

            def held(op, requests):
                if not entered.is_set():
                    entered.set()
                    gate.wait(30)
                return run(op, requests)

            batcher.run = held
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://serve") as c:
                first = asyncio.ensure_future(c.post("/predict", json={"inputs": texts[0]}))
                await asyncio.to_thread(entered.wait, 30)
                rest = [asyncio.ensure_future(c.post("/predict", json={"inputs": t})) for t in texts[1:]]
                await until(lambda: batcher.depth == len(texts))
                gate.set()
                responses = [await first] + list(await asyncio.gather(*rest))
                return [r.json() for r in responses], (await c.get("/metrics")).text

    together, metrics = asyncio.run(main())
    assert all(isinstance(a, list) and len(a) == 3 for a in alone + together)
    for a, b in zip(together, alone):
        assert [x["label"] for x in a] == [x["label"] for x in b]
        assert [x["score"] for x in a] == pytest.approx([x["score"] for x in b], abs=1e-5)
    # 12 batches of one (one by one), then the first request alone and the 11 queued behind it as one forward pass
    assert "bertology_batch_requests_count 14" in metrics
    assert (
        'bertology_batch_requests_bucket{le="8"} 13' in metrics
        and 'bertology_batch_requests_bucket{le="16"} 14' in metrics
    )
