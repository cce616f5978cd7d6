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

For classification (classify, pair), grid.json also keeps every run's test predictions (label
ids, `runs[i]["test_predictions"]`), the gold label ids once (`test_gold`), and the ensemble of
the chosen rate's seeds (their class probabilities averaged, then the most probable class):
two grids over the same test file can then be compared item by item,

    a, b = GridResult.load("runs/pretrained/grid.json"), GridResult.load("runs/twin/grid.json")
    paired_bootstrap(a.correct(), b.correct())   # ensembles; a.correct(run) for one run

`finetune_grids([Grid(options, test, lrs, seeds), ...], workers=2)` runs several grids from one pool of
worker processes (each grid's result as if run alone): many small grids keep every core busy.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import time
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Sequence

import numpy as np

from ..hardware import resolve_device
from ..io import atomic_write_json, claim_output_dir
from . import TASKS
from .finetune import LABEL_VOCABULARY, FinetuneOptions, check_finetune, finetune, load_finetuned, predict_examples

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
    runs: list[dict]  # every (lr, seed): dev, test, steps, seconds; test_predictions (label ids) for classification
    labels: list[str] | None = None  # id → name of the label ids below (classification only, as the rest)
    test_gold: list[int] | None = None  # the test items' gold label ids
    ensemble_test: float | None = None  # the metric of the chosen rate's seeds, probabilities averaged
    ensemble_predictions: list[int] | None = None
    method: str = "head"  # finetune --method of every run (head, prompt, probe)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def load(cls, path: str | Path) -> "GridResult":
        """A grid.json (or the directory holding it) back into a GridResult."""
        path = Path(path)
        path = path / "grid.json" if path.is_dir() else path
        return cls(**json.loads(path.read_text(encoding="utf-8")))

    def extended(self, more: "GridResult") -> "GridResult":
        """This grid with `more` seeds of its chosen rate (a grid of that one rate, the same options, other
        seeds) as if they had run at once: the chosen rate's mean dev and test over all its seeds, their
        ensemble, and the best dev run of either kept (a classification grid: its runs carry the class
        probabilities an ensemble averages).

        Choosing the rate on a few seeds and running only the chosen one on the rest costs a fraction of
        the whole grid on every seed (the demo does so); the rate stays chosen on the first seeds alone."""
        if more.method != self.method or more.labels != self.labels or more.test_gold != self.test_gold:
            raise ValueError("extended: the grids differ in method, labels or test items")
        if {r["lr"] for r in more.runs} != {self.lr}:
            raise ValueError(f"extended: the further runs must all be at the chosen rate {self.lr:g}")
        at_chosen = [r for r in self.runs if r["lr"] == self.lr] + more.runs
        seeds = [r["seed"] for r in at_chosen]
        if len(set(seeds)) < len(seeds):
            raise ValueError(f"extended: seeds run twice at rate {self.lr:g}: {sorted(seeds)}")
        if self.test_gold is None or any("test_probabilities" not in r for r in at_chosen):
            raise ValueError("extended: a classification grid's runs with their test probabilities are needed")
        tests = [r["test"] for r in at_chosen]
        best = max((self, more), key=lambda g: max(r["dev"] for r in g.runs if r["dir"] == g.best_dir))
        predicted, accuracy = _ensemble([r["test_probabilities"] for r in at_chosen], self.test_gold)
        return replace(
            self,
            dev_mean=statistics.fmean(r["dev"] for r in at_chosen),
            test_mean=statistics.fmean(tests),
            test_std=_std(tests),
            best_dir=best.best_dir,
            runs=self.runs + more.runs,
            ensemble_test=accuracy,
            ensemble_predictions=predicted,
        )

    def correct(self, run: int | None = None) -> list[bool]:
        """Per test item, whether the ensemble (or `runs[run]`) predicted the gold label."""
        if self.test_gold is None:
            raise ValueError("this grid kept no per-item test predictions (a classification task keeps them)")
        predicted = self.ensemble_predictions if run is None else self.runs[run]["test_predictions"]
        return [p == g for p, g in zip(predicted, self.test_gold)]


def _std(values: Sequence[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def _ensemble(probabilities: list[list[list[float]]], gold: list[int]) -> tuple[list[int], float]:
    """(label ids, accuracy: the main metric of classify and pair) of the runs' class probabilities
    averaged per item, then the most probable class."""
    mean = np.mean(np.asarray(probabilities, dtype=np.float64), axis=0)  # (items, classes)
    predicted = mean.argmax(axis=1).tolist()
    return predicted, float(np.mean(np.asarray(predicted) == np.asarray(gold)))


def _one_run(grids: list[tuple[FinetuneOptions, list]], overwrite: bool, cell) -> tuple[dict, list | None]:
    """One (grid, lr, seed) run: fine-tuned, reloaded as a user would, scored on the grid's test items.
    Returns its run record (classification: test predictions and class probabilities per item) and the
    label names."""
    k, lr, seed = cell
    options, test_examples = grids[k]
    out = Path(options.out_dir) / f"lr-{lr:g}-seed-{seed}"
    started = time.perf_counter()
    summary = finetune(replace(options, lr=lr, seed=seed, out_dir=str(out)), overwrite=overwrite)
    model, task, tokenizer, _ = load_finetuned(out)
    label2id = model.config.label2id if task.name in LABEL_VOCABULARY else None
    predictions = predict_examples(
        model, task, tokenizer, test_examples, options.max_length, options.stride, options.bf16, label2id
    )
    metric = task.main_metric
    run = {
        "lr": lr,
        "seed": seed,
        "dev": summary["dev"][metric],
        "test": task.metrics(predictions, test_examples)[metric],
        "dir": str(out),
        "steps": summary.get("steps", 0),  # optimizer steps trained (an early stop trains fewer)
        "seconds": round(time.perf_counter() - started, 3),  # the run's wall time, its test predictions included
    }
    if task.name not in LABEL_VOCABULARY or task.name == "tag":
        return run, None
    labels = summary["labels"]  # the same for every run: they come from the training file
    run["test_predictions"] = [labels.index(p.label) for p in predictions]
    # what an ensemble averages, also across grids run on further seeds (GridResult.extended)
    run["test_probabilities"] = [[round(p.probabilities[name], 6) for name in labels] for p in predictions]
    return run, labels


def _in_workers(one, cells: list, workers: int) -> list:
    """`one` over `cells` in `workers` forked processes, each on its share of the cores, results in order.

    A small model leaves cores idle within one run (its matrix products are too small to keep every
    thread busy): runs side by side on a thread each finish more of a grid per second."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    from ..data.tokenstore import default_workers

    import torch._dynamo  # noqa: F401  every optimizer imports it when made (seconds): once here, not in each fork

    threads = max(1, default_workers() // workers)
    with ProcessPoolExecutor(
        workers, mp_context=mp.get_context("fork"), initializer=_set_threads, initargs=(threads,)
    ) as pool:
        return list(pool.map(one, cells))


def _set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


@dataclass(frozen=True)
class Grid:
    """One grid of `finetune_grids`: the options of its runs (out_dir: the grid's directory), the test
    file, its rates and seeds."""

    options: FinetuneOptions
    test: str
    lrs: Sequence[float] = LEARNING_RATES
    seeds: Sequence[int] = SEEDS


def finetune_grid(
    options: FinetuneOptions,
    test: str,
    lrs: Sequence[float] = LEARNING_RATES,
    seeds: Sequence[int] = SEEDS,
    overwrite: bool = False,
    workers: int = 1,
) -> GridResult:
    """Fine-tune `options` at every rate × seed under options.out_dir; see the module docstring.
    `workers` > 1 runs that many at once in worker processes (the CPU only), the cores split between them."""
    return finetune_grids([Grid(options, test, lrs, seeds)], overwrite, workers)[0]


def finetune_grids(grids: Sequence[Grid], overwrite: bool = False, workers: int = 1) -> list[GridResult]:
    """Several grids, each as `finetune_grid` runs it, their runs drawn from one pool of `workers`: a grid
    of fewer runs than workers (one seed of one rate) would leave cores idle on its own. Every grid's
    checks run before the first write of any."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if workers > 1 and any(resolve_device(g.options.device).type != "cpu" for g in grids):
        raise ValueError("grid workers split the CPU's cores: on a GPU run one at a time")
    tests = [_checked(g) for g in grids]
    for g in grids:
        claim_output_dir(Path(g.options.out_dir), "finetune --grid", overwrite=overwrite)
    cells = [(k, lr, seed) for k, g in enumerate(grids) for lr in g.lrs for seed in g.seeds]
    one = partial(_one_run, [(g.options, t) for g, t in zip(grids, tests)], overwrite)
    done = list(map(one, cells)) if workers == 1 else _in_workers(one, cells, workers)
    return [
        _result(g, t, [d for cell, d in zip(cells, done) if cell[0] == k]) for k, (g, t) in enumerate(zip(grids, tests))
    ]


def _checked(grid: Grid) -> list:
    """The grid's test examples, once its options have passed every check a run makes."""
    options, lrs, seeds = grid.options, grid.lrs, grid.seeds
    if not options.dev:
        raise ValueError("finetune_grid chooses the learning rate on dev: options.dev is required")
    if not lrs or not seeds:
        raise ValueError(f"need at least one learning rate and one seed, got lrs={list(lrs)}, seeds={list(seeds)}")
    if any(not (lr > 0 and math.isfinite(lr)) for lr in lrs):
        raise ValueError(f"learning rates must be positive, got {list(lrs)}")
    if options.method == "probe" and len(lrs) > 1:
        raise ValueError(f"--method probe trains no rate (its L2 strength is chosen on dev): give one, not {list(lrs)}")
    test_examples = TASKS[options.task]().read(grid.test, **options.columns)  # a bad test file fails before training
    # every run's own checks (model, tokenizer, splits, --max-length …) before the grid's first write: a
    # refused grid must not leave its marker in --out, which would refuse the corrected command
    root = Path(options.out_dir)
    check_finetune(replace(options, lr=lrs[0], seed=seeds[0], out_dir=str(root / f"lr-{lrs[0]:g}-seed-{seeds[0]}")))
    return test_examples


def _result(grid: Grid, test_examples: list, done: list[tuple[dict, list | None]]) -> GridResult:
    """The grid's rate chosen on mean dev, its runs' directories pruned to the kept one, grid.json written."""
    lrs, root = grid.lrs, Path(grid.options.out_dir)
    runs = [run for run, _ in done]
    task, labels = TASKS[grid.options.task](), done[0][1]
    metric = task.main_metric
    mean_dev = {lr: statistics.fmean(r["dev"] for r in runs if r["lr"] == lr) for lr in lrs}
    chosen = max(lrs, key=lambda lr: mean_dev[lr])  # ties: the first (smallest) rate listed
    at_chosen = [r for r in runs if r["lr"] == chosen]
    keep = max(at_chosen, key=lambda r: r["dev"])["dir"]
    for r in runs:
        if r["dir"] != keep:
            shutil.rmtree(r["dir"], ignore_errors=True)
    tests = [r["test"] for r in at_chosen]
    result = GridResult(
        chosen, mean_dev[chosen], statistics.fmean(tests), _std(tests), metric, keep, runs, method=grid.options.method
    )
    if labels is not None:
        result.labels = labels
        result.test_gold = [labels.index(e.label) for e in test_examples]
        result.ensemble_predictions, result.ensemble_test = _ensemble(
            [r["test_probabilities"] for r in at_chosen], result.test_gold
        )
        for r in runs:  # only the chosen rate's probabilities are ever averaged: the rest would only weigh
            if r["lr"] != chosen:
                del r["test_probabilities"]
    atomic_write_json(root / "grid.json", result.to_dict())
    return result
