"""Run by test_train_device.py in a process of its own, since deterministic algorithms are a
process-wide switch (with the cuBLAS workspace setting they need, read when CUDA starts): an
uninterrupted run and one stopped at step 3 and resumed, on DEVICE in PRECISION; prints both
runs' losses as JSON."""

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402

from bertology.train import PretrainingObjective, Trainer, TrainingArguments, linear_schedule  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from helpers import synthetic_batches, tiny_model  # noqa: E402


def trainer(out: Path, device: str, precision: str, model=None, **kw) -> Trainer:
    args = TrainingArguments(
        out_dir=str(out),
        steps=6,
        batch_size=8,
        lr=1e-3,
        warmup_steps=2,
        log_every=1,
        quiet=True,
        device=device,
        precision=precision,
        **kw,
    )
    return Trainer(model or tiny_model(), args, synthetic_batches(), PretrainingObjective())


def main(out: str, device: str, precision: str) -> None:
    torch.use_deterministic_algorithms(True)
    out = Path(out)
    full = trainer(out / "full", device, precision)
    full.train()
    first = trainer(out / "split", device, precision, save_every=3)
    first.args.steps = 3
    first.scheduler.lr_lambdas[0] = linear_schedule(2, 6)  # the full run's schedule
    first.train()
    resumed = trainer(out / "split", device, precision, model=tiny_model(seed=123))
    resumed.train(resume=True)
    losses = lambda t: [r["loss"] for r in t.history if "loss" in r]  # noqa: E731
    print(json.dumps({"full": losses(full), "resumed": losses(first) + losses(resumed)}))


if __name__ == "__main__":
    main(*sys.argv[1:])
