"""Building blocks shared by every encoder family."""
from .activations import activation
from .attention import MultiHeadSelfAttention, Padding
from .layer import AttentionBlock, FeedForwardBlock, TransformerLayer

__all__ = ["activation", "MultiHeadSelfAttention", "Padding", "AttentionBlock", "FeedForwardBlock", "TransformerLayer"]
