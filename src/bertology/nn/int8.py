"""Dynamic int8 linear layers for CPU inference: weights stored int8 with one scale per output channel,
activations quantized on each call from the call's own range, products in int8 with int32
accumulation (VNNI / AMX-INT8 where the CPU has them), results back in fp32.

The kernel is PyTorch's dynamic quantized linear (fbgemm / oneDNN through torch.ao's operators): it
quantizes, multiplies and dequantizes in one call, where torch._int_mm with the quantization written
out around it in eager PyTorch spent more time in the elementwise passes than in the product.
Two choices differ from torch.ao's `quantize_dynamic`, both for accuracy:
  - the activations use the full 8 bits where the CPU multiplies u8·s8 without saturating (VNNI,
    AMX); torch.ao always drops one bit (`reduce_range`), which AVX2's 16-bit intermediate needs;
  - the feed-forward down projection (its input is the GELU output, a few tokens with far larger
    values than the rest) scales each token to the same range before the per-call quantization
    and back after, so that one token's outlier does not coarsen every other token's steps.
Without them all-MiniLM-L6-v2's sentence vectors drift from fp32's by more than the 0.99 cosine that
tests/models/test_model_int8.py holds them to (docs/export.md has the measurements).
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import torch
from torch import nn

from ..hardware import cpu_name_and_flags

PER_TOKEN = ("down",)  # linear layers (by attribute name) whose input is scaled per token first


@lru_cache(maxsize=1)
def full_range() -> bool:
    """Whether this CPU multiplies u8·s8 into int32 without a saturating 16-bit step (VNNI or AMX)."""
    return any(f in cpu_name_and_flags()[1] for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


class Int8Linear(nn.Module):
    """A linear layer with int8 weights (per output channel, symmetric) and activations quantized per call."""

    def __init__(self, linear: nn.Linear, per_token: bool = False):
        super().__init__()
        self.in_features, self.out_features, self.per_token = linear.in_features, linear.out_features, per_token
        w = linear.weight.detach().float()
        scale = (w.abs().amax(1) / 127).clamp(min=1e-12).double()  # (out,)
        with warnings.catch_warnings():  # torch.ao's deprecation notices: its kernels are what is used
            warnings.simplefilter("ignore")
            qweight = torch.quantize_per_channel(w, scale, torch.zeros_like(scale, dtype=torch.long), 0, torch.qint8)
            bias = None if linear.bias is None else linear.bias.detach().float()
            # the bias goes in after the per-token rescaling, so the kernel adds none there
            self.packed = torch.ops.quantized.linear_prepack(qweight, None if per_token else bias)
        self.register_buffer("bias", bias if per_token else None, persistent=False)
        self.reduce_range = not full_range()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.per_token:
            return torch.ops.quantized.linear_dynamic(x.float(), self.packed, reduce_range=self.reduce_range)
        x = x.float()
        # (…, 1) each token's largest magnitude: two vectorised reductions (vector_norm(inf) and abs().amax()
        # each cost many times more, the first a slow kernel, the second a new tensor as large as x)
        s = torch.maximum(x.amax(-1, keepdim=True), x.amin(-1, keepdim=True).neg_()).clamp_(min=1e-12)
        y = torch.ops.quantized.linear_dynamic(x * s.reciprocal(), self.packed, reduce_range=self.reduce_range)
        y = y.mul_(s)  # in place: y is this call's own, and a new (…, out) tensor costs its page faults
        return y if self.bias is None else y.add_(self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, int8 per channel, "
            f"activations per {'token' if self.per_token else 'call'}"
            f"{', 7-bit (no VNNI)' if self.reduce_range else ''}"
        )


def quantize_linear_int8(module: nn.Module) -> int:
    """Every nn.Linear under `module` replaced in place by an `Int8Linear`; returns how many.
    For inference on the CPU: the new layers have no gradient."""
    count = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear):
                setattr(parent, name, Int8Linear(child, per_token=name in PER_TOKEN))
                count += 1
    return count


def is_int8(module: nn.Module) -> bool:
    """Whether any layer under `module` is an int8 linear layer."""
    return any(isinstance(m, Int8Linear) for m in module.modules())
