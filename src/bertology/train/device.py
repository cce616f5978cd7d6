"""Where a training step runs and in what precision: batches moved to the device (built on the CPU a
step ahead, pinned, copied without blocking), the autocast the device's precision asks for, the
gradient scaler fp16 needs, and TF32 matrix products for fp32 runs on the GPU.

On the CPU nothing is copied and nothing runs ahead (the cores that would build the next batch are
the ones computing this one); precision is the user's `bf16` as before. On CUDA it is measured
(`hardware.cuda_precision`) and said.
"""

from __future__ import annotations

import sys
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from ..hardware import check_bf16_requested, cuda_precision
from . import distributed as dist

Batch = dict[str, torch.Tensor]
PRECISIONS = ("auto", "fp32", "bf16", "fp16")


def say(message: str) -> None:
    """A job's note to its user (the device it took, the precision it chose), from the first rank only."""
    if dist.is_main():
        print(message, file=sys.stderr, flush=True)


def to_device(batch: Batch, device: torch.device, pin: bool = False) -> Batch:
    """`batch` on `device`; a copy from pinned memory does not block (nothing happens on the CPU).
    `pin` pins it first, for a batch that was not built in pinned memory (BatchFeed's are)."""
    if device.type == "cpu":
        return batch
    return {k: (v.pin_memory() if pin else v).to(device, non_blocking=True) for k, v in batch.items()}


def model_device(model: torch.nn.Module) -> torch.device:
    """Where the model's weights are (the CPU for a model without any)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))


@dataclass(frozen=True)
class Precision:
    """What a step computes in: an autocast dtype (None: fp32), TF32 matrix products (fp32 on a GPU
    that has them), and the reason in words (empty on the CPU, where the user chose)."""

    device: torch.device
    dtype: torch.dtype | None = None
    tf32: bool = False
    reason: str = ""

    @property
    def name(self) -> str:
        return {None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[self.dtype]

    @property
    def scaled(self) -> bool:
        """fp16's narrow range needs the loss scaled before backward (torch.amp.GradScaler)."""
        return self.dtype == torch.float16

    def autocast(self):
        return torch.autocast(self.device.type, dtype=self.dtype or torch.bfloat16, enabled=self.dtype is not None)

    @contextmanager
    def matmuls(self) -> Iterator[None]:
        """TF32 matrix products inside the block, the setting as it was after it. The flag is
        process-wide (cuBLAS has no narrower scope), so a training run sets it for its own duration
        only: an inference or another run in the same process keeps its own choice."""
        if not self.tf32:
            yield
            return
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous


def check_precision(device: torch.device, requested: str) -> None:
    """A precision this device can train in, or a ValueError naming it (a job calls this before its first write)."""
    if requested not in PRECISIONS:
        raise ValueError(f"precision {requested!r}: choose one of {', '.join(PRECISIONS)}")
    if device.type != "cuda" and requested == "fp16":
        raise ValueError(
            "--precision fp16: fp16 autocast with a gradient scaler is for CUDA GPUs; on the CPU use bf16 or fp32"
        )


def choose_precision(device: torch.device, requested: str = "auto", bf16: bool = False) -> Precision:
    """The precision of a training run on `device`. CPU: bf16 autocast where the user asked for it
    (`bf16`, warned when this CPU emulates it), else fp32. CUDA, `requested` auto: bf16 where asked,
    else the measured choice (bf16 or fp16 autocast, or fp32 with TF32 where the GPU has it); fp32,
    bf16 or fp16 as asked."""
    check_precision(device, requested)
    if device.type != "cuda":
        if bf16 or requested == "bf16":
            check_bf16_requested()
            return Precision(device, torch.bfloat16)
        return Precision(device)
    probe = cuda_precision(device)
    pick = "bf16" if bf16 and requested == "auto" else (probe["pick"] if requested == "auto" else requested)
    if pick == "bf16" and probe["half"] != "bf16":
        raise ValueError(
            f"bf16 on {probe['gpu']} (compute capability {probe['capability']}): bf16 needs an Ampere "
            "or later GPU (8.0); leave the precision to the probe (fp16 with a gradient scaler)"
        )
    reason = probe["reason"] if requested == "auto" and not bf16 else f"{pick}: as asked"
    dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[pick]
    return Precision(device, dtype, tf32=dtype is None and bool(probe["tf32"]), reason=reason)


class BatchFeed:
    """`batches(step)` built one step ahead on a worker thread, so that masking or permutation
    building overlaps the device's step; a CUDA batch is pinned there, so its copy does not block.
    The batch of a step is the same whether or not it was built ahead (batches are a pure function
    of the step); `ahead=False` builds it when asked, on the caller's thread.

    `prepare(global_batch)` runs on the worker too: what the step copies (this rank's rows)."""

    def __init__(
        self, batches: Callable[[int], Batch], prepare: Callable[[Batch], Batch], pin: bool, ahead: bool, last_step: int
    ):
        self.batches, self.prepare, self.pin, self.last_step = batches, prepare, pin, last_step
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="batches") if ahead else None
        self.pending: tuple[int, Future] | None = None

    def _build(self, step: int) -> tuple[Batch, Batch]:
        global_batch = self.batches(step)
        part = self.prepare(global_batch)
        if self.pin:
            part = {k: v.pin_memory() for k, v in part.items()}
        return global_batch, part

    def __call__(self, step: int) -> tuple[Batch, Batch]:
        """(the global batch on the CPU, this rank's rows ready to copy) of `step`."""
        if self.pool is None:
            return self._build(step)
        if self.pending is not None and self.pending[0] == step:
            built = self.pending[1].result()
        else:
            built = self._build(step)
        self.pending = (step + 1, self.pool.submit(self._build, step + 1)) if step + 1 < self.last_step else None
        return built

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pending = None
