"""word2vec (Mikolov et al. 2013): skip-gram and CBOW, trained with negative sampling and/or
hierarchical softmax, frequent words subsampled, a dynamic window and a linearly decaying rate.

    >>> from bertology.wordvec import TrainOptions, Vocab, Corpus             # doctest: +SKIP
    >>> from bertology.wordvec.word2vec import word2vec                       # doctest: +SKIP
    >>> vocab = Vocab.build(sentences, min_count=5)                            # doctest: +SKIP
    >>> vectors, stats = word2vec(Corpus.encode(sentences, vocab), vocab,   # doctest: +SKIP
    ...                           TrainOptions(algorithm="skipgram"), np.random.default_rng(1))

The corpus pass is cut into jobs of ~10,000 words (gensim's batch size) that `workers` threads
take in order; each job gets its own seed from `rng` and its learning rate from its position in
the whole run, so one worker gives the same vectors for the same seed, and several differ only
by the order of their lock-free updates (as in gensim and the C tool).

Shapes: V vocabulary, D vector size. syn0 (V, D) input vectors (the result), syn1neg (V, D)
output vectors of negative sampling, syn1 (V - 1, D) inner nodes of the Huffman tree.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import kernels
from .corpus import MAX_SENTENCE_LENGTH, Corpus
from .options import TrainOptions
from .vectors import KeyedVectors
from .vocab import Vocab, alias_table, huffman_tree, keep_probability
from .workers import run_jobs

JOB_WORDS = 10_000


def job_bounds(corpus: Corpus, job_words: int = JOB_WORDS) -> np.ndarray:
    """Sentence indices cutting the corpus into runs of about `job_words` words read.

    >>> c = Corpus(np.zeros(0, np.int32), np.zeros(4, np.int64), np.array([0, 6, 12, 13]))
    >>> job_bounds(c, 10).tolist()
    [0, 2, 3]
    """
    targets = np.arange(job_words, corpus.raw_words, job_words)
    cuts = np.searchsorted(corpus.raw_before, targets, side="left")
    return np.unique(np.concatenate([[0], cuts, [len(corpus)]]))


def subsampling_thresholds(counts: np.ndarray, sample: float) -> np.ndarray:
    """gensim's `sample_int`: keep probability × 2^32, rounded; a word is kept when its threshold
    is at least a uniform 32-bit draw (always, at KEEP_ALWAYS)."""
    p = keep_probability(counts, sample)
    return np.where(p >= 1.0, kernels.KEEP_ALWAYS, np.round(p * 2**32)).astype(np.int64)


@dataclass
class Jobs:
    """One epoch of training input cut into jobs: `piece(j)` gives job j's sentences as
    (tokens, starts, raw_before, s_begin, s_end), the arrays of `Corpus` and the range of sentences
    to train on. A corpus in memory is sliced (`corpus_jobs`); graph walks are generated inside the
    job that trains on them (walks.py), so no more than a job's walks per thread are ever held."""

    count: int  # jobs per epoch
    raw_words: int  # words read per epoch, rare ones included (the learning rate's clock)
    piece: Callable[[int], tuple]


def corpus_jobs(corpus: Corpus) -> Jobs:
    bounds = job_bounds(corpus)
    return Jobs(
        len(bounds) - 1,
        corpus.raw_words,
        lambda j: (corpus.tokens, corpus.starts, corpus.raw_before, bounds[j], bounds[j + 1]),
    )


def word2vec(
    corpus: Corpus | Jobs,
    vocab: Vocab,
    options: TrainOptions,
    rng: np.random.Generator,
    progress=None,
    window: int | None = None,
    shrink: bool = True,
) -> tuple[KeyedVectors, dict]:
    """Train skip-gram (options.algorithm == "skipgram") or CBOW vectors; returns the vectors and
    {"raw_words", "effective_words", "seconds", "words_per_s"} (words read per second of training).
    `progress(words)` is called after each job with the words it read. `window` overrides the
    options' window and `shrink=False` turns word2vec's dynamic window off (item2vec)."""
    if options.algorithm not in ("skipgram", "cbow"):
        raise ValueError(f"--algorithm {options.algorithm!r}: word2vec trains skipgram or cbow")
    if len(vocab) == 0:
        raise ValueError("the vocabulary is empty: no word occurs --min-count times")
    jobs = corpus_jobs(corpus) if isinstance(corpus, Corpus) else corpus
    window = window or options.window_size
    V, D = len(vocab), options.vector_size
    syn0 = ((rng.random((V, D), dtype=np.float32) - 0.5) / D).astype(np.float32)
    syn1neg = np.zeros((V, D), dtype=np.float32)
    syn1 = np.zeros((max(V - 1, 1), D), dtype=np.float32)
    tree = huffman_tree(vocab.counts) if options.hs else huffman_tree(np.zeros(0, np.int64))
    noise = alias_table(vocab.counts, options.ns_exponent) if options.negative else np.zeros((1, 2), np.int64)
    keep = subsampling_thresholds(vocab.counts, options.sample)

    per_epoch = jobs.count
    epochs = options.epoch_count
    seeds = rng.integers(1, 2**48, size=epochs * per_epoch, dtype=np.int64)
    raw_total = float(max(jobs.raw_words * epochs, 1))
    scratch = {}
    effective = [0]

    def job(k: int) -> tuple[int, int]:
        epoch, j = divmod(k, per_epoch)
        ident = threading.get_ident()
        if ident not in scratch:  # per-thread buffers: the subsampled sentence, dL/dh, the CBOW mean
            scratch[ident] = (np.empty(MAX_SENTENCE_LENGTH, np.int32), np.empty(D, np.float32), np.empty(D, np.float32))
        buf, work, neu1 = scratch[ident]
        tokens, starts, raw_before, begin, end = jobs.piece(j)
        trained = kernels.word2vec_job(
            syn0,
            syn1neg,
            syn1,
            tokens,
            starts,
            raw_before,
            begin,
            end,
            keep,
            noise,
            tree.offsets,
            tree.codes,
            tree.points,
            options.algorithm == "skipgram",
            options.hs,
            options.negative,
            window,
            shrink,
            not options.cbow_sum,
            options.alpha,
            options.min_alpha,
            float(epoch * jobs.raw_words),
            raw_total,
            int(seeds[k]),
            kernels.EXP_TABLE,
            buf,
            work,
            neu1,
        )
        return trained, int(raw_before[end] - raw_before[begin])

    def done(k: int, result: tuple[int, int]) -> None:
        effective[0] += result[0]
        if progress is not None:
            progress(result[1])

    start = time.perf_counter()
    run_jobs(epochs * per_epoch, job, options.workers, done)
    seconds = time.perf_counter() - start
    raw = jobs.raw_words * epochs
    stats = {
        "raw_words": raw,
        "effective_words": effective[0],
        "seconds": seconds,
        "words_per_s": raw / seconds if seconds > 0 else float("inf"),
    }
    return KeyedVectors(list(vocab.words), syn0, vocab.counts.copy()), stats
