"""What every fine-tuning method's summary.json holds (finetune's trained heads, the probe, SetFit)."""

from __future__ import annotations

from dataclasses import asdict

from .base import Features, Task


def run_summary(o, task: Task, model, train, features: Features, labels, subset, dev) -> dict:
    """The fields every fine-tuning summary.json has, whichever the method."""
    return {
        "task": task.name,
        "method": o.method,
        "model": o.model,
        "architecture": model.architecture,
        "train_examples": len(train),
        "truncated": features.truncated,
        "dev": dev,
        "labels": labels,
        "interrupted": False,
        "options": asdict(o),
        "train_subset": None
        if subset is None
        else {"labels_per_class": o.labels_per_class, "seed": o.subset_seed, "indices": subset},
    }
