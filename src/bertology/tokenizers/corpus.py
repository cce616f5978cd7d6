"""Training text: stream lines from files and count the words a tokenizer's front end produces.

A trainer only needs word counts: {pre-token: how often it occurs}. They come from the same
normalizer and pre-tokenizer the finished tokenizer will use, so training sees exactly what
encoding will see. Lines are read as `tokenizers` reads them, line ending included (a byte-level
BPE learns 'Ċ' for '\\n'); `keep_newlines=False` strips it (SentencePiece style).

Files are read by `bertology.io.iter_lines` (which opens .gz, .xz and .bz2 files as they
stream, see `open_corpus`).

`generic_words` is the reference: a line through the pipeline's own `normalize_str` /
`pre_tokenize_str`. Counting is the first bottleneck of training, so the common pipelines take
exact shortcuts (fast/counting.py); the tests check every shortcut against the reference on real
text.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import subprocess
import sys
import tempfile
from collections import Counter, deque
from typing import Iterable


# (CorpusError, open_corpus and compression are imported from here too: io.py is their home)
from ..progress import progress_bar
from ..io import CorpusError, compression, iter_files, iter_lines, open_corpus  # noqa: F401
from .fast import chunks as chunk_counting
from .fast.counting import chunk_words, word_counter


def generic_words(line: str, normalizer=None, pre_tokenizer=None) -> list[str]:
    """The pre-tokens of one line through the pipeline's own code (the reference path)."""
    text = normalizer.normalize_str(line) if normalizer is not None else line
    if pre_tokenizer is None:
        return [text] if text else []
    return [w for w, _ in pre_tokenizer.pre_tokenize_str(text)]


def count_words(
    lines: Iterable[str],
    normalizer=None,
    pre_tokenizer=None,
    show_progress: bool = False,
    total_chars: int | None = None,
) -> dict[str, int]:
    """{pre-token: count} over lines, as the pipeline's normalizer + pre-tokenizer produce them.

    >>> from bertology.tokenizers.pre_tokenizers import BertPreTokenizer
    >>> count_words(["Hi, hi!\\n", "hi"], pre_tokenizer=BertPreTokenizer())
    {'Hi': 1, ',': 1, 'hi': 2, '!': 1}
    """
    bar = None
    if show_progress:
        bar = progress_bar(total=total_chars, desc="Count words", unit="char", unit_scale=True)
    counter = word_counter(normalizer, pre_tokenizer)
    try:
        if counter is not None:
            words = counter(lines, bar)
        else:
            words = Counter()
            for line in lines:
                if bar is not None:
                    bar.update(len(line))
                words.update(generic_words(line, normalizer, pre_tokenizer))
    finally:
        if bar is not None:
            bar.close()
    words.pop("", None)
    return dict(words)


def byte_ranges(files, n_parts: int) -> list[tuple[str, int, int | None]]:
    """Cut files into about n_parts (path, start, end) ranges that begin at line starts.

    A compressed file cannot be cut without decompressing it, so it is one range (path, 0, None).
    """
    plain = [p for p in files if compression(p) is None]
    step = max(1, sum(os.path.getsize(p) for p in plain) // max(1, n_parts))
    ranges = []
    for p in files:
        if compression(p) is not None:
            ranges.append((os.fspath(p), 0, None))
            continue
        size = os.path.getsize(p)
        start = 0
        with open_corpus(p) as f:
            while start < size:
                f.seek(min(size, start + step))
                f.readline()  # move the cut to the next line start
                end = min(size, f.tell()) if start + step < size else size
                ranges.append((os.fspath(p), start, end))
                start = end
    return ranges


_FORKED_JOB: tuple = ()  # (normalizer, pre_tokenizer, errors, keep_newlines), inherited by forked workers


def _count_range(rng: tuple[str, int, int | None]) -> dict[str, int]:
    normalizer, pre_tokenizer, errors, keep_newlines = _FORKED_JOB
    path, start, end = rng
    return count_words(iter_lines(path, errors, keep_newlines, start, end), normalizer, pre_tokenizer)


def _count_parallel(files, normalizer, pre_tokenizer, errors, keep_newlines, workers, bar) -> dict[str, int]:
    """Count byte ranges in forked workers and add the results up in file order, so the words
    come out in the same first-seen order as a sequential count."""
    global _FORKED_JOB
    _FORKED_JOB = (normalizer, pre_tokenizer, errors, keep_newlines)
    try:
        with mp.get_context("fork").Pool(workers) as pool:
            ranges = byte_ranges(files, 4 * workers)
            words: Counter = Counter()
            for rng, part in zip(ranges, pool.imap(_count_range, ranges)):
                words.update(part)
                if bar is not None:  # bytes on disk, compressed or not
                    bar.update(os.path.getsize(rng[0]) if rng[2] is None else rng[2] - rng[1])
    finally:
        _FORKED_JOB = ()
    return dict(words)


def _count_range_here(rng: tuple[str, int, int | None], errors: str) -> dict[bytes, int]:
    """The chunk counts of one byte range, in this process. Bad data (undecodable bytes, a corrupt
    compressed stream) is read again line by line, for iter_lines' error naming file and offset."""
    path, start, end = rng
    try:
        return chunk_counting.count_chunks(path, start, end, compression(path), errors == "strict")
    except Exception:
        for _ in iter_lines(path, errors, True, start, end):
            pass
        raise


def _chunk_worker(rng: tuple[str, int, int | None], errors: str) -> tuple:
    """A started worker counting a range: (process, the file it writes its counts to, range)."""
    path, start, end = rng
    end_arg = "-" if end is None else str(end)
    args = [path, str(start), end_arg, compression(path) or "", errors]
    # a bare interpreter (-I -S: no site-packages, no environment) runs the stdlib-only script
    command = [sys.executable, "-I", "-S", chunk_counting.__file__, *args]
    # the counts go to a file, not a pipe: a worker that is done exits (and frees its memory) at
    # once instead of waiting, counts in hand, until this process reads them
    out = tempfile.TemporaryFile()
    try:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.DEVNULL)
    except BaseException:
        out.close()
        raise
    return proc, out, rng


def _add_counts(into: dict, items: Iterable) -> None:
    get = into.get
    for key, n in items:
        into[key] = get(key, 0) + n


def _collect(worker: tuple, errors: str, into: dict[bytes, int], bar) -> None:
    """Add a worker's counts into `into`, in its order, a batch at a time. A worker that failed
    (bad data, killed, out of memory) has its range counted here, which raises the error bad data
    deserves."""
    proc, out, rng = worker
    with out:
        if proc.wait() != 0:
            _add_counts(into, _count_range_here(rng, errors).items())
        else:
            out.seek(0)
            while (batch := pickle.load(out)) is not None:
                _add_counts(into, batch)
    if bar is not None:  # bytes on disk, compressed or not
        bar.update(os.path.getsize(rng[0]) if rng[2] is None else rng[2] - rng[1])


def count_chunks_in_files(files, errors: str, workers: int, bar=None) -> dict[bytes, int]:
    """{whitespace-separated chunk (bytes): count} over files, in first-seen order.

    With workers > 1 the files are cut into byte ranges (a compressed file is one), counted by up
    to `workers` worker processes at a time (fast/chunks.py run as a script) and added up in file
    order, which keeps the first-seen order of a count in one process.
    """
    if workers <= 1 or not sys.executable:  # (no interpreter to start: an embedded Python)
        counts: dict[bytes, int] = {}
        for p in files:
            part = _count_range_here((os.fspath(p), 0, None), errors)
            if not counts:
                counts = part  # (one file: no copy)
            else:
                _add_counts(counts, part.items())
            del part
            if bar is not None:
                bar.update(os.path.getsize(p))
        return counts
    counts = {}
    running: deque = deque()
    try:
        for rng in byte_ranges(files, workers):
            running.append(_chunk_worker(rng, errors))
            if len(running) >= workers:
                _collect(running.popleft(), errors, counts, bar)
        while running:
            _collect(running.popleft(), errors, counts, bar)
    finally:
        for proc, out, _ in running:  # interrupted: our own workers, each by its process
            proc.kill()
            proc.wait()
            out.close()
    return counts


def count_words_in_files(
    files,
    normalizer=None,
    pre_tokenizer=None,
    errors: str = "strict",
    keep_newlines: bool = True,
    show_progress: bool = False,
    workers: int | None = None,
    parallel_min_bytes: int = 4_000_000,
) -> dict[str, int]:
    """count_words over the lines of files; raises CorpusError if the corpus yields no word.

    Corpora of at least `parallel_min_bytes` (on disk) are counted by `workers` processes
    (default: one per CPU, at most 8); the result, order included, is the same as counting in one.
    Plain files are cut into byte ranges; a compressed file (.gz / .xz / .bz2) is one range.

    Pipelines whose pre-tokenizer drops whitespace (BERT's among them) count whitespace-separated
    chunks of bytes first (count_chunks_in_files), in bare worker processes, and turn the distinct
    chunks into words here: the workers hold only their chunk counts, and this process only those
    and the words. The other pipelines count lines in forked workers.
    """
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    for _ in iter_files(files, errors, keep_newlines):  # checks the list and that every file exists
        break
    total = sum(os.path.getsize(p) for p in files)
    if workers is None:
        workers = min(8, os.cpu_count() or 1)
    to_words = chunk_words(normalizer, pre_tokenizer)
    # daemonic processes (e.g. Pool workers) may not have children: count in-process there
    can_fork = "fork" in mp.get_all_start_methods() and not mp.current_process().daemon
    if to_words is not None:
        bar = None
        if show_progress:
            bar = progress_bar(total=total, desc="Count words", unit="B", unit_scale=True)
        try:
            parallel = workers > 1 and total >= parallel_min_bytes
            chunks = count_chunks_in_files(files, errors, workers if parallel else 1, bar)
        finally:
            if bar is not None:
                bar.close()
        words = to_words(chunks, errors)
        del chunks
        words.pop("", None)
    elif workers > 1 and total >= parallel_min_bytes and can_fork:
        bar = None
        if show_progress:
            bar = progress_bar(total=total, desc="Count words", unit="B", unit_scale=True)
        try:
            words = _count_parallel(files, normalizer, pre_tokenizer, errors, keep_newlines, workers, bar)
        finally:
            if bar is not None:
                bar.close()
    else:
        lines = iter_files(files, errors, keep_newlines)
        # the bar counts characters: their total is known only when no file is compressed
        known = show_progress and all(compression(p) is None for p in files)
        words = count_words(lines, normalizer, pre_tokenizer, show_progress, total if known else None)
    if not words:
        names = ", ".join(os.fspath(p) for p in files)
        raise CorpusError(f"empty corpus: no words in {names}")
    return words
