"""`finetune --method setfit`: SetFit (Tunstall et al. 2022). The sentence encoder is tuned
contrastively on pairs drawn from the few labelled examples (same label: target cosine 1; different
labels: target 0; the loss is the squared error of the cosine of the two mean-pooled sentence
vectors, as sentence-transformers' CosineSimilarityLoss), then a logistic regression is fitted on
the tuned vectors (tasks/probe.py), written into the model's mean-pooled head: the result is an
ordinary sequence classifier that `predict`, `evaluate` and `serve` read as any other.

What differs from the setfit library, where its users find fault:
- pairs are drawn lazily from (seed, pass, position) (`pair_stream`): memory is O(examples), not
  O(pairs), and the same seed gives the same pairs;
- one count, `--pairs-per-example`: every example anchors that many pairs in each pass (half of
  them positive, half negative), `--epochs` passes, so a run sees examples × pairs × epochs pairs
  (the library's num_iterations, num_epochs and sampling strategy each change that count);
- early stopping on dev: the probe is fitted and scored on dev every quarter pass (and once on the
  untuned encoder), the best encoder and its head are kept in memory, and the run stops when dev
  has not improved for PATIENCE evaluations. Nothing is written until the end.

Classification here is single-label (one label per example), so the pairs are too; SetFit's
multi-label rule (positive when two examples share any label) needs a multi-label task first.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch
from torch import nn

from ..io import atomic_write_json, atomic_write_text
from ..models.heads import mean_pool
from ..progress import progress_bar
from ..train import distributed as dist
from ..train.device import choose_precision, say, to_device
from ..train.schedules import schedule
from ..train.trainer import parameter_groups
from .base import Features, Task
from .forward import LABEL_KEYS, model_inputs, run_model
from .probe import fit_probe
from .summary import run_summary

EVALS_PER_PASS = 4  # dev is probed every quarter pass over the examples' pairs
PATIENCE = 4  # evaluations without a better dev score (one pass) before the run stops


def pair_stream(
    labels: Sequence[int], pairs_per_example: int, seed: int, pass_index: int = 0
) -> Iterator[tuple[int, int, float]]:
    """One pass of SetFit pairs (i, j, target), drawn lazily: target 1.0 when labels[i] == labels[j],
    else 0.0. Every example i anchors `pairs_per_example` pairs, half positive and half negative (an
    odd count alternates the extra one between examples); partners are drawn uniformly from the
    anchor's class without the anchor itself (itself only in a class of one) or from all other classes.

    The pass is `pairs_per_example` rounds; each round visits every example once in a shuffled order,
    positives and negatives alternating, so any run of consecutive pairs is balanced and mixes
    anchors. Memory is O(len(labels)), whatever the number of pairs; (seed, pass_index) fixes the pairs.

    >>> labels = [0, 0, 1, 1, 2, 2]
    >>> pairs = list(pair_stream(labels, pairs_per_example=4, seed=0))
    >>> len(pairs), sum(t for _, _, t in pairs)
    (24, 12.0)
    >>> all((labels[i] == labels[j]) == (t == 1.0) and i != j for i, j, t in pairs)
    True
    >>> pairs == list(pair_stream(labels, 4, seed=0)) != list(pair_stream(labels, 4, seed=0, pass_index=1))
    True
    """
    y = np.asarray(labels)
    n = len(y)
    if pairs_per_example < 1:
        raise ValueError(f"pairs per example must be ≥ 1, got {pairs_per_example}")
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) < 2:
        raise ValueError(f"SetFit pairs need at least 2 labels (negatives), got {len(classes)}")
    # examples grouped by class in one flat array: a class is a slice, "any other class" the rest of it
    by_class = np.argsort(y, kind="stable")
    start = dict(zip(classes.tolist(), (np.cumsum(counts) - counts).tolist()))
    size = dict(zip(classes.tolist(), counts.tolist()))
    rank = np.empty(n, dtype=np.int64)  # each example's position within its class's slice
    rank[by_class] = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
    rng = np.random.default_rng([seed % 2**63, pass_index])

    def partner(i: int, positive: bool) -> int:
        c = y[i].item()
        if positive:
            if size[c] == 1:
                return i  # a class of one: its only positive is itself (dropout still makes two views)
            r = int(rng.integers(size[c] - 1))
            return int(by_class[start[c] + r + (r >= rank[i])])  # skip the anchor itself
        r = int(rng.integers(n - size[c]))
        return int(by_class[r + size[c] if r >= start[c] else r])  # skip the anchor's class

    for round_ in range(pairs_per_example):
        order = rng.permutation(n)
        # anchor i is positive in rounds where i + round is even: over an even count, exactly half
        positive = [int(i) for i in order if (i + round_) % 2 == 0]
        negative = [int(i) for i in order if (i + round_) % 2 == 1]
        for p, q in itertools.zip_longest(positive, negative):
            if p is not None:
                yield p, partner(p, True), 1.0
            if q is not None:
                yield q, partner(q, False), 0.0


def run_pairs(labels: Sequence[int], pairs_per_example: int, seed: int, total: int) -> Iterator[tuple[int, int, float]]:
    """The first `total` pairs of passes 0, 1, 2 … of `pair_stream` (a fractional --epochs ends mid-pass).

    >>> len(list(run_pairs([0, 1, 1], 2, seed=0, total=9)))
    9
    """
    passes = (pair_stream(labels, pairs_per_example, seed, p) for p in itertools.count())
    return itertools.islice(itertools.chain.from_iterable(passes), total)


def cosine_pair_loss(u: torch.Tensor, v: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error between cos(u_k, v_k) and target_k (sentence-transformers' CosineSimilarityLoss).

    >>> u, v = torch.tensor([[1.0, 0.0], [1.0, 0.0]]), torch.tensor([[2.0, 0.0], [0.0, 3.0]])
    >>> cosine_pair_loss(u, v, torch.tensor([1.0, 1.0]))  # cosines 1 and 0: errors 0 and 1
    tensor(0.5000)
    """
    return nn.functional.mse_loss(nn.functional.cosine_similarity(u, v, dim=-1), target)


def encode_pairs(model, features: Features, pairs: Sequence[tuple[int, int, float]], device) -> torch.Tensor:
    """The cosine loss of a batch of pairs: each distinct example of the batch is encoded once (anchors
    and partners repeat), on the model's backbone, padded only to the batch's longest row."""
    rows = sorted({i for i, _, _ in pairs} | {j for _, j, _ in pairs})
    where = {row: k for k, row in enumerate(rows)}
    batch = {k: v for k, v in model_inputs(model, features.batch(rows)).items() if k not in LABEL_KEYS}
    if "attention_mask" in batch:  # features are padded to the longest example of all; the batch needs less
        length = int(batch["attention_mask"].sum(1).max())
        left = bool(batch["attention_mask"][:, 0].eq(0).any())  # XLNet pads on the left
        batch = {k: (v[:, -length:] if left else v[:, :length]) if v.dim() == 2 else v for k, v in batch.items()}
    batch = to_device(batch, device)
    backbone = getattr(model, "backbone", model)
    h = mean_pool(backbone(**batch).last_hidden_state, batch.get("attention_mask"))  # (rows, H)
    a = torch.tensor([where[i] for i, _, _ in pairs], device=device)
    b = torch.tensor([where[j] for _, j, _ in pairs], device=device)
    target = torch.tensor([t for _, _, t in pairs], device=device)
    return cosine_pair_loss(h[a], h[b], target)


def train_setfit(o, task: Task, model, tokenizer, features: Features, train, dev, labels, out: Path, subset, device):
    """--method setfit: contrastive tuning of the backbone on pairs, early stopping on the probe's dev
    accuracy, the probe fitted on the kept encoder, one save. Returns the run's summary (as --method
    probe's, with steps and a "setfit" record: pairs seen, best dev, the step kept and the step stopped at)."""
    device = torch.device(device or "cpu")
    model.to(device)
    y = features.tensors["labels"].tolist()
    n, k = len(y), o.pairs_per_example
    total = max(1, round(o.epochs * n * k))
    steps = math.ceil(total / o.batch_size)
    steps_per_pass = math.ceil(n * k / o.batch_size)
    eval_every = max(1, math.ceil(steps_per_pass / EVALS_PER_PASS))
    dev_features = task.featurize(dev, tokenizer, o.max_length, model.config.label2id, o.stride) if dev else None

    backbone = getattr(model, "backbone", model)
    optimizer = torch.optim.AdamW(
        parameter_groups(backbone, o.weight_decay), lr=o.lr, eps=1e-6, fused=device.type in ("cpu", "cuda")
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule("linear", steps, round(o.warmup_ratio * steps)))
    precision = choose_precision(device, "auto", o.bf16)
    scaler = torch.amp.GradScaler(device.type, enabled=precision.scaled)

    history: list[dict] = []
    best = {"dev": -math.inf, "step": 0, "state": None, "probe": None}

    def evaluate(step: int) -> bool:
        """Fit the probe on the encoder as it is now and score it on dev; True when dev improved."""
        fitted = fit_probe(model, features, dev_features, o.bf16)
        score = max(fitted["dev_accuracy_by_l2"].values())
        history.append({"step": step, "eval/probe_accuracy": score, "eval/l2": fitted["l2"]})
        if score <= best["dev"]:  # ties keep the earlier, less tuned encoder
            return False
        state = {name: t.detach().clone() for name, t in model.state_dict().items()}  # encoder and fitted head
        best.update(dev=score, step=step, state=state, probe=fitted)
        return True

    if dev_features is not None:
        evaluate(0)  # the untuned encoder is a candidate too: tuning must beat it on dev to be kept
    pairs = run_pairs(y, k, o.seed, total)
    bar = None if o.quiet or not dist.is_main() else progress_bar(total=steps, desc="setfit", unit="step")
    step, stale, seen = 0, 0, 0
    with precision.matmuls():
        while step < steps:
            chunk = list(itertools.islice(pairs, o.batch_size))
            model.train()  # dropout on, as in training (evaluation switched it off)
            with precision.autocast():
                loss = encode_pairs(model, features, chunk, device)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(backbone.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step, seen = step + 1, seen + len(chunk)
            if step % o.log_every == 0 or step == steps:
                history.append({"step": step, "loss": loss.item(), "lr": scheduler.get_last_lr()[0]})
                if bar is not None:
                    bar.set_postfix(loss=f"{loss.item():.4f}")
            if bar is not None:
                bar.update(1)
            if dev_features is not None and (step % eval_every == 0 or step == steps):
                stale = 0 if evaluate(step) else stale + 1
                if stale >= PATIENCE:
                    break
    if bar is not None:
        bar.close()

    if best["state"] is not None:  # the best encoder and the probe fitted on it at that evaluation
        model.load_state_dict(best["state"])
        fitted = best["probe"]
        say(f"setfit: dev {best['dev']:.4f} at step {best['step']} of {step} ({seen} pairs seen)")
    else:  # no dev: every pair, then the probe at sklearn's default penalty
        fitted = fit_probe(model, features, None, o.bf16)
    scores = None
    if dev:
        outputs = run_model(model, dev_features, bf16=o.bf16)
        scores = task.metrics(task.predict(outputs, dev_features, dev, model.config.id2label), dev)
    record = {
        "pairs_per_example": k,
        "pairs_planned": total,
        "pairs_seen": seen,
        "steps_planned": steps,
        "stopped_at": step,
        "early_stopped": step < steps,
        "best_step": best["step"] if best["state"] is not None else step,
        "best_dev": best["dev"] if best["state"] is not None else None,
        "eval_every": eval_every if dev_features is not None else None,
    }
    summary = {**run_summary(o, task, model, train, features, labels, subset, scores), "steps": step}
    summary.update(best_step=record["best_step"], probe=fitted, setfit=record)
    if dist.is_main():
        tokenizer.save(out / "tokenizer.json")
        model.to("cpu").save(out)
        atomic_write_text(out / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in history))
        atomic_write_json(out / "summary.json", summary)
    return summary
