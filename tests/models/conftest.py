"""Tiny Hugging Face configs for every family, with odd sizes (hidden 48, 3 heads, intermediate 37)."""

import pytest
import torch

transformers = pytest.importorskip("transformers")

ODD = dict(vocab_size=99, hidden_size=48, num_hidden_layers=2, num_attention_heads=3, intermediate_size=37)


def hf_config(family: str, **overrides):
    T = transformers
    if family == "bert":
        c = T.BertConfig(**ODD)
    elif family == "roberta":
        c = T.RobertaConfig(**ODD, max_position_embeddings=40)
    elif family == "albert":
        c = T.AlbertConfig(**{**ODD, "num_hidden_layers": 4}, embedding_size=16, num_hidden_groups=2, inner_group_num=2)
    elif family == "electra":  # embeddings narrower than the hidden size: the projection is exercised
        c = T.ElectraConfig(**ODD, embedding_size=20)
    elif family == "distilbert":
        c = T.DistilBertConfig(vocab_size=99, dim=48, n_layers=2, n_heads=3, hidden_dim=37)
    else:
        raise ValueError(family)
    for k, v in overrides.items():
        setattr(c, k, v)
    c._attn_implementation = "eager"  # so that transformers returns attention probabilities
    return c


def padded_batch(shape, pad_id: int, seed: int = 0):
    """Random ids with the second sequence (of every choice, for 3-D shapes) padded at its end."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 99, shape, generator=g)
    mask = torch.ones_like(ids)
    mask[..., 1, -3:] = 0
    return ids.masked_fill(mask == 0, pad_id), mask


def set_skip_padding(model, value: bool):
    for m in model.modules():
        if hasattr(m, "skip_padding"):
            m.skip_padding = value
