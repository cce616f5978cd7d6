"""A Trainer's checkpoint state: what trainer_state.pt holds, and reading it and the weights back."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from ..models.checkpoint import load_state, read_weights


def trainer_state(trainer) -> dict[str, Any]:
    """What a checkpoint's trainer_state.pt holds beside the weights: step, optimizer, schedule, random
    states, elapsed time and the time budget's horizon, tokens, the arguments and the model's config."""
    state = {
        "step": trainer.step,
        "optimizer": trainer.optimizer.state_dict(),
        "scheduler": trainer.scheduler.state_dict(),
        "torch_rng": torch.get_rng_state(),  # dropout's stream (inside train()'s forked state)
        "elapsed_s": trainer.elapsed_s,
        "horizon_s": trainer.time.horizon_s,  # the schedule's end in training seconds (a resume keeps it)
        "tokens": trainer.tokens,
        "args": json.dumps(asdict(trainer.args), default=str),
        "config": json.dumps(trainer.model.config.to_dict(), sort_keys=True, default=str),
    }
    if trainer.cuda:
        # dropout's stream on the GPU: this device's generator. Every rank seeds and draws alike, so
        # rank 0's state is every rank's (as with the CPU's), and no other GPU is touched for it.
        state["cuda_rng"] = torch.cuda.get_rng_state(trainer.device)
    if trainer.scaler.is_enabled():
        state["grad_scaler"] = trainer.scaler.state_dict()
    return state


def read_trainer_state(checkpoint: Path, model, device: torch.device) -> dict[str, Any]:
    """checkpoint/trainer_state.pt, the optimizer's moments straight onto `device` (the random states are read
    back on the CPU), refused when it was written for another model config than `model`'s."""
    try:
        state = torch.load(checkpoint / "trainer_state.pt", map_location=device, weights_only=True)
    except Exception as e:
        raise ValueError(f"{checkpoint / 'trainer_state.pt'}: corrupt or unreadable checkpoint ({e})") from None
    ours = json.dumps(model.config.to_dict(), sort_keys=True, default=str)
    if state["config"] != ours:
        theirs = json.loads(state["config"])
        diff = {k: (theirs.get(k), v) for k, v in json.loads(ours).items() if theirs.get(k) != v}
        raise ValueError(
            f"{checkpoint}: checkpoint was written for another model config; differences (checkpoint, now): {diff}"
        )
    return state


def load_weights(model, checkpoint: Path) -> None:
    """The checkpoint's weights into `model`, strictly."""
    own = getattr(model, "load_checkpoint", None)  # a model saved as more than one directory (ELECTRA's pair)
    if own is not None:
        own(checkpoint)
        return
    try:
        tensors, source = read_weights(checkpoint)
    except Exception as e:
        raise ValueError(f"{checkpoint}: corrupt or unreadable weights ({e})") from None
    load_state(model, tensors, source, strict=True)
