"""Run by test_train_distributed.py (and the GPU test) under torchrun: a few steps of data-parallel
pretraining on DEVICE (cpu: gloo; cuda: one GPU per process, NCCL)."""

import json
import sys
from pathlib import Path

import torch

from bertology.train import PretrainingObjective, Trainer, TrainingArguments, distributed
from bertology.train.arguments import NO_STEP_CAP
from bertology.train.budget import CommandBudget

sys.path.insert(0, str(Path(__file__).parent))
from helpers import synthetic_batches, tiny_model  # noqa: E402


def main(out_dir: str, steps: int, device: str = "cpu") -> None:
    distributed.init_from_env(distributed.rank_device(device))
    torch.manual_seed(1000 + distributed.rank())  # different per rank: the Trainer must broadcast rank 0's weights
    model = tiny_model(seed=distributed.rank(), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    args = TrainingArguments(
        out_dir=out_dir,
        steps=steps,
        batch_size=8,
        lr=1e-3,
        warmup_steps=1,
        log_every=1,
        quiet=True,
        device=device,
        precision="fp32",
    )
    trainer = Trainer(model, args, synthetic_batches(), PretrainingObjective())
    trainer.train()
    if distributed.is_main():
        losses = [r["loss"] for r in trainer.history]
        (Path(out_dir) / "losses.json").write_text(json.dumps(losses))


class RankClock:
    """A clock each reading of which advances it by rank + 1 seconds: the ranks' clocks disagree."""

    def __init__(self, rank: int):
        self.now, self.tick = 0.0, rank + 1.0

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


def budgeted(out_dir: str) -> None:
    """A command budget of 60 s on clocks that run at a different speed on each rank: every rank must stop
    at the same step (one that stopped alone would leave the others waiting in their next all-reduce)."""
    distributed.init_from_env(distributed.rank_device("cpu"))
    clock = RankClock(distributed.rank())
    args = TrainingArguments(
        out_dir=out_dir, steps=NO_STEP_CAP, batch_size=8, time_budget_s=60.0, quiet=True, loss_plot=False
    )
    budget = CommandBudget(60.0, started=0.0, clock=clock)
    trainer = Trainer(tiny_model(), args, synthetic_batches(), PretrainingObjective(), clock=clock, budget=budget)
    trainer.train()
    (Path(out_dir) / f"steps-{distributed.rank()}.json").write_text(json.dumps(trainer.step))


if __name__ == "__main__":
    if sys.argv[2] == "budget":
        budgeted(sys.argv[1])
    else:
        main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:])
