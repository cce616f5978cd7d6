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
    "EncoderConfig", "Tokenizer", "Pipeline", "finetune", "pretrain",
]


def __getattr__(name: str):  # imported on first use, so `import bertology` stays light
    if name == "Tokenizer":
        from .tokenizers import Tokenizer

        return Tokenizer
    if name == "Pipeline":
        from .tasks.pipeline import Pipeline

        return Pipeline
    if name == "finetune":
        from .tasks.finetune import finetune

        return finetune
    if name == "pretrain":
        from .train.pretrain import pretrain

        return pretrain
    raise AttributeError(f"module 'bertology' has no attribute {name!r}")
