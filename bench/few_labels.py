"""Which fine-tuning head and settings suit few labels? Each variant fine-tuned from the same
start on the same class-balanced subsets of data/debian-sections, 5 seeds ensembled, and compared
with the [CLS] head by a paired bootstrap over the test items.

    python bench/few_labels.py --model runs/demo/pretrain/bert [--counts 10,175] [--lr 3e-3] [--seeds 0,1,2,3,4]

Variants: --pooling cls (the reference), --pooling mean, mean + --head-lr 10× --lr, mean +
--reinit-layers 1; for the pretrained start and its random-init twin (--from-scratch: same
architecture and tokenizer). Epochs per count are the demo's (bertology.demo.plan.Plan.epochs).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import shutil
import time

from bertology.demo.plan import Plan
from bertology.hardware import bf16_pays, cpu_summary
from bertology.tasks.bootstrap import paired_bootstrap
from bertology.tasks.finetune import FinetuneOptions
from bertology.tasks.grid import finetune_grid

DATA = Path(__file__).resolve().parents[1] / "data" / "debian-sections"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, metavar="DIR", help="a pretrained BERT-family directory")
    parser.add_argument("--counts", default="10,175", help="labelled examples per class (175: all)")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--out", default="runs/bench-few-labels")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    seeds = tuple(int(s) for s in args.seeds.split(","))
    bf16 = bf16_pays()
    plan = Plan.make(quick=False, bf16=bf16)
    print(f"{cpu_summary()}; {'bf16' if bf16 else 'fp32'}; lr {args.lr:g}, seeds {list(seeds)}")
    variants = {
        "cls": dict(pooling="cls"),
        "mean": dict(pooling="mean"),
        "mean + head-lr ×10": dict(pooling="mean", head_lr=10 * args.lr),
        "mean + reinit 1 layer": dict(pooling="mean", reinit_layers=1),
    }
    out = Path(args.out)
    print(
        f"{'start':<12} {'labels/class':>12} {'variant':<22} {'dev':>6} {'test (ens.)':>11} {'vs cls [95% CI]':>26} {'s':>5}"
    )
    for start, scratch in (("pretrained", False), ("random init", True)):
        for count in counts:
            reference = None
            for name, extra in variants.items():
                t0 = time.perf_counter()
                run_dir = out / start.replace(" ", "-") / str(count) / name.replace(" ", "")
                shutil.rmtree(run_dir, ignore_errors=True)
                options = FinetuneOptions(
                    model=args.model,
                    from_scratch=scratch,
                    task="classify",
                    train=str(DATA / "train.tsv"),
                    dev=str(DATA / "dev.tsv"),
                    out_dir=str(run_dir),
                    epochs=plan.epochs(10 * count),
                    batch_size=32,
                    max_length=plan.finetune_length,
                    bf16=bf16,
                    quiet=True,
                    labels_per_class=None if count >= 175 else count,
                    **extra,
                )
                grid = finetune_grid(options, str(DATA / "test.tsv"), (args.lr,), seeds)
                if reference is None:
                    reference, versus = grid, ""
                else:
                    r = paired_bootstrap(grid.correct(), reference.correct())
                    versus = f"{r['diff']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}]" + (
                        " *" if r["significant"] else ""
                    )
                print(
                    f"{start:<12} {count:>12} {name:<22} {grid.dev_mean:>6.3f} {grid.ensemble_test:>11.3f} "
                    f"{versus:>26} {time.perf_counter() - t0:>5.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
