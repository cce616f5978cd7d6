"""`finetune --method setfit` against the setfit library, on the same start, subsets and seeds, in one run.

Both sides start from the real all-MiniLM-L6-v2 (bertology.demo.stages.minilm_path()) and train on
the same class-balanced subset of data/debian-sections (bertology.tasks.subsets.balanced_subset,
--labels-per-class of each of the 10 sections, subset seed = run seed); both are scored on the
500 test examples. Per seed the two sides alternate which goes first (the machine's load drifts),
and each side's wall time runs from loading the model to a classifier ready to predict (ours also
writes it to disk). Printed: the CPU, each run, each side's mean test accuracy with a 95% interval
over seeds (t), the paired difference over seeds and over the pooled test items (paired bootstrap,
bertology.tasks.bootstrap), and the same-run time ratio.

    .venv/bin/pip install setfit          # bench-only: never imported by the package, not one of its deps
    .venv/bin/python bench/setfit.py [--seeds 5] [--labels-per-class 10] [--pairs-per-example 20]
        [--epochs 1] [--lr 2e-5] [--batch-size 16] [--setfit-iterations N] [--out runs/setfit-bench]

The library runs with its defaults (TrainingArguments(): batch 16, one epoch of "oversampling"
pairs: 9,000 pairs for 100 examples, body rate 2e-5, then sklearn's LogisticRegression on the
normalised embeddings) unless --setfit-iterations N asks for its num_iterations (2·N pairs per
example). Ours: --pairs-per-example pairs per example per pass, --epochs passes, early stopping on
dev (the probe refitted every quarter pass), the logistic regression's L2 chosen on dev.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import json
import shutil
import statistics
import tempfile
import time

import torch

from bertology.demo.stages import minilm_path
from bertology.hardware import cpu_summary
from bertology.tasks import TASKS
from bertology.tasks.bootstrap import paired_bootstrap
from bertology.tasks.finetune import FinetuneOptions, finetune
from bertology.tasks.pipeline import Pipeline
from bertology.tasks.subsets import balanced_subset

DATA = Path(__file__).resolve().parents[1] / "data" / "debian-sections"
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def mean_interval(values: list[float]) -> tuple[float, float]:
    """(mean, half-width of the 95% t interval over seeds; nan for one seed)."""
    m = statistics.fmean(values)
    if len(values) < 2:
        return m, float("nan")
    return m, T_975.get(len(values) - 1, 1.96) * statistics.stdev(values) / len(values) ** 0.5


def ours(a, seed: int, work: Path, test) -> dict:
    out = work / f"ours-{seed}"
    o = FinetuneOptions(
        model=str(minilm_path()),
        task="classify",
        train=str(DATA / "train.tsv"),
        dev=str(DATA / "dev.tsv"),
        out_dir=str(out),
        method="setfit",
        pooling="mean",
        labels_per_class=a.labels_per_class,
        subset_seed=seed,
        seed=seed,
        pairs_per_example=a.pairs_per_example,
        epochs=a.epochs,
        lr=a.lr,
        batch_size=a.batch_size,
        max_length=a.max_length,
        quiet=True,
    )
    started = time.perf_counter()
    summary = finetune(o)
    seconds = time.perf_counter() - started
    predicted = [p.label for p in Pipeline.load(out)([e.text for e in test])]
    shutil.rmtree(out)
    return {"seconds": seconds, "correct": [p == e.label for p, e in zip(predicted, test)], **summary["setfit"]}


def theirs(a, seed: int, train, test) -> dict:
    from datasets import Dataset
    from setfit import SetFitModel, Trainer, TrainingArguments

    subset = [train[i] for i in balanced_subset([e.label for e in train], a.labels_per_class, seed)]
    data = Dataset.from_dict({"text": [e.text for e in subset], "label": [e.label for e in subset]})
    extra = {"num_iterations": a.setfit_iterations} if a.setfit_iterations else {}
    started = time.perf_counter()
    model = SetFitModel.from_pretrained(str(minilm_path()))
    args = TrainingArguments(seed=seed, show_progress_bar=False, report_to="none", **extra)
    Trainer(model=model, args=args, train_dataset=data).train()
    seconds = time.perf_counter() - started
    predicted = model.predict([e.text for e in test])
    return {"seconds": seconds, "correct": [p == e.label for p, e in zip(predicted, test)]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=1, help="runs 0..N-1 (subset seed = training seed); ≥ 5 for a claim")
    p.add_argument("--labels-per-class", type=int, default=10)
    p.add_argument("--pairs-per-example", type=int, default=20)
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-length", type=int, default=64)
    p.add_argument(
        "--setfit-iterations", type=int, default=None, help="the library's num_iterations (default: its own)"
    )
    p.add_argument("--out", type=Path, default=None, help="results.json written here")
    a = p.parse_args()

    task = TASKS["classify"]()
    train, test = task.read(str(DATA / "train.tsv")), task.read(str(DATA / "test.tsv"))
    print(f"CPU: {cpu_summary()}")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; setfit {_version('setfit')}")
    library = f"num_iterations={a.setfit_iterations}" if a.setfit_iterations else "defaults"
    print(
        f"{a.labels_per_class} labels per class, {a.seeds} seed(s); ours: {a.pairs_per_example} pairs/example × "
        f"{a.epochs:g} pass(es), lr {a.lr:g}, batch {a.batch_size}, early stopping on dev; setfit: {library}"
    )
    print(
        f"{'seed':>4} {'ours acc':>9} {'ours s':>8} {'pairs':>6} {'kept':>5} {'setfit acc':>11} {'setfit s':>9} {'time':>6}"
    )
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(a.seeds):
            sides = [("ours", lambda: ours(a, seed, Path(tmp), test)), ("setfit", lambda: theirs(a, seed, train, test))]
            run = {name: fn() for name, fn in (sides if seed % 2 == 0 else sides[::-1])}  # alternate the first side
            o, t = run["ours"], run["setfit"]
            acc_o, acc_t = statistics.fmean(o["correct"]), statistics.fmean(t["correct"])
            print(
                f"{seed:>4} {acc_o:>9.4f} {o['seconds']:>8.1f} {o['pairs_seen']:>6} {o['best_step']:>5} "
                f"{acc_t:>11.4f} {t['seconds']:>9.1f} {o['seconds'] / t['seconds']:>5.2f}x",
                flush=True,
            )
            runs.append({"seed": seed, **run})

    acc = {side: [statistics.fmean(r[side]["correct"]) for r in runs] for side in ("ours", "setfit")}
    secs = {side: [r[side]["seconds"] for r in runs] for side in ("ours", "setfit")}
    for side in ("ours", "setfit"):
        m, h = mean_interval(acc[side])
        print(
            f"{side:>6}: test accuracy {m:.4f} ± {h:.4f} (95% t over seeds), wall {statistics.fmean(secs[side]):.1f} s/run"
        )
    m, h = mean_interval([x - y for x, y in zip(acc["ours"], acc["setfit"])])
    pooled = paired_bootstrap(
        [c for r in runs for c in r["ours"]["correct"]], [c for r in runs for c in r["setfit"]["correct"]]
    )
    print(
        f"ours − setfit: {100 * m:+.2f} points ± {100 * h:.2f} over seeds; pooled test items "
        f"{100 * pooled['diff']:+.2f} [{100 * pooled['low']:+.2f}, {100 * pooled['high']:+.2f}] (paired bootstrap)"
    )
    ratios = [x / y for x, y in zip(secs["ours"], secs["setfit"])]
    print(
        f"wall time ours / setfit, same run: {statistics.fmean(ratios):.2f} (per seed {', '.join(f'{r:.2f}' for r in ratios)})"
    )
    goal = m >= 0.02 and statistics.fmean(ratios) <= 1.0
    print(f"goal (≥ setfit + 2 points in no more wall time): {'met' if goal else 'missed'} on this run")
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "results.json").write_text(
            json.dumps({"options": vars(a) | {"out": str(a.out)}, "runs": runs}, indent=1)
        )


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()
