"""Start a model's token embedding from word vectors: the seed's arc from word2vec / GloVe to BERT.

The vectors are keyed by the tokenizer's own pieces (`bertology wordvec train --tokenizer
tokenizer.json`), so row i of the embedding takes the vector of piece i. Pieces without a vector
(the special tokens, pieces rarer than the word-vector min_count) keep their initial values and
are counted; vectors whose key is not a piece are counted too.

    >>> vectors = read_init_vectors("pieces.txt", config)                   # doctest: +SKIP
    >>> init_token_embeddings(model, tokenizer, vectors, "pieces.txt").copied  # doctest: +SKIP

Scale: the vectors are copied as they are by default, although word2vec's come out an order of
magnitude larger than the N(0, initializer_range) BERT draws every other embedding row from. Both
choices were measured on a short BERT-tiny pretraining (the demo's recipe, more than one seed; see
docs/wordvec.md): the raw vectors reached a lower held-out MLM loss than the same vectors rescaled so that
their standard deviation matched the init's, and both beat the random start. Larger rows let each
piece's identity outweigh the position and token-type embeddings it is summed with before the
LayerNorm, and the MLM decoder (tied to the same matrix) starts with logits that already favour
pieces near the context; what the raw scale costs is a slower start of the sentence-pair head.
`rescale=True` multiplies every copied vector by one factor (the geometry, cosines and relative
norms, intact) so that their standard deviation is the config's initializer_range.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..wordvec.vectors import KeyedVectors
from .config import EncoderConfig

# above this share of the embedding's rows left without a vector, the run warns: the vectors
# were probably trained with another tokenizer (or on too little text for their min_count)
MISSING_WARNING = 0.25


def embedding_size(config: EncoderConfig) -> int:
    """E, the width of the token embedding: ALBERT's embedding_size, else the hidden size."""
    return getattr(config, "embedding_size", None) or config.hidden_size


def read_init_vectors(path: str | os.PathLike, config: EncoderConfig) -> KeyedVectors:
    """The word vectors at `path` (word2vec text or binary format), checked against the model
    `config` describes before anything is written: the file exists and parses, and its vectors
    are as wide as the token embedding."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"--init-embeddings {path}: " + ("not a file" if os.path.exists(path) else "no such file")
        )
    vectors = KeyedVectors.load(path)
    size = embedding_size(config)
    if vectors.vector_size != size:
        what = "embedding_size" if getattr(config, "embedding_size", None) else "hidden_size"
        raise ValueError(
            f"--init-embeddings {path}: its vectors have {vectors.vector_size} dimensions but the "
            f"{config.model_type} token embedding has {size} ({what}); train vectors with "
            f"--vector-size {size}"
        )
    return vectors


def token_embedding(model: nn.Module) -> nn.Embedding:
    """The token (word-piece) embedding of an encoder model or of a task model around one."""
    backbone = getattr(model, "backbone", model)
    word = getattr(getattr(backbone, "embeddings", None), "word", None) or getattr(backbone, "word", None)  # XLNet's
    if not isinstance(word, nn.Embedding):
        raise TypeError(f"{type(model).__name__} has no token embedding (backbone.embeddings.word or backbone.word)")
    return word


@dataclass
class EmbeddingInit:
    """What init_token_embeddings did."""

    path: str
    rows: int  # the embedding's rows: the vocabulary size
    copied: int  # rows that took a vector
    missing: list[str]  # pieces without a vector, in id order: their rows kept their initial values
    unused: int  # vectors whose key is no piece of the vocabulary
    scale: float  # the factor every copied vector was multiplied by

    @property
    def missing_fraction(self) -> float:
        return len(self.missing) / self.rows

    def summary(self) -> dict:
        return {
            "path": self.path,
            "rows": self.rows,
            "copied": self.copied,
            "missing": len(self.missing),
            "missing_fraction": self.missing_fraction,
            "unused_vectors": self.unused,
            "scale": self.scale,
        }

    def __str__(self) -> str:
        shown = ", ".join(self.missing[:8]) + (", …" if len(self.missing) > 8 else "")
        return (
            f"--init-embeddings {self.path}: {self.copied:,} of {self.rows:,} embedding rows copied "
            f"(scaled by {self.scale:.4g}); {len(self.missing):,} pieces ({self.missing_fraction:.1%}) have no "
            f"vector and keep their initial values"
            + (f" ({shown})" if self.missing else "")
            + (f"; {self.unused:,} vectors are not vocabulary pieces" if self.unused else "")
        )


def init_token_embeddings(
    model: nn.Module,
    tokenizer,
    vectors: KeyedVectors,
    path: str | os.PathLike = "vectors",
    rescale: bool = False,
    log: bool = False,
) -> EmbeddingInit:
    """Copy `vectors` into the model's token embedding, row `tokenizer.token_to_id(piece)` for
    each vector whose key is a piece: as they are, or with `rescale` scaled so that the copied
    values have the standard deviation of the model's initialisation, config.initializer_range. The padding row
    is never written (a vector for the pad piece is skipped). Warns when more than MISSING_WARNING of the rows get no vector; with `log`, the
    outcome is written to stderr as one line."""
    path = os.fspath(path)
    embedding = token_embedding(model)
    if vectors.vector_size != embedding.embedding_dim:
        raise ValueError(
            f"--init-embeddings {path}: its vectors have {vectors.vector_size} dimensions but the "
            f"token embedding has {embedding.embedding_dim}"
        )
    rows, pad = embedding.num_embeddings, embedding.padding_idx
    ids, keys = [], []  # (embedding row, vector row) pairs
    for k, piece in enumerate(vectors.index_to_key):
        i = tokenizer.token_to_id(piece)
        if i is not None and i < rows and i != pad:
            ids.append(i)
            keys.append(k)
    taken = vectors.vectors[keys].astype(np.float64)  # (copied, E)
    scale = 1.0
    if rescale and len(keys) and taken.std() > 0:
        scale = float(model.config.initializer_range / taken.std())
    weight = embedding.weight
    with torch.no_grad():
        weight[torch.tensor(ids, dtype=torch.long)] = torch.from_numpy(taken * scale).to(weight.dtype).to(weight.device)
    copied = set(ids)
    missing = [tokenizer.id_to_token(i) or f"<id {i}>" for i in range(rows) if i not in copied]
    result = EmbeddingInit(path, rows, len(ids), missing, len(vectors) - len(ids), scale)
    if log:
        print(result, file=sys.stderr)
    if result.missing_fraction > MISSING_WARNING:
        warnings.warn(
            f"--init-embeddings {path}: {len(missing):,} of {rows:,} pieces ({result.missing_fraction:.0%}) "
            "have no vector; were the vectors trained over this tokenizer's pieces "
            "(`bertology wordvec train --tokenizer`)?",
            stacklevel=2,
        )
    return result
