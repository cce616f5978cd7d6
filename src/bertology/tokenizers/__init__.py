"""Subword tokenizers: the Normalizer -> PreTokenizer -> Model -> PostProcessor -> Decoder
pipeline, the BPE / WordPiece / Unigram models and their trainers, tokenizer.json I/O.

Each stage reads as its Hugging Face `tokenizers` counterpart, and `Tokenizer.encode_sequence`
is the pipeline as the textbook writes it. The speed work (word caches, whole batches at once,
worker processes) is all in fast/, the one place that looks at the stages' concrete types.

    >>> from bertology.tokenizers import Tokenizer          # doctest: +SKIP
    >>> tok = Tokenizer.load("bert-base-uncased/")           # doctest: +SKIP
    >>> tok.encode("Hello, world!").tokens                   # doctest: +SKIP
    ['[CLS]', 'hello', ',', 'world', '!', '[SEP]']
"""

from . import decoders, normalizers, post_processors, pre_tokenizers
from .base import Model, Token
from .bpe import BPE
from .encoding import Encoding
from .added_tokens import AddedToken
from .tokenizer import Tokenizer
from .wordpiece import WordPiece

__all__ = [
    "Tokenizer",
    "Encoding",
    "AddedToken",
    "Model",
    "Token",
    "BPE",
    "WordPiece",
    "train",
    "normalizers",
    "pre_tokenizers",
    "post_processors",
    "decoders",
]


def __getattr__(name):
    # train() lives in .training (the trainers' side); imported on first use so that loading and
    # encoding never pay for the trainers.
    if name == "train":
        from .training import train

        return train
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
