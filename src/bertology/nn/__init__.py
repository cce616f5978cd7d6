"""Building blocks shared by every encoder family."""
from .activations import activation
from .attention import MultiHeadSelfAttention, Padding
from .layer import AttentionBlock, FeedForwardBlock, TransformerLayer, set_dropout

__all__ = ["activation", "MultiHeadSelfAttention", "Padding", "AttentionBlock", "FeedForwardBlock", "TransformerLayer", "set_dropout"]
