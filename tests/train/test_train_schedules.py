import pytest
import torch

from bertology.train import Trainer, TrainingArguments, linear_schedule, schedule, triangle_schedule


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
