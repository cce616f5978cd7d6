"""XLNet's permutation-LM objective, with memory carried from step to step.

The Trainer asks for a global batch per step (`data.permutation.PermutationData`, through
train/pretrain_data.py: row r of step k continues row r of step k-1) and calls the objective on
micro-batches. The objective keeps the
memory each step leaves, per global batch row: a micro-batch (or a rank) reads its own rows'
memory from the step before and writes theirs for the next. The memory goes into every
checkpoint (`mems.safetensors`), so a resumed run continues exactly.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..data.recipe import Recipe
from ..io import atomic_path
from ..models.heads import IGNORE_INDEX
from . import distributed as dist
from .device import model_device, to_device

MEMS_FILE = "mems.safetensors"
MODEL_INPUTS = ("input_ids", "token_type_ids", "perm_mask", "target_mapping", "labels")


class PermutationLMObjective:
    """Cross-entropy of the targets through the query stream, memory carried across steps."""

    def __init__(self):
        self.previous: list[torch.Tensor] | None = None  # per layer (M, B_global, H): the last step's memory
        self.latest: list[torch.Tensor] | None = None  # being written by this step's micro-batches
        self.fresh = True  # this step starts every stream again (a new epoch): no memory

    def totals(self, batch: dict[str, torch.Tensor]) -> dict[str, int]:
        # called once per step on the global batch (on the CPU), before its micro-batches: the memory
        # written last step is now the past
        if self.latest is not None:
            self.previous, self.latest = self.latest, None
        self.fresh = self.previous is None or bool(batch["first"][0])
        return {"targets": max(1, int((batch["labels"] != IGNORE_INDEX).sum())), "sequences": batch["labels"].shape[0]}

    def __call__(self, model, batch: dict[str, torch.Tensor], totals: dict[str, int]):
        rows = batch["row"]
        mems = None if self.fresh else [m[:, rows] for m in self.previous]
        out = model(**{k: batch[k] for k in MODEL_INPUTS}, mems=mems, use_mems=True)
        if self.latest is None:
            self.latest = [m.new_zeros(m.shape[0], totals["sequences"], m.shape[2]) for m in out.mems]
        for store, m in zip(self.latest, out.mems):
            store[:, rows] = m
        labels = batch["labels"]
        targets = (labels != IGNORE_INDEX).sum()  # a tensor: read at log steps, not now
        loss = out.loss * (targets / totals["targets"])
        correct = (out.logits.argmax(-1) == labels).sum()
        return loss, {"plm_loss": loss.detach(), "loss": loss.detach(), "plm_accuracy": correct / totals["targets"]}

    def evaluate(self, model, batches: list[dict[str, torch.Tensor]]) -> dict[str, float]:
        return evaluate_plm(model, batches)

    # ---- checkpoints ----------------------------------------------------------------------------
    def gather_for_checkpoint(self) -> None:
        """Every rank (the Trainer calls this on all of them) ends up with all rows' memory: each
        wrote only its own rows and zeros elsewhere, so a sum over ranks is the whole."""
        if self.latest is not None:
            for m in self.latest:
                dist.all_reduce_tensor(m)

    def save(self, directory: Path) -> None:
        if self.latest is not None:
            with atomic_path(directory / MEMS_FILE) as tmp:
                save_file({f"layer.{i}": m.contiguous().cpu() for i, m in enumerate(self.latest)}, str(tmp))

    def load(self, directory: Path, device: torch.device | str = "cpu") -> None:
        """The memory a checkpoint's last step left (none: the run stopped before its first step), on `device`."""
        file = directory / MEMS_FILE
        if file.is_file():
            tensors = load_file(str(file), device=str(device))
            self.latest = [tensors[f"layer.{i}"] for i in range(len(tensors))]


@torch.no_grad()
def evaluate_plm(model, batches: list[dict[str, torch.Tensor]]) -> dict[str, float]:
    """Held-out loss, accuracy and perplexity of the targets over consecutive batches, memory carried."""
    objective = PermutationLMObjective()
    loss = correct = 0.0
    targets = 0
    device = model_device(model)
    for batch in batches:
        totals = objective.totals(batch)
        batch_loss, metrics = objective(model, to_device(batch, device), totals)
        loss += float(batch_loss) * totals["targets"]
        correct += float(metrics["plm_accuracy"]) * totals["targets"]
        targets += totals["targets"]
    return {
        "plm_loss": loss / targets,
        "plm_accuracy": correct / targets,
        "perplexity": math.exp(min(loss / targets, 50)),
    }


def check_batch(o, recipe: Recipe) -> None:
    """--bi-data runs half the batch rows backwards: the batch splits in two."""
    if recipe.permutation.bi_data and o.batch_size % 2:
        raise ValueError(f"--bi-data: --batch-size {o.batch_size} must be even (forward and backward rows)")
