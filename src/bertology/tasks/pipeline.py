"""`bertology.Pipeline`: a fine-tuned directory as a function from raw inputs to predictions.

    >>> pipe = bertology.Pipeline.load("runs/debian")            # doctest: +SKIP
    >>> pipe("a puzzle game with falling blocks")                  # doctest: +SKIP
    ('games', 0.97, {...})

Inputs by task: classify / regress — a string (or a (text, pair) tuple); pair — (text, pair);
tag — a string (split on whitespace) or a list of words; qa — {"question", "context"} or a
tuple; choice — {"context", "choices"} or a tuple. A list of inputs gives a list of predictions.

The Pipeline runs where its model is (`Pipeline.load(path, device="cuda")`): inputs are made on the
CPU and copied to the model's device a batch at a time (tasks/forward.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..hardware import resolve_device
from . import task_of
from .base import Example
from .finetune import LABEL_VOCABULARY, load_finetuned
from .forward import run_model


def to_example(task_name: str, item: Any, i: int = 0) -> Example:
    where = f"input {i}"
    if isinstance(item, dict):
        if task_name == "qa":
            return Example(item["question"], item["context"], None, id=str(item.get("id", i)), where=where)
        if task_name == "choice":
            return Example(item["context"], list(item["choices"]), None, id=str(i), where=where)
        return Example(item["text"], item.get("pair"), None, id=str(i), where=where)
    if isinstance(item, (tuple, list)) and task_name != "tag":
        if len(item) != 2:
            raise ValueError(f"{where}: expected a (text, pair) tuple, got {len(item)} items")
        first, second = item
        return Example(first, list(second) if task_name == "choice" else second, None, id=str(i), where=where)
    if task_name == "tag":
        words = item.split() if isinstance(item, str) else list(item)
        return Example(words, None, None, id=str(i), where=where)
    if task_name in ("pair", "qa", "choice"):
        raise ValueError(f"{where}: the {task_name} task takes two texts, got {item!r}")
    return Example(item, None, None, id=str(i), where=where)


class Pipeline:
    def __init__(
        self,
        model,
        task,
        tokenizer,
        max_length: int = 128,
        stride: int = 64,
        columns: dict[str, str] | None = None,
        bf16: bool = False,
    ):
        self.model, self.task, self.tokenizer = model, task, tokenizer
        self.max_length, self.stride = max_length, stride
        self.bf16 = bf16  # bf16 autocast for the forward passes (pays where the CPU multiplies bf16 natively)
        self.columns = dict(columns or {})  # the training files' column names, for reading new files

    @classmethod
    def load(
        cls, path: str | Path, device: str | torch.device = "cpu", say=None, quantize: str | None = None
    ) -> "Pipeline":
        """A directory written by `finetune`, its model on `device` (as `bertology.load` takes it:
        "cpu", "cuda", "cuda:N" or "auto", which says through `say` when it takes a GPU).
        `quantize="int8"`: its blocks' linear layers as dynamic int8 layers (CPU only; what stays fp32
        is said through `say`)."""
        device = device if isinstance(device, torch.device) else resolve_device(device, say)
        if quantize not in (None, "int8"):
            raise ValueError(f"quantize={quantize!r}: choose None or 'int8'")
        model, task, tokenizer, _ = load_finetuned(path, device, say, quantize)
        return cls._over(model, task, tokenizer)

    @classmethod
    def for_model(cls, model, tokenizer) -> "Pipeline | None":
        """A Pipeline over an already loaded model with a task head: the task `finetune` recorded in
        config.json, else the one its architecture implies (tasks.task_of, as `load` reads it); None for a
        backbone or a pretraining head, which no task serves."""
        task = task_of(model.config, model.architecture)
        return None if task is None else cls._over(model, task, tokenizer)

    @classmethod
    def _over(cls, model, task, tokenizer) -> "Pipeline":
        """The settings finetune recorded; a checkpoint without them (transformers') reads up to its positions."""
        extra = model.config.extra
        return cls(
            model,
            task,
            tokenizer,
            extra.get("bertology_max_length", model.config.max_length),
            extra.get("bertology_stride", 64),
            extra.get("bertology_columns", {}),
        )

    def logits(self, examples: list[Example]) -> list[Any]:
        """Sequence classification: the head's logits per example, before the task's post-processing
        (a classifier's scores before the softmax that `__call__` applies)."""
        features = self.task.featurize(examples, self.tokenizer, self.max_length, None, self.stride)
        outputs = run_model(self.model, features, bf16=self.bf16)
        logits = torch.cat([o.logits.detach().float() for o in outputs])
        return [logits[rows[0]] for rows in features.rows_of_example]

    def read(self, path: str, **columns) -> list[Example]:
        """Examples from a file laid out like the training data (`columns` override its column names)."""
        return self.task.read(path, **{**self.columns, **columns})

    def predict_examples(self, examples: list[Example], label2id: dict[str, int] | None = None) -> list[Any]:
        """Featurize, run the model on its device, post-process. With `label2id`, labels are checked against it."""
        features = self.task.featurize(examples, self.tokenizer, self.max_length, label2id, self.stride)
        outputs = run_model(self.model, features, bf16=self.bf16)
        return self.task.predict(outputs, features, examples, self.model.config.id2label)

    def evaluate(self, examples: list[Example]) -> dict[str, float]:
        """The task's metrics; a label the model was never trained on is an error naming its file and line."""
        label2id = self.model.config.label2id if self.task.name in LABEL_VOCABULARY else None
        return self.task.metrics(self.predict_examples(examples, label2id), examples)

    def __call__(self, inputs: Any) -> Any:
        single = not isinstance(inputs, list)  # a list is always a batch (for tagging: of sentences)
        items = [inputs] if single else inputs
        predictions = self.predict_examples([to_example(self.task.name, x, i) for i, x in enumerate(items)])
        return predictions[0] if single else predictions
