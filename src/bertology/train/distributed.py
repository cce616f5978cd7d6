"""Data parallelism over torch.distributed (gloo on CPU, nccl on GPU), started by torchrun.

Every rank computes the same global batch and takes its rows rank::world; losses are divided by
global counts, so all-reducing (summing) gradients gives the single-process gradient exactly up to
floating-point summation order. With one process every function here is a no-op. On CUDA each
process takes the GPU of its LOCAL_RANK (`rank_device`).
"""

from __future__ import annotations

import os

import torch
import torch.distributed as td
from torch import nn

from ..hardware import resolve_device


def launched_world_size() -> int:
    """The processes torchrun started (1 outside torchrun), known before any process group is joined."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def _launched() -> bool:
    return launched_world_size() > 1


def rank_device(spec: str = "auto", say=None) -> torch.device:
    """The device of this process: `hardware.resolve_device(spec)`, except that under torchrun a
    CUDA job takes cuda:LOCAL_RANK (one GPU per process). Only the first process `say`s."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = resolve_device(spec, say if local == 0 and int(os.environ.get("RANK", "0")) == 0 else None)
    if device.type == "cuda" and _launched():
        if spec.startswith("cuda:") and spec != f"cuda:{local}":
            raise ValueError(
                f"--device {spec}: under torchrun every process takes the GPU of its LOCAL_RANK; "
                "give --device cuda (or auto)"
            )
        device = resolve_device(f"cuda:{local}")  # a LOCAL_RANK without its GPU is an error naming it
    return device


def init_from_env(device: torch.device | None = None) -> bool:
    """Join the process group torchrun describes (RANK, WORLD_SIZE, MASTER_ADDR …): NCCL for a CUDA
    `device` (this process's GPU made current first, as NCCL needs), gloo on the CPU; without a device,
    NCCL wherever CUDA is. False if not under torchrun."""
    if not _launched() or td.is_initialized():
        return td.is_initialized()
    cuda = device.type == "cuda" if device is not None else torch.cuda.is_available()
    if cuda and device is not None:
        torch.cuda.set_device(device)
    td.init_process_group("nccl" if cuda else "gloo")
    return True


def active() -> bool:
    return td.is_available() and td.is_initialized() and td.get_world_size() > 1


def rank() -> int:
    return td.get_rank() if active() else 0


def world_size() -> int:
    return td.get_world_size() if active() else 1


def is_main() -> bool:
    return rank() == 0


def barrier() -> None:
    if active():
        td.barrier()


@torch.no_grad()
def broadcast_parameters(model: nn.Module) -> None:
    if active():
        for tensor in list(model.parameters()) + list(model.buffers()):
            td.broadcast(tensor.data, src=0)


@torch.no_grad()
def all_reduce_gradients(model: nn.Module) -> None:
    """Sum gradients over ranks, in one flat buffer (one message instead of one per tensor)."""
    if not active():
        return
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    td.all_reduce(flat, op=td.ReduceOp.SUM)
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()


@torch.no_grad()
def all_reduce_tensor(tensor: torch.Tensor) -> None:
    """Sum `tensor` over ranks, in place (nothing when not distributed)."""
    if active():
        td.all_reduce(tensor, op=td.ReduceOp.SUM)


def all_reduce_sums(
    values: dict[str, torch.Tensor | float], device: torch.device | str = "cpu"
) -> dict[str, torch.Tensor | float]:
    """Sum each value over ranks, in one message on `device` (where NCCL needs it); the sums come back
    as 0-d tensors there, read when the caller logs them (no host sync here)."""
    if not active() or not values:
        return values
    keys = sorted(values)
    t = torch.stack([torch.as_tensor(values[k], dtype=torch.float64, device=device) for k in keys])
    td.all_reduce(t, op=td.ReduceOp.SUM)
    return dict(zip(keys, t.unbind()))


def any_rank(flag: bool, device: torch.device | str = "cpu") -> bool:
    """True on every rank when `flag` is on any (one message): a decision each rank takes from its own clock,
    such as a time budget's stop, taken alike by all, so that none waits for a step the others never take."""
    if not active():
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    td.all_reduce(t, op=td.ReduceOp.SUM)
    return bool(t.item() > 0)
