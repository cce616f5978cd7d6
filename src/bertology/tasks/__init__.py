"""Fine-tuning tasks: classification, sentence pairs, regression, tagging, extractive QA, multiple choice.

`TASKS[name]` gives the task class; see base.py for the contract and finetune.py for the job.
"""

from __future__ import annotations

import importlib

from .base import Example, Features, Task

_WHERE = {
    "classify": ("classification", "ClassifyTask"),
    "pair": ("classification", "PairTask"),
    "regress": ("classification", "RegressTask"),
    "tag": ("tagging", "TagTask"),
    "qa": ("qa", "QATask"),
    "choice": ("choice", "ChoiceTask"),
}


class _Registry(dict):
    """name → Task class, imported on first use (each task module pulls in only what it needs)."""

    def __missing__(self, name: str):
        if name not in _WHERE:
            raise KeyError(name)
        module, cls = _WHERE[name]
        self[name] = getattr(importlib.import_module(f".{module}", __name__), cls)
        return self[name]

    def __contains__(self, name) -> bool:
        return name in _WHERE

    def __iter__(self):
        return iter(_WHERE)

    def keys(self):
        return _WHERE.keys()


TASKS = _Registry()

# the task a head serves when config.json records none (a checkpoint written by transformers)
HEAD_TASKS = {
    "ForSequenceClassification": "classify",
    "ForTokenClassification": "tag",
    "ForQuestionAnswering": "qa",
    "ForQuestionAnsweringSimple": "qa",
    "ForMultipleChoice": "choice",
}


def task_name_of(config, architecture: str | None = None) -> str | None:
    """The task a model with `config` serves: the one `finetune` recorded (bertology_task), else the one its
    architecture (default: the config's) implies, regression for a one-label sequence classifier as in
    transformers; None for a backbone or a pretraining head. The one rule of serve, predict and evaluate.

    >>> from bertology.models import BertConfig
    >>> task_name_of(BertConfig(architectures=["BertForSequenceClassification"]))
    'classify'
    """
    name = config.extra.get("bertology_task")
    if name in TASKS:
        return name
    architecture = architecture or (config.architectures[0] if config.architectures else "")
    head = next((h for h in HEAD_TASKS if architecture.endswith(h)), None)
    if head is None:
        return None
    return "regress" if HEAD_TASKS[head] == "classify" and config.num_labels == 1 else HEAD_TASKS[head]


def task_of(config, architecture: str | None = None) -> Task | None:
    """The Task object for `task_name_of`, with the options finetune recorded (QA: SQuAD v2.0)."""
    name = task_name_of(config, architecture)
    return None if name is None else TASKS[name](**config.extra.get("bertology_task_options", {}))


__all__ = ["TASKS", "HEAD_TASKS", "Task", "Example", "Features", "task_name_of", "task_of"]
