"""Data parallelism over torch.distributed (gloo on CPU, nccl on GPU), started by torchrun.

Every rank computes the same global batch and takes its rows rank::world; losses are divided by
global counts, so all-reducing (summing) gradients gives the single-process gradient exactly up to
floating-point summation order. With one process every function here is a no-op.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as td
from torch import nn


def init_from_env() -> bool:
    """Join the process group torchrun describes (RANK, WORLD_SIZE, MASTER_ADDR …); False if not under torchrun."""
    if "WORLD_SIZE" not in os.environ or int(os.environ["WORLD_SIZE"]) <= 1 or td.is_initialized():
        return td.is_initialized()
    td.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
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
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


@torch.no_grad()
def all_reduce_tensor(tensor: torch.Tensor) -> None:
    """Sum `tensor` over ranks, in place (nothing when not distributed)."""
    if active():
        td.all_reduce(tensor, op=td.ReduceOp.SUM)


def all_reduce_sums(values: dict[str, float]) -> dict[str, float]:
    if not active() or not values:
        return values
    keys = sorted(values)
    t = torch.tensor([values[k] for k in keys], dtype=torch.float64)
    td.all_reduce(t, op=td.ReduceOp.SUM)
    return dict(zip(keys, t.tolist()))
