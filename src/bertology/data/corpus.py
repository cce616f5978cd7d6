"""Pretraining text: stream documents (lists of sentences) out of plain-text files and tables.

Two input formats:

* ``"lines"`` (Google's create_pretraining_data.py format): one sentence per line, a blank line
  between documents.
* ``"raw"``: ordinary prose, wrapped anyhow; a blank line still ends a document, and the lines
  of a document are joined and cut into sentences by `split_sentences` (a small rule-based
  splitter, documented below).

In both formats blank lines at the start or end of a file, runs of blank lines, and whitespace-only
lines count as one separator; the end of a file ends its last document; a document is never
empty; a document of one sentence is a document. Files are streamed line by line, so a corpus
larger than memory works: only the current document is held. A file whose name ends in ``.gz``,
``.xz`` or ``.bz2`` is decompressed as it streams (`bertology.io.open_corpus`, the
one opener of corpus files).

A Parquet file or a directory `Dataset.save_to_disk` wrote is read through bertology.tables, a batch of
rows at a time (a Parquet row group at a time): each row of its text column (default ``text``) is one
document, cut into sentences by `split_sentences` in the "raw" format, or a sentence per line of the
row in the "lines" format; a null or blank row is skipped, as a blank line is.

    >>> split_sentences("Dr. Smith arrived at 5 p.m. on Monday. He left! Did he?")
    ['Dr. Smith arrived at 5 p.m. on Monday.', 'He left!', 'Did he?']
"""

from __future__ import annotations

import codecs
import os
from typing import Iterable, Iterator

import numpy as np
import regex

from ..io import CorpusError, check_corpus_paths, compression, iter_lines, open_corpus
from ..progress import progress_bar
from ..tables import DEFAULT_TEXT_COLUMN, iter_texts, open_table, table_format

FORMATS = ("lines", "raw")

# Words that end in a period without ending a sentence. Compared lower-cased, without the period.
ABBREVIATIONS = frozenset(
    """
mr mrs ms dr prof sr jr st mt ft vs etc al fig figs no nos vol vols ed eds eds. op cit ca approx
inc ltd co corp bros dept est gen col lt sgt capt cmdr adm gov sen rep rev hon pres
jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun
e.g i.e a.m p.m u.s u.k u.n b.c a.d c. cf viz
""".split()
)

# A candidate boundary: sentence-final punctuation, optional closing quotes/brackets, whitespace,
# then something that can open a sentence (an upper-case letter, a digit, or an opening quote or
# bracket). Lower-case after the period ("e.g. this") never splits.
_BOUNDARY = regex.compile(r"""([.!?]+)(["'\u201d\u2019)\]]*)(\s+)(?=["'\u201c\u2018(\[]?[\p{Lu}\p{Nd}])""")
_WORD_BEFORE = regex.compile(r"(\S+)$")


def _is_abbreviation(text_before: str) -> bool:
    """True when the word that ends at a period is an abbreviation or an initial ("J.")."""
    m = _WORD_BEFORE.search(text_before)
    if not m:
        return False
    word = m.group(1).lstrip("\"'(\u201c\u2018[").lower()
    # single letters ("J. R. R. Tolkien") and dotted acronyms ("U.S.") are initials
    return word in ABBREVIATIONS or len(word) == 1 or bool(regex.fullmatch(r"(\p{L}\.)+\p{L}", word))


def split_sentences(text: str) -> list[str]:
    """Cut prose into sentences with three rules.

    1. A sentence ends at ``.``, ``!`` or ``?`` (runs like ``?!`` or ``...`` included), plus any
       closing quotes or brackets, when whitespace and then an upper-case letter, a digit or an
       opening quote/bracket follow.
    2. Not after an abbreviation from `ABBREVIATIONS`, a single letter ("J. Smith") or a dotted
       acronym ("U.S. Army") when the punctuation is a single period.
    3. Whitespace inside a sentence is collapsed to single spaces; empty pieces are dropped.

    >>> split_sentences("It rained.  \\nThe U.S. Army left. 'Yes,' he said. ")
    ['It rained.', 'The U.S. Army left.', "'Yes,' he said."]
    >>> split_sentences("")
    []
    """
    text = " ".join(text.split())
    sentences, start = [], 0
    for m in _BOUNDARY.finditer(text):
        if m.group(1) == "." and _is_abbreviation(text[start : m.start(1)]):
            continue
        sentences.append(text[start : m.start(3)])
        start = m.end(3)
    sentences.append(text[start:])
    return [s for s in (s.strip() for s in sentences) if s]


def check_files(files, text_column: str = DEFAULT_TEXT_COLUMN) -> list[str]:
    """The paths, every one checked before any is read: a text file exists, a table (Parquet, a datasets
    directory) opens and has `text_column` holding strings (the errors name the columns there are)."""
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    if not files:
        raise CorpusError("no corpus files given")
    for f in files:
        if table_format(f):
            open_table(f).require_text(text_column)  # reads the schema only; no pyarrow: the install line
    check_corpus_paths([f for f in files if not table_format(f)])
    return [os.fspath(f) for f in files]


def iter_documents(
    files: str | os.PathLike | Iterable[str | os.PathLike],
    format: str = "lines",
    errors: str = "strict",
    text_column: str = DEFAULT_TEXT_COLUMN,
) -> Iterator[list[str]]:
    """Yield each document of `files` (in order) as a list of sentence strings.

    Every file is checked before reading starts (`check_files`). .gz / .xz / .bz2 files are read
    through their decompressor (by extension); a corrupt or truncated stream raises CorpusError
    naming the file. An undecodable byte raises CorpusError naming the file and (decompressed)
    byte offset, or becomes U+FFFD with errors="replace". A table gives a document per row of
    `text_column` (see the module docstring), streamed a batch of rows at a time.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    for path in check_files(files, text_column):
        if table_format(path):
            yield from _table_documents(path, format, text_column)
            continue
        block: list[str] = []
        for line in iter_lines(path, errors, keep_newlines=False):
            line = line.strip()
            if line:
                block.append(line)
            elif block:
                yield _sentences(block, format)
                block = []
        if block:
            yield _sentences(block, format)


def _table_documents(path: str, format: str, column: str) -> Iterator[list[str]]:
    """A document per row: the row's non-blank lines, as a blank-line-separated block of a text file is read."""
    for text in iter_texts(path, column):  # a batch of rows at a time; null and blank rows are left out
        yield _sentences([line for line in map(str.strip, text.split("\n")) if line], format)


def _sentences(block: list[str], format: str) -> list[str]:
    if format == "lines":
        return block
    return split_sentences(" ".join(block)) or block


_COUNT_BLOCK = 1 << 24  # bytes count_documents decodes at once


def count_documents(
    files,
    format: str = "lines",
    errors: str = "strict",
    text_column: str = DEFAULT_TEXT_COLUMN,
    show_progress: bool = False,
) -> int:
    """Number of documents `iter_documents` yields (one streaming pass).

    A document is a run of non-blank lines in either format (a "raw" one is never empty), so the
    lines are not cut into sentences: each file is read a block at a time, decoded (to check it),
    and its lines told blank or not from their bytes (`blank_lines`). A file that does not decode,
    or a corrupt compressed stream, is read again by iter_documents, whose error names the file and
    the byte offset. A table's documents are its non-blank rows of `text_column` (only that column
    is read).
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    if errors not in ("strict", "replace"):
        return sum(1 for _ in iter_documents(files, format, errors, text_column))  # (iter_lines names the bad value)
    total = 0
    paths = check_files(files, text_column)
    bar, sizes, known = bytes_bar(paths, "counting documents", show_progress)
    with bar:
        for path, size in zip(paths, sizes):
            done = bar.n
            if table_format(path):
                total += sum(1 for _ in iter_texts(path, text_column))
            else:
                try:
                    total += _count_file(path, errors, bar)
                except Exception:  # the exact error (or, were the two ever to disagree, the count) is iter_documents'
                    total += sum(1 for _ in iter_documents([path], format, errors))
            if known:
                bar.update(done + size - bar.n)
    return total


def bytes_bar(paths, desc: str, show_progress: bool):
    """(a progress bar over the files' bytes, each file's size, whether the total is known): no total
    where a file is compressed or a table, whose size is not its text's. After a file, `bar.update(done +
    size - bar.n)` counts it whole (what the bar was told falls short of the bytes: newlines, UTF-8)."""
    sizes = [0 if os.path.isdir(p) else os.path.getsize(p) for p in paths]
    known = not any(compression(p) or table_format(p) for p in paths)
    total = sum(sizes) if known else None
    return progress_bar(total=total, desc=desc, unit="B", unit_scale=True, disable=not show_progress), sizes, known


def _count_file(path: str, errors: str, bar) -> int:
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    total, blank_before, tail = 0, True, b""
    with open_corpus(path) as f:
        while True:
            raw = f.read(_COUNT_BLOCK)
            decoder.decode(raw, final=not raw)  # (raises where the file does not decode)
            lines = tail + raw if raw or not tail else tail + b"\n"  # the last line may lack its newline
            cut = lines.rfind(b"\n") + 1  # a block's unfinished last line waits for the next
            lines, tail = lines[:cut], lines[cut:]
            if lines:
                blank = blank_lines(lines, errors)
                total += int(np.count_nonzero(~blank[1:] & blank[:-1])) + int(blank_before and not blank[0])
                blank_before = bool(blank[-1])
            bar.update(len(raw))
            if not raw:
                return total


# a line's first byte that leaves it maybe blank: ASCII whitespace as str.strip takes it, and any
# character beyond ASCII (a few are whitespace: U+0085, U+3000, ...)
_MAYBE_BLANK = np.zeros(256, bool)
_MAYBE_BLANK[[0x09, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20]] = True
_MAYBE_BLANK[0x80:] = True


def blank_lines(lines: bytes, errors: str = "strict") -> np.ndarray:
    r"""(lines,) bool: which of the newline-ended UTF-8 `lines` are blank (iter_documents' test: nothing
    left by str.strip). A line whose first byte is ASCII and not whitespace is not; an empty one is;
    only the rest are decoded and stripped.

    >>> blank_lines(b"a\n\n \t\nb c\n\xe3\x80\x80\n\xc3\xa9\n").tolist()   # U+3000 is whitespace, e-acute is not
    [False, True, True, False, True, False]
    """
    b = np.frombuffer(lines, np.uint8)
    ends = np.flatnonzero(b == 0x0A)  # (L,) each line's newline
    starts = np.r_[0, ends[:-1] + 1] if len(ends) else ends  # (L,)
    first = b[starts]
    blank = first == 0x0A
    for k in np.flatnonzero(_MAYBE_BLANK[first]).tolist():
        blank[k] = not lines[starts[k] : ends[k]].decode("utf-8", errors).strip()
    return blank
