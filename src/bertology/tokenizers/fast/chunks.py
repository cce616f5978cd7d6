"""A corpus file's whitespace-separated chunks, counted as bytes: the first step of the word count
for pipelines whose pre-tokenizer drops whitespace (counting.chunk_words takes it from there).

Splitting bytes at space, tab, CR and LF never cuts a UTF-8 character (no byte of a multi-byte
one is ASCII), and every normalizer there keeps them as whitespace, so a chunk holds whole
pre-tokens; what else the pre-tokenizer splits at (U+00A0, U+3000, \\x0b unless BertNormalizer
deletes it, ...) is left to the step on the distinct chunks. Reading blocks of bytes and counting
`bytes.split()` in C skips the per-line work (a str per line, its decoding) that made most of
the counting time.

This module imports the standard library alone, so that counting in parallel runs it as a script
in a bare interpreter (`python -I -S chunks.py PATH START END COMPRESSION ERRORS`, the counts
pickled to stdout): such a worker starts at about 9 MB, where a fork of the trainer's process
counts the tens of MB of the modules it has loaded once more in the process tree's memory (the
bench sums the memory of a process and its children). A decompressor is imported when needed.
"""

from __future__ import annotations

import importlib
import pickle
import re
import sys
from collections import Counter
from itertools import islice

BLOCK = 1 << 16  # bytes a read: a block's chunks, split at once, are the worker's passing memory
BATCH = 10_000  # counts pickled a batch at a time: no second copy of the whole table
_SEPARATORS = re.compile(rb"[ \t\r\n]+")
_MODULES = {"gzip": "gzip", "xz": "lzma", "bz2": "bz2"}


def count_chunks(path: str, start: int = 0, end: int | None = None, compression: str | None = None, strict=True):
    """{chunk: count}, in first-seen order, over the bytes [start, end) of path (start and end
    at line starts; for a compressed file, offsets in the decompressed stream).

    `strict`: every block is decoded as UTF-8, and an undecodable one raises UnicodeDecodeError
    (the caller re-reads the range line by line for the error that names the offset). A corrupt
    compressed stream raises what its decompressor raises.

    >>> import os, tempfile
    >>> with tempfile.NamedTemporaryFile(delete=False) as f:
    ...     _ = f.write("a b a\\nsé a\\n".encode())
    >>> count_chunks(f.name)
    Counter({b'a': 3, b'b': 1, b's\\xc3\\xa9': 1})
    >>> os.remove(f.name)
    """
    counts: Counter = Counter()
    opener = importlib.import_module(_MODULES[compression]).open if compression else open
    with opener(path, "rb") as f:
        if start:
            f.seek(start)
        left = None if end is None else end - start
        pending: list[bytes] = []  # what follows the last cut (a list: a long run is joined once)
        while left is None or left > 0:
            block = f.read(BLOCK if left is None else min(BLOCK, left))
            if not block:
                break
            if left is not None:
                left -= len(block)
            # count up to the block's last space or newline: a chunk may go on in the next block
            cut = max(block.rfind(b"\n"), block.rfind(b" ")) + 1
            if cut == 0:
                pending.append(block)
                continue
            pending.append(block[:cut])
            text = b"".join(pending)
            pending = [block[cut:]]
            if strict:
                text.decode("utf-8")
            counts.update(_split(text))
        rest = b"".join(pending)
        if strict:
            rest.decode("utf-8")
        counts.update(_split(rest))
    return counts


def _split(text: bytes) -> list[bytes]:
    """text's chunks between runs of space, tab, CR and LF."""
    if b"\x0b" in text or b"\x0c" in text:  # bytes.split() splits at these too (BertNormalizer deletes them)
        return [c for c in _SEPARATORS.split(text) if c]
    return text.split()


def main(argv: list[str]) -> None:
    """The worker: count one range and pickle the counts to stdout as lists of (chunk, count)
    pairs, in order, then None."""
    path, start, end, compression, errors = argv
    counts = count_chunks(path, int(start), None if end == "-" else int(end), compression or None, errors == "strict")
    out = sys.stdout.buffer
    items = iter(counts.items())
    while batch := list(islice(items, BATCH)):
        pickle.dump(batch, out, pickle.HIGHEST_PROTOCOL)
    pickle.dump(None, out, pickle.HIGHEST_PROTOCOL)
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
