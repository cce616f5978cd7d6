"""The Trainer: schedule, weight decay groups, learning, exact resume, checkpoints, bad input."""

import json
import os

import pytest
import torch
import transformers

import bertology
from bertology.train import PretrainingObjective, Trainer, TrainingArguments, linear_schedule, parameter_groups

from helpers import synthetic_batches, tiny_model


def _trainer(tmp_path, steps=6, model=None, batches=None, lr=1e-3, **kw):
    args = TrainingArguments(
        out_dir=str(tmp_path), steps=steps, batch_size=8, lr=lr, warmup_steps=2, log_every=1, quiet=True, **kw
    )
    return Trainer(model or tiny_model(), args, batches or synthetic_batches(), PretrainingObjective())


def _losses(trainer):
    return [r["loss"] for r in trainer.history if "loss" in r]


def test_linear_warmup_then_decay():
    f = linear_schedule(4, 12)
    assert [f(s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert f(8) == 0.5 and f(12) == 0.0


def test_no_weight_decay_on_biases_and_layernorm():
    model = tiny_model()
    decay, no_decay = parameter_groups(model, 0.01)
    names = {id(p): n for n, p in model.named_parameters()}
    assert all("norm" in names[id(p)] or names[id(p)].endswith("bias") for p in no_decay["params"])
    assert any("qkv.weight" in names[id(p)] for p in decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


def test_a_tiny_model_overfits_a_fixed_batch(tmp_path):
    model = tiny_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    trainer = _trainer(tmp_path, steps=80, model=model, lr=1e-2, batches=synthetic_batches(fixed=True))
    trainer.train()
    losses = _losses(trainer)
    assert losses[0] > 4.0 and losses[-1] < 0.1, losses[::10]


@pytest.mark.parametrize("accumulation", [1, 2])
def test_resume_reproduces_the_uninterrupted_run_bit_for_bit(tmp_path, accumulation):
    full = _trainer(tmp_path / "full", steps=6, accumulation=accumulation)
    full.train()
    first = _trainer(tmp_path / "split", steps=6, accumulation=accumulation, save_every=3)
    first.args.steps = 3
    first.scheduler.lr_lambdas[0] = linear_schedule(2, 6)  # same schedule as the full run
    first.train()
    resumed = _trainer(tmp_path / "split", steps=6, accumulation=accumulation, model=tiny_model(seed=123))
    resumed.train(resume=True)
    assert _losses(first) + _losses(resumed) == _losses(full)  # exact equality, fp32
    records = [json.loads(line) for line in (tmp_path / "split" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5, 6]


def test_gradient_accumulation_matches_one_big_batch(tmp_path):
    no_dropout = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # dropout draws differ by split
    a = _trainer(tmp_path / "a", steps=3, model=tiny_model(**no_dropout))
    b = _trainer(tmp_path / "b", steps=3, accumulation=4, model=tiny_model(**no_dropout))
    a.train(), b.train()
    for x, y in zip(_losses(a), _losses(b)):
        assert abs(x - y) < 1e-5


def test_checkpoints_keep_the_last_k_and_load_in_transformers(tmp_path):
    trainer = _trainer(tmp_path, steps=6, save_every=2, keep_checkpoints=2)
    trainer.train()
    names = [p.name for p in trainer.checkpoints()]
    assert names == ["step-00000004", "step-00000006"]
    assert not [p for p in trainer.checkpoint_dir.iterdir() if p.name.startswith(".tmp")]
    last = trainer.checkpoints()[-1]
    ours = bertology.load(last)
    theirs = transformers.AutoModelForPreTraining.from_pretrained(last).eval()
    batch = synthetic_batches()(0)
    inputs = {k: batch[k] for k in ("input_ids", "token_type_ids")}
    with torch.no_grad():
        diff = (ours(**inputs).prediction_logits - theirs(**inputs).prediction_logits).abs().max()
    assert diff < 1e-5


def test_resume_with_another_config_or_a_corrupt_checkpoint(tmp_path):
    _trainer(tmp_path, steps=2).train()
    other = _trainer(tmp_path, steps=4, model=tiny_model(hidden_size=48, num_attention_heads=4))
    with pytest.raises(ValueError, match="another model config.*hidden_size"):
        other.train(resume=True)
    state = _trainer(tmp_path, steps=4).checkpoints()[-1] / "trainer_state.pt"
    state.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="corrupt or unreadable checkpoint"):
        _trainer(tmp_path, steps=4).train(resume=True)
    with pytest.raises(FileNotFoundError, match="no checkpoint to resume from"):
        _trainer(tmp_path / "empty", steps=4).train(resume=True)


def test_a_failed_checkpoint_write_leaves_the_previous_one_intact(tmp_path, monkeypatch):
    trainer = _trainer(tmp_path, steps=2)
    trainer.train()
    before = {p.name: p.stat().st_size for p in trainer.checkpoints()[-1].iterdir()}

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", full_disk)
    trainer.step = 4
    with pytest.raises(OSError, match="No space left"):
        trainer.save_checkpoint()
    assert [p.name for p in trainer.checkpoints()] == ["step-00000002"]
    assert {p.name: p.stat().st_size for p in trainer.checkpoints()[-1].iterdir()} == before
    assert not [p for p in trainer.checkpoint_dir.iterdir() if p.name.startswith(".tmp")]


def test_sigterm_writes_a_checkpoint_and_stops(tmp_path):
    batches = synthetic_batches()

    def batches_then_signal(step):
        if step == 2:
            os.kill(os.getpid(), 15)  # SIGTERM arrives during step 3
        return batches(step)

    trainer = _trainer(tmp_path, steps=10, batches=batches_then_signal)
    result = trainer.train()
    assert result == {"step": 3, "interrupted": True}
    assert [p.name for p in trainer.checkpoints()] == ["step-00000003"]


def test_bf16_autocast_trains(tmp_path):
    trainer = _trainer(tmp_path, steps=20, bf16=True, batches=synthetic_batches(fixed=True))
    trainer.train()
    losses = _losses(trainer)
    assert losses[-1] < losses[0] - 0.5


def test_bad_arguments():
    with pytest.raises(ValueError, match="not divisible by accumulation 3"):
        TrainingArguments(out_dir="x", steps=1, batch_size=8, accumulation=3)
    with pytest.raises(ValueError, match="steps must be"):
        TrainingArguments(out_dir="x", steps=0)
