"""Run by test_train_distributed.py (and the GPU test) under torchrun: a few steps of data-parallel
pretraining on DEVICE (cpu: gloo; cuda: one GPU per process, NCCL)."""

import json
import sys
from pathlib import Path

import torch

from bertology.train import PretrainingObjective, Trainer, TrainingArguments, distributed

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


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:])
