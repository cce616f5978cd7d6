"""Dynamic int8 linear layers for CPU inference: weights stored int8 with one scale per output channel,
activations quantized on each call (one scale per call, from the call's own range), the products in
int8 with int32 accumulation (VNNI / AMX-INT8 where the CPU has them), the result back in fp32.

PyTorch's dynamic quantized linear (torch.ao) is the kernel: bench/ort.py and a product probe
measured it against fp32 and against torch._int_mm with the quantization written out around it
(the product alone as fast, the eager quantization around it not), on the CPU they name.
"""
from __future__ import annotations

import warnings

import torch
from torch import nn


def quantize_linear_int8(module: nn.Module) -> int:
    """Every nn.Linear under `module` replaced in place by a dynamically quantized int8 one (weights
    per output channel); returns how many. For inference on the CPU: the new layers have no gradient."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    count = sum(isinstance(m, nn.Linear) for m in module.modules())
    if count:
        with warnings.catch_warnings():  # torch.ao's deprecation notice: the kernels are what this measures
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.filterwarnings("ignore", message=".*deprecated.*")
            quantize_dynamic(module, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True)
    return count


def is_int8(module: nn.Module) -> bool:
    """Whether any layer under `module` is a dynamically quantized linear layer."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    return any(isinstance(m, DynamicLinear) for m in module.modules())
