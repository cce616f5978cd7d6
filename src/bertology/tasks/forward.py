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

from ..hardware import cuda_half_dtype
from ..train.device import model_device, to_device
from .base import Features

LABEL_KEYS = ("labels", "start_positions", "end_positions")


def model_inputs(model, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Drop token_type_ids for families without token types (DistilBERT) or with one (RoBERTa)."""
    if model.config.type_vocab_size <= 1:
        batch = {k: v for k, v in batch.items() if k != "token_type_ids"}
    return batch


def inference_dtype(device: torch.device) -> torch.dtype | None:
    """The autocast dtype of inference on `device`: bf16 on a GPU that has it, else fp16; None on the CPU."""
    return cuda_half_dtype(device) if device.type == "cuda" else None


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
    device = model_device(model)
    outputs = []
    for start in range(0, len(features), batch_size):
        batch = features.batch(range(start, min(start + batch_size, len(features))))
        inputs = {k: v for k, v in model_inputs(model, batch).items() if k not in LABEL_KEYS}
        with precision(device, bf16):
            out = model(**to_device(inputs, device, pin=True))
        outputs.append(out if device.type == "cpu" else to_cpu(out))
    return outputs
