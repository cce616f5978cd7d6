"""The tokenized corpus on disk, and the one rule that holds documents out of training.

Stage 1 of every pretraining objective: documents are read (`corpus.iter_documents`), each
sentence encoded, and the ids and word-start flags appended to flat arrays on disk (plus sentence
and document offsets). `split_documents` then sets whole documents aside, drawn by the seed,
before any instance or stream is made: the MLM store, the permutation-LM streams and their
held-out evaluation all use it, so no held-out sentence ever reaches training.
"""

from __future__ import annotations

import json
import os
import random
from typing import Iterator
from pathlib import Path

import numpy as np
import torch

from ..progress import progress_bar
from .arrays import ArrayWriter, build_cached, open_arrays
from .corpus import check_files, count_documents, iter_documents
from .instances import Segment, tokenize_document


WORD_STARTS = "word_ids"  # where word starts come from: the encodings' word_ids (earlier: guessed from token strings)


class TokenizedCorpus:
    """Flat token ids + word starts of a whole corpus, with sentence and document offsets."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.meta = json.loads((self.dir / "meta.json").read_text())
        if self.meta.get("word_starts") != WORD_STARTS:
            raise ValueError(
                f"{self.dir}: a tokenized corpus of an earlier bertology (word starts guessed from token "
                "strings); it is a cache: delete the directory and the next run builds it again"
            )
        a = open_arrays(self.dir, self.meta["arrays"])
        self.ids, self.starts, self.sent_offsets, self.doc_offsets = (
            a["ids"],
            a["starts"],
            a["sent_offsets"],
            a["doc_offsets"],
        )

    @property
    def num_documents(self) -> int:
        return len(self.doc_offsets) - 1

    @property
    def num_tokens(self) -> int:
        return len(self.ids)

    def token_counts(self, vocab_size: int, documents) -> torch.Tensor:
        """How often each id occurs in `documents` (indices) (V,): one pass over the corpus."""
        chosen = np.zeros(self.num_documents, dtype=bool)
        chosen[np.fromiter(documents, dtype=np.int64)] = True
        doc_tokens = np.diff(np.asarray(self.sent_offsets)[np.asarray(self.doc_offsets)])  # tokens per document
        ids = np.asarray(self.ids, dtype=np.int64)[np.repeat(chosen, doc_tokens)]
        return torch.from_numpy(np.bincount(ids, minlength=vocab_size)[:vocab_size])

    def document(self, d: int) -> list[Segment]:
        s0, s1 = int(self.doc_offsets[d]), int(self.doc_offsets[d + 1])
        bounds = self.sent_offsets[s0 : s1 + 1].tolist()
        ids, starts = (
            self.ids[bounds[0] : bounds[-1]].tolist(),
            self.starts[bounds[0] : bounds[-1]].astype(bool).tolist(),
        )
        base = bounds[0]
        return [Segment(ids[a - base : b - base], starts[a - base : b - base]) for a, b in zip(bounds, bounds[1:])]

    def documents(self, indices) -> Iterator[list[Segment]]:
        return (self.document(d) for d in indices)


def tokenize_corpus(
    files, tokenizer, directory: Path, format: str = "lines", errors: str = "strict", show_progress: bool = False
) -> TokenizedCorpus:
    """Stream documents through the tokenizer into `directory` (atomically; reused when there).

    The tokenizer's own padding and truncation (a tokenizer.json may carry both) are switched
    off on a copy: sentences are packed later, and truncating them would lose text silently."""
    if getattr(tokenizer, "padding", None) is not None or getattr(tokenizer, "truncation", None) is not None:
        tokenizer = type(tokenizer).from_str(tokenizer.to_str())
        tokenizer.no_padding()
        tokenizer.no_truncation()

    def build(tmp: Path) -> dict:
        w = ArrayWriter(
            tmp,
            {
                "ids": ("int32", ()),
                "starts": ("uint8", ()),
                "sent_offsets": ("int64", ()),
                "doc_offsets": ("int64", ()),
            },
        )
        n_tokens, n_sents = 0, 0
        w.add(sent_offsets=0, doc_offsets=0)
        docs = iter_documents(files, format, errors)
        if show_progress:  # the documents counted first (a plain read, ~4% of the time tokenizing takes): a bar with
            # a total, an end time, and in a log a line a tenth of the way rather than one a minute
            docs = progress_bar(docs, total=count_documents(files, format, errors), desc="tokenizing", unit="doc")
        for doc in docs:
            segments = tokenize_document(doc, tokenizer)
            if not segments:
                continue
            for s in segments:
                w.extend("ids", s.ids)
                w.extend("starts", s.starts)
                n_tokens += len(s)
                n_sents += 1
                w.add(sent_offsets=n_tokens)
            w.add(doc_offsets=n_sents)
        return {
            "files": [os.fspath(f) for f in files],
            "format": format,
            "word_starts": WORD_STARTS,
            "arrays": w.close(),
        }

    return TokenizedCorpus(build_cached(Path(directory), build))


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


def check_corpus_documents(files, format: str, heldout: float | int, nsp: bool) -> int:
    """Every file exists and decodes, and there are documents enough for `heldout` (and for NSP,
    two in each split): one streaming pass before anything is written. Returns the count."""
    documents = count_documents(check_files(files), format)
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
