"""AdamW's parameter groups by BERT's rule, shared by the Trainer and the jobs that build their own optimizer."""

from __future__ import annotations

from typing import Any

from torch import nn


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """BERT's rule: decay every weight matrix and embedding, never biases or LayerNorm parameters."""
    no_decay: set[int] = set()
    for module in model.modules():
        if isinstance(module, nn.LayerNorm):
            no_decay.update(id(p) for p in module.parameters(recurse=False))
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            no_decay.add(id(p))
    params = [p for p in model.parameters() if p.requires_grad]
    return [
        {"params": [p for p in params if id(p) not in no_decay], "weight_decay": weight_decay},
        {"params": [p for p in params if id(p) in no_decay], "weight_decay": 0.0},
    ]
