"""Does pretraining pay, and from how many tokens on? One pretraining run per corpus, measured at
every checkpoint: what it learnt, whether it collapsed, and what fine-tuning from it gives.

    python bench/pretraining_pays.py [--family bert] [--corpora debian,wiki] [--steps 2000] [--checkpoints 4]
                                     [--lrs 1e-3,3e-3] [--seeds 0] [--epochs 10] [--bert-recipe] [--out runs/pretraining-pays]

Per checkpoint (step 0 is the random-init twin: same architecture, same tokenizer):
  - held-out MLM accuracy, next to the unigram baseline (always the corpus's most frequent token);
  - collapse: mean pairwise cosine of the mean-pooled and of the first-token ([CLS]) vectors of
    the data/debian-sections dev texts (≈ 1.0: every text looks the same);
  - fine-tuning on data/debian-sections: the learning rate chosen on mean dev accuracy over the
    seeds, its dev and test accuracy (tasks.grid.finetune_grid).
The pretraining recipe is the demo's (bertology.demo.recipe), so the curve explains the demo.
Writes table.md, results.json and pretraining-pays.png (three panels against pretraining tokens).
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
import time

import torch

from bertology import load
from bertology.demo import CORPORA, small_budget_options
from bertology.hardware import bf16_pays, cpu_summary
from bertology.models import task_class
from bertology.tasks.baseline import BagOfWordsBaseline
from bertology.tasks.classification import ClassifyTask
from bertology.tasks.finetune import FinetuneOptions
from bertology.tasks.grid import finetune_grid
from bertology.tokenizers import Tokenizer, train
from bertology.train.diagnostics import mean_pairwise_cosine, sentence_vectors
from bertology.train.pretrain import pretrain
from bertology.viz.plots import read_metrics

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "data" / "debian-sections"


def dev_texts() -> list[str]:
    with open(TASK / "dev.tsv", encoding="utf-8") as f:
        return [row["text"] for row in csv.DictReader(f, delimiter="\t")]


def collapse(model, tok) -> dict[str, float]:
    mean, first = sentence_vectors(model, tok, dev_texts(), max_length=64)
    return {"cos_mean_pooled": mean_pairwise_cosine(mean), "cos_first_token": mean_pairwise_cosine(first)}


def measure(name: str, start: str, tokenizer: str, out: Path, args, from_scratch: bool) -> dict:
    options = FinetuneOptions(
        model=start,
        tokenizer=tokenizer,
        from_scratch=from_scratch,
        task="classify",
        train=str(TASK / "train.tsv"),
        dev=str(TASK / "dev.tsv"),
        out_dir=str(out / name),
        epochs=args.epochs,
        batch_size=32,
        max_length=48,
        bf16=args.bf16,
        quiet=True,
    )
    shutil.rmtree(out / name, ignore_errors=True)
    grid = finetune_grid(options, str(TASK / "test.tsv"), args.lrs, args.seeds)
    shutil.rmtree(out / name, ignore_errors=True)  # the fine-tuned models are not needed here
    return {"lr": grid.lr, "dev": grid.dev_mean, "test": grid.test_mean, "test_std": grid.test_std}


def run_corpus(corpus: str, args, out: Path) -> list[dict]:
    tok_path = out / corpus / "tokenizer.json"
    files = [str(f) for f in CORPORA[corpus]]
    if not tok_path.is_file():
        train(
            files,
            family=args.family,
            vocab_size=args.vocab_size,
            show_progress=False,
            **({"criterion": "frequency"} if args.family == "bert" else {}),
        ).save(tok_path)
    tok = Tokenizer.load(tok_path)
    tok.no_padding()
    tok.no_truncation()
    run_dir = out / corpus / "pretrain"
    every = max(1, args.steps // args.checkpoints)
    if not (run_dir / "summary.json").is_file():
        shutil.rmtree(run_dir, ignore_errors=True)
        options = small_budget_options(
            args.family, files, str(tok_path), str(run_dir), args.steps, args.bf16, quiet=True
        )
        options.eval_every, options.save_every, options.keep_checkpoints = every, every, args.checkpoints + 1
        if args.first_wave:  # BERT's own settings, for the diagnosis: only these settings differ
            options.seq_len, options.dropout, options.mlm_probability, options.max_predictions = 64, None, 0.15, None
            options.unigram_prior = False
        started = time.perf_counter()
        pretrain(options)
        print(f"{corpus}: pretrained {args.steps} steps in {time.perf_counter() - started:.0f} s", flush=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    tokens_per_step = summary["options"]["batch_size"] * summary["options"]["seq_len"]
    evals = {r["step"]: r for r in read_metrics(run_dir / "metrics.jsonl") if "eval/mlm_accuracy" in r}
    rows = []
    # step 0 is the random-init twin (the pretrained model's config, fresh weights), then every checkpoint
    points = [(0, str(run_dir))] + [
        (int(c.name.split("-")[1]), str(c)) for c in sorted((run_dir / "checkpoints").glob("step-*"))
    ]
    if points[-1][0] != summary["steps"]:
        points.append((summary["steps"], str(run_dir)))
    for step, start in points:
        if step:
            model = load(start)
        else:
            torch.manual_seed(0)
            model = task_class(args.family, "ForMaskedLM")(load(run_dir).config)
        row = {
            "corpus": corpus,
            "step": step,
            "tokens": step * tokens_per_step,
            "mlm_accuracy": evals.get(step, {}).get("eval/mlm_accuracy"),
            "mlm_loss": evals.get(step, {}).get("eval/mlm_loss"),
            "unigram_accuracy": next(iter(evals.values()))["eval/unigram_accuracy"] if evals else None,
            "unigram_loss": next(iter(evals.values()))["eval/unigram_loss"] if evals else None,
            **collapse(model, tok),
        }
        row.update(measure(f"ft-{corpus}-{step}", start, str(tok_path), out, args, from_scratch=step == 0))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def plot(rows: list[dict], baseline: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for corpus, color in zip(sorted({r["corpus"] for r in rows}), ("#1f77b4", "#d62728", "#2ca02c")):
        rs = sorted((r for r in rows if r["corpus"] == corpus), key=lambda r: r["tokens"])
        x = [r["tokens"] / 1e6 for r in rs]
        trained = [r for r in rs if r["mlm_accuracy"] is not None]
        axes[0].plot(
            [r["tokens"] / 1e6 for r in trained],
            [r["mlm_accuracy"] for r in trained],
            "o-",
            color=color,
            label=f"{corpus}: MLM",
        )
        if trained:
            axes[0].axhline(trained[0]["unigram_accuracy"], color=color, ls=":", label=f"{corpus}: unigram baseline")
        axes[1].plot(x, [r["cos_mean_pooled"] for r in rs], "o-", color=color, label=f"{corpus}: mean-pooled")
        axes[1].plot(x, [r["cos_first_token"] for r in rs], "s--", color=color, label=f"{corpus}: [CLS]")
        axes[2].errorbar(
            x,
            [r["test"] for r in rs],
            yerr=[r["test_std"] for r in rs],
            fmt="o-",
            color=color,
            capsize=3,
            label=f"pretrained on {corpus}",
        )
        axes[2].axhline(rs[0]["test"], color=color, ls=":", label=f"random init ({corpus} tokenizer)")
    axes[2].axhline(baseline, color="#7f7f7f", ls="--", label="bag-of-words")
    titles = ("held-out MLM accuracy", "collapse: mean pairwise cosine (dev texts)", "Debian sections test accuracy")
    for ax, title in zip(axes, titles):
        ax.set(xlabel="pretraining tokens (millions)", title=title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="bert", choices=["bert", "roberta", "albert"])
    parser.add_argument("--corpora", default="debian,wiki")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--checkpoints", type=int, default=4)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--epochs", type=float, default=10.0)
    parser.add_argument("--lrs", default="1e-3,3e-3")
    parser.add_argument("--seeds", default="0")
    parser.add_argument(
        "--bert-recipe",
        "--first-wave",
        dest="first_wave",
        action="store_true",
        help="BERT's own settings instead of the small-budget recipe (sequences of 64, dropout 0.1, "
        "15%% masking, zero output bias)",
    )
    parser.add_argument("--out", default="runs/pretraining-pays")
    args = parser.parse_args()
    args.lrs = [float(x) for x in args.lrs.split(",")]
    args.seeds = [int(x) for x in args.seeds.split(",")]
    args.bf16 = bf16_pays()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{cpu_summary()}; {'bf16' if args.bf16 else 'fp32'}", flush=True)
    rows = [row for corpus in args.corpora.split(",") for row in run_corpus(corpus, args, out)]
    task = ClassifyTask()
    baseline = (
        BagOfWordsBaseline()
        .fit(task.read(str(TASK / "train.tsv")))
        .score(task.read(str(TASK / "test.tsv")))["accuracy"]
    )
    lines = [
        "| corpus | step | tokens | held-out MLM loss (unigram) | MLM acc. (unigram) | cos mean-pooled | cos [CLS] "
        "| lr | dev acc. | test acc. |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        trained = r["mlm_accuracy"] is not None
        loss = f"{r['mlm_loss']:.2f} ({r['unigram_loss']:.2f})" if trained else "– (random init)"
        mlm = f"{r['mlm_accuracy']:.3f} ({r['unigram_accuracy']:.3f})" if trained else "–"
        lines.append(
            f"| {r['corpus']} | {r['step']} | {r['tokens']:,} | {loss} | {mlm} | {r['cos_mean_pooled']:.3f} | "
            f"{r['cos_first_token']:.3f} | {r['lr']:g} | {r['dev']:.3f} | {r['test']:.3f} ± {r['test_std']:.3f} |"
        )
    lines.append(f"\nbag-of-words baseline: test accuracy {baseline:.3f}")
    lines.append(
        f"reproduce: python bench/pretraining_pays.py --family {args.family} --corpora {args.corpora} --steps {args.steps} "
        f"--checkpoints {args.checkpoints} --epochs {args.epochs:g}{' --bert-recipe' if args.first_wave else ''} --lrs {','.join(f'{x:g}' for x in args.lrs)} --seeds {','.join(map(str, args.seeds))}"
    )
    text = "\n".join(lines)
    print(text)
    (out / "table.md").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps({"rows": rows, "baseline": baseline}, indent=2) + "\n")
    plot(rows, baseline, out / "pretraining-pays.png")
    print(f"plot: {out / 'pretraining-pays.png'}")


if __name__ == "__main__":
    main()
