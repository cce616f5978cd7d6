"""Pictures: attention maps, training curves, comparison bars."""

from .attention import (
    AttentionWeights,
    attention_html,
    attention_map,
    attention_weights,
    plot_attention,
    write_attention,
)

__all__ = [
    "AttentionWeights",
    "attention_weights",
    "attention_map",
    "plot_attention",
    "attention_html",
    "write_attention",
]
