"""A job's --time-budget bounds the whole command (train/budget.py): the Trainer trains what setup left, less
the end's reserve as measured in the run, on a clock the test controls: a step costs 1 s, an evaluation 2 s,
a checkpoint 3 s (its model 1 s of them), reading the clock nothing."""

import json

import pytest
import torch

from bertology.train import PretrainingObjective, Trainer, TrainingArguments, budget_schedule
from bertology.train.arguments import NO_STEP_CAP
from bertology.train.budget import BudgetSpent, CommandBudget
from bertology.train.run import resume_status
from helpers import synthetic_batches, tiny_model

STEP_S, EVALUATION_S, MODEL_S, REST_OF_CHECKPOINT_S = 1.0, 2.0, 1.0, 2.0


class FakeClock:
    def __init__(self, now: float = 0.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def timed_model(clock):
    """The tiny model, whose save costs MODEL_S on the fake clock."""
    model = tiny_model()
    save = model.save

    def timed_save(path):
        clock.now += MODEL_S
        save(path)

    model.save = timed_save
    return model


def budgeted(out, clock, seconds=60.0, **kw):
    """A Trainer under a command budget of `seconds` that began at 0 on `clock` (setup: the clock's time now)."""
    args = TrainingArguments(
        out_dir=str(out),
        steps=NO_STEP_CAP,
        batch_size=4,
        lr=1.0,
        time_budget_s=seconds,
        budget_warmup=0.2,
        max_grad_norm=None,
        log_every=1,
        eval_every=1000,  # the last step's only (and the one before the first step, timed for the reserve)
        loss_plot=False,
        **kw,
    )
    data = synthetic_batches(batch_size=4)

    def batches(step):
        clock.now += STEP_S
        return data(step)

    def evaluate(model):
        clock.now += EVALUATION_S
        return {"score": 1.0}

    def save_extra(path):
        clock.now += REST_OF_CHECKPOINT_S

    return Trainer(
        timed_model(clock),
        args,
        batches,
        PretrainingObjective(),
        evaluate=evaluate,
        save_extra=save_extra,
        clock=clock,
        budget=CommandBudget(seconds, started=0.0, clock=clock),
    )


def test_the_trainer_gets_what_setup_left_less_the_end(tmp_path):
    clock = FakeClock(now=20.0)  # setup (reading, tokenizing, loading) took 20 of the 60 s
    trainer = budgeted(tmp_path, clock)
    result = trainer.train()
    assert trainer.time.setup_s == 20.0
    reserve = STEP_S + EVALUATION_S + MODEL_S + REST_OF_CHECKPOINT_S + MODEL_S  # the job writes the model once more
    assert trainer.reserve.seconds() == reserve
    # the end (the final evaluation and checkpoint) came before the deadline, with the model's write still to fit,
    # and at most a step's time was left unused
    assert 60.0 - STEP_S <= clock.now + MODEL_S <= 60.0
    assert (
        trainer.elapsed_s == clock.now - 20.0 - MODEL_S - REST_OF_CHECKPOINT_S
    )  # the final checkpoint is not training
    assert result["step"] >= 5
    # the schedule ran over the seconds training had, not the whole budget: its rate had reached 0 at the end
    rates = [r["lr"] for r in trainer.history if "lr" in r]
    f = budget_schedule("linear", 0.2)
    assert max(rates) == pytest.approx(1.0, abs=0.25) and rates[-1] <= f(0.8)
    # the evaluation before the first step measured the end's cost, and is the run's step 0
    assert trainer.history[0]["step"] == 0 and "eval/score" in trainer.history[0]
    assert {"evaluation", "checkpoint", "model"} <= trainer.reserve.measured.keys()


def test_a_budget_setup_spent_is_refused_before_anything_is_trained(tmp_path):
    trainer = budgeted(tmp_path, FakeClock(now=61.0))
    with pytest.raises(BudgetSpent, match=r"time budget \(60 s\) was spent before training began \(setup took 61 s"):
        trainer.train()
    assert trainer.step == 0 and not (tmp_path / "checkpoints").exists() and not (tmp_path / "metrics.jsonl").exists()


def test_a_resume_keeps_the_horizon_its_first_command_planned(tmp_path):
    first = budgeted(tmp_path, FakeClock(now=20.0), stop_at=4)
    assert first.train() == {"step": 4, "interrupted": True}
    state = torch.load(first.checkpoints()[-1] / "trainer_state.pt", weights_only=True)
    planned = state["horizon_s"]
    assert 0 < planned < 40.0
    # a second command with a shorter setup: the same schedule goes on to the same horizon
    second = budgeted(tmp_path, FakeClock(now=5.0))
    second.train(resume=True)
    assert second.time.horizon_s == pytest.approx(planned)
    assert second.elapsed_s >= planned
    run = {"steps": NO_STEP_CAP, "time_budget_s": 60.0}
    assert resume_status(tmp_path, run)[0]  # complete: a further resume trains nothing
    assert not resume_status(tmp_path, {**run, "time_budget_s": 90.0})[0]  # a raised budget continues it
    args = json.loads(torch.load(second.checkpoints()[-1] / "trainer_state.pt", weights_only=True)["args"])
    assert args["time_budget_s"] == 60.0


def test_a_resumed_command_stops_at_its_own_deadline(tmp_path):
    first = budgeted(tmp_path, FakeClock(now=20.0), stop_at=3)
    first.train()
    second = budgeted(tmp_path, FakeClock(now=45.0))  # its setup left 15 s of its 60: fewer than the schedule has
    second.train(resume=True)
    assert second.clock.now <= 60.0 and second.elapsed_s < second.time.horizon_s
    assert not resume_status(tmp_path, {"steps": NO_STEP_CAP, "time_budget_s": 60.0})[0]  # not complete: resumable
