"""Item embeddings (item2vec, Barkan & Koenigstein 2016): skip-gram with negative sampling where
the context of an item is the rest of its basket or session, order ignored.

A line of the files is one basket (a session, an order, a playlist), its items separated by
whitespace or tabs; an item listed twice in a basket counts once (a basket is a set). Training is
word2vec's, with a window as long as the longest basket and the dynamic window off, so every
item of a basket is in the context of every other (`kernels.context_span`); frequent items are
subsampled as word2vec subsamples frequent words.

    >>> next(iter(Baskets.of([["milk", "bread", "milk", "eggs"]])))
    ['milk', 'bread', 'eggs']
"""

from __future__ import annotations

import os
from typing import Iterable, Iterator

import numpy as np

from ..tables import DEFAULT_TEXT_COLUMN
from .corpus import Corpus, check_files, read_lines


class Baskets:
    """Re-iterable baskets of UTF-8 files (.gz, .xz, .bz2 decompressed on the fly), each a list of
    distinct items in order of first appearance; empty lines are no basket."""

    def __init__(self, paths: Iterable[str | os.PathLike], text_column: str = DEFAULT_TEXT_COLUMN):
        self.paths = [os.fspath(p) for p in paths]
        self.text_column = text_column
        self._given: list[list[str]] | None = None
        check_files(self.paths, text_column)

    @classmethod
    def of(cls, baskets: Iterable[Iterable[str]]) -> "Baskets":
        """Baskets held in memory (lists of items)."""
        made = cls([])
        made._given = [list(b) for b in baskets]
        return made

    def __iter__(self) -> Iterator[list[str]]:
        lines = (
            (b for b in self._given)
            if self._given is not None
            else (line.split() for line in read_lines(self.paths, self.text_column))
        )
        for items in lines:
            if items:
                yield list(dict.fromkeys(items))


def basket_window(corpus: Corpus) -> int:
    """The window that makes each item's context its whole basket: the longest basket's length
    (at least 1).

    >>> basket_window(Corpus(np.zeros(5, np.int32), np.array([0, 2, 5]), np.array([0, 2, 5])))
    3
    """
    return max(int(np.diff(corpus.starts).max(initial=0)), 1)
