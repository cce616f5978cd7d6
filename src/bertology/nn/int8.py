"""Dynamic int8 linear layers for CPU inference: weights stored int8 with one scale per output channel,
activations quantized on each call from the call's own range, products in int8 with int32
accumulation (VNNI / AMX-INT8 where the CPU has them), results back in fp32.

The products are PyTorch's quantized linear kernels (below), which quantize, multiply and dequantize
in one call, where torch._int_mm with the quantization written out around it in eager PyTorch spent
more time in the elementwise passes than in the product.
Two choices differ from torch.ao's `quantize_dynamic`, both for accuracy:
  - the activations use the full 8 bits where the CPU multiplies u8·s8 without saturating (VNNI,
    AMX); torch.ao always drops one bit (`reduce_range`), which AVX2's 16-bit intermediate needs;
  - the feed-forward down projection (its input is the GELU output, a few tokens with far larger
    values than the rest) scales each token to the same range before the per-call quantization
    and back after, so that one token's outlier does not coarsen every other token's steps.
Without them all-MiniLM-L6-v2's sentence vectors drift from fp32's by more than the 0.99 cosine that
tests/models/test_model_int8.py holds them to (docs/export.md has the measurements).

Two kernels compute the product: fbgemm's (`quantized::linear_dynamic`, which quantizes the input
itself) and oneDNN's (`onednn::qlinear_pointwise`, on an input quantized here the same way), which
applies a GELU in its epilogue and multiplies on AMX-INT8 tiles where the CPU has them (fbgemm's
kernels stop at VNNI). oneDNN's is taken wherever it may be, by rule, not by timing: in whole
models it measured as fast as fbgemm's or faster (bench/ort.py --ablate), and a timed choice would
differ between processes and with it the outputs' last bits (the order of the rescaling, the
activation's formula). Without VNNI fbgemm's is kept, with its 7-bit activations. `KERNEL = "fbgemm"`
or `"onednn"` before quantizing overrides the rule (`bench/ort.py --ablate` times both).
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import torch
from torch import nn

from ..hardware import cpu_name_and_flags
from .activations import ONEDNN_POST_OPS

PER_TOKEN = ("down",)  # linear layers (by attribute name) whose input is scaled per token first
KERNEL: str | None = None  # "fbgemm", "onednn", or None: by the rule of `default_kernel()`
# the GELUs: in oneDNN's int8 epilogue, or in place after fbgemm's product (the algorithm is aten.gelu's
# `approximate`); other activations run after the product
GELUS = {name: op for name, op in ONEDNN_POST_OPS.items() if op[0] == "gelu"}


@lru_cache(maxsize=1)
def full_range() -> bool:
    """Whether this CPU multiplies u8·s8 into int32 without a saturating 16-bit step (VNNI or AMX)."""
    return any(f in cpu_name_and_flags()[1] for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


def onednn_available() -> bool:
    """oneDNN's int8 product is a candidate: PyTorch built with it and a CPU that uses the 8 bits in full
    (without VNNI its u8·s8 step saturates; fbgemm's 7-bit activations avoid that)."""
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.onednn, "qlinear_pointwise") and full_range()


def _quantize_input(x: torch.Tensor) -> tuple[torch.Tensor, float, int]:
    """x (…, in) fp32 → its u8 codes with one scale and zero point from its own range (as fbgemm does).
    The codes are the quantized tensor's own bytes seen as uint8 (`int_repr()` would copy them, at
    several times the cost of quantizing)."""
    scale, zero_point = torch._choose_qparams_per_tensor(x, False)
    q = torch.quantize_per_tensor(x, scale, zero_point, torch.quint8)
    codes = torch.empty(0, dtype=torch.uint8).set_(q.untyped_storage(), q.storage_offset(), q.shape, q.stride())
    return codes, scale, zero_point


class Int8Linear(nn.Module):
    """A linear layer with int8 weights (per output channel, symmetric) and activations quantized per call."""

    def __init__(self, linear: nn.Linear, per_token: bool = False, kernel: str | None = None):
        super().__init__()
        self.in_features, self.out_features, self.per_token = linear.in_features, linear.out_features, per_token
        w = linear.weight.detach().float()
        scale = (w.abs().amax(1) / 127).clamp(min=1e-12).double()  # (out,)
        bias = None if linear.bias is None else linear.bias.detach().float()
        self.kernel = kernel or KERNEL or default_kernel()
        if self.kernel not in ("fbgemm", "onednn"):
            raise ValueError(f"int8 kernel {self.kernel!r}: choose 'fbgemm' or 'onednn'")
        if self.kernel == "onednn" and not onednn_available():
            raise ValueError("int8 kernel 'onednn': this PyTorch or CPU lacks it (it needs oneDNN and VNNI or AMX)")
        with warnings.catch_warnings():  # torch.ao's deprecation notices: its kernels are what is used
            warnings.simplefilter("ignore")
            qweight = torch.quantize_per_channel(w, scale, torch.zeros_like(scale, dtype=torch.long), 0, torch.qint8)
            if self.kernel == "onednn":
                self.packed = torch.ops.onednn.qlinear_prepack(qweight.int_repr(), None)
                self.register_buffer("w_scale", scale.float(), persistent=False)
                self.register_buffer("w_zero", torch.zeros_like(scale, dtype=torch.long), persistent=False)
            else:  # the bias goes in after the per-token rescaling, so the kernel adds none there
                self.packed = torch.ops.quantized.linear_prepack(qweight, None if per_token else bias)
        self.register_buffer("bias", bias, persistent=False)
        self.reduce_range = not full_range()

    def _product(self, x: torch.Tensor, bias: torch.Tensor | None, epilogue: tuple[str, str] = ("none", "")):
        """x (M, in) fp32 → x·Wᵀ (+ bias, then the epilogue) (M, out) fp32. `bias` and `epilogue` are
        oneDNN's; fbgemm's packed weight carries its bias already (none for a per-token layer)."""
        if self.kernel == "fbgemm":
            return torch.ops.quantized.linear_dynamic(x, self.packed, reduce_range=self.reduce_range)
        qx, scale, zero_point = _quantize_input(x)
        post, algorithm = epilogue
        return torch.ops.onednn.qlinear_pointwise(
            qx,
            scale,
            zero_point,
            self.packed,
            self.w_scale,
            self.w_zero,
            bias,
            1.0,
            0,
            torch.float32,
            post,
            [],
            algorithm,
        )

    def forward(
        self, x: torch.Tensor, act: nn.Module | None = None, residual: torch.Tensor | None = None, scratch: bool = False
    ) -> torch.Tensor:
        """act(x·Wᵀ + b) (+ residual): `act` an `activations.Activation` (or None), `residual` shaped as the
        output; a GELU runs in oneDNN's epilogue, or in place on the product's own output. `scratch=True`:
        x is a temporary nobody reads after this call, which the per-token scaling may overwrite (a new
        tensor as large as the feed-forward block's intermediate costs more than the scaling itself)."""
        shape = x.shape
        x = x.float().reshape(-1, self.in_features)
        name = getattr(act, "name", None)
        if self.per_token:
            # (M, 1) each token's largest magnitude: two vectorised reductions (vector_norm(inf) and
            # abs().amax() each cost many times more, the first a slow kernel, the second a new tensor as large as x)
            s = torch.maximum(x.amax(-1, keepdim=True), x.amin(-1, keepdim=True).neg_()).clamp_(min=1e-12)
            x = x.mul_(s.reciprocal()) if scratch else x * s.reciprocal()
            y = self._product(x, None).mul_(s)  # in place: y is this call's own
            if self.bias is not None:
                y.add_(self.bias)
        elif self.kernel == "onednn" and name in GELUS and residual is None:
            y, act = self._product(x, self.bias, GELUS[name]), None
        else:
            y = self._product(x, self.bias)
        if act is not None:
            y = torch.ops.aten.gelu_(y, approximate=GELUS[name][1]) if name in GELUS else act(y)
        y = y.view(*shape[:-1], self.out_features)
        return y if residual is None else y.add_(residual)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, int8 per channel, "
            f"activations per {'token' if self.per_token else 'call'}, {self.kernel}"
            f"{', 7-bit (no VNNI)' if self.reduce_range else ''}"
        )


def default_kernel() -> str:
    """oneDNN's kernel wherever it may run (VNNI or AMX), fbgemm's elsewhere (the module doc says why)."""
    return "onednn" if onednn_available() else "fbgemm"


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


def kernel_of(module: nn.Module) -> str | None:
    """The kernel of the int8 layers under `module` ("onednn", "fbgemm", or both named), None without any."""
    kernels = sorted({m.kernel for m in module.modules() if isinstance(m, Int8Linear)})
    return " and ".join(kernels) or None
