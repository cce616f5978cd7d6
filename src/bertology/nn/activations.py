"""Activation functions by the names Hugging Face configs use (`hidden_act`)."""

import torch
import torch.nn.functional as F
from torch import nn


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    # The tanh approximation of GELU used by the original BERT/ALBERT TF code ("gelu_new").
    return F.gelu(x, approximate="tanh")


def _gelu_fast(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))


def _quick_gelu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(1.702 * x)


_ACTIVATIONS = {
    "gelu": F.gelu,  # exact erf form, BERT's choice
    "gelu_new": _gelu_tanh,
    "gelu_pytorch_tanh": _gelu_tanh,
    "gelu_fast": _gelu_fast,
    "quick_gelu": _quick_gelu,
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": torch.tanh,
}


# activation name → oneDNN's post-op (name, algorithm), which its linear kernels (fp32 and int8) apply in
# the product's epilogue; GELU's algorithm is also aten.gelu's `approximate` argument
ONEDNN_POST_OPS = {
    "gelu": ("gelu", "none"),
    "gelu_new": ("gelu", "tanh"),
    "gelu_pytorch_tanh": ("gelu", "tanh"),
    "relu": ("relu", ""),
    "silu": ("swish", ""),
    "swish": ("swish", ""),
    "tanh": ("tanh", ""),
}


class Activation(nn.Module):
    def __init__(self, name: str):
        super().__init__()
        if name not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {name!r}; known: {', '.join(sorted(_ACTIVATIONS))}")
        self.name = name
        self.fn = _ACTIVATIONS[name]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)

    def extra_repr(self) -> str:
        return self.name


def activation(name: str) -> Activation:
    return Activation(name)
