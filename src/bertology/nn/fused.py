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

The fast path runs only where it computes exactly what the module would: fp32 on the CPU, no
autograd graph to record, no autocast, not inside torch.compile (which packs the weights itself) or
a trace (an exported graph holds standard operators only).
Everywhere else — training, bf16 autocast, CUDA — the layers run as they are; int8 layers
(nn/int8.py) take the activation and the residual themselves.
The packed weights are kept beside the parameters, not in them (a cache keyed by the parameter, so
`state_dict`, saving and copying see only the plain weights); a weight changed in place (a new
version) is packed again.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook

from .activations import ONEDNN_POST_OPS
from .int8 import Int8Linear


ONEDNN = True  # oneDNN's products (with their epilogues) where the path applies; False: F.linear, then the rest

# id(weight) → (weak reference to it, its version key, the packed weight); an entry goes when its weight does
_packed: dict[int, tuple[weakref.ref, tuple, torch.Tensor]] = {}


def available() -> bool:
    return torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled


def set_enabled(model: nn.Module, enabled: bool) -> nn.Module:
    """Let the linear layers of `model` take the oneDNN path (the default) or not (PyTorch's kernels
    alone, one operator after the other: what bench/ort.py compares against)."""
    for m in model.modules():
        if isinstance(m, nn.Linear):
            m.fused_cpu = enabled
    return model


def applies(x: torch.Tensor, linear: nn.Module) -> bool:
    """Whether `linear` on `x` may take the oneDNN path: a plain fp32 nn.Linear on the CPU, inference."""
    return (
        type(linear) is nn.Linear
        and getattr(linear, "fused_cpu", True)
        and x.device.type == "cpu"
        and x.dtype == torch.float32
        and linear.weight.dtype == torch.float32
        and not (torch.is_grad_enabled() and (x.requires_grad or linear.weight.requires_grad))
        and not torch.is_autocast_enabled("cpu")
        and not torch.compiler.is_compiling()
        and not torch.jit.is_tracing()
        and available()
    )


def takes(x: torch.Tensor, linear: nn.Module) -> bool:
    """Whether `linear(linear, x, act, residual)` computes the activation and the residual add in or
    right after the product: the fp32 oneDNN path above, or an int8 layer (inference only)."""
    return isinstance(linear, Int8Linear) or applies(x, linear)


_optimizer_steps = [0]  # every torch optimizer's steps, in this process


def _count_step(optimizer, args, kwargs) -> None:
    _optimizer_steps[0] += 1


# A fused (or foreach) optimizer step writes the parameters without bumping their version counter,
# so a weight's version alone would keep a stale packed copy after training: any step repacks.
register_optimizer_step_post_hook(_count_step)


def packed_weight(linear: nn.Linear) -> torch.Tensor:
    """The weight in oneDNN's blocked layout, packed on first use and again when the weight changes
    (an in-place write, or any optimizer step since it was packed)."""
    w = linear.weight
    key = (w.data_ptr(), w._version, tuple(w.shape), _optimizer_steps[0])
    entry = _packed.get(id(w))
    if entry is None or entry[0]() is not w or entry[1] != key:
        if entry is None or entry[0]() is not w:
            weakref.finalize(w, _packed.pop, id(w), None)
        with torch.no_grad():
            entry = (weakref.ref(w), key, torch.ops.mkldnn._reorder_linear_weight(w.detach(), None))
        _packed[id(w)] = entry
    return entry[2]


def _onednn(x, linear, packed, epilogue, residual):
    if residual is not None:
        return torch.ops.mkldnn._linear_pointwise.binary(x, residual, packed, linear.bias, "add")
    attr, algorithm = ONEDNN_POST_OPS.get(epilogue, ("none", "")) if epilogue else ("none", "")
    return torch.ops.mkldnn._linear_pointwise(x, packed, linear.bias, attr, [], algorithm)


def _aten(x, linear, act, residual):
    y = F.linear(x, linear.weight, linear.bias)
    if act is not None:
        y = act(y)
    return y if residual is None else y.add_(residual)


def linear(
    module: nn.Module,
    x: torch.Tensor,
    act: nn.Module | None = None,
    residual: torch.Tensor | None = None,
    scratch: bool = False,
) -> torch.Tensor:
    """act(module(x)) (+ residual): `act` an `activations.Activation` (or None), `residual` shaped as
    the output. On the oneDNN path a known activation or the residual runs in the product's
    epilogue, an int8 layer applies them itself; elsewhere this is what the modules compute one after
    the other. `scratch=True`: x is a temporary the layer may overwrite (an int8 layer's scaling does)."""
    if isinstance(module, Int8Linear):
        return module(x, act, residual, scratch)
    if not applies(x, module):
        y = module(x) if act is None else act(module(x))
        return y if residual is None else y + residual
    name = getattr(act, "name", None)
    if act is not None and (
        name not in ONEDNN_POST_OPS or residual is not None
    ):  # no epilogue for both, or for this one
        y = act(linear(module, x))
        return y if residual is None else y + residual
    if not ONEDNN:
        return _aten(x, module, act, residual)
    return _onednn(x, module, packed_weight(module), name, residual)
