"""Dynamic batching: requests queue up, one worker thread groups them by a token budget into forward passes.

    event loop (handlers)                       worker thread (owns model and tokenizer)
    submit(op, request) ──queue──►  take a job, prepare it (count its tokens, check it);
        await future                 keep taking while the batch stays within max_batch_tokens and
                                     max_batch_requests, waiting at most max_wait_ms for more;
                                     run each operation's requests in one call; set each future
        ◄──call_soon_threadsafe──    with its own result (or its own error)

The packed-token encoder makes mixed lengths cheap, so the budget counts real tokens, not rows.
A job that would overflow the batch starts the next one; a request larger than the whole budget
is refused (413). While one batch runs, new requests gather, so the next batch is as large as the
load: no waiting when idle is needed (max_wait_ms 0), a little helps bursts. If a batch fails, its
requests are retried one by one, so one bad request fails alone.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .schemas import ApiError, too_large

log = logging.getLogger("bertology.serve")
_STOP = object()


@dataclass
class Job:
    op: str
    request: Any
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    tokens: int | None = None  # set by prepare
    queued_at: float = field(default_factory=time.perf_counter)


@dataclass
class BatchLimits:
    max_batch_tokens: int = 16384
    max_batch_requests: int = 64
    max_wait_ms: float = 0.0
    max_concurrent_requests: int = 512


class Batcher:
    """prepare(op, request) -> tokens and run(op, requests) -> results are called in the worker thread only;
    on_batch(requests, tokens) reports each forward pass (for the metrics); error_of(exception) -> ApiError."""

    def __init__(
        self,
        prepare: Callable[[str, Any], int],
        run: Callable[[str, list], list],
        limits: BatchLimits,
        error_of: Callable[[BaseException], ApiError],
        on_batch: Callable[[int, int], None] = lambda requests, tokens: None,
    ):
        self.prepare, self.run, self.limits, self.error_of, self.on_batch = prepare, run, limits, error_of, on_batch
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.depth = 0  # requests queued or running; changed on the event loop's thread only

    def start(self) -> None:
        self._stopping = False
        self._thread = threading.Thread(target=self._work, name="bertology-serve-worker", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._stopping

    def stop(self) -> None:
        """Finish every job queued so far, then end the worker (blocking: call it off the event loop)."""
        self._stopping = True
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join()
            self._thread = None

    async def submit(self, op: str, request: Any) -> Any:
        if self._stopping or self._thread is None:
            raise ApiError(503, "Unhealthy", "the server is shutting down")
        if self.depth >= self.limits.max_concurrent_requests:
            raise ApiError(
                429,
                "Overloaded",
                f"model is overloaded: {self.depth} requests queued or running "
                f"(--max-concurrent-requests {self.limits.max_concurrent_requests})",
            )
        loop = asyncio.get_running_loop()
        job = Job(op, request, loop.create_future(), loop)
        self.depth += 1
        try:
            self._queue.put(job)
            return await job.future
        finally:
            self.depth -= 1

    # ---- the worker thread ----------------------------------------------------------------------
    def _work(self) -> None:
        carried = None
        while True:
            job = carried if carried is not None else self._queue.get()
            carried = None
            if job is _STOP:
                return
            batch, tokens = [], 0
            deadline = time.perf_counter() + self.limits.max_wait_ms / 1000
            while True:
                if job is _STOP:
                    carried = job
                    break
                if self._admit(job):
                    if batch and (
                        tokens + job.tokens > self.limits.max_batch_tokens
                        or len(batch) >= self.limits.max_batch_requests
                    ):
                        carried = job  # it starts the next batch
                        break
                    batch.append(job)
                    tokens += job.tokens
                job = self._next(deadline)
                if job is None:
                    break
            if batch:
                self._run(batch, tokens)

    def _next(self, deadline: float):
        try:
            left = deadline - time.perf_counter()
            return self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
        except queue.Empty:
            return None

    def _admit(self, job: Job) -> bool:
        """Count and check the job once; a refused job gets its error now and joins no batch."""
        if job.tokens is not None:
            return True
        if job.future.cancelled():  # the client went away while it queued
            return False
        try:
            tokens = self.prepare(job.op, job.request)
            if tokens > self.limits.max_batch_tokens:
                raise too_large(
                    f"the request has {tokens} tokens, more than --max-batch-tokens {self.limits.max_batch_tokens}"
                )
        except Exception as e:  # noqa: BLE001 — delivered to this request's caller
            self._settle(job, None, self.error_of(e), e)
            return False
        job.tokens = tokens
        return True

    def _run(self, batch: list[Job], tokens: int) -> None:
        self.on_batch(len(batch), tokens)
        by_op: dict[str, list[Job]] = {}
        for job in batch:
            by_op.setdefault(job.op, []).append(job)
        for op, jobs in by_op.items():
            try:
                results = self.run(op, [j.request for j in jobs])
            except Exception as e:  # noqa: BLE001
                if len(jobs) == 1:
                    self._settle(jobs[0], None, self.error_of(e), e)
                    continue
                for j in jobs:  # find the culprit: every request alone
                    self._run_alone(op, j)
                continue
            for j, result in zip(jobs, results, strict=True):
                self._settle(j, result)

    def _run_alone(self, op: str, job: Job) -> None:
        try:
            (result,) = self.run(op, [job.request])
        except Exception as e:  # noqa: BLE001
            self._settle(job, None, self.error_of(e), e)
        else:
            self._settle(job, result)

    def _settle(self, job: Job, result: Any, error: ApiError | None = None, cause: BaseException | None = None) -> None:
        if error is not None and error.status >= 500:
            log.error("%s failed", job.op, exc_info=cause)

        def settle() -> None:
            if not job.future.done():
                job.future.set_exception(error) if error is not None else job.future.set_result(result)

        try:
            job.loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the event loop is closed: nobody is waiting any more
            pass
