"""The masked-LM objective (BERT, RoBERTa, ALBERT; ELECTRA under --objective mlm): MLM, plus NSP or SOP
when the batch carries their labels, and its held-out evaluation.

Every objective divides a micro-batch's loss by counts over the *global* batch (here the masked tokens
and the sequences), so that the summed gradient of any split into micro-batches and ranks equals the
gradient of the whole batch: the basis of exact gradient accumulation and of data-parallel equivalence.
`totals` reads the global batch on the CPU; a micro-batch's metrics are 0-d tensors on the model's
device (the Trainer reads them at log steps, so a step never waits for the GPU to report them); the
evaluation moves its batches to the model's device and returns floats.
"""

from __future__ import annotations

import math
from typing import Iterable

import torch

from ..models.heads import IGNORE_INDEX
from .device import model_device, to_device

PAIR_LABELS = ("next_sentence_label", "sentence_order_label")


class PretrainingObjective:
    """MLM (+ NSP or SOP when the batch carries their labels), MLM logits only at masked positions."""

    def totals(self, batch: dict[str, torch.Tensor]) -> dict[str, int]:
        return {"masked": max(1, int((batch["labels"] != IGNORE_INDEX).sum())), "sequences": batch["labels"].shape[0]}

    def __call__(self, model, batch: dict[str, torch.Tensor], totals: dict[str, int]):
        # The heads compute the mean losses (MLM over this micro-batch's masked tokens, the pair
        # objective over its sequences); weighting each by its share of the global count gives the
        # global mean without computing the cross-entropy a second time.
        out = model(**batch, sparse_prediction=True)
        labels = batch["labels"]
        logits = out.prediction_logits if hasattr(out, "prediction_logits") else out.logits  # (M, V)
        targets = labels[labels != IGNORE_INDEX]  # (M,)
        mlm_mean = out.mlm_loss if hasattr(out, "mlm_loss") else out.loss
        # A micro-batch with no masked token contributes nothing (its mean would be NaN).
        loss = mlm_mean * (len(targets) / totals["masked"]) if len(targets) else logits.sum() * 0.0
        metrics = {
            "mlm_loss": loss.detach(),
            "mlm_accuracy": (logits.argmax(-1) == targets).sum() / totals["masked"],
        }
        pair_name = next((k for k in PAIR_LABELS if k in batch), None)
        if pair_name is not None:
            pair_logits = out.seq_relationship_logits if out.seq_relationship_logits is not None else out.sop_logits
            pair_term = out.pair_loss * (pair_logits.shape[0] / totals["sequences"])
            loss = loss + pair_term
            metrics["pair_loss"] = pair_term.detach()
            metrics["pair_accuracy"] = (pair_logits.argmax(-1) == batch[pair_name].view(-1)).sum() / totals["sequences"]
        metrics["loss"] = metrics["mlm_loss"] + metrics.get("pair_loss", 0.0)
        return loss, metrics

    def evaluate(self, model, batches: Iterable[dict[str, torch.Tensor]]) -> dict[str, float]:
        return evaluate_pretraining(model, batches)


@torch.no_grad()
def evaluate_pretraining(model, batches: Iterable[dict[str, torch.Tensor]]) -> dict[str, float]:
    """Held-out MLM accuracy and perplexity (exp of the mean masked-token loss), NSP / SOP accuracy."""
    objective = PretrainingObjective()
    sums: dict[str, float] = {}
    masked = sequences = 0
    device = model_device(model)
    for batch in batches:
        totals = objective.totals(batch)
        _, m = objective(model, to_device(batch, device), totals)
        m = {k: float(v) for k, v in m.items()}
        masked += totals["masked"]
        sequences += totals["sequences"]
        sums["mlm_loss"] = sums.get("mlm_loss", 0.0) + m["mlm_loss"] * totals["masked"]
        sums["mlm_accuracy"] = sums.get("mlm_accuracy", 0.0) + m["mlm_accuracy"] * totals["masked"]
        if "pair_accuracy" in m:
            sums["pair_accuracy"] = sums.get("pair_accuracy", 0.0) + m["pair_accuracy"] * totals["sequences"]
    if masked == 0:
        raise ValueError("evaluation data has no masked tokens")
    out = {"mlm_loss": sums["mlm_loss"] / masked, "mlm_accuracy": sums["mlm_accuracy"] / masked}
    out["perplexity"] = math.exp(min(out["mlm_loss"], 50.0))
    if "pair_accuracy" in sums:
        out["pair_accuracy"] = sums["pair_accuracy"] / sequences
    return out
