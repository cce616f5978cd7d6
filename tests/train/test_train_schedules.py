import pytest
import torch

from bertology.train import Trainer, TrainingArguments, budget_schedule, linear_schedule, schedule, triangle_schedule
from bertology.train import PretrainingObjective
from bertology.train.arguments import NO_STEP_CAP
from helpers import synthetic_batches, tiny_model


def test_triangle_known_values():
    f = triangle_schedule(1000)  # starts at 25% of the peak, peaks at 75% of the budget, ends at 0
    assert f(0) == pytest.approx(0.25)
    assert f(375) == pytest.approx(0.625)
    assert f(750) == pytest.approx(1.0)
    assert f(875) == pytest.approx(0.5)
    assert f(1000) == 0.0
    values = [f(s) for s in range(1001)]
    assert max(values) == pytest.approx(1.0) and values.index(max(values)) == 750
    assert all(a <= b for a, b in zip(values[:750], values[1:751]))  # rises, then
    assert all(a >= b for a, b in zip(values[750:], values[751:]))  # falls


def test_triangle_scales_with_the_budget():
    short, long = triangle_schedule(40), triangle_schedule(400)
    assert [short(s) for s in (0, 10, 30, 35, 40)] == pytest.approx([long(s) for s in (0, 100, 300, 350, 400)])


def test_linear_known_values():
    f = linear_schedule(10, 110)
    assert [f(s) for s in (0, 9, 10, 60, 110)] == pytest.approx([0.1, 1.0, 1.0, 0.5, 0.0])


@pytest.mark.parametrize("bad", [dict(peak_at=0.0), dict(peak_at=1.5), dict(start=-0.1)])
def test_triangle_rejects_bad_shapes(bad):
    with pytest.raises(ValueError):
        triangle_schedule(10, **bad)


def test_unknown_schedule_named():
    with pytest.raises(ValueError, match="cosine"):
        schedule("cosine", 10)
    with pytest.raises(ValueError, match="cosine"):
        TrainingArguments(out_dir="x", steps=10, schedule="cosine")


def test_trainer_follows_the_triangle(tmp_path):
    model = torch.nn.Linear(2, 1)
    model.config = None
    args = TrainingArguments(out_dir=str(tmp_path), steps=8, lr=1.0, schedule="triangle", max_grad_norm=None)
    trainer = Trainer(model, args, batches=None, objective=None)
    rates = []
    for _ in range(8):
        rates.append(trainer.scheduler.get_last_lr()[0])
        trainer.optimizer.step()
        trainer.scheduler.step()
    assert rates == pytest.approx([triangle_schedule(8)(s) for s in range(8)])


def test_budget_schedule_known_values_at_known_fractions():
    f = budget_schedule("linear", warmup_share=0.2)
    assert [f(p) for p in (0.0, 0.1, 0.2, 0.6, 1.0)] == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.0])
    assert f(1.5) == 0.0 and f(-1.0) == 0.0  # past the budget (the last step overshoots) and before it: clipped
    tri = budget_schedule("triangle")
    assert [tri(p) for p in (0.0, 0.375, 0.75, 0.875, 1.0)] == pytest.approx([0.25, 0.625, 1.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="warmup share"):
        budget_schedule("linear", warmup_share=1.0)
    with pytest.raises(ValueError, match="cosine"):
        budget_schedule("cosine")


class FakeClock:
    """Seconds that advance by `tick` each time the Trainer reads them: a step costs a known time."""

    def __init__(self, tick: float):
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


def budgeted_trainer(tmp_path, budget_s=10.0, tick=1.0, steps=NO_STEP_CAP, **kw):
    args = TrainingArguments(
        out_dir=str(tmp_path),
        steps=steps,
        batch_size=4,
        lr=1.0,
        time_budget_s=budget_s,
        budget_warmup=0.2,
        max_grad_norm=None,
        log_every=1,
        **kw,
    )
    return Trainer(tiny_model(), args, synthetic_batches(batch_size=4), PretrainingObjective(), clock=FakeClock(tick))


def test_time_budget_stops_the_run_and_drives_the_schedule(tmp_path):
    trainer = budgeted_trainer(tmp_path, budget_s=10.0, tick=1.0)
    result = trainer.train()
    # each step reads the clock once (1 s): the run stops when 10 s are spent, whatever the step cap
    assert result == {"step": 10, "interrupted": False}
    assert trainer.elapsed_s == pytest.approx(10.0)
    rates = [r["lr"] for r in trainer.history if "lr" in r]
    # the rate a step used was set after the step before, at elapsed k seconds = share k/10
    f = budget_schedule("linear", 0.2)
    assert rates == pytest.approx([f(k / 10) for k in range(10)])
    assert trainer.history[-1]["elapsed_s"] == pytest.approx(10.0)


def test_time_budget_with_a_step_cap_stops_at_the_cap(tmp_path):
    trainer = budgeted_trainer(tmp_path, budget_s=100.0, tick=1.0, steps=5)
    assert trainer.train()["step"] == 5 and trainer.elapsed_s == pytest.approx(5.0)


def test_time_budget_elapsed_time_survives_a_resume(tmp_path):
    first = budgeted_trainer(tmp_path, budget_s=10.0, tick=1.0, stop_at=4)
    assert first.train() == {"step": 4, "interrupted": True}
    second = budgeted_trainer(tmp_path, budget_s=10.0, tick=1.0)
    assert second.train(resume=True) == {"step": 10, "interrupted": False}  # 4 s before, 6 s after: 10 in all
    assert second.elapsed_s == pytest.approx(10.0)


def test_time_budget_rejects_nonsense(tmp_path):
    with pytest.raises(ValueError, match="time budget"):
        TrainingArguments(out_dir=str(tmp_path), steps=10, time_budget_s=0)
    with pytest.raises(ValueError, match="warmup share"):
        TrainingArguments(out_dir=str(tmp_path), steps=10, time_budget_s=5, budget_warmup=1.5)
