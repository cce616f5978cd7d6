"""Building blocks shared by every encoder family."""

from .activations import activation
from .attention import MultiHeadCrossAttention, MultiHeadSelfAttention, Padding, round_up_rows
from .dropout import Dropout
from .layer import AttentionBlock, FeedForwardBlock, TransformerLayer, set_dropout

__all__ = [
    "activation",
    "Dropout",
    "MultiHeadCrossAttention",
    "MultiHeadSelfAttention",
    "Padding",
    "round_up_rows",
    "AttentionBlock",
    "FeedForwardBlock",
    "TransformerLayer",
    "set_dropout",
]
