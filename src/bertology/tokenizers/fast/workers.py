"""Encoding a large batch over several forked processes.

`tokenizers` encodes a batch on a thread pool; Python threads would share one interpreter
lock, so a large batch is cut into contiguous chunks for forked processes instead. A fork
sees the tokenizer exactly as it is (settings, word cache) without pickling it; only the
finished (unpadded) encodings travel back, in order. Padding is done after, over the batch.

The work is a function `encode_chunk(texts, pairs) -> list[Encoding]` (pairs: None or a list
as long as texts), so this module knows nothing of the Tokenizer.
"""

from __future__ import annotations

import bisect
import multiprocessing as mp
import pickle
from itertools import accumulate
from typing import Callable

from ..encoding import Encoding

EncodeChunk = Callable[[list, "list | None"], "list[Encoding]"]

_PARALLEL_MIN_TEXTS, _PARALLEL_MIN_CHARS = 2_000, 1_000_000


def workers_for(texts: list, workers: int | None) -> int:
    """How many processes should encode this batch (1: this one alone) when `workers` are asked
    for (None: 1): a small batch is not worth a fork."""
    if workers is None:
        workers = 1
    if not isinstance(workers, int) or isinstance(workers, bool):
        raise TypeError(f"encode_batch: workers must be an int, got {workers!r}")
    if workers <= 1 or "fork" not in mp.get_all_start_methods() or mp.current_process().daemon or len(texts) < 2:
        return 1  # (daemonic processes, e.g. DataLoader workers, may not have children)
    if len(texts) < _PARALLEL_MIN_TEXTS and sum(len(t) for t in texts if isinstance(t, str)) < _PARALLEL_MIN_CHARS:
        return 1
    return min(workers, len(texts))


def _chunks(texts: list, n: int) -> list[tuple[int, int]]:
    """n contiguous [a, b) ranges of texts with about equal numbers of chars."""
    ends = list(accumulate(len(t) if isinstance(t, str) else 0 for t in texts))
    total = ends[-1]
    cuts = (
        [0] + [min(max(bisect.bisect_left(ends, total * k / n) + 1, 1), len(texts)) for k in range(1, n)] + [len(texts)]
    )
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _slice(items: list | None, a: int, b: int) -> list | None:
    return items[a:b] if items is not None else None


def _worker(encode_chunk: EncodeChunk, texts, pairs, a: int, b: int, conn) -> None:
    """A worker's job: encode texts[a:b] and send back ("ok", encodings) or ("error", exception)."""
    try:
        result = ("ok", encode_chunk(texts[a:b], _slice(pairs, a, b)))
    except Exception as e:  # raised in the parent, as the serial path would raise it
        result = ("error", e)
    try:
        data = pickle.dumps(result, pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        data = pickle.dumps(("error", RuntimeError(f"encode_batch worker: {result[1]!r} ({e})")))
    conn.send_bytes(data)
    conn.close()


def encode_parallel(encode_chunk: EncodeChunk, texts: list, pairs: list | None, n: int) -> list[Encoding]:
    """encode_chunk(texts, pairs) over n processes: this one takes the first chunk, forks take the rest."""
    ctx = mp.get_context("fork")
    (a0, b0), *rest = _chunks(texts, n)
    jobs = []
    try:
        for a, b in rest:
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker, daemon=True, args=(encode_chunk, texts, pairs, a, b, send))
            p.start()
            send.close()
            jobs.append((p, recv, a, b))
        out = encode_chunk(texts[a0:b0], _slice(pairs, a0, b0))
        for p, recv, a, b in jobs:
            try:
                status, payload = pickle.loads(recv.recv_bytes())
            except (EOFError, OSError):  # the worker died (killed, out of memory): do its share here
                status, payload = "ok", encode_chunk(texts[a:b], _slice(pairs, a, b))
            if status == "error":
                raise payload
            out.extend(payload)
        return out
    finally:
        for p, recv, _, _ in jobs:
            recv.close()
            if p.is_alive():
                p.terminate()
            p.join()
