"""The demo's plan: epochs per label count, the budget's clock, the cost meter that decides which counts run."""
import pytest

from bertology.demo.curve import Meter, examples_at
from bertology.demo.plan import PRIORITY, Budget, Plan, run_passes


def test_epochs_give_small_sets_many_passes_and_large_ones_at_least_five():
    plan = Plan.make(quick=False, bf16=False)
    assert [plan.epochs(n) for n in (100, 300, 1000, 1750)] == [21.0, 7.0, 5.0, 5.0]
    assert plan.epochs(10) == 30.0  # capped
    assert plan.label_counts == PRIORITY and plan.label_counts[0] == 10 and len(plan.seeds) >= 5
    quick = Plan.make(quick=True, bf16=False)
    assert [quick.epochs(n) for n in (100, 1750)] == [2.0, 1.0]


def test_budget_counts_from_its_creation():
    now = [100.0]
    budget = Budget(60.0, clock=lambda: now[0])
    now[0] = 145.0
    assert budget.spent() == 45.0 and budget.left() == 15.0


def test_meter_scales_measured_seconds_per_pass():
    meter = Meter()
    assert meter.estimate(1000) == 0.0  # nothing measured yet
    meter.add(10.0, run_passes(100, 20, dev=250, test=500))
    assert meter.estimate(2 * run_passes(100, 20, dev=250, test=500)) == pytest.approx(20.0)
    assert examples_at(None, ["a", "b", "b"]) == 3 and examples_at(10, ["a", "b", "b"]) == 20
