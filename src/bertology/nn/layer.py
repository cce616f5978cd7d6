"""The post-LN Transformer encoder layer (Vaswani et al.; BERT): x = LN(x + Sublayer(x)), twice.

Split in two blocks because ALBERT shares them independently (attention only, feed-forward only).
Blocks accept (B, T, H) or packed (M, H) activations; see `attention.Padding`.
"""

from __future__ import annotations

import torch
from torch import nn

from .activations import activation
from . import fused
from .attention import MultiHeadCrossAttention, MultiHeadSelfAttention, Padding
from .dropout import Dropout


class AttentionBlock(nn.Module):
    compile_unit = True  # `PreTrainedModel.compile_blocks` compiles each of these on its own

    def __init__(self, hidden_size: int, num_heads: int, attention_dropout: float, dropout: float, eps: float):
        super().__init__()
        self.attention = MultiHeadSelfAttention(hidden_size, num_heads, attention_dropout)
        self.dropout = Dropout(dropout)
        self.norm = nn.LayerNorm(hidden_size, eps=eps)

    def forward(self, x: torch.Tensor, padding: Padding, need_weights: bool = False):
        if not self.training and fused.takes(x, getattr(self.attention, "out", None)):  # + x in the product
            y, probs = self.attention(x, padding, need_weights, residual=x)
            return self.norm(y), probs
        y, probs = self.attention(x, padding, need_weights)
        return self.norm(x + self.dropout(y)), probs


class FeedForwardBlock(nn.Module):
    compile_unit = True

    def __init__(self, hidden_size: int, intermediate_size: int, act: str, dropout: float, eps: float):
        super().__init__()
        self.up = nn.Linear(hidden_size, intermediate_size)
        self.act = activation(act)
        self.down = nn.Linear(intermediate_size, hidden_size)
        self.dropout = Dropout(dropout)
        self.norm = nn.LayerNorm(hidden_size, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training and fused.takes(x, self.up):  # CPU inference: bias + GELU, + x in the products
            return self.norm(fused.linear(self.down, fused.linear(self.up, x, self.act), residual=x, scratch=True))
        return self.norm(x + self.dropout(self.down(self.act(self.up(x)))))


class TransformerLayer(nn.Module):
    """One depth of a BERT encoder: its two blocks under one index, so parameter names follow the
    checkpoint layout (`layers.{i}.attention`, `layers.{i}.ffn`). It has no forward of its own: an
    encoder runs the blocks in the order its `schedule()` yields them, which is what lets ALBERT
    share the attention and feed-forward blocks across depths independently."""

    def __init__(self, attention: AttentionBlock, ffn: FeedForwardBlock):
        super().__init__()
        self.attention = attention
        self.ffn = ffn


def set_dropout(model: nn.Module, p: float) -> nn.Module:
    """Set every dropout of `model` (nn.Dropout modules and the attention-probability dropout) to p.

    For a phase of training only, such as pretraining without dropout (Cramming); the config, and so
    a saved model and its fine-tuning, keep the family's dropout.
    """
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {p}")
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = p
        elif isinstance(module, (MultiHeadSelfAttention, MultiHeadCrossAttention)):
            module.dropout = p
    return model
