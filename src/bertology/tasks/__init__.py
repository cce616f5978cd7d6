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

__all__ = ["TASKS", "Task", "Example", "Features"]
