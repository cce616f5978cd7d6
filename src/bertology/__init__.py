"""bertology: BERT and its variants (RoBERTa, ALBERT, DistilBERT, XLNet, ELECTRA), their tokenizers and word
vectors, from scratch.

    >>> import bertology
    >>> model = bertology.load("path/to/hf-model-dir")       # doctest: +SKIP
    >>> model.save("out-dir")                                  # doctest: +SKIP

`load` reads a BERT, RoBERTa, ALBERT, DistilBERT, XLNet or ELECTRA directory; what `save` writes loads in
transformers with the same outputs.

Names are imported on first use, so that `import bertology` (and the tokenizer commands, which
need no torch) start fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_WHERE = {
    "load": "models",
    "CheckpointError": "models",
    "load_for_task": "models",
    "save": "models",
    "from_config": "models",
    "BertConfig": "models",
    "RobertaConfig": "models",
    "AlbertConfig": "models",
    "DistilBertConfig": "models",
    "EncoderConfig": "models",
    "save_sentence_transformers": "export.sentence_layout",
    "Tokenizer": "tokenizers",
    "export_onnx": "export.onnx",
    "Pipeline": "tasks.pipeline",
    "finetune": "tasks.finetune",
    "pretrain": "train.pretrain",
}
__all__ = list(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'bertology' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
