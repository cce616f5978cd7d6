"""Encoding large batches: the garbage collector paused, and optionally several forked processes."""
from __future__ import annotations

import bisect
import contextlib
import gc
import multiprocessing as mp
import os
import pickle
from itertools import accumulate
from typing import TYPE_CHECKING

from .encoding import Encoding

if TYPE_CHECKING:
    from .tokenizer import Tokenizer


@contextlib.contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector while a batch is encoded.

    A batch allocates hundreds of thousands of small tuples and lists (an offset pair per
    token) and keeps them all, so the collector would keep running and re-scanning them
    (and the word cache), although encoding makes no reference cycles: that costs about a
    third of the time. Reference counting still frees everything as usual. Afterwards the
    young objects go straight to the oldest generation (freeze + unfreeze: two list splices,
    no scan) rather than being scanned at once as the next young collection would: they
    are results that live on, and any garbage among them waits for the next full collection.
    Not done when the program has frozen objects itself (gc.freeze before forking servers).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


# -- large batches over worker processes ---------------------------------------------------------
# `tokenizers` encodes a batch on a thread pool; Python threads would share one interpreter
# lock, so a large batch is cut into contiguous chunks for forked processes instead. A fork
# sees this tokenizer exactly as it is (settings, word cache) without pickling it; only the
# finished (unpadded) encodings travel back, in order. Padding is done after, over the batch.

_PARALLEL_MIN_TEXTS, _PARALLEL_MIN_CHARS = 2_000, 1_000_000


def workers_for(texts: list, workers: int | None) -> int:
    """How many processes should encode this batch (1: this one alone)."""
    if workers is None:
        env = os.environ.get("BERTOLOGY_ENCODE_WORKERS")
        if env:
            try:
                workers = int(env)
            except ValueError:
                raise ValueError(f"BERTOLOGY_ENCODE_WORKERS must be an integer, got {env!r}") from None
        else:
            workers = 1
    if (workers <= 1 or "fork" not in mp.get_all_start_methods() or mp.current_process().daemon
            or len(texts) < 2):
        return 1  # (daemonic processes, e.g. DataLoader workers, may not have children)
    if len(texts) < _PARALLEL_MIN_TEXTS and sum(len(t) for t in texts if isinstance(t, str)) < _PARALLEL_MIN_CHARS:
        return 1
    return min(workers, len(texts))


def _chunks(texts: list, n: int) -> list[tuple[int, int]]:
    """n contiguous [a, b) ranges of texts with about equal numbers of chars."""
    ends = list(accumulate(len(t) if isinstance(t, str) else 0 for t in texts))
    total = ends[-1]
    cuts = [0] + [min(max(bisect.bisect_left(ends, total * k / n) + 1, 1), len(texts)) for k in range(1, n)] + [len(texts)]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _encode_chunk(tok: "Tokenizer", texts, pairs, a: int, b: int, add_special_tokens, truncation, conn) -> None:
    """A worker's job: encode texts[a:b] and send back ("ok", encodings) or ("error", exception)."""
    try:
        result = ("ok", tok._encode_many(texts[a:b], pairs[a:b] if pairs is not None else None,
                                         add_special_tokens, truncation))
    except Exception as e:  # raised in the parent, as the serial path would raise it
        result = ("error", e)
    try:
        data = pickle.dumps(result, pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        data = pickle.dumps(("error", RuntimeError(f"encode_batch worker: {result[1]!r} ({e})")))
    conn.send_bytes(data)
    conn.close()


def encode_parallel(tok: "Tokenizer", texts, pairs, add_special_tokens, truncation, n: int) -> list[Encoding]:
    """texts encoded over n processes: this one takes the first chunk, forks take the rest."""
    ctx = mp.get_context("fork")
    (a0, b0), *rest = _chunks(texts, n)
    jobs = []
    try:
        for a, b in rest:
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_encode_chunk, daemon=True,
                            args=(tok, texts, pairs, a, b, add_special_tokens, truncation, send))
            p.start()
            send.close()
            jobs.append((p, recv, a, b))
        out = tok._encode_many(texts[a0:b0], pairs[a0:b0] if pairs is not None else None,
                               add_special_tokens, truncation)
        for p, recv, a, b in jobs:
            try:
                status, payload = pickle.loads(recv.recv_bytes())
            except (EOFError, OSError):  # the worker died (killed, out of memory): do its share here
                status, payload = "ok", tok._encode_many(texts[a:b], pairs[a:b] if pairs is not None else None,
                                                         add_special_tokens, truncation)
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
