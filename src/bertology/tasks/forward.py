"""Forward passes for inference on the model's device: inputs are built on the CPU, pinned and
copied without blocking onto a GPU, run under the device's precision, and the outputs come back to
the CPU once per batch (one transfer per batch rather than one per tensor read).

On the CPU nothing moves and the precision is the caller's (bf16 only where asked: the CPU's own
probe decides whether it pays); on CUDA inference runs under autocast, bf16 where the GPU
multiplies it natively (Ampere and later), fp16 elsewhere.
"""
from __future__ import annotations

import dataclasses
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch

from .base import Features
from .finetune import LABEL_KEYS, model_inputs


def device_of(model: torch.nn.Module) -> torch.device:
    """Where the model's weights are (the CPU for a model without any)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))


def inference_dtype(device: torch.device) -> torch.dtype | None:
    """The autocast dtype of inference on `device`: bf16 on a GPU that has it, else fp16; None on the CPU."""
    if device.type != "cuda":
        return None
    # torch.cuda.is_bf16_supported asks about the current GPU, not this one; Ampere (8.x) and later multiply bf16
    return torch.bfloat16 if torch.cuda.get_device_capability(device)[0] >= 8 else torch.float16


def precision(device: torch.device, bf16: bool = False) -> AbstractContextManager:
    """The autocast of a forward pass on `device`; on the CPU bf16 when `bf16`, else the caller's
    (an autocast around the call stays in force)."""
    dtype = inference_dtype(device)
    if dtype is not None:
        return torch.autocast(device.type, dtype=dtype)
    return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext()


def precision_name(device: torch.device, bf16: bool = False) -> str:
    """'bfloat16 (autocast)', 'float16 (autocast)' or 'float32', for reports and /info."""
    dtype = inference_dtype(device) or (torch.bfloat16 if bf16 else None)
    return f"{str(dtype)[6:]} (autocast)" if dtype is not None else "float32"


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """CPU tensors onto `device`: pinned, then copied without blocking the host; the same dict on the CPU."""
    if device.type == "cpu":
        return batch
    return {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}


def to_cpu(output: Any) -> Any:
    """A model output (dataclass) with every tensor, and every tensor of a tuple field, on the CPU."""
    def move(value):
        if isinstance(value, torch.Tensor):
            return value.cpu()
        if isinstance(value, tuple) and value and isinstance(value[0], torch.Tensor):
            return tuple(v.cpu() for v in value)
        return value

    return dataclasses.replace(output, **{f.name: move(getattr(output, f.name)) for f in dataclasses.fields(output)})


@torch.no_grad()
def run_model(model, features: Features, batch_size: int = 64, bf16: bool = False) -> list[Any]:
    """The model's outputs over `features`, batch by batch on the model's device, each back on the CPU."""
    model.eval()
    device = device_of(model)
    outputs = []
    for start in range(0, len(features), batch_size):
        batch = features.batch(range(start, min(start + batch_size, len(features))))
        inputs = {k: v for k, v in model_inputs(model, batch).items() if k not in LABEL_KEYS}
        with precision(device, bf16):
            out = model(**to_device(inputs, device))
        outputs.append(out if device.type == "cpu" else to_cpu(out))
    return outputs
