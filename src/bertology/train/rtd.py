"""ELECTRA's replaced-token detection: the generator's MLM, its samples in the masked slots, the
discriminator's per-token "replaced?" loss, and the held-out metrics google-research/electra reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import torch
import torch.nn.functional as F

from ..models.heads import IGNORE_INDEX
from .device import model_device, to_device


def sample_tokens(logits: torch.Tensor, draws: torch.Tensor) -> torch.Tensor:
    """One token per row of (M, V) logits, sampled from their softmax by inverting its cumulative sum at
    the uniform `draws` (M,): the sample is a function of the draws alone, whatever device or batch split.

    >>> sample_tokens(torch.tensor([[0.0, 0.0], [0.0, 0.0], [-1e9, 0.0]]), torch.tensor([0.2, 0.7, 0.2])).tolist()
    [0, 1, 1]
    """
    cumulative = torch.softmax(logits.float(), -1).cumsum(-1)  # (M, V)
    cumulative = cumulative / cumulative[:, -1:]  # the last entry exactly 1, whatever the rounding of the sum
    picked = torch.searchsorted(cumulative, draws.to(cumulative.dtype).unsqueeze(-1), right=True).squeeze(-1)
    return picked.clamp(max=logits.shape[-1] - 1)


@dataclass
class Detection:
    """One pass of an ElectraPair over a batch: the generator's MLM at the masked positions, its
    samples put in their place, and the discriminator's logits over the corrupted text."""

    gen_loss: torch.Tensor  # 0-d: the mean MLM loss over this batch's masked tokens (with its gradient)
    gen_logits: torch.Tensor  # (M, V) float32, detached
    targets: torch.Tensor  # (M,) the original tokens at the masked positions
    sampled: torch.Tensor  # (M,) the generator's samples there
    disc_logits: torch.Tensor  # (B, T) "replaced?" logits (with their gradient)
    replaced: torch.Tensor  # (B, T) bool: the corrupted token differs from the original (real tokens only)
    real: torch.Tensor  # (B, T) bool: not padding


def detect_replacements(model, batch: dict[str, torch.Tensor], temperature: float = 1.0) -> Detection:
    """The generator fills the masked slots with samples from softmax(logits / `temperature`) (no
    gradient through the sample); the discriminator reads the result. A sample equal to the original
    token counts as original."""
    labels, real = batch["labels"], batch["attention_mask"].bool()
    masked = labels != IGNORE_INDEX  # (B, T)
    inputs = {k: batch[k] for k in ("attention_mask", "token_type_ids") if k in batch}
    gen = model.generator(input_ids=batch["input_ids"], labels=labels, sparse_prediction=True, **inputs)
    with torch.no_grad():
        scores = gen.logits.detach().float()  # (M, V); float32: argmax and softmax of bf16 are slow on CPUs
        sampled = sample_tokens(scores / temperature, batch["replacement_draws"][masked])  # (M,)
        original = torch.where(masked, labels, batch["input_ids"])  # (B, T): the text before masking
        corrupted = original.masked_scatter(masked, sampled)
        replaced = (corrupted != original) & real  # (B, T)
    disc_logits = model.discriminator(input_ids=corrupted, **inputs).logits  # (B, T)
    return Detection(gen.loss, scores, labels[masked], sampled, disc_logits, replaced, real)


class ReplacedTokenDetectionObjective:
    """ELECTRA: the generator learns MLM at the masked positions; its samples fill them (no gradient
    through the sample); the discriminator learns, at every real token, whether it was replaced:

        loss = MLM(generator) + λ · BCE(discriminator),   λ = 50 (the paper's)

    the MLM mean over the global batch's masked tokens, the BCE over its real tokens. A sample equal
    to the original token counts as original. The model is a models.electra.ElectraPair; the batch is
    the masker's (input_ids masked, labels = the originals there, replacement_draws). `temperature`
    divides the generator's logits before sampling (1: google-research/electra's default).
    """

    def __init__(self, discriminator_weight: float = 50.0, temperature: float = 1.0):
        if not temperature > 0:
            raise ValueError(f"sampling temperature {temperature}: must be > 0")
        self.weight, self.temperature = discriminator_weight, temperature

    def totals(self, batch: dict[str, torch.Tensor]) -> dict[str, int]:
        return {
            "masked": max(1, int((batch["labels"] != IGNORE_INDEX).sum())),
            "real": max(1, int(batch["attention_mask"].sum())),
        }

    def __call__(self, model, batch: dict[str, torch.Tensor], totals: dict[str, int]):
        d = detect_replacements(model, batch, self.temperature)
        m = len(d.targets)
        # A micro-batch with no masked token contributes nothing to the MLM term (its mean would be NaN).
        gen_loss = d.gen_loss * (m / totals["masked"]) if m else d.gen_logits.sum() * 0.0
        bce = F.binary_cross_entropy_with_logits(
            d.disc_logits[d.real].float(), d.replaced[d.real].float(), reduction="sum"
        )
        disc_loss = bce / totals["real"]
        loss = gen_loss + self.weight * disc_loss
        metrics = {
            "generator_mlm_loss": gen_loss.detach(),
            "generator_mlm_accuracy": (d.gen_logits.argmax(-1) == d.targets).sum() / totals["masked"],
            "discriminator_loss": disc_loss.detach(),
            "discriminator_accuracy": ((d.disc_logits.detach() > 0) == d.replaced)[d.real].sum() / totals["real"],
            "replaced_share": d.replaced.sum() / totals["real"],
            "loss": loss.detach(),
        }
        return loss, metrics

    def evaluate(self, model, batches: Iterable[dict[str, torch.Tensor]]) -> dict[str, float]:
        return evaluate_replaced_token_detection(model, batches, self.temperature)


def roc_auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """The area under the ROC curve of `scores` ranking the positive `labels` over the negative ones:
    the probability that a random positive scores above a random negative, a tie counting one half.
    By the rank formula (Mann–Whitney U): (sum of the positives' ranks − P(P+1)/2) / (P·N), tied scores
    sharing the mean of their ranks. NaN when either class is absent (the ranking is then undefined).

    >>> roc_auc(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1]))
    0.75
    >>> roc_auc(torch.tensor([0.5, 0.5, 0.2, 0.9]), torch.tensor([1, 0, 0, 1]))  # a tie counts 1/2
    0.875
    """
    scores, labels = scores.flatten().double(), labels.flatten().bool()
    positives = int(labels.sum())
    negatives = labels.numel() - positives
    if not positives or not negatives:
        return float("nan")
    _, group, counts = torch.unique(scores, return_inverse=True, return_counts=True)  # groups in ascending order
    last = counts.cumsum(0).double()  # 1-based rank of each group's last member
    mean_rank = last - (counts - 1) / 2  # a tie group holds the ranks last−count+1 … last
    rank_sum = float(mean_rank[group][labels].sum())
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def precision_recall(predicted: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
    """Precision and recall of boolean `predicted` against boolean `labels`, each 0 where its
    denominator is (as tf.metrics.accuracy weighted by the predictions or the labels gives,
    google-research/electra's disc_precision and disc_recall).

    >>> precision_recall(torch.tensor([1, 1, 0, 0, 1]).bool(), torch.tensor([1, 0, 1, 0, 1]).bool())
    (0.6666666666666666, 0.6666666666666666)
    >>> precision_recall(torch.zeros(3, dtype=torch.bool), torch.tensor([1, 0, 0]).bool())
    (0.0, 0.0)
    """
    hits = int((predicted & labels).sum())
    said, there = int(predicted.sum()), int(labels.sum())
    return (hits / said if said else 0.0), (hits / there if there else 0.0)


@torch.no_grad()
def evaluate_replaced_token_detection(
    model, batches: Iterable[dict[str, torch.Tensor]], temperature: float = 1.0
) -> dict[str, float]:
    """Held-out metrics as google-research/electra's metric_fn (run_pretraining.py) names them:

    - masked_lm_accuracy, masked_lm_loss: the generator's argmax and cross-entropy at the masked positions;
    - sampled_masked_lm_accuracy: the share of masked positions where the sample is the original token;
    - disc_loss: the discriminator's BCE, a mean over real tokens (metric_fn means per-sequence means);
    - disc_accuracy; disc_precision, disc_recall of "replaced" (logit > 0), over real tokens;
    - disc_auc: how well the logits rank replaced over original tokens, exact over the real tokens
      (metric_fn's tf.metrics.auc bins the probabilities at 200 thresholds and counts padding as
      originals scored 0), the number that shows learning while the accuracy still sits at the
      "nothing replaced" answer;

    and replaced_share. generator_mlm_accuracy and discriminator_accuracy repeat masked_lm_accuracy
    and disc_accuracy under the names the training metrics (and the CLI's and demo's lines) use.
    """
    masked = real = 0
    sums = dict.fromkeys(("mlm_loss", "mlm_hits", "sample_hits", "bce", "disc_hits"), 0.0)
    scores, labels = [], []
    device = model_device(model)
    for batch in batches:
        d = detect_replacements(model, to_device(batch, device), temperature)
        logits, replaced = d.disc_logits[d.real].float(), d.replaced[d.real]  # (R,) each
        masked += len(d.targets)
        real += len(logits)
        sums["mlm_loss"] += float(d.gen_loss) * len(d.targets) if len(d.targets) else 0.0
        sums["mlm_hits"] += int((d.gen_logits.argmax(-1) == d.targets).sum())
        sums["sample_hits"] += int((d.sampled == d.targets).sum())
        sums["bce"] += float(F.binary_cross_entropy_with_logits(logits, replaced.float(), reduction="sum"))
        sums["disc_hits"] += int(((logits > 0) == replaced).sum())
        scores.append(logits.cpu())
        labels.append(replaced.cpu())
    if not real:
        raise ValueError("evaluation data has no tokens")
    if not masked:
        raise ValueError("evaluation data has no masked tokens")
    scores, labels = torch.cat(scores), torch.cat(labels)
    precision, recall = precision_recall(scores > 0, labels)
    out = {
        "masked_lm_accuracy": sums["mlm_hits"] / masked,
        "masked_lm_loss": sums["mlm_loss"] / masked,
        "sampled_masked_lm_accuracy": sums["sample_hits"] / masked,
        "disc_loss": sums["bce"] / real,
        "disc_accuracy": sums["disc_hits"] / real,
        "disc_precision": precision,
        "disc_recall": recall,
        "disc_auc": roc_auc(scores, labels),
        "replaced_share": float(labels.sum()) / real,
    }
    out["generator_mlm_accuracy"], out["discriminator_accuracy"] = out["masked_lm_accuracy"], out["disc_accuracy"]
    return out
