"""Run numbered jobs on a few threads. The compiled kernels release the GIL, so threads share
the model's arrays and run truly in parallel (lock-free updates, as gensim's workers); nothing
process-wide (thread counts, global pools) is touched."""

from __future__ import annotations

import threading
from typing import Callable


def run_jobs(
    n_jobs: int, job: Callable[[int], int], workers: int, done: Callable[[int, int], None] | None = None
) -> None:
    """Call job(k) for k in range(n_jobs), taken in order by `workers` threads; done(k, result)
    is called under a lock after each. The first exception stops the others and is re-raised."""
    lock = threading.Lock()
    next_job = [0]
    failure: list[BaseException] = []

    def work() -> None:
        while True:
            with lock:
                k = next_job[0]
                if k >= n_jobs or failure:
                    return
                next_job[0] += 1
            try:
                result = job(k)
            except BaseException as e:  # re-raised in the calling thread below
                with lock:
                    failure.append(e)
                return
            if done is not None:
                with lock:
                    done(k, result)

    if workers <= 1:
        work()
    else:
        threads = [threading.Thread(target=work, name=f"wordvec-{i}", daemon=True) for i in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if failure:
        raise failure[0]
