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
from collections import Counter
from typing import Iterable


# (CorpusError, open_corpus and compression are imported from here too: io.py is their home)
from ..progress import progress_bar
from ..io import CorpusError, compression, iter_files, iter_lines, open_corpus  # noqa: F401
from .fast.counting import word_counter


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

    Corpora of at least `parallel_min_bytes` (on disk) are counted by `workers` forked processes
    (default: one per CPU, at most 8); the result, order included, is the same as counting in one.
    Plain files are cut into byte ranges; a compressed file (.gz / .xz / .bz2) is one range.
    """
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    for _ in iter_files(files, errors, keep_newlines):  # checks the list and that every file exists
        break
    total = sum(os.path.getsize(p) for p in files)
    if workers is None:
        workers = min(8, os.cpu_count() or 1)
    # daemonic processes (e.g. Pool workers) may not have children: count in-process there
    can_fork = "fork" in mp.get_all_start_methods() and not mp.current_process().daemon
    if workers > 1 and total >= parallel_min_bytes and can_fork:
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
