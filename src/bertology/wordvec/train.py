"""The whole training job behind `bertology wordvec train`: read the corpus twice (count, then
encode), train word2vec or GloVe, write the vectors atomically.

    >>> vectors, stats = train(TrainOptions(corpus=["text.txt"], algorithm="skipgram", out="v.txt"))  # doctest: +SKIP
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..progress import progress_bar
from ..tokenizers import Tokenizer
from .corpus import Corpus, LineSentences, PieceSentences
from .graph import Graph
from .items import Baskets, basket_window
from .options import TrainOptions
from .vectors import KeyedVectors
from .vocab import Vocab


def _bar(total: int | None, desc: str, quiet: bool):
    """A progress bar counting words (with words/s), or None when quiet."""
    if quiet:
        return None
    return progress_bar(total=total, desc=desc, unit=" words", unit_scale=True, leave=False)


def train(options: TrainOptions, sentence_ids=None) -> tuple[KeyedVectors, dict]:
    """Train the vectors `options` describe; write them to options.out if given. Returns the
    vectors and a summary (vocabulary size, words, seconds, words/s …). `sentence_ids`: how a text
    file's pieces are read with --tokenizer (PieceSentences; data.tokenstore.sentence_ids reads the
    pretraining token store on every core)."""
    if not options.corpus:
        raise ValueError("no corpus file given")
    out = options.out
    if out is not None and os.path.isdir(out):
        raise IsADirectoryError(f"--out {out}: is a directory; give a file name")
    if options.graph:
        return _train_graph(options)
    if options.tokenizer is not None:  # a bad tokenizer file fails here, before the corpus is read
        tokenizer = Tokenizer.load(options.tokenizer)
        sentences = PieceSentences(options.corpus, tokenizer, options.text_column, sentence_ids)
    elif options.items:
        sentences = Baskets(options.corpus, options.text_column)
    else:
        sentences = LineSentences(options.corpus, lowercase=options.lowercase, text_column=options.text_column)
    files = ", ".join(options.corpus)

    start = time.perf_counter()
    bar = _bar(None, "vocabulary", options.quiet)
    vocab = Vocab.build(sentences, options.min_count, options.max_vocab_size, bar.update if bar is not None else None)
    if bar is not None:
        bar.close()
    if vocab.total_words == 0:
        raise ValueError(f"{files}: the corpus has no words")
    if len(vocab) == 0:
        raise ValueError(
            f"{files}: no word occurs --min-count {options.min_count} times "
            f"({vocab.total_words:,} words read); lower --min-count or give more text"
        )
    corpus = Corpus.encode(sentences, vocab)
    prepare_seconds = time.perf_counter() - start

    rng = np.random.default_rng(options.seed)
    if options.algorithm == "glove":
        from .glove import glove as fit

        bar = _bar(None, "glove", options.quiet)
    else:
        from .word2vec import word2vec as fit

        bar = _bar(corpus.raw_words * options.epoch_count, options.algorithm, options.quiet)
    # item2vec: every item of a basket in every other's context (a window as long as the longest basket, not shrunk)
    context = dict(window=basket_window(corpus), shrink=False) if options.items else {}
    try:
        vectors, stats = fit(corpus, vocab, options, rng, bar.update if bar is not None else None, **context)
    finally:
        if bar is not None:
            bar.close()
    if out is not None:
        vectors.save(out, binary=True if options.binary else None)
    summary = {
        "algorithm": options.algorithm,
        "items": options.items,
        "graph": False,
        "tokenizer": options.tokenizer,
        "vocabulary": len(vocab),
        "corpus_words": vocab.total_words,
        "sentences": vocab.sentences,
        "prepare_seconds": prepare_seconds,
        **stats,
        "out": out,
    }
    return vectors, summary


def _train_graph(options: TrainOptions) -> tuple[KeyedVectors, dict]:
    """--graph: read the edge lists, walk, train; the summary adds the graph's and the walks' counts."""
    from .walks import node_vectors

    graph = Graph.read(options.corpus, directed=options.directed)
    start = time.perf_counter()
    bar = _bar(None, options.walk, options.quiet)
    try:
        update = bar.update if bar is not None else None
        vectors, stats = node_vectors(graph, options, np.random.default_rng(options.seed), update)
    finally:
        if bar is not None:
            bar.close()
    if options.out is not None:
        vectors.save(options.out, binary=True if options.binary else None)
    summary = {
        "algorithm": options.algorithm,
        "items": False,
        "graph": True,
        "walk": options.walk,
        "tokenizer": None,
        "vocabulary": len(vectors),
        "corpus_words": stats["walk_nodes"],
        "sentences": stats["walks"],
        "prepare_seconds": stats["walk_seconds"],
        **stats,
        "total_seconds": time.perf_counter() - start,
        "out": options.out,
    }
    return vectors, summary
