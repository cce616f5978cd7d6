"""The throughput probe that sizes the demo's models on a GPU: a few pretraining steps of each
candidate preset on the chosen device, timed, so that plan.choose_preset turns the budget into tokens."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import torch

from ..io import atomic_write_json
from ..models import get_family, task_class
from ..tasks.forward import inference_dtype
from .plan import GPU_PRESETS, TOKENS_PER_PARAMETER, Plan, choose_preset


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def tokens_per_second(
    preset: str, device: torch.device, batch_size: int, seq_len: int, vocab_size: int, steps: int = 2
) -> tuple[float, int]:
    """(tokens/s, parameters) of BERT-`preset` MLM steps (forward, backward, AdamW) on `device` under the
    GPU's autocast, timed over `steps` after a warm-up step (which pays for the kernels' first launch).
    BERT stands for every family: ALBERT shares its layers (the same compute), XLNet's two streams cost
    more, so its models see somewhat fewer tokens than the probe counts."""
    generator = torch.Generator().manual_seed(0)
    model = task_class("bert", "ForMaskedLM")(get_family("bert").preset(preset, vocab_size=vocab_size)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(5, vocab_size, (batch_size, seq_len), generator=generator)
    labels = torch.where(torch.rand(batch_size, seq_len, generator=generator) < 0.3, ids, -100)
    ids, labels = ids.to(device), labels.to(device)
    dtype = inference_dtype(device)

    def step() -> None:
        with torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = model(input_ids=ids, labels=labels, sparse_prediction=True).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step()
    synchronize(device)
    started = time.perf_counter()
    for _ in range(steps):
        step()
    synchronize(device)
    return batch_size * seq_len * steps / (time.perf_counter() - started), model.num_parameters()


def probe_presets(
    presets: tuple[str, ...], device: torch.device, batch_size: int, seq_len: int, vocab_size: int
) -> dict[str, tuple[float, int]]:
    """{preset: (tokens/s, parameters)} for each candidate, measured now on `device`."""
    measured = {}
    for preset in presets:
        measured[preset] = tokens_per_second(preset, device, batch_size, seq_len, vocab_size)
        if device.type == "cuda":
            torch.cuda.empty_cache()  # the next candidate's memory, not this one's cached blocks
    return measured


def sized_plan(plan: Plan, out: Path, seconds: float, resume: bool, say) -> Plan:
    """The plan with its preset chosen by the probe for a pretraining slot of `seconds` a model (a
    resumed demo keeps the preset its checkpoints were made with, from out/demo_plan.json)."""
    file = out / "demo_plan.json"
    if resume and file.is_file():
        preset = json.loads(file.read_text())["preset"]
        say(f"   preset {preset}, as the interrupted run chose it")
        return replace(plan, preset=preset)
    device = torch.device(plan.device)
    measured = probe_presets(GPU_PRESETS, device, plan.batch_size, plan.seq_len, plan.vocab_size)
    preset = choose_preset(measured, seconds)
    for name, (rate, parameters) in measured.items():
        say(
            f"   {name:<6} {parameters:>12,} parameters  {rate:>12,.0f} tokens/s measured → "
            f"{rate * seconds / parameters:>8,.1f} tokens per parameter in {seconds:.0f} s"
        )
    say(
        f"   preset: {preset}, the largest that sees ≥ {TOKENS_PER_PARAMETER:g} tokens per parameter (else the smallest)"
    )
    atomic_write_json(
        file,
        {
            "device": plan.device,
            "preset": preset,
            "seconds_per_model": seconds,
            "measured": {k: {"tokens_per_s": r, "parameters": n} for k, (r, n) in measured.items()},
        },
    )
    return replace(plan, preset=preset)
