"""Training you can watch (train/report.py): TensorBoard events that TensorBoard's own reader reads back,
metrics.jsonl with the tokens trained on, and loss.png beside the run."""

from __future__ import annotations

import json

import pytest
import torch

from bertology.train.arguments import TrainingArguments
from bertology.train.report import check_report_to
from bertology.train.trainer import Trainer


class Regression:
    """A least-squares objective on a batch with an attention mask (the tokens the Trainer counts)."""

    def totals(self, batch):
        return {"rows": batch["x"].shape[0]}

    def __call__(self, model, batch, totals):
        loss = ((model(batch["x"]).squeeze(-1) - batch["y"]) ** 2).sum() / totals["rows"]
        return loss, {"loss": loss.detach()}


class Linear(torch.nn.Linear):
    def save(self, directory):  # what the Trainer calls for a checkpoint
        directory.mkdir(parents=True, exist_ok=True)
        torch.save(self.state_dict(), directory / "weights.pt")


def batches(step):
    g = torch.Generator().manual_seed(step)
    x = torch.randn(8, 3, generator=g)
    return {"x": x, "y": x @ torch.tensor([1.0, -2.0, 0.5]), "attention_mask": torch.ones(8, 5, dtype=torch.long)}


def train(out, report_to="none", steps=12):
    torch.manual_seed(0)
    args = TrainingArguments(
        out_dir=str(out), steps=steps, lr=0.05, log_every=2, eval_every=4, checkpoints=False, quiet=True,
        report_to=report_to, device="cpu",
    )  # fmt: skip
    evaluate = lambda m: {"loss": float(Regression()(m, batches(999), {"rows": 8})[0])}  # noqa: E731
    trainer = Trainer(Linear(3, 1), args, batches, Regression(), evaluate)
    trainer.train()
    return trainer


def test_tensorboard_events_read_back_with_every_logged_value(tmp_path):
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    trainer = train(tmp_path / "run", "tensorboard")
    reader = accumulator.EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    reader.Reload()
    tags = set(reader.Tags()["scalars"])
    assert {"train/loss", "train/lr", "train/grad_norm", "train/tokens_per_s", "eval/loss"} <= tags
    logged = [r for r in trainer.history if "loss" in r]
    assert [(e.step, pytest.approx(e.value)) for e in reader.Scalars("train/loss")] == [
        (r["step"], r["loss"]) for r in logged
    ]
    assert [e.step for e in reader.Scalars("eval/loss")] == [4, 8, 12]


def test_metrics_count_the_tokens_and_loss_png_is_drawn_without_tensorboard(tmp_path):
    train(tmp_path / "run")
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["tokens"] for r in records if "loss" in r] == [2 * 40 * k for k in range(1, 7)]  # 40 a step
    assert (tmp_path / "run" / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "run" / "tensorboard").exists()


def test_an_unknown_reporter_is_named():
    with pytest.raises(ValueError, match="--report-to 'wandb': choose one of none, tensorboard"):
        check_report_to("wandb")


def test_without_the_tensorboard_package_the_options_refuse_before_any_write(monkeypatch, tmp_path):
    import builtins

    from bertology.train.pretrain import PretrainOptions

    real_import = builtins.__import__

    def no_tensorboard(name, *args, **kwargs):
        if name == "tensorboard" or name.startswith("tensorboard."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tensorboard)
    with pytest.raises(ValueError, match=r"--report-to tensorboard: the tensorboard package is not installed"):
        PretrainOptions(family="bert", corpus=["a.txt"], out_dir=str(tmp_path / "o"), report_to="tensorboard")
    assert not (tmp_path / "o").exists()
