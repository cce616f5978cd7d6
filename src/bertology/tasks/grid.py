"""A fair fine-tuning comparison: every starting point gets the same learning-rate grid and seeds.

    result = finetune_grid(FinetuneOptions(model="runs/bert", task="classify", train=..., dev=..., out_dir="runs/grid"),
                           test="test.tsv", lrs=(1e-4, 3e-4, 1e-3, 3e-3), seeds=(0, 1, 2))
    result.lr, result.test_mean, result.test_std

For each rate, fine-tune once per seed (each run keeps its best dev epoch) and score dev and
test. The rate with the best mean dev score is chosen, on dev alone; its test scores over the
seeds are the result (mean ± sample standard deviation). One fixed rate would favour whichever
start it happens to suit: a randomly initialised model wants a larger rate than a pretrained one.
The run directories of the other rates are removed; for the chosen rate the best-dev seed's
directory is kept (a fine-tuned model, loadable as any other) and the others removed.
"""
from __future__ import annotations

import json
import math
import shutil
import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Sequence

from ..io import atomic_write_json, claim_output_dir
from . import TASKS
from .finetune import FinetuneOptions, evaluate_examples, finetune, load_finetuned

LEARNING_RATES = (1e-4, 3e-4, 1e-3, 3e-3)
SEEDS = (0, 1, 2)


@dataclass
class GridResult:
    lr: float  # the rate chosen on mean dev score
    dev_mean: float
    test_mean: float
    test_std: float  # sample standard deviation over the seeds (0 for one seed)
    metric: str
    best_dir: str  # the kept run: chosen rate, best dev seed
    runs: list[dict]  # every (lr, seed): dev and test scores

    def to_dict(self) -> dict:
        return asdict(self)


def _std(values: Sequence[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def finetune_grid(options: FinetuneOptions, test: str, lrs: Sequence[float] = LEARNING_RATES,
                  seeds: Sequence[int] = SEEDS, overwrite: bool = False) -> GridResult:
    """Fine-tune `options` at every rate × seed under options.out_dir; see the module docstring."""
    if not options.dev:
        raise ValueError("finetune_grid chooses the learning rate on dev: options.dev is required")
    if not lrs or not seeds:
        raise ValueError(f"need at least one learning rate and one seed, got lrs={list(lrs)}, seeds={list(seeds)}")
    if any(not (lr > 0 and math.isfinite(lr)) for lr in lrs):
        raise ValueError(f"learning rates must be positive, got {list(lrs)}")
    root = Path(options.out_dir)
    test_examples = TASKS[options.task]().read(test, **options.columns)  # a bad test file fails before training
    claim_output_dir(root, "finetune --grid", overwrite=overwrite)
    runs: list[dict] = []
    for lr in lrs:
        for seed in seeds:
            out = root / f"lr-{lr:g}-seed-{seed}"
            summary = finetune(replace(options, lr=lr, seed=seed, out_dir=str(out)), overwrite=overwrite)
            model, task, tokenizer, _ = load_finetuned(out)
            scores = evaluate_examples(model, task, tokenizer, test_examples, options.max_length, options.stride,
                                       options.bf16)
            metric = task.main_metric
            runs.append({"lr": lr, "seed": seed, "dev": summary["dev"][metric], "test": scores[metric], "dir": str(out)})
    mean_dev = {lr: statistics.fmean(r["dev"] for r in runs if r["lr"] == lr) for lr in lrs}
    chosen = max(lrs, key=lambda lr: mean_dev[lr])  # ties: the first (smallest) rate listed
    at_chosen = [r for r in runs if r["lr"] == chosen]
    keep = max(at_chosen, key=lambda r: r["dev"])["dir"]
    for r in runs:
        if r["dir"] != keep:
            shutil.rmtree(r["dir"], ignore_errors=True)
    tests = [r["test"] for r in at_chosen]
    result = GridResult(chosen, mean_dev[chosen], statistics.fmean(tests), _std(tests), metric, keep, runs)
    atomic_write_json(root / "grid.json", result.to_dict())
    return result
