"""The label-efficiency curve: every start fine-tuned on the same class-balanced subsets of
data/debian-sections (10, 30, 100 and all 175 examples per class), through the same protocol, and
compared item by item on the test split.

Protocol (the same for every start): the method (a new head, the pretrained head through a
prompt, a probe on frozen vectors: what the start offers) and its learning rate are chosen on dev
alone at the first label count, on the first seeds, and kept for the larger counts (the grid at every
count does not fit a 20-minute budget); each run keeps its best dev epoch (in memory, written
once) and ends a few epochs after it; the seeds' class probabilities are averaged into one
ensemble prediction per test item, and two starts are compared by a paired bootstrap over the
test items (tasks/bootstrap.py). A gain is called one only when its 95% interval excludes 0.
"""

from __future__ import annotations

import csv
import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..tasks.bootstrap import paired_bootstrap
from ..io import atomic_write_json
from ..tasks.grid import GridResult
from .plan import REPORT_RESERVE_S, Budget, Plan, label_name, run_passes

# how far past its budget a started label count may run before it is given up: a count is priced when it starts,
# and giving it up throws away the starts it finished
OVERRUN = 0.05
BATCH_SIZE = 32  # labelled examples a fine-tuning step


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
    """Seconds per example pass of each (start, method), measured on its own runs: their wall time and the
    steps they trained (grid.json), so an early stop, a costlier method (ELECTRA's prompt reads a copy of
    each example per class) and a busy neighbour in the pool count as they happened. A pair not measured
    yet is priced at the rate of every run so far. The estimate of what further grids cost here, in wall
    time: the runs of a step share `workers` processes, as much as the steps so far ran side by side (a
    step of one run, or a busy machine, runs fewer at once), and a step lasts at least its longest run."""

    def __init__(self, workers: int = 1):
        self.workers = workers
        self.totals: dict[tuple[str, str], list[float]] = {}  # (start, method) → [seconds, passes]
        self.run_seconds, self.wall_seconds = 0.0, 0.0  # of the steps so far: how many ran at once

    def step(self, run_seconds: float, wall_seconds: float) -> None:
        self.run_seconds += run_seconds
        self.wall_seconds += wall_seconds

    def parallel(self) -> float:
        """Runs measured to go at once: the steps' run seconds over their wall time, 1 to `workers`."""
        if not self.wall_seconds:
            return float(self.workers)
        return min(float(self.workers), max(1.0, self.run_seconds / self.wall_seconds))

    def add(self, key: tuple[str, str], seconds: float, passes: float) -> None:
        total = self.totals.setdefault(key, [0.0, 0.0])
        total[0] += seconds
        total[1] += passes

    def rate(self, key: tuple[str, str]) -> float:
        seconds, passes = self.totals.get(key) or [sum(t[i] for t in self.totals.values()) for i in (0, 1)]
        return seconds / passes if passes else 0.0

    def seconds(self, key: tuple[str, str], passes: float) -> float:
        """A run's own seconds for `passes` example passes of `key`."""
        return passes * self.rate(key)

    def wall(self, runs: list[float]) -> float:
        """The wall time of runs of these seconds from the pool: shared among the runs measured to go at
        once, and never less than the longest (one long run ends its step beside idle workers)."""
        return max(sum(runs) / self.parallel(), max(runs, default=0.0))


@dataclass(frozen=True)
class Job:
    """One grid of the curve: a start and method at one label count, on `lrs` × `seeds`, in `out`."""

    start: Start
    method: str
    count: int | None
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    out: Path


def run_grids(jobs: list[Job], plan: Plan, data: Path, resume: bool) -> list[tuple[GridResult, bool]]:
    """The jobs' grids, their runs from one pool of the plan's workers (one start's grid of one seed
    would leave a core idle), and whether each was reused: on --resume, a finished grid of those very
    rates and seeds (a budget that changed between the runs may ask for other seeds)."""
    from ..tasks.finetune import FinetuneOptions
    from ..tasks.grid import Grid, finetune_grids

    train_labels = labels_of(task_file(data, "train"))

    def grid(job: Job) -> Grid:
        options = FinetuneOptions(
            model=str(job.start.model),
            from_scratch=job.start.from_scratch,
            task="classify",
            train=str(task_file(data, "train")),
            dev=str(task_file(data, "dev")),
            out_dir=str(job.out),
            epochs=plan.epochs(examples_at(job.count, train_labels)),
            batch_size=BATCH_SIZE,
            max_length=plan.finetune_length,
            bf16=plan.bf16,
            quiet=True,
            labels_per_class=job.count,
            pooling={"prompt": "cls", "probe": "mean"}.get(job.method, job.start.pooling),
            device=plan.device,
            method=job.method,
            checkpoints=False,  # seconds-long runs: the best epoch kept in memory, one write
            loss_plot=False,  # and no loss.png each: the report draws what the runs have in common
            patience=plan.patience if job.method != "probe" else None,
        )
        return Grid(options, str(task_file(data, "test")), job.lrs, job.seeds)

    reused = [resume and finished(job.out, job.lrs, job.seeds) for job in jobs]
    with warnings.catch_warnings():  # every run truncates the same descriptions: the stage says it once, not each run
        warnings.filterwarnings("ignore", message=r".* examples were truncated to \d+ tokens")
        ran = iter(
            finetune_grids(
                [grid(job) for job, done in zip(jobs, reused) if not done], overwrite=True, workers=plan.grid_workers
            )
        )
    return [(GridResult.load(job.out), True) if done else (next(ran), False) for job, done in zip(jobs, reused)]


def finished(out: Path, lrs: tuple[float, ...] | None, seeds: tuple[int, ...]) -> bool:
    """Whether `out` holds a finished grid of these rates (any, for None) and seeds."""
    if not (out / "grid.json").is_file():
        return False
    ran = {(r["lr"], r["seed"]) for r in GridResult.load(out).runs}
    return ran == {(lr, seed) for lr in (lrs or {lr for lr, _ in ran}) for seed in seeds}


def slug(name: str) -> str:
    """A start's directory name: "bert (random init)" → "bert-random-init"."""
    return re.sub(r"[\s()]+", "-", name).strip("-")


def label_curves(
    starts: list[Start], plan: Plan, budget: Budget, data: Path, out: Path, resume: bool, say
) -> dict[str, dict[str, GridResult]]:
    """{start name: {label count name: GridResult}} for the counts that fit the budget, in PRIORITY order.

    At the first count each start's candidates (method × its rates) run on the plan's selection seeds;
    the best mean dev accuracy wins, runs on the other seeds too (its grids extended into one), and is
    kept for the larger counts.

    The clock decides how much of that runs, from the seconds per example pass of each start and method
    measured so far (the first start's first candidate prices the first count). Every count gets one
    seed before any gets more: the first count's further seeds, and each later count's seeds, are as
    many as fit while one seed's time is kept for every count after it. The first count drops the choice
    of method (each start's first method only) where the candidates do not fit, but always runs; a later
    count is skipped where one seed does not fit, and given up midway where the time left no longer covers
    it (the load rose). Every cut is recorded in the budget with its reason. The grids of a step run from
    one pool of workers (tasks.grid.finetune_grids)."""
    train_labels = labels_of(task_file(data, "train"))
    dev, test = len(labels_of(task_file(data, "dev"))), len(labels_of(task_file(data, "test")))
    meter = Meter(plan.grid_workers)
    curves: dict[str, dict[str, GridResult]] = {s.name: {} for s in starts}
    chosen: dict[str, tuple[str, float]] = {}  # start → (method, lr) chosen on dev at the first count

    def passes_of(count) -> float:
        n = examples_at(count, train_labels)
        return run_passes(n, plan.epochs(n), dev, test)

    def passes_run(run: dict, count) -> float:
        """The example passes a finished run made: the epochs it trained (an early stop trains fewer; a
        probe none, one frozen pass over every example)."""
        n = examples_at(count, train_labels)
        epochs = run["steps"] / math.ceil(n / BATCH_SIZE)
        return run_passes(n, epochs, dev, test) if epochs else (n + dev + test) / 3

    def grids(jobs: list[Job]) -> list[GridResult]:
        t0 = budget.clock()
        ran = run_grids(jobs, plan, data, resume)
        results = [result for result, _ in ran]
        for job, result in zip(jobs, results):  # a resumed grid costs nothing now, but its runs' seconds price the rest
            for run in result.runs:
                meter.add((job.start.name, job.method), run["seconds"], passes_run(run, job.count))
        fresh = [run["seconds"] for result, reused in ran if not reused for run in result.runs]
        if fresh:
            meter.step(sum(fresh), budget.clock() - t0)
        budget.checkpoint()
        return results

    def costliest_first(among: list[Start], method_of) -> list[Start]:
        """`among` by the measured cost of a run of its method, the costliest first (a pool given the long
        runs first ends its step with short ones, not one long run beside idle workers)."""
        return sorted(among, key=lambda s: -meter.rate((s.name, method_of(s))))

    def needs(runs: list[tuple[Start, str, int]], count) -> float:
        """Seconds of wall time that `runs` ((start, method, how many)) at `count` are measured to need."""
        return meter.wall(
            [meter.seconds((start.name, method), passes_of(count)) for start, method, k in runs for _ in range(k)]
        )

    def left() -> float:
        return budget.left() - REPORT_RESERVE_S

    def root(start: Start, count) -> Path:
        return out / slug(start.name) / label_name(count)

    def report(start: Start, result: GridResult, tried: str, seeds) -> None:
        method, lr = chosen[start.name]
        say(
            f"      {start.name:<28} {method} lr {lr:g}"
            + (f" (mean dev on seeds {', '.join(map(str, plan.selection_seeds))}: {tried})" if tried else "")
            + f": test {result.ensemble_test:.3f} (ensemble of {len(seeds)}), "
            f"{result.test_mean:.3f} ± {result.test_std:.3f} per seed"
        )

    first, later = plan.label_counts[0], list(plan.label_counts[1:])
    selection = plan.selection_seeds
    say(
        f"   {label_name(first)} labels per class ({examples_at(first, train_labels):,} examples, "
        f"{plan.epochs(examples_at(first, train_labels)):g} epochs; method and lr chosen on dev):"
    )

    def trial(start: Start, method: str) -> Job:
        return Job(start, method, first, plan.rates(method), selection, root(start, first) / f"select-{method}")

    trials: dict[str, list[GridResult]] = {s.name: [] for s in starts}
    trials[starts[0].name] += grids([trial(starts[0], starts[0].methods[0])])  # measured alone: it prices the rest

    def todo(job: Job) -> int:
        """The runs a grid still needs: none where it finished (this run, or the one --resume continues)."""
        return 0 if finished(job.out, job.lrs, job.seeds) else len(job.lrs) * len(job.seeds)

    every_method = [(s, m, todo(trial(s, m))) for s in starts for m in s.methods]
    # (nothing left to run, as on a --resume of a finished stage, is never cut: the finished grids are read)
    first_only = 0 < needs(every_method, first) > left() and len(every_method) > len(starts)
    if first_only:
        say(
            "   cut "
            + budget.cut(
                f"{label_name(first)} labels per class: each start's first method only, not chosen on dev",
                f"~{needs(every_method, first):.0f} s measured to be needed to try every method, "
                f"{max(0.0, left()):.0f} s left",
            )
        )
    candidates = [
        trial(s, m)
        for s in starts
        for m in (s.methods[:1] if first_only else s.methods)
        if (s, m) != (starts[0], starts[0].methods[0])
    ]
    for job, result in zip(candidates, grids(candidates)):
        trials[job.start.name].append(result)
    best = {s.name: max(trials[s.name], key=lambda g: g.dev_mean) for s in starts}  # on dev alone; ties: the first
    chosen.update({s.name: (best[s.name].method, best[s.name].lr) for s in starts})  # further seeds keep both

    def chosen_job(start: Start, count, seeds, out: Path | None = None) -> Job:
        """`start`'s grid at `count` on `seeds`: the method and rate chosen at the first count."""
        method, lr = chosen[start.name]
        return Job(start, method, count, (lr,), seeds, out or root(start, count) / method)

    def further_job(start: Start, seeds) -> Job:
        """The first count's chosen candidate on `seeds` beyond the selection seeds."""
        return chosen_job(start, first, seeds, root(start, first) / f"{chosen[start.name][0]}-further-seeds")

    def halves(count) -> list[list[Start]]:
        """The starts in the steps a count runs as: half of them a step, the costliest first (the clock is
        read between the halves; a long run left for the end of a step keeps one worker busy while the
        others idle). The first count's further seeds run as one step."""
        order = costliest_first(starts, lambda s: chosen[s.name][0])
        if count == first:
            return [order]
        step = max(1, -(-len(order) // 2))
        return [order[k : k + step] for k in range(0, len(order), step)]

    def remaining(count, seeds) -> float:
        """Seconds `count` still needs on `seeds`: its steps' grids not finished yet (the first count: its
        further seeds beyond the selection seeds)."""
        job = further_job if count == first else (lambda s, seeds: chosen_job(s, count, seeds))
        return sum(needs([(s, chosen[s.name][0], todo(job(s, seeds))) for s in part], count) for part in halves(count))

    def fewer_seeds(count, options: list[tuple[int, ...]], after: list, fallback, ran: tuple[int, ...] = ()):
        """The most seeds of `options` (most first) that `count` can run on beside the seeds it `ran` on
        already, while one seed's time is kept for each count in `after` (every count before more seeds of
        any); where none fits, `fallback` (None: the count is skipped). A cut of seeds is recorded with
        its reason."""
        kept = sum(remaining(c, plan.seeds[:1]) for c in after)
        seeds = next(
            (seeds for seeds in options if remaining(count, seeds) == 0 or remaining(count, seeds) + kept <= left()),
            fallback,
        )
        if seeds is not None and seeds != options[0]:
            besides = f" ({kept:.0f} s kept for one seed of {', '.join(label_name(c) for c in after)})" if after else ""
            say(
                "   cut "
                + budget.cut(
                    f"{label_name(count)} labels per class on seeds {', '.join(map(str, ran + seeds))} "
                    f"only (of {len(plan.seeds)})",
                    f"~{remaining(count, options[0]):.0f} s measured to be needed on every seed, "
                    f"{max(0.0, left()):.0f} s left{besides}",
                )
            )
        return seeds

    results = dict(best)  # the candidates' own runs, and where more seeds fit, the chosen one's on those
    more = tuple(seed for seed in plan.seeds if seed not in selection)
    extra = fewer_seeds(first, [more[:k] for k in range(len(more), 0, -1)], later, (), selection) if more else ()
    if extra:
        jobs = [further_job(s, extra) for part in halves(first) for s in part]
        for job, grown in zip(jobs, grids(jobs)):
            results[job.start.name] = best[job.start.name].extended(grown)
    seeds = selection + extra
    for start in starts:
        result = results[start.name]
        atomic_write_json(root(start, first) / result.method / "grid.json", result.to_dict())  # as at later counts
        curves[start.name][label_name(first)] = result
        tried = trials[start.name]
        report(start, result, ", ".join(f"{g.method} {g.dev_mean:.3f}" for g in tried) if len(tried) > 1 else "", seeds)

    for i, count in enumerate(later):
        n = examples_at(count, train_labels)
        one = plan.seeds[:1] if remaining(count, plan.seeds[:1]) <= left() else None  # the counts after: what is left
        seeds = fewer_seeds(count, [plan.seeds[:k] for k in range(len(plan.seeds), 0, -1)], later[i + 1 :], one)
        if seeds is None:
            say(
                "   cut "
                + budget.cut(
                    f"{label_name(count)} labels per class skipped",
                    f"~{remaining(count, plan.seeds[:1]):.0f} s of fine-tuning on one seed measured to be needed, "
                    f"{max(0.0, left()):.0f} s left",
                )
            )
            continue
        say(f"   {label_name(count)} labels per class ({n:,} examples, {plan.epochs(n):g} epochs, {len(seeds)} seeds):")
        parts = halves(count)
        for k, part in enumerate(parts):
            needed = remaining(count, seeds)
            if needed > left() + OVERRUN * budget.seconds:
                for done in (s for earlier in parts[:k] for s in earlier):
                    del curves[done.name][label_name(count)]
                say(
                    "   cut "
                    + budget.cut(
                        f"{label_name(count)} labels per class given up after {sum(map(len, parts[:k]))} of "
                        f"{len(starts)} starts",
                        f"~{needed:.0f} s measured to be needed for the rest, {max(0.0, left()):.0f} s left",
                    )
                )
                break
            jobs = [chosen_job(s, count, seeds) for s in part]
            for job, result in zip(jobs, grids(jobs)):
                curves[job.start.name][label_name(count)] = result
                report(job.start, result, "", seeds)
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
