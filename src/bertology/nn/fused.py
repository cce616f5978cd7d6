"""Linear layers for fp32 inference on the CPU through oneDNN, with the weight packed once and the
activation (bias + GELU) or the residual add fused into the product's epilogue: what onnxruntime's
BiasGelu and SkipLayerNormalization save, a pass over the activations each.

PyTorch's `F.linear` calls MKL's sgemm with the weight as it is stored, after copying the bias into
every row of the output (addmm adds the product to it); oneDNN's kernels first reorder
the weight into their blocked layout, which `torch.ops.mkldnn._reorder_linear_weight` does once here
(the layout `compile_blocks()` freezes into compiled code), and can apply an elementwise epilogue
while the output tile is still in cache. oneDNN's kernel is taken for every shape, by rule and not by
timing both: a choice that depends on timings differs between processes, and so would the outputs'
last bits (a resumed fine-tuning then picked another best epoch than the run it continued).
`ONEDNN = False` gives PyTorch's kernels with the same epilogues computed after them.

The path is a module, `FusedLinear`, swapped in for the blocks' linear layers at load time
(`fuse(model)`; `bertology.load` does it for a CPU model without int8 or compile), as int8 swaps in
`Int8Linear`. It is an `nn.Linear` with the same parameters, so `state_dict`, saving, optimizers and
int8 quantization see a plain linear layer; the packed weight is the module's own attribute, never a
parameter or buffer.

The fast path runs only where it computes exactly what nn.Linear would: fp32 on the CPU, no
autograd graph to record, no autocast, not inside torch.compile (which packs the weights itself) or
a trace (an exported graph holds standard operators only). Everywhere else — training, bf16
autocast, CUDA — the layer is nn.Linear; int8 layers (nn/int8.py) take the activation and the
residual themselves.

A weight written in place under no_grad (`load_state_dict`, `mul_`) gets a new version, which the
packed copy is keyed by. An optimizer step can leave no such trace (a fused AdamW writes the weight
without bumping its version), and only a global optimizer hook would hear of it. But a step needs a
gradient, and the weight gets one only through a forward pass that records a graph for it: a layer
that has run one is being trained, and from then on packs its weight on every fused call instead of
trusting a copy (one reorder of the weight per call, which evaluation during training pays). A model
loaded for inference never records one and packs once.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .activations import ONEDNN_POST_OPS
from .int8 import Int8Linear


ONEDNN = True  # oneDNN's products (with their epilogues) where the path applies; False: F.linear, then the rest
# what `load(compile=True)` (so `serve --compile`) warns on the CPU, where inductor's code lost to this path
COMPILED_ON_THE_CPU = (
    "compile on the CPU: the compiled blocks run inference slower than the eager path you get without it "
    "(oneDNN's products with the activation and the residual add in their epilogues, nn/fused.py; "
    "bench/ort.py --compile measures both, docs/export.md has the numbers), and each new batch shape "
    "compiles first, for seconds to minutes: leave compile off on the CPU"
)


def available() -> bool:
    return torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled


def _compose(y: torch.Tensor, act: nn.Module | None, residual: torch.Tensor | None) -> torch.Tensor:
    y = y if act is None else act(y)
    return y if residual is None else y + residual


class FusedLinear(nn.Linear):
    """nn.Linear whose CPU fp32 inference runs oneDNN's product on its packed weight, with an activation
    or the residual add in the product's epilogue. Build it with `FusedLinear.of(linear)`."""

    packed: tuple[tuple, torch.Tensor] | None = None  # (the weight's storage and version, its packed copy)
    trained: bool = False  # a graph was recorded for the weight: an optimizer may have changed it since

    @classmethod
    def of(cls, linear: nn.Linear) -> "FusedLinear":
        """A FusedLinear holding `linear`'s own parameters (not copies: tied and shared weights stay so)."""
        fused = cls(linear.in_features, linear.out_features, bias=linear.bias is not None, device="meta")
        fused.weight, fused.bias = linear.weight, linear.bias
        return fused.train(linear.training)

    def applies(self, x: torch.Tensor) -> bool:
        """Whether the oneDNN path may run on `x`: fp32 on the CPU, inference, outside compile and traces."""
        return (
            not torch.compiler.is_compiling()
            and not torch.jit.is_tracing()
            and x.device.type == "cpu"
            and x.dtype == torch.float32
            and self.weight.dtype == torch.float32
            and not (torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad))
            and not torch.is_autocast_enabled("cpu")
            and available()
        )

    def packed_weight(self) -> torch.Tensor:
        """The weight in oneDNN's blocked layout: packed on first use and again when the weight changes;
        on every call once the layer has been trained (the module doc says why)."""
        w = self.weight.detach()
        key = (w.data_ptr(), None if w.is_inference() else w._version, tuple(w.shape))  # inference tensors have none
        if self.trained or self.packed is None or self.packed[0] != key:
            with torch.no_grad():
                packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
            if self.trained:
                return packed
            self.packed = (key, packed)
        return self.packed[1]

    def forward(
        self,
        x: torch.Tensor,
        act: nn.Module | None = None,
        residual: torch.Tensor | None = None,
        scratch: bool = False,
    ) -> torch.Tensor:
        """act(x·Wᵀ + b) (+ residual): `act` an `activations.Activation` (or None), `residual` shaped as
        the output. On the oneDNN path a known activation or the residual runs in the product's
        epilogue; elsewhere this is what the modules compute one after the other. `scratch`: accepted
        for the int8 layer's signature (nothing here overwrites x)."""
        if not self.applies(x):
            if torch.is_grad_enabled() and self.weight.requires_grad and not torch.compiler.is_compiling():
                self.trained, self.packed = True, None
            return _compose(F.linear(x, self.weight, self.bias), act, residual)
        name = getattr(act, "name", None)
        if act is not None and (name not in ONEDNN_POST_OPS or residual is not None):  # no epilogue for both
            return _compose(self(x), act, residual)
        if not ONEDNN:
            return _compose(F.linear(x, self.weight, self.bias), act, residual)
        if residual is not None:
            return torch.ops.mkldnn._linear_pointwise.binary(x, residual, self.packed_weight(), self.bias, "add")
        attr, algorithm = ONEDNN_POST_OPS[name] if name else ("none", "")
        return torch.ops.mkldnn._linear_pointwise(x, self.packed_weight(), self.bias, attr, [], algorithm)

    def __getstate__(self):
        """Copies and pickles leave the packed weight behind (oneDNN's opaque tensor copies nowhere);
        the copy packs its own on first use."""
        state = super().__getstate__()
        state.pop("packed", None)
        return state


def takes(x: torch.Tensor, linear: nn.Module | None) -> bool:
    """Whether `linear(module, x, act, residual)` computes the activation and the residual add in or
    right after the product: a `FusedLinear` on its oneDNN path, or an int8 layer (inference only)."""
    return isinstance(linear, Int8Linear) or (isinstance(linear, FusedLinear) and linear.applies(x))


def linear(
    module: nn.Module,
    x: torch.Tensor,
    act: nn.Module | None = None,
    residual: torch.Tensor | None = None,
    scratch: bool = False,
) -> torch.Tensor:
    """act(module(x)) (+ residual) for any linear layer: a fused or int8 layer applies them itself, in its
    kernels where it can. `scratch=True`: x is a temporary the layer may overwrite (an int8 layer's
    scaling does)."""
    if isinstance(module, (Int8Linear, FusedLinear)):
        return module(x, act, residual, scratch)
    return _compose(module(x), act, residual)


def _blocks(model: nn.Module) -> list[nn.Module]:
    """The model's blocks (modules marked `compile_unit`), each once; a model without any is its own block."""
    blocks = {id(m): m for m in model.modules() if getattr(type(m), "compile_unit", False)}
    return list(blocks.values()) or [model]


def fuse(model: nn.Module) -> int:
    """Every plain nn.Linear in `model`'s blocks (where nearly all the compute is; the heads stay as they
    are) replaced in place by a `FusedLinear` holding the same parameters; returns how many."""
    count = 0
    for block in _blocks(model):
        for parent in list(block.modules()):
            for name, child in list(parent.named_children()):
                if type(child) is nn.Linear:
                    setattr(parent, name, FusedLinear.of(child))
                    count += 1
    return count


def unfuse(model: nn.Module) -> int:
    """The inverse of `fuse`: plain nn.Linear layers again, with the same parameters (PyTorch's kernels one
    operator after the other: what bench/ort.py --ablate compares against); returns how many."""
    count = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, FusedLinear):
                plain = nn.Linear(child.in_features, child.out_features, bias=child.bias is not None, device="meta")
                plain.weight, plain.bias = child.weight, child.bias
                setattr(parent, name, plain.train(child.training))
                count += 1
    return count


def is_fused(model: nn.Module) -> bool:
    """Whether any layer under `model` is a `FusedLinear`."""
    return any(isinstance(m, FusedLinear) for m in model.modules())
