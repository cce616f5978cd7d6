"""GloVe (Pennington et al. 2014): weighted least squares on the log co-occurrence counts,
trained with AdaGrad, as GloVe's C tools (cooccur, shuffle, glove) do it.

    J = Σᵢⱼ f(Xᵢⱼ) (wᵢ·w̃ⱼ + bᵢ + b̃ⱼ − log Xᵢⱼ)²,   f(x) = (x / x_max)^power if x < x_max else 1

Counting streams the corpus in chunks of ~250,000 words: each chunk's pairs are sorted and summed
in place and merged into one sorted sparse list, so memory grows with the distinct pairs, never
with V². Xᵢⱼ adds 1/d for every occurrence of j at distance d ≤ window from i (both directions,
within a line). The vectors returned are W + W̃, as glove.c's default output (model 2).
"""

from __future__ import annotations

import time

import numpy as np

from . import kernels
from .corpus import Corpus
from .options import TrainOptions
from .vectors import KeyedVectors
from .vocab import Vocab
from .workers import run_jobs

CHUNK_WORDS = 250_000
GRAD_CLIP = 100.0  # glove.c's grad_clip_value


def cooccurrence(
    corpus: Corpus, vocab_size: int, window: int, chunk_words: int = CHUNK_WORDS, progress=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The symmetric co-occurrence matrix as (rows, cols, values), sorted by (row, col).

    >>> c = Corpus(np.array([0, 1, 0], np.int32), np.array([0, 3]), np.array([0, 3]))
    >>> rows, cols, values = cooccurrence(c, 2, window=2)
    >>> [(int(r), int(c), float(v)) for r, c, v in zip(rows, cols, values)]
    [(0, 0, 1.0), (0, 1, 2.0), (1, 0, 2.0)]
    """
    keys, weights = np.zeros(0, np.int64), np.zeros(0, np.float64)
    s = 0
    while s < len(corpus):
        end = int(np.searchsorted(corpus.starts, corpus.starts[s] + chunk_words, side="right"))
        end = min(max(end - 1, s + 1), len(corpus))
        k, w = kernels.cooccurrence_chunk(corpus.tokens, corpus.starts, s, end, window, vocab_size)
        keys, weights = kernels.merge_counts(keys, weights, k, w)
        if progress is not None:
            progress(int(corpus.raw_before[end] - corpus.raw_before[s]))
        s = end
    a, b = keys // vocab_size, keys % vocab_size
    off = a != b  # a pair (a, b), a < b, stands for both cells; (a, a) met both ways counts twice
    rows = np.concatenate([a, b[off]]).astype(np.int32)
    cols = np.concatenate([b, a[off]]).astype(np.int32)
    values = np.concatenate([np.where(off, weights, 2 * weights), weights[off]])
    order = np.lexsort((cols, rows))
    return rows[order], cols[order], values[order]


def weighting(x: np.ndarray, x_max: float = 100.0, power: float = 0.75) -> np.ndarray:
    """f(x) = (x / x_max)^power below x_max, else 1.

    >>> weighting(np.array([1.0, 100.0, 500.0]), x_max=100, power=0.5).tolist()
    [0.1, 1.0, 1.0]
    """
    return np.where(x < x_max, (x / x_max) ** power, 1.0)


def glove_cost(W, C, bw, bc, rows, cols, values, x_max=100.0, power=0.75) -> float:
    """J/2 = ½ Σ f(x)(wᵢ·w̃ⱼ + bᵢ + b̃ⱼ − log x)², the quantity glove.c reports (a numpy reference)."""
    diff = np.einsum("nd,nd->n", W[rows], C[cols]) + bw[rows] + bc[cols] - np.log(values)
    return float(0.5 * np.sum(weighting(values, x_max, power) * diff**2))


def glove_gradients(W, C, bw, bc, rows, cols, values, x_max=100.0, power=0.75):
    """Gradients of `glove_cost` with respect to W, C, bw, bc (a numpy reference)."""
    diff = np.einsum("nd,nd->n", W[rows], C[cols]) + bw[rows] + bc[cols] - np.log(values)
    fdiff = weighting(values, x_max, power) * diff
    gW, gC = np.zeros_like(W), np.zeros_like(C)
    np.add.at(gW, rows, fdiff[:, None] * C[cols])
    np.add.at(gC, cols, fdiff[:, None] * W[rows])
    return gW, gC, np.bincount(rows, fdiff, len(bw)), np.bincount(cols, fdiff, len(bc))


def glove(
    corpus: Corpus, vocab: Vocab, options: TrainOptions, rng: np.random.Generator, progress=None
) -> tuple[KeyedVectors, dict]:
    """Count co-occurrences, then train `options.epoch_count` AdaGrad passes over them in a
    shuffled order (shuffled once, as GloVe's shuffle tool), `options.workers` threads."""
    if len(vocab) == 0:
        raise ValueError("the vocabulary is empty: no word occurs --min-count times")
    V, D = len(vocab), options.vector_size
    start = time.perf_counter()
    rows, cols, values = cooccurrence(corpus, V, options.window_size)
    count_seconds = time.perf_counter() - start
    if len(values) == 0:
        raise ValueError("no two vocabulary words ever occur within the window of each other: nothing to fit")

    def init(*shape):
        return ((rng.random(shape, dtype=np.float32) - 0.5) / D).astype(np.float32)

    W, C, bw, bc = init(V, D), init(V, D), init(V), init(V)
    gW, gC = np.ones((V, D), np.float32), np.ones((V, D), np.float32)
    gbw, gbc = np.ones(V, np.float32), np.ones(V, np.float32)
    order = rng.permutation(len(values))
    epochs = options.epoch_count
    parts = max(options.workers * 4, 1)
    cuts = np.linspace(0, len(values), parts + 1).astype(np.int64)
    costs = np.zeros(epochs)

    def job(k: int) -> float:
        p = k % parts
        return kernels.glove_job(
            W,
            C,
            bw,
            bc,
            gW,
            gC,
            gbw,
            gbc,
            rows,
            cols,
            values,
            order,
            cuts[p],
            cuts[p + 1],
            options.x_max,
            options.power,
            options.eta,
            GRAD_CLIP,
        )

    def done(k: int, cost: float) -> None:
        costs[k // parts] += cost
        if progress is not None:
            progress(int(cuts[k % parts + 1] - cuts[k % parts]))

    start = time.perf_counter()
    run_jobs(epochs * parts, job, options.workers, done)
    seconds = time.perf_counter() - start
    stats = {
        "raw_words": corpus.raw_words,
        "cooccurrences": len(values),
        "count_seconds": count_seconds,
        "count_words_per_s": corpus.raw_words / count_seconds if count_seconds > 0 else float("inf"),
        "seconds": seconds,
        "cost": (costs / len(values)).tolist(),
    }
    return KeyedVectors(list(vocab.words), W + C, vocab.counts.copy()), stats
