"""Fine-tuning from few labels (Zhang et al., 2021, "Revisiting few-sample BERT fine-tuning"):
re-initialise the top encoder layers, give the new head a learning rate of its own, and let the
rate decay layer by layer towards the embeddings (Clark et al., 2020).

The top layers of a pretrained encoder are the most specific to its pretraining objective;
starting them afresh, with the model's own initialisation, helps when there are few labels to
re-purpose them with. A new head starts from random weights while the encoder starts from
useful ones, so the head can take a larger rate than the encoder tolerates.
"""

from __future__ import annotations

import torch
from torch import nn


def encoder_layers(model: nn.Module) -> list[tuple[nn.Module, ...]]:
    """The modules of each encoder layer, bottom first: (attention, feed-forward) blocks for the
    BERT-style stacks (ALBERT's in the order its sharing schedules them), the whole layer for XLNet."""
    backbone = getattr(model, "backbone", model)
    encoder = getattr(backbone, "encoder", None)
    if encoder is not None and hasattr(encoder, "schedule"):
        return [tuple(blocks) for blocks in encoder.schedule()]
    if isinstance(getattr(backbone, "layers", None), nn.ModuleList):  # XLNet
        return [(layer,) for layer in backbone.layers]
    raise ValueError(f"{type(model).__name__}: no encoder layers found to re-initialise")


@torch.no_grad()
def reinit_top_layers(model: nn.Module, n: int) -> list[int]:
    """Re-initialise the top `n` encoder layers (and the pooler, if any, as Zhang et al. do) with the
    model's own initialisation, drawn from torch's global generator; returns the depths re-initialised.

    The fresh weights come from a new model of the same class and config (its constructor runs the
    family's own init, XLNet's relative-attention parameters included), copied into those layers.
    A block shared with a lower layer (ALBERT's cross-layer sharing) is an error: it cannot start
    afresh at the top and stay trained below.
    """
    layers = encoder_layers(model)
    if not 0 <= n <= len(layers):
        raise ValueError(f"--reinit-layers {n}: the model has {len(layers)} encoder layers")
    if n == 0:
        return []
    top = {id(m) for blocks in layers[-n:] for m in blocks}
    shared = [i for i, blocks in enumerate(layers[:-n]) if any(id(m) in top for m in blocks)]
    if shared:
        raise ValueError(
            f"--reinit-layers {n}: the top layers' blocks are shared with layer(s) {shared} below "
            "(ALBERT's cross-layer sharing); re-initialising them would reset those too"
        )
    fresh = type(model)(model.config)
    for mine, theirs in zip(layers[-n:], encoder_layers(fresh)[-n:]):
        for m, t in zip(mine, theirs):
            m.load_state_dict(t.state_dict())
    pooler = getattr(getattr(model, "backbone", model), "pooler", None)
    if pooler is not None:
        pooler.load_state_dict(getattr(fresh.backbone, "pooler").state_dict())
    return list(range(len(layers) - n, len(layers)))


def head_parameters(model: nn.Module) -> set[int]:
    """ids of the task head's parameters: everything outside the backbone (the pooler is part of the backbone)."""
    return {id(p) for name, p in model.named_parameters() if not name.startswith("backbone.")}


def head_lr_groups(groups: list[dict], head: set[int], head_lr: float) -> list[dict]:
    """Optimizer parameter groups with each group split in two: the rest keeps its settings, the
    head's parameters (ids in `head`) get `head_lr` as their peak rate. The encoder's groups come
    first, so the rate a trainer logs (its first group's) stays the encoder's; a schedule's
    multiplier applies to both rates alike.

    >>> a, b = torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))
    >>> [(len(g["params"]), g.get("lr")) for g in head_lr_groups([{"params": [a, b], "weight_decay": 0.0}], {id(b)}, 1e-3)]
    [(1, None), (1, 0.001)]
    """
    split = []
    for in_head in (False, True):
        for g in groups:
            params = [p for p in g["params"] if (id(p) in head) == in_head]
            if params:
                split.append({**g, "params": params, **({"lr": head_lr} if in_head else {})})
    return split


def parameter_depths(model: nn.Module) -> dict[int, int]:
    """id(parameter) → depth for layer-wise rate decay: the embeddings 0, encoder layer i (bottom first)
    i + 1, everything else (the head, a pooler, ELECTRA's embedding projection) the top, L + 1.
    A block shared by several layers (ALBERT) takes the highest depth it serves."""
    layers = encoder_layers(model)
    top = len(layers) + 1
    depths = {id(p): top for p in model.parameters()}
    backbone = getattr(model, "backbone", model)
    for name in ("embeddings", "word"):  # XLNet's token embedding is `word`
        module = getattr(backbone, name, None)
        if isinstance(module, nn.Module):
            depths.update({id(p): 0 for p in module.parameters()})
    for i, blocks in enumerate(layers, 1):
        for block in blocks:
            depths.update({id(p): i for p in block.parameters()})
    return depths


def layer_decay_groups(groups: list[dict], depths: dict[int, int], decay: float, lr: float) -> list[dict]:
    """Optimizer parameter groups split by depth, each with peak rate lr · decay^(top − depth): the
    top (the head) trains at `lr`, each layer below at `decay` times the one above (ELECTRA's
    fine-tuning; Clark et al. 2020). A group's own "lr" (head_lr_groups) is the rate decayed from.

    >>> a, b = torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))
    >>> [(len(g["params"]), g["lr"]) for g in layer_decay_groups([{"params": [a, b]}], {id(a): 0, id(b): 2}, 0.5, 1.0)]
    [(1, 0.25), (1, 1.0)]
    """
    top = max(depths.values())
    split = []
    for g in groups:
        for depth in sorted({depths[id(p)] for p in g["params"]}):
            params = [p for p in g["params"] if depths[id(p)] == depth]
            split.append({**g, "params": params, "lr": g.get("lr", lr) * decay ** (top - depth)})
    return split
