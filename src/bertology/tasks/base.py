"""The contract every fine-tuning task fulfils; the fine-tuning job (finetune.py) drives it.

A task knows how to read its files, which labels exist, how examples become model inputs
(features: fixed-length rows of token ids), how to compute the loss-bearing labels, how to turn
model outputs back into predictions on the original examples, and how to score them.

    examples = task.read(path)                        # list of Example, errors name the file and line
    labels = task.label_set(train_examples)           # names in id order (None: no label vocabulary)
    features = task.featurize(examples, tokenizer, max_length, label2id)
    batch = features.batch(indices)                   # dict: model keyword arguments + labels
    predictions = task.predict(outputs, features, examples)   # outputs: list of model output batches
    scores = task.metrics(predictions, examples)      # {"accuracy": …, …}; task.main_metric names the one to select on
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import torch


@dataclass
class Example:
    """One labelled (or unlabelled) input as read from a file; `where` is "file:line" for messages."""

    text: Any  # a string; a list of words (tagging); a question (QA); a context (choice)
    pair: Any = None  # second text (pairs), the QA context, or the list of choices
    label: Any = None  # class name, float, list of tags, list of answers {text, start}, choice index
    id: str | None = None
    where: str = ""


@dataclass
class Features:
    """Model-ready rows. `tensors` share their first dimension; `rows_of_example[i]` lists the rows of example i
    (one row, except for QA windows); `extra` keeps what post-processing needs (offsets, word ids …)."""

    tensors: dict[str, torch.Tensor]
    rows_of_example: list[list[int]]
    extra: dict[str, Any] = field(default_factory=dict)
    truncated: int = 0  # how many examples lost tokens to truncation (reported, never silent)

    def __len__(self) -> int:
        return next(iter(self.tensors.values())).shape[0]

    def batch(self, indices: Sequence[int] | torch.Tensor) -> dict[str, torch.Tensor]:
        index = torch.as_tensor(indices, dtype=torch.long)
        return {k: v.index_select(0, index) for k, v in self.tensors.items()}


class PaddedFeatures(Features):
    """Rows padded to the longest example; a batch is cut to the columns its own rows use, so short
    texts do not pay for one long one (the mask made the cut columns inert anyway). Padding may sit on
    either side (XLNet's is on the left). Rows of any shape ending in tokens: (N, T) sequences, (N, C, T)
    choices or prompt copies; a tensor other than the labels is cut where its shape ends like the mask's."""

    def batch(self, indices) -> dict[str, torch.Tensor]:
        out = super().batch(indices)
        mask = out["attention_mask"]  # (B, …, T)
        used = mask.bool().flatten(0, -2).any(0).nonzero().flatten()  # columns holding some row's token
        lo, hi = (int(used[0]), int(used[-1]) + 1) if len(used) else (0, 0)
        return {k: v[..., lo:hi] if k != "labels" and v.shape[1:] == mask.shape[1:] else v for k, v in out.items()}


class Task(ABC):
    name: ClassVar[str]  # the --task value: classify, pair, regress, tag, qa, choice
    head: ClassVar[str]  # architecture suffix: ForSequenceClassification, ForTokenClassification, …
    main_metric: ClassVar[str]  # the dev metric that picks the best checkpoint (higher is better)

    @abstractmethod
    def read(self, path: str, **columns) -> list[Example]: ...

    def label_set(self, examples: list[Example]) -> list[str] | None:
        """Label names in id order, from the training data (None when the task has no label vocabulary)."""
        return None

    @abstractmethod
    def featurize(
        self, examples: list[Example], tokenizer, max_length: int, label2id: dict[str, int] | None, stride: int = 128
    ) -> Features: ...

    @abstractmethod
    def predict(
        self, outputs: list[Any], features: Features, examples: list[Example], id2label: dict[int, str] | None
    ) -> list[Any]: ...

    @abstractmethod
    def metrics(self, predictions: list[Any], examples: list[Example]) -> dict[str, float]: ...

    def format_prediction(self, prediction: Any) -> str:
        return str(prediction)
