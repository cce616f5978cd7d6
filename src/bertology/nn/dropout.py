"""Dropout whose mask costs a quarter of a random draw per element.

`F.dropout` on CPU draws one Bernoulli variate per element (`bernoulli_`): in a BERT training
step with dropout that can be the largest single op, more than any matrix product. Here four
16-bit keep/drop decisions come from each 64-bit draw of torch's own generator (so
`torch.manual_seed` still decides every mask), compared against a threshold in one vectorised
pass, a fraction of the random draws; the backward pass is the same multiply.

The drop probability is rounded to a multiple of 2⁻¹⁶ (0.1 → 6554/65536 = 0.100006) and the kept
values are scaled by the inverse of the realised keep probability, so E[dropout(x)] = x exactly.
On other devices, and inside torch.compile (inductor draws its own random numbers in fused,
parallel code), this is `F.dropout`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

_LEVELS = 1 << 16  # a 16-bit draw decides each element


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Zero each element of x with probability p and scale the rest by 1 / (1 - p)."""
    if not training or p == 0.0:
        return x
    if not draws_own_masks(x):
        return F.dropout(x, p, True)
    return _CPUDropout.apply(x, p)


def draws_own_masks(x: torch.Tensor) -> bool:
    """Whether `dropout` of x draws its masks here (eager, on CPU) rather than through `F.dropout`."""
    return x.device.type == "cpu" and not torch.compiler.is_compiling()


def keep_scale(shape: torch.Size, p: float, dtype: torch.dtype) -> torch.Tensor:
    """A tensor of `shape`: 0 where an element is dropped (probability ≈ p), 1 / keep probability elsewhere."""
    dropped = round(p * _LEVELS)
    if not 0 <= dropped < _LEVELS:
        raise ValueError(f"dropout probability must be in [0, 1), got {p}")
    n = shape.numel()
    bits = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-(1 << 63), None)  # 64 uniform bits each
    bits = bits.view(torch.int16)[:n].view(shape)  # uniform in [-2¹⁵, 2¹⁵)
    scale = torch.tensor(_LEVELS / (_LEVELS - dropped), dtype=dtype)
    return torch.where(bits < dropped - _LEVELS // 2, torch.zeros((), dtype=dtype), scale)


class _CPUDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, p: float) -> torch.Tensor:
        mask = keep_scale(x.shape, p, x.dtype)
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (mask,) = ctx.saved_tensors
        return grad * mask, None


class Dropout(nn.Dropout):
    """nn.Dropout (same `p`, `train()` / `eval()`, `set_dropout`) drawing its masks as `dropout` does."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)
