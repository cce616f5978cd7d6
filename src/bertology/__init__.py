"""bertology: BERT and its variants, their tokenizers and word vectors, from scratch.

    >>> import bertology
    >>> model = bertology.load("path/to/hf-model-dir")       # any BERT / RoBERTa / ALBERT / DistilBERT
    >>> model.save("out-dir")                                  # loads in transformers with the same outputs
"""
from .hub import CheckpointError, load
from .models import (
    AlbertConfig, BertConfig, DistilBertConfig, EncoderConfig, RobertaConfig, from_config,
)

__version__ = "0.1.0"
__all__ = [
    "load", "from_config", "CheckpointError", "BertConfig", "RobertaConfig", "AlbertConfig", "DistilBertConfig",
    "EncoderConfig", "Tokenizer",
]


def __getattr__(name: str):
    if name == "Tokenizer":  # imported on first use: the tokenizer package is independent of torch models
        from .tokenizers import Tokenizer

        return Tokenizer
    raise AttributeError(f"module 'bertology' has no attribute {name!r}")
