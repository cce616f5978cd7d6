"""Word vectors before BERT: word2vec (skip-gram, CBOW; negative sampling, hierarchical softmax)
and GloVe, trained by compiled loops on a few threads, with gensim-compatible vectors and evaluation.

    >>> from bertology.wordvec import TrainOptions                    # doctest: +SKIP
    >>> from bertology.wordvec.train import train                     # doctest: +SKIP
    >>> vectors, stats = train(TrainOptions(corpus=["text.txt"], algorithm="skipgram"))  # doctest: +SKIP
    >>> vectors.most_similar("paris", topn=3)                           # doctest: +SKIP

Modules: vocab (counts, subsampling, noise table, Huffman tree), corpus (reading and encoding
text), word2vec, glove, vectors (KeyedVectors, word2vec formats), evaluate (analogies, word
pairs), train (the whole job), plot (2-D PCA picture), cli; items (item2vec's baskets), graph
(edge lists as CSR), walks (DeepWalk / node2vec walks streamed to word2vec's trainer). Submodules load on first use, so
`import bertology.wordvec` stays light (no numba, no matplotlib). The package exports classes and the
evaluation functions; the trainers `train`, `word2vec` and `glove` come from their modules of the same
name (a package attribute of that name is the submodule once it is imported).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "TrainOptions": "options",
    "Vocab": "vocab",
    "Corpus": "corpus",
    "LineSentences": "corpus",
    "KeyedVectors": "vectors",
    "evaluate_analogies": "evaluate",
    "evaluate_pairs": "evaluate",
    "Baskets": "items",
    "Graph": "graph",
    "Walks": "walks",
    "node_vectors": "walks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
