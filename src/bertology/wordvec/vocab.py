"""The vocabulary of a word-vector model and the three tables word2vec derives from its counts:
subsampling keep probabilities, the unigram^0.75 noise distribution, and the Huffman tree.

    >>> vocab = Vocab.build([["a", "b", "a"], ["a", "c"]], min_count=1)
    >>> vocab.words, vocab.counts.tolist(), vocab.total_words
    (['a', 'b', 'c'], [3, 1, 1], 5)

Words are sorted by descending count (ties: first seen first), as gensim and the C tool sort them,
so index 0 is the most frequent word and `restrict_vocab` means "the N most frequent".
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

# gensim's noise-table domain: cumulative weights are scaled to integers in [0, 2**31 - 1].
NOISE_DOMAIN = 2**31 - 1


def keep_probability(counts: np.ndarray, sample: float) -> np.ndarray:
    """word2vec's subsampling: a word of count c among N retained words is kept with probability
    (√(c / t) + 1) · t / c, capped at 1, where t = sample · N (the C tool's and gensim's formula).

    >>> keep_probability(np.array([1000, 10]), 1e-3).round(4).tolist()   # t = 1.01
    [0.0328, 0.4188]
    """
    counts = np.asarray(counts, dtype=np.float64)
    if not sample:
        return np.ones_like(counts)
    threshold = sample * counts.sum()
    return np.minimum((np.sqrt(counts / threshold) + 1) * threshold / counts, 1.0)


def noise_distribution(counts: np.ndarray, exponent: float = 0.75) -> np.ndarray:
    """P(w) ∝ count(w)^exponent: negative sampling's noise distribution (Mikolov et al. 2013).

    >>> noise_distribution(np.array([16, 1]), 0.5).tolist()
    [0.8, 0.2]
    """
    weights = np.asarray(counts, dtype=np.float64) ** exponent
    return weights / weights.sum()


def noise_table(counts: np.ndarray, exponent: float = 0.75) -> np.ndarray:
    """gensim's `cum_table`: the cumulative noise distribution scaled to integers ending at
    NOISE_DOMAIN; a draw r in [0, table[-1]) picks the first index whose entry exceeds r.

    >>> noise_table(np.array([3, 1]), 1.0).tolist()
    [1610612735, 2147483647]
    """
    weights = np.asarray(counts, dtype=np.float64) ** exponent
    return np.round(np.cumsum(weights) / weights.sum() * NOISE_DOMAIN).astype(np.int64)


def alias_table(counts: np.ndarray, exponent: float = 0.75) -> np.ndarray:
    """Walker's alias table of the noise distribution, shape (V, 2) int64: draw a slot k uniformly
    and a 32-bit u; the word is k if u < table[k, 0], else table[k, 1]. Exact (to 2^-32) and V
    entries long, so a draw is two reads in a table that stays in cache; the C tool's 10^8-slot
    unigram table, or gensim's search in `noise_table`, miss the cache on large vocabularies.

    >>> alias_table(np.array([3, 1]), 1.0).tolist()   # slot 0: always word 0; slot 1: word 1 half the time
    [[4294967296, 0], [2147483648, 0]]
    """
    p = noise_distribution(counts, exponent) * len(counts)
    table = np.zeros((len(p), 2), dtype=np.int64)
    table[:, 1] = np.arange(len(p))
    small = [i for i in range(len(p)) if p[i] < 1.0]
    large = [i for i in range(len(p)) if p[i] >= 1.0]
    while small and large:  # Vose: fill each short slot with the remainder of a tall one
        short, tall = small.pop(), large.pop()
        table[short] = (round(p[short] * 2**32), tall)
        p[tall] -= 1.0 - p[short]
        (small if p[tall] < 1.0 else large).append(tall)
    for i in small + large:  # what is left is 1 up to rounding
        table[i] = (2**32, i)
    return table


def alias_probabilities(table: np.ndarray) -> np.ndarray:
    """The distribution an alias table draws from (for checking it)."""
    stay = table[:, 0] / 2**32
    return (stay + np.bincount(table[:, 1], 1 - stay, minlength=len(table))) / len(table)


@dataclass
class Huffman:
    """Each word's path in the Huffman tree, packed: word w's binary code is
    codes[offsets[w]:offsets[w + 1]] and the inner nodes it passes are points[...] (same slice)."""

    offsets: np.ndarray  # int64, V + 1
    codes: np.ndarray  # uint8: 0 = left, 1 = right
    points: np.ndarray  # int32: inner-node rows of syn1, root first

    def code(self, w: int) -> list[int]:
        return self.codes[self.offsets[w] : self.offsets[w + 1]].tolist()


def huffman_tree(counts: np.ndarray) -> Huffman:
    """Huffman codes over word counts, built as gensim builds them (a heap of (count, index); the
    node merged at step i gets index V + i and syn1 row i), so the codes and points equal gensim's.

    >>> huffman_tree(np.array([5, 2, 1, 1])).code(0), huffman_tree(np.array([5, 2, 1, 1])).code(3)
    ([1], [0, 1, 1])
    """
    vocab_size = len(counts)
    heap = [(int(c), i, None, None) for i, c in enumerate(counts)]
    heapq.heapify(heap)
    for i in range(vocab_size - 1):
        a, b = heapq.heappop(heap), heapq.heappop(heap)
        heapq.heappush(heap, (a[0] + b[0], vocab_size + i, a, b))
    paths: list[tuple[list[int], list[int]]] = [([], [])] * vocab_size
    stack = [(heap[0], [], [])] if heap else []
    while stack:
        node, code, points = stack.pop()
        if node[1] < vocab_size:
            paths[node[1]] = (code, points)
        else:
            points = points + [node[1] - vocab_size]
            stack.append((node[2], code + [0], points))
            stack.append((node[3], code + [1], points))
    lengths = np.array([len(c) for c, _ in paths], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return Huffman(
        offsets,
        np.array([b for c, _ in paths for b in c], dtype=np.uint8),
        np.array([p for _, ps in paths for p in ps], dtype=np.int32),
    )


@dataclass
class Vocab:
    words: list[str]
    counts: np.ndarray  # int64, descending
    total_words: int  # every token read, rare ones included
    sentences: int = 0
    index: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if not self.index:
            self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    @classmethod
    def build(
        cls, sentences: Iterable[list[str]], min_count: int = 5, max_vocab_size: int | None = None, progress=None
    ) -> "Vocab":
        """Count words in one streamed pass. With `max_vocab_size`, whenever the table grows past it
        the words seen at most `n` times are dropped (n = 1, 2, … on successive prunings), as gensim
        does, so memory stays bounded and the counts of frequent words stay exact enough.
        `progress(words)` is called every ~100,000 tokens."""
        raw: dict[str, int] = {}
        total = n_sentences = 0
        min_reduce, last = 1, 0
        for sentence in sentences:
            n_sentences += 1
            for w in sentence:
                raw[w] = raw.get(w, 0) + 1
            total += len(sentence)
            if max_vocab_size and len(raw) > max_vocab_size:
                raw = {w: c for w, c in raw.items() if c > min_reduce}
                min_reduce += 1
            if progress is not None and total - last >= 100_000:
                progress(total - last)
                last = total
        if progress is not None and total > last:
            progress(total - last)
        kept = [(w, c) for w, c in raw.items() if c >= min_count]  # dict order = first seen
        kept.sort(key=lambda wc: -wc[1])  # stable: ties keep first-seen order
        return cls([w for w, _ in kept], np.array([c for _, c in kept], dtype=np.int64), total, n_sentences)

    def encode(self, sentence: list[str]) -> list[int]:
        """Indices of the in-vocabulary words of a sentence (the others are dropped, as in word2vec)."""
        index = self.index
        return [index[w] for w in sentence if w in index]
