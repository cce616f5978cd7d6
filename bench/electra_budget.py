"""Why does ELECTRA-tiny's discriminator barely learn in the demo's budget? Controlled variants of the
demo's recipe (bertology.demo.recipe) on the Debian descriptions, each pretrained for the same number of
steps (the demo's 80 s slot gives about 1,000 on 2 cores), then scored by google-research/electra's
held-out metrics (train/rtd.evaluate_replaced_token_detection: disc_auc among them) and by
fine-tuning on data/debian-sections (mean-pooled head, lr 1e-3, 10 labels per class and all labels,
test accuracy over seeds).

    python bench/electra_budget.py [--steps 1000] [--variants paper,gen1/8,...] [--corpus-mb 4]

A variant changes one thing against `paper` (the recipe as the demo ran it before: generator 1/4 of
the discriminator's width at its full depth, samples at temperature 1, λ = 50, lr 2e-3); `recipe` is
the demo's recipe as it is now (temperature 2, lr 5e-4: `temp2-lr5e-4`). Steps, not seconds, are held equal so that the rows do not depend on what
else the machine runs; each row prints its seconds a step, which is what an equal-time race charges.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import dataclasses
import json
import shutil


from bertology.demo import small_budget_options
from bertology.demo.stages import corpus_files, data_path
from bertology.hardware import cpu_summary
from bertology.models import get_family
from bertology.tasks.finetune import FinetuneOptions
from bertology.tasks.grid import finetune_grid
from bertology.tokenizers import train
from bertology.train.pretrain import pretrain

# each variant: the recipe's keyword arguments that differ from `paper`'s
PAPER = dict(generator_size=0.25, sampling_temperature=1.0, discriminator_weight=50.0, lr=2e-3)
VARIANTS = {
    "paper": {},
    "recipe": None,  # the demo's recipe as it stands: no overrides at all
    "gen1/8": dict(generator_size=0.125),
    "gen1/2": dict(generator_size=0.5),
    "temp2": dict(sampling_temperature=2.0),
    "weight10": dict(discriminator_weight=10.0),
    "weight200": dict(discriminator_weight=200.0),
    "no-prior": dict(unigram_prior=False),
    "lr5e-4": dict(lr=5e-4),  # ELECTRA-Small's rate (the recipe's 2e-3 was chosen for BERT)
    "temp2-lr5e-4": dict(
        sampling_temperature=2.0, lr=5e-4
    ),  # the generator's output bias at zero, not the corpus's unigram prior
}
# reference rows: BERT-tiny by the demo's recipe (MLM, the same steps and tokenizer), and the random-init twin
REFERENCES = ("bert", "random-init")


def finetune_scores(
    run: Path, out: Path, seeds: list[int], all_labels: bool, from_scratch: bool = False
) -> dict[str, str]:
    """Test accuracy (mean ± std over `seeds`) at 10 labels per class and (`all_labels`) at all labels."""
    task = data_path("debian-sections")
    cells = {"10/class": "", "all": ""}
    for name, per_class, epochs in (("10/class", 10, 20), ("all", None, 8))[: 2 if all_labels else 1]:
        options = FinetuneOptions(
            model=str(run),
            task="classify",
            train=str(task / "train.tsv"),
            dev=str(task / "dev.tsv"),
            out_dir=str(out / "ft"),
            labels_per_class=per_class,
            epochs=epochs,
            batch_size=32,
            max_length=32,
            quiet=True,
            pooling="mean",
            from_scratch=from_scratch,
        )
        shutil.rmtree(out / "ft", ignore_errors=True)
        grid = finetune_grid(options, str(task / "test.tsv"), [1e-3], seeds)
        cells[name] = f"{grid.test_mean:.3f} ± {grid.test_std:.3f}"
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--corpus-mb", type=int, default=4)
    parser.add_argument("--seeds", default="0,1,2", help="fine-tuning seeds")
    parser.add_argument("--no-finetune", action="store_true")
    parser.add_argument("--all-labels", action="store_true", help="fine-tune on every label too (slower)")
    parser.add_argument("--out", default="runs/electra-budget")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(cpu_summary(), flush=True)
    corpus = corpus_files(out, args.corpus_mb * 1_000_000)
    tok = out / "tokenizer.json"
    if not tok.is_file():  # the demo's: BERT's WordPiece by frequency, 8,000 pieces
        record = get_family("bert")
        train(
            [str(c) for c in corpus],
            family=record.tokenizer,
            vocab_size=8000,
            show_progress=False,
            **dict(record.tokenizer_options),
        ).save(tok)
    seeds = [int(s) for s in args.seeds.split(",")]
    print(
        "| variant | s/step | masked_lm_acc. | sampled_masked_lm_acc. | disc_auc | disc_acc. | disc_precision | "
        "disc_recall | disc_loss (prior) | test acc., 10/class | test acc., all |\n" + "|---" * 11 + "|",
        flush=True,
    )
    for name in args.variants.split(","):
        if name in REFERENCES:
            reference(name, out, corpus, tok, args, seeds)
            continue
        overrides = VARIANTS[name]
        run = out / name.replace("/", "_")
        if not (run / "summary.json").is_file():
            shutil.rmtree(run, ignore_errors=True)
            extra = {} if overrides is None else {**PAPER, **overrides}
            fixed = {k: extra.pop(k) for k in ("unigram_prior", "lr") if k in extra}  # the recipe sets these itself
            options = small_budget_options(
                "electra", corpus, str(tok), str(run), args.steps, False, quiet=True, **extra
            )
            pretrain(dataclasses.replace(options, **fixed))
        summary = json.loads((run / "summary.json").read_text())
        e = {k.removeprefix("eval/"): v for k, v in summary["eval"].items()}
        share = e["replaced_share"]
        prior = -(share * _log(share) + (1 - share) * _log(1 - share))  # the loss of "p = replaced share" everywhere
        cells = {"10/class": "", "all": ""} if args.no_finetune else finetune_scores(run, out, seeds, args.all_labels)
        print(
            f"| {name} | {summary['train_seconds'] / summary['steps']:.3f} | {e['masked_lm_accuracy']:.3f} | "
            f"{e['sampled_masked_lm_accuracy']:.3f} | {e['disc_auc']:.3f} | {e['disc_accuracy']:.3f} | "
            f"{e['disc_precision']:.3f} | {e['disc_recall']:.3f} | {e['disc_loss']:.3f} ({prior:.3f}) | "
            f"{cells['10/class']} | {cells['all']} |",
            flush=True,
        )


def reference(name: str, out: Path, corpus, tok: Path, args, seeds: list[int]) -> None:
    """A reference row: BERT-tiny pretrained by the same recipe, or the random-init twin (no pretraining)."""
    run = out / name
    if name == "bert" and not (run / "summary.json").is_file():
        shutil.rmtree(run, ignore_errors=True)
        pretrain(small_budget_options("bert", corpus, str(tok), str(run), args.steps, False, quiet=True))
    source = run if name == "bert" else out / "paper"  # the twin: the ELECTRA run's architecture, new weights
    cells = finetune_scores(source, out, seeds, args.all_labels, from_scratch=name == "random-init")
    print(f"| {name} |" + " |" * 8 + f" {cells['10/class']} | {cells['all']} |", flush=True)


def _log(x: float) -> float:
    import math

    return math.log(max(x, 1e-12))


if __name__ == "__main__":
    main()
