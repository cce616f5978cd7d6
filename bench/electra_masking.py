"""How much should ELECTRA mask on a small budget? ELECTRA-tiny pretrained with the demo's recipe
(bertology.demo.recipe) at several masking rates for the same number of steps, then fine-tuned on
data/debian-sections with all labels and with 10 per class (mean-pooled head, lr ∈ {1e-3, 3e-3}
chosen on dev, two seeds).

    python bench/electra_masking.py [--rates 0.15,0.25] [--steps 300] [--corpus-mb 3] [--out runs/electra-masking]

The paper masks 15%; google-research/electra's code later moved to 25% for small models. Steps,
not seconds, are held equal: a step costs about the same at either rate (the generator's head runs
at the masked positions only), and a count of steps does not depend on what else the machine runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import csv
import json
import shutil

from bertology.demo import small_budget_options
from bertology.demo.stages import corpus_files, data_path
from bertology.hardware import cpu_summary
from bertology.tasks.finetune import FinetuneOptions
from bertology.tasks.grid import finetune_grid
from bertology.tasks.subsets import balanced_subset
from bertology.tokenizers import train
from bertology.train.pretrain import pretrain


def few_labels(out: Path, per_class: int) -> Path:
    """The training file cut to `per_class` examples a class (the demo's seed-0 subset)."""
    with open(data_path("debian-sections", "train.tsv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    path = out / f"train-{per_class}.tsv"
    picked = balanced_subset([r["label"] for r in rows], per_class, seed=0)
    path.write_text(
        "text\tlabel\n" + "".join(f"{rows[i]['text']}\t{rows[i]['label']}\n" for i in picked), encoding="utf-8"
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="0.15,0.25")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--corpus-mb", type=int, default=3)
    parser.add_argument("--out", default="runs/electra-masking")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(cpu_summary(), flush=True)
    corpus = corpus_files(out, args.corpus_mb * 1_000_000)
    tok = out / "tokenizer.json"
    if not tok.is_file():
        train(
            [str(c) for c in corpus], family="bert", vocab_size=8000, show_progress=False, criterion="frequency"
        ).save(tok)
    task = data_path("debian-sections")
    sets = {"all": (task / "train.tsv", 8), "10/class": (few_labels(out, 10), 30)}
    print(
        "| masked | held-out generator MLM acc. | discriminator acc. (replaced share) | "
        + " | ".join(f"test acc., {k} (lr)" for k in sets)
        + " |\n|---|---|---|"
        + "---|" * len(sets),
        flush=True,
    )
    for rate in (float(r) for r in args.rates.split(",")):
        run = out / f"p{rate:g}"
        if not (run / "summary.json").is_file():
            shutil.rmtree(run, ignore_errors=True)
            pretrain(
                small_budget_options(
                    "electra", corpus, str(tok), str(run), args.steps, False, quiet=True, mlm_probability=rate
                )
            )
        e = json.loads((run / "summary.json").read_text())["eval"]
        cells = []
        for name, (train_file, epochs) in sets.items():
            options = FinetuneOptions(
                model=str(run),
                task="classify",
                train=str(train_file),
                dev=str(task / "dev.tsv"),
                out_dir=str(out / "ft"),
                epochs=epochs,
                batch_size=32,
                max_length=32,
                quiet=True,
                pooling="mean",
            )
            shutil.rmtree(out / "ft", ignore_errors=True)
            grid = finetune_grid(options, str(task / "test.tsv"), [1e-3, 3e-3], [0, 1])
            cells.append(f"{grid.test_mean:.3f} ± {grid.test_std:.3f} ({grid.lr:g})")
        print(
            f"| {rate:.0%} | {e['eval/generator_mlm_accuracy']:.3f} | {e['eval/discriminator_accuracy']:.3f} "
            f"({e['eval/replaced_share']:.3f}) | " + " | ".join(cells) + " |",
            flush=True,
        )


if __name__ == "__main__":
    main()
