"""`finetune --method probe`: the encoder frozen, a multinomial logistic regression on its
mean-pooled sentence vectors (a linear probe; the head SetFit and the MiniLM reference line fit).

What it measures is what the encoder's sentence vectors already carry about the classes; nothing
below the head changes, so it costs one forward pass over the data. The L2 strength is chosen on
dev from L2_GRID (sklearn's default, C = 1, is one of them: l2 = 1 / N). The fitted weights are
the mean-pooled head's own (`MeanPooledHead.proj`), so the result is an ordinary sequence
classifier: `predict`, `evaluate`, `serve` and the ensembles read it as any other.
"""

from __future__ import annotations

import torch

from ..models.heads import mean_pool
from .base import Features
from .baseline import fit_logistic_regression
from ..train.device import model_device, to_device
from .forward import LABEL_KEYS, model_inputs, precision

L2_GRID = (1e-4, 1e-3, 1e-2, 1e-1)  # and 1 / N: the penalty of sklearn's LogisticRegression() at C = 1


@torch.no_grad()
def sentence_vectors(model, features: Features, batch_size: int = 64, bf16: bool = False) -> torch.Tensor:
    """(N, H) the mean of each row's real tokens' last hidden states, from the model's backbone."""
    model.eval()
    device = model_device(model)
    backbone = getattr(model, "backbone", model)
    rows = []
    for start in range(0, len(features), batch_size):
        batch = features.batch(range(start, min(start + batch_size, len(features))))
        inputs = to_device({k: v for k, v in model_inputs(model, batch).items() if k not in LABEL_KEYS}, device)
        with precision(device, bf16):
            h = backbone(**inputs).last_hidden_state  # (B, T, H)
        rows.append(mean_pool(h, inputs.get("attention_mask")).float().cpu())
    return torch.cat(rows) if rows else torch.empty(0, 0)


def accuracy(X: torch.Tensor, y: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> float:
    return float(((X @ W + b).argmax(1) == y).float().mean())


@torch.no_grad()
def fit_probe(model, train: Features, dev: Features | None, bf16: bool = False) -> dict:
    """Fit the logistic regression on `train`'s sentence vectors (labels in its tensors), the L2 strength
    chosen on `dev`'s accuracy (ties: the stronger penalty); write it into the model's mean-pooled head.
    Returns {"l2": chosen, "dev_accuracy_by_l2": {...}}."""
    head = getattr(getattr(model, "classifier", None), "proj", None)
    if head is None:
        raise ValueError(f"{model.architecture}: a probe writes into a mean-pooled head (--pooling mean)")
    X, y = sentence_vectors(model, train, bf16=bf16), train.tensors["labels"]
    C = head.out_features
    grid = sorted({*L2_GRID, 1.0 / len(y)}, reverse=True)
    fits = {l2: fit_logistic_regression(X, y, C, l2) for l2 in grid}
    scores = {}
    if dev is not None and len(grid) > 1:
        Xd, yd = sentence_vectors(model, dev, bf16=bf16), dev.tensors["labels"]
        scores = {l2: accuracy(Xd, yd, *fits[l2]) for l2 in grid}
        chosen = max(grid, key=lambda l2: scores[l2])  # max keeps the first of equals: the strongest penalty
    else:
        chosen = 1.0 / len(y)
    W, b = fits[chosen]
    head.weight.copy_(W.T.to(head.weight.dtype))  # (C, H)
    head.bias.copy_(b.to(head.bias.dtype))
    return {"l2": chosen, "dev_accuracy_by_l2": {f"{k:g}": v for k, v in scores.items()}}
