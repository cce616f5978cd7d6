"""The label-efficiency curve: every start fine-tuned on the same class-balanced subsets of
data/debian-sections (10, 30, 100 and all 175 examples per class), through the same protocol, and
compared item by item on the test split.

Protocol (the same for every start): the method (a new head, the pretrained head through a
prompt, a probe on frozen vectors: what the start offers) and its learning rate are chosen on dev
alone at the first label count, over all seeds, and kept for the larger counts (the grid at every
count does not fit a 20-minute budget); each run keeps its best dev epoch (in memory, written
once); the seeds' class probabilities are averaged into one ensemble prediction per test item,
and two starts are compared by a paired bootstrap over the test items (tasks/bootstrap.py). A
gain is called one only when its 95% interval excludes 0.
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass
from pathlib import Path

from ..tasks.bootstrap import paired_bootstrap
from ..tasks.grid import GridResult
from .plan import REPORT_RESERVE_S, Budget, Plan, label_name, run_passes


def twin(name: str) -> str:
    """The name of a start's random-init twin (same architecture and tokenizer, no pretraining)."""
    return f"{name} (random init)"


@dataclass(frozen=True)
class Start:
    """One starting point of fine-tuning: a model directory, or its random-init twin."""

    name: str  # "bert", "bert (random init)", …
    model: Path
    from_scratch: bool = False
    pooling: str = "mean"  # MLM-only pretraining never trains a [CLS] summary; XLNet keeps its own head
    methods: tuple[str, ...] = ("head",)  # finetune --method candidates, chosen among on dev


def task_file(data: Path, split: str) -> Path:
    return data / f"{split}.tsv"


def labels_of(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [row["label"] for row in csv.DictReader(f, delimiter="\t")]


def examples_at(count: int | None, train_labels: list[str]) -> int:
    return len(train_labels) if count is None else count * len(set(train_labels))


class Meter:
    """Seconds per example pass measured on the runs so far (overheads included): the estimate of
    what a further label count costs on this machine."""

    def __init__(self):
        self.seconds, self.passes = 0.0, 0.0

    def add(self, seconds: float, passes: float) -> None:
        self.seconds += seconds
        self.passes += passes

    def estimate(self, passes: float) -> float:
        return passes * self.seconds / self.passes if self.passes else 0.0


def run_grid(
    start: Start,
    method: str,
    count: int | None,
    epochs: float,
    lrs: tuple[float, ...],
    seeds: tuple[int, ...],
    plan: Plan,
    data: Path,
    out: Path,
    resume: bool,
) -> GridResult:
    """One start and method at one label count through `lrs` × `seeds` (reused on --resume when finished)."""
    from ..tasks.finetune import FinetuneOptions
    from ..tasks.grid import finetune_grid

    done = out / "grid.json"
    if resume and done.is_file():
        return GridResult.load(done)
    options = FinetuneOptions(
        model=str(start.model),
        from_scratch=start.from_scratch,
        task="classify",
        train=str(task_file(data, "train")),
        dev=str(task_file(data, "dev")),
        out_dir=str(out),
        epochs=epochs,
        batch_size=32,
        max_length=plan.finetune_length,
        bf16=plan.bf16,
        quiet=True,
        labels_per_class=count,
        pooling={"prompt": "cls", "probe": "mean"}.get(method, start.pooling),
        device=plan.device,
        method=method,
        checkpoints=False,  # seconds-long runs: the best epoch kept in memory, one write
    )
    return finetune_grid(options, str(task_file(data, "test")), lrs, seeds, overwrite=True)


def label_curves(
    starts: list[Start], plan: Plan, budget: Budget, data: Path, out: Path, resume: bool, say
) -> dict[str, dict[str, GridResult]]:
    """{start name: {label count name: GridResult}} for the counts that fit the budget, in PRIORITY order.

    At the first count each start's candidates (method × its rates) run on the plan's selection seeds;
    the best mean dev accuracy wins and runs on every seed, and is kept for the larger counts."""
    train_labels = labels_of(task_file(data, "train"))
    dev, test = len(labels_of(task_file(data, "dev"))), len(labels_of(task_file(data, "test")))
    meter = Meter()
    curves: dict[str, dict[str, GridResult]] = {s.name: {} for s in starts}
    chosen: dict[str, tuple[str, float]] = {}  # start → (method, lr) chosen on dev at the first count

    def grid(start: Start, method: str, count, lrs, seeds, run_dir: Path) -> GridResult:
        n = examples_at(count, train_labels)
        t0 = time.perf_counter()
        reused = resume and (run_dir / "grid.json").is_file()  # a resumed grid costs nothing: not a measurement
        result = run_grid(start, method, count, plan.epochs(n), lrs, seeds, plan, data, run_dir, resume)
        if not reused:
            meter.add(time.perf_counter() - t0, len(lrs) * len(seeds) * run_passes(n, plan.epochs(n), dev, test))
        return result

    for i, count in enumerate(plan.label_counts):
        n = examples_at(count, train_labels)
        needed = meter.estimate(len(starts) * len(plan.seeds) * run_passes(n, plan.epochs(n), dev, test))
        left = budget.left() - REPORT_RESERVE_S
        if i > 0 and not plan.quick and needed > left:  # --quick runs every path, whatever the time
            say(
                f"   {label_name(count)} labels per class: skipped, ~{needed:.0f} s of fine-tuning measured to be "
                f"needed and {max(0.0, left):.0f} s left in the budget"
            )
            continue
        say(
            f"   {label_name(count)} labels per class ({n:,} examples, {plan.epochs(n):g} epochs, "
            f"{len(plan.seeds)} seeds{'; method and lr chosen on dev' if i == 0 else ''}):"
        )
        for start in starts:
            root = out / start.name.replace(" ", "-").strip("()") / label_name(count)
            tried = ""
            if i == 0:
                trials = [
                    grid(start, m, count, plan.rates(m), plan.selection_seeds, root / f"select-{m}")
                    for m in start.methods
                ]
                best = max(trials, key=lambda g: g.dev_mean)  # on dev alone; ties: the first method listed
                chosen[start.name] = (best.method, best.lr)
                tried = ", ".join(f"{g.method} {g.dev_mean:.3f}" for g in trials)
            method, lr = chosen[start.name]
            result = curves[start.name][label_name(count)] = grid(
                start, method, count, (lr,), plan.seeds, root / method
            )
            say(
                f"      {start.name:<28} {method} lr {lr:g}"
                + (f" (mean dev on seeds {', '.join(map(str, plan.selection_seeds))}: {tried})" if tried else "")
                + f": test {result.ensemble_test:.3f} (ensemble of {len(plan.seeds)}), "
                f"{result.test_mean:.3f} ± {result.test_std:.3f} per seed"
            )
    return curves


def compare(a: GridResult, b_correct: list[bool], seed: int = 0) -> dict:
    """Paired bootstrap of `a`'s ensemble against another arm's per-item correctness on the same test items."""
    result = paired_bootstrap(a.correct(), b_correct, seed=seed)
    return {"diff": result["diff"], "ci95": [result["low"], result["high"]], "significant": result["significant"]}


def accuracy_interval(correct: list[bool], seed: int = 0) -> list[float]:
    """95% bootstrap interval of one arm's accuracy over the test items (its difference from an arm
    that is never right)."""
    result = paired_bootstrap(correct, [False] * len(correct), seed=seed)
    return [result["low"], result["high"]]
