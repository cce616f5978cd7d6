"""Growing a model's vocabulary (`pretrain --extend-vocab`): every vocabulary-sized tensor keeps its rows
and gains one per new id, the mean of the rows of that id's old pieces, the rule most practitioners use
(the new piece starts where the model already "reads" the word). New ids follow the old ones, so every
old row keeps its place, as in transformers' `resize_token_embeddings`."""

from __future__ import annotations

import copy
from dataclasses import replace

import torch

from .electra import ElectraPair


@torch.no_grad()
def resize_vocabulary(model, old_ids: list[list[int]]) -> torch.nn.Module:
    """The same model with len(old_ids) more vocabulary entries: every tensor with a vocabulary-sized
    first dimension (the token embedding; the MLM / LM bias; an untied decoder) keeps its rows and gains
    one per new id, the mean of the rows at that id's old pieces. A new model object (its tied decoder
    tied again); the old one is left as it was."""
    V = model.config.vocab_size
    config = copy.deepcopy(model.config)
    config.vocab_size = V + len(old_ids)
    grown = (
        ElectraPair(config, gen_config=replace(model.generator.config, vocab_size=config.vocab_size))
        if isinstance(model, ElectraPair)
        else type(model)(config)
    )  # the pair: both grow, still sharing
    state = grown.state_dict()
    for name, value in model.state_dict().items():
        target = state[name]
        if value.shape == target.shape:
            target.copy_(value)
        elif value.shape[0] == V and target.shape[0] == config.vocab_size and value.shape[1:] == target.shape[1:]:
            # a piece that occurs twice in a split counts twice in its mean
            new_rows = torch.stack([value[torch.tensor(ids)].double().mean(0) for ids in old_ids])  # (N, …)
            target.copy_(torch.cat([value, new_rows.to(value.dtype)]))
        else:
            raise ValueError(
                f"{name}: shape {tuple(value.shape)} does not grow with the vocabulary to {tuple(target.shape)}"
            )
    return grown


# ---- the run's record, for --resume ----------------------------------------------------------------
