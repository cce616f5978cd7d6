"""The tokenized corpus (the token stores of its files, seen as one), and the one rule that holds
documents out of training.

Stage 1 of every pretraining objective: each corpus file is tokenized once into its token store
(tokenstore.py: ids, word-start bits, sentence and document offsets, built by worker processes and
shared by every run with the same tokenizer). `TokenizedCorpus` numbers the documents, sentences
and tokens of the files one after another. `split_documents` then sets whole documents aside, drawn
by the seed, before any instance or stream is made: the MLM store, the permutation-LM streams and
their held-out evaluation all use it, so no held-out sentence ever reaches training.
"""

from __future__ import annotations

import json
import os
import random
import weakref
from pathlib import Path
from typing import Iterator

import numpy as np
import torch

from ..io import atomic_write_json
from .corpus import check_files, count_documents
from .instances import Segment
from .tokenstore import CACHE_ENV, WORD_STARTS, FileTokens, build_token_stores, file_key, token_cache_root

__all__ = ["WORD_STARTS", "TokenizedCorpus", "tokenize_corpus"]

# tokens counted at once: bounded memory on a corpus of any size, and arrays small enough (8 MB)
# for the allocator to hand the same pages back chunk after chunk (1 << 24 spent 7x as long on a 14M
# token store, most of it touching fresh pages)
_COUNT_CHUNK = 1 << 20


def _joined(offsets: list[np.ndarray], bases: np.ndarray) -> np.ndarray:
    """The files' offsets (each ending in its total) as one array numbered across the files: a single
    file's memory map as it is (read as pages are touched), several written once into one array (no
    temporary copies: a 3 GB corpus has tens of millions of sentences)."""
    if len(offsets) == 1:
        return offsets[0]
    out = np.empty(int(sum(len(o) - 1 for o in offsets)) + 1, dtype=np.int64)
    at = 0
    for o, base in zip(offsets, bases):
        np.add(o[:-1], base, out=out[at : at + len(o) - 1])
        at += len(o) - 1
    out[-1] = bases[-1]
    return out


class TokenizedCorpus:
    """The token stores of a corpus's files as one corpus: documents, sentences and tokens numbered
    across the files in order (file k's first token comes after every token of files 0..k-1).
    `TokenizedCorpus.open(dirs)` shares one while any user holds it (a run's training and held-out
    stores and their indices read the same offsets)."""

    _open: "weakref.WeakValueDictionary[tuple[str, ...], TokenizedCorpus]" = weakref.WeakValueDictionary()

    def __init__(self, parts):
        parts = [parts] if isinstance(parts, (str, os.PathLike, FileTokens)) else list(parts)
        self.parts = [p if isinstance(p, FileTokens) else FileTokens(p) for p in parts]
        self.dirs = [p.dir for p in self.parts]
        self.token_base = np.cumsum([0] + [p.num_tokens for p in self.parts])  # (files + 1,)
        sent_base = np.cumsum([0] + [len(p.sent_offsets) - 1 for p in self.parts])
        # global offsets: token offset of each sentence, sentence offset of each document (+ the totals)
        self.sent_offsets = _joined([p.sent_offsets for p in self.parts], self.token_base)
        self.doc_offsets = _joined([p.doc_offsets for p in self.parts], sent_base)

    @classmethod
    def open(cls, dirs) -> "TokenizedCorpus":
        """The corpus of these token stores, one object for every caller while any holds it."""
        key = tuple(os.fspath(d) for d in dirs)
        corpus = cls._open.get(key)
        if corpus is None:
            corpus = cls._open[key] = cls(list(key))
        return corpus

    @property
    def num_documents(self) -> int:
        return len(self.doc_offsets) - 1

    @property
    def num_tokens(self) -> int:
        return int(self.token_base[-1])

    def doc_token_offsets(self) -> np.ndarray:
        """(documents + 1,) int64: the token offset where each document starts, then the total."""
        return self.sent_offsets[self.doc_offsets].astype(np.int64)

    def _part_of(self, positions: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.token_base, positions, side="right") - 1

    def gather(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ids (int64), word starts (bool)) of the tokens at global `positions` (any shape)."""
        positions = np.asarray(positions, dtype=np.int64)
        if len(self.parts) == 1:  # the common case: one file, no lookup
            return self.parts[0].take(positions)
        ids, starts = np.zeros(positions.shape, np.int64), np.zeros(positions.shape, bool)
        part = self._part_of(positions)
        for k in np.unique(part):
            sel = part == k
            ids[sel], starts[sel] = self.parts[k].take(positions[sel] - self.token_base[k])
        return ids, starts

    def span(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids (int64), word starts (bool)) of the global tokens [lo, hi): one read per file it spans."""
        if len(self.parts) == 1:  # the common case: one file
            return self.parts[0].span(lo, hi)
        ids, starts = np.empty(hi - lo, np.int64), np.empty(hi - lo, bool)
        for k in range(self._part_of(np.array([lo]))[0] if hi > lo else 0, len(self.parts)):
            base = int(self.token_base[k])
            a, b = max(lo, base) - base, min(hi, int(self.token_base[k + 1])) - base
            if base >= hi:
                break
            if a < b:  # (a file of no tokens has nothing to give)
                ids[base + a - lo : base + b - lo], starts[base + a - lo : base + b - lo] = self.parts[k].span(a, b)
        return ids, starts

    def span_counts(self, vocab_size: int, begins: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """How often each id occurs in the token spans [begins[i], ends[i]) (V,) int64, a token in k
        spans counted k times: one pass over the ids in chunks, the spans' coverage by a running sum."""
        begins, ends = np.sort(np.asarray(begins, np.int64)), np.sort(np.asarray(ends, np.int64))
        counts = np.zeros(vocab_size, np.float64)
        for k, p in enumerate(self.parts):
            base = int(self.token_base[k])
            for c0 in range(base, base + p.num_tokens, _COUNT_CHUNK):
                c1 = min(c0 + _COUNT_CHUNK, base + p.num_tokens)
                covered = np.searchsorted(begins, c0, "right") - np.searchsorted(ends, c0, "right")
                b = begins[np.searchsorted(begins, c0, "right") : np.searchsorted(begins, c1, "left")] - c0
                e = ends[np.searchsorted(ends, c0, "right") : np.searchsorted(ends, c1, "left")] - c0
                delta = np.bincount(b, minlength=c1 - c0) - np.bincount(e, minlength=c1 - c0)
                cover = covered + np.cumsum(delta[: c1 - c0])  # (c1 - c0,) spans over each token
                ids = p.read(c0 - base, c1 - base).astype(np.int64)
                if len(ids) and ids.max() >= vocab_size:
                    raise ValueError(f"{p.dir}: token id {int(ids.max())} outside a vocabulary of {vocab_size}")
                counts += np.bincount(ids, weights=cover, minlength=vocab_size)
        return np.rint(counts).astype(np.int64)

    def token_counts(self, vocab_size: int, documents) -> torch.Tensor:
        """How often each id occurs in `documents` (distinct indices) (V,): the ids of their token
        ranges counted a chunk at a time; for most of the corpus, every id less the other documents'."""
        docs = np.unique(np.fromiter(documents, dtype=np.int64))
        if 2 * len(docs) > self.num_documents:
            others = np.setdiff1d(np.arange(self.num_documents), docs, assume_unique=True)
            counts = self._all_counts(vocab_size) - self._docs_counts(vocab_size, others)
        else:
            counts = self._docs_counts(vocab_size, docs)
        return torch.from_numpy(counts)

    def _all_counts(self, vocab_size: int) -> np.ndarray:
        """Id counts of the whole corpus: the stores' own (counted while tokenizing), or a pass over the ids."""
        if any(p.id_counts is None for p in self.parts):
            return self._range_counts(vocab_size, [(0, self.num_tokens)])
        counts = np.zeros(vocab_size, np.int64)
        for p in self.parts:
            seen = np.flatnonzero(p.id_counts)
            if len(seen) and seen[-1] >= vocab_size:
                raise ValueError(f"{p.dir}: token id {int(seen[-1])} outside a vocabulary of {vocab_size}")
            counts[: len(p.id_counts)] += p.id_counts[:vocab_size]
        return counts

    def _docs_counts(self, vocab_size: int, docs: np.ndarray) -> np.ndarray:
        """Id counts of sorted distinct documents `docs`, runs of consecutive documents read as one range."""
        offsets = self.doc_token_offsets()
        if len(docs) == 0:
            return np.zeros(vocab_size, np.int64)
        breaks = np.flatnonzero(np.diff(docs) != 1) + 1
        first, last = docs[np.r_[0, breaks]], docs[np.r_[breaks - 1, len(docs) - 1]]
        return self._range_counts(vocab_size, zip(offsets[first].tolist(), offsets[last + 1].tolist()))

    def _range_counts(self, vocab_size: int, spans) -> np.ndarray:
        """Id counts of the global token ranges [lo, hi), read in batches of about _COUNT_CHUNK ids (the
        held-out documents' many short ranges: a bincount a batch, not a range)."""
        spans, counts = list(spans), np.zeros(vocab_size, np.int64)
        for k, p in enumerate(self.parts):
            base, pieces = int(self.token_base[k]), []  # (lo, hi) within the file, none over a chunk
            for lo, hi in spans:
                a, b = max(lo, base) - base, min(hi, base + p.num_tokens) - base
                pieces += [(c, min(c + _COUNT_CHUNK, b)) for c in range(a, b, _COUNT_CHUNK)]
            batch, size = [], 0
            for n, (a, b) in enumerate(pieces):
                batch.append((a, b))
                size += b - a
                if size >= _COUNT_CHUNK or n == len(pieces) - 1:
                    ids = p.read_runs(*map(list, zip(*batch))).astype(np.intp)
                    if len(ids) and ids.max() >= vocab_size:
                        raise ValueError(f"{p.dir}: token id {int(ids.max())} outside a vocabulary of {vocab_size}")
                    counts += np.bincount(ids, minlength=vocab_size)
                    batch, size = [], 0
        return counts

    def sentence_lengths(self, d: int) -> np.ndarray:
        s0, s1 = int(self.doc_offsets[d]), int(self.doc_offsets[d + 1])
        return np.diff(self.sent_offsets[s0 : s1 + 1])

    def document(self, d: int) -> list[Segment]:
        s0, s1 = int(self.doc_offsets[d]), int(self.doc_offsets[d + 1])
        bounds = self.sent_offsets[s0 : s1 + 1]
        ids, starts = self.gather(np.arange(bounds[0], bounds[-1]))
        ids, starts, cuts = ids.tolist(), starts.tolist(), (bounds - bounds[0]).tolist()
        return [Segment(ids[a:b], starts[a:b]) for a, b in zip(cuts, cuts[1:])]

    def documents(self, indices) -> Iterator[list[Segment]]:
        return (self.document(d) for d in indices)


def tokenize_corpus(
    files,
    tokenizer,
    directory: str | os.PathLike,
    format: str = "lines",
    errors: str = "strict",
    show_progress: bool = False,
    workers: int | None = None,
) -> TokenizedCorpus:
    """The corpus's token stores, under `directory` (or $BERTOLOGY_TOKEN_CACHE, see tokenstore.py),
    each file tokenized once by `workers` processes (None: every core) and reused after; the tokenizer's own
    padding and truncation are not applied (tokenstore.whole_sentences: sentences are packed later, and
    truncating them would lose text silently)."""
    files = check_files(files)
    root = token_cache_root(Path(directory))
    return TokenizedCorpus(build_token_stores(files, tokenizer, root, format, errors, show_progress, workers))


def heldout_value(heldout: float) -> float | int:
    """A --heldout option as the split functions take it: a whole number ≥ 1 is a count of
    documents, anything below 1 a fraction.

    >>> heldout_value(3.0), heldout_value(0.02)
    (3, 0.02)
    """
    return int(heldout) if heldout >= 1 else heldout


def heldout_count(n_docs: int, heldout: float | int) -> int:
    """How many of `n_docs` documents `heldout` (a fraction in (0, 1), or a count) sets aside.

    >>> heldout_count(100, 0.05), heldout_count(10, 0.01), heldout_count(10, 3)
    (5, 1, 3)
    """
    if isinstance(heldout, float) and not 0 <= heldout < 1:
        raise ValueError(f"heldout fraction must be in [0, 1), got {heldout}")
    if heldout == 0:
        return 0
    return max(1, round(heldout * n_docs)) if isinstance(heldout, float) else int(heldout)


def split_documents(n_docs: int, heldout: float | int, seed: int, where: str) -> tuple[list[int], list[int]]:
    """Document indices (train, held out), the held-out ones drawn by the seed: THE held-out rule
    of every objective.

    >>> split_documents(5, 2, seed=0, where="corpus.txt")
    ([0, 1, 2], [3, 4])
    """
    if heldout == 0:
        return list(range(n_docs)), []
    n = heldout_count(n_docs, heldout)
    if not 0 < n < n_docs:
        raise ValueError(f"cannot hold out {n} of the {n_docs} documents of {where}")
    held = set(random.Random(seed).sample(range(n_docs), n))
    return [d for d in range(n_docs) if d not in held], sorted(held)


def document_count(files, format: str, show_progress: bool = False) -> int:
    """corpus.count_documents of `files` (one streaming pass), remembered per file under
    $BERTOLOGY_TOKEN_CACHE when it is set, keyed as the file's token store is (tokenstore.file_key:
    path, size, mtime, how it is read), so that a later run on the same files counts nothing."""
    files = check_files(files)
    shared = os.environ.get(CACHE_ENV)
    if not shared:
        return count_documents(files, format, show_progress=show_progress)
    total = 0
    for f in files:
        memo = Path(shared) / "documents" / f"{Path(f).name[:40]}-{file_key(f, format, 'strict')}.json"
        try:
            n = int(json.loads(memo.read_text())["documents"])
        except (OSError, ValueError, KeyError, TypeError):
            n = count_documents([f], format, show_progress=show_progress)
            memo.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(memo, {"file": os.path.abspath(f), "format": format, "documents": n})
        total += n
    return total


def check_corpus_documents(files, format: str, heldout: float | int, nsp: bool, show_progress: bool = False) -> int:
    """Every file exists and decodes, and there are documents enough for `heldout` (and for NSP,
    two in each split): one streaming pass before anything is written (the count is remembered
    with $BERTOLOGY_TOKEN_CACHE: `document_count`). Returns the count."""
    documents = document_count(files, format, show_progress)
    where = ", ".join(map(str, files))
    if documents == 0:
        raise ValueError(f"corpus file(s) {where} hold no text")
    held = heldout_count(documents, heldout)
    if held >= documents:
        raise ValueError(
            f"--heldout {heldout:g} sets aside {held} of the {documents} documents of {where}, leaving none to train on"
        )
    if nsp:
        check_nsp_split(documents - held, held, documents, where, "--heldout")
    return documents


def check_nsp_split(train: int, held: int, documents: int, where: str, flag: str = "the held-out share (--heldout)"):
    """NSP's random next sentences come from other documents: two in each non-empty split."""
    if train < 2 or 0 < held < 2:
        raise ValueError(
            f"NSP draws its random next sentences from other documents, so it needs at least two in each "
            f"split; {where} hold {documents} document(s): {train} for training and {held} held out; "
            f"give more documents (a blank line separates them) or change {flag}"
        )
