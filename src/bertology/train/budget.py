"""--time-budget as a bound on a whole command: its minutes count from when the command began (the CLI's
start, torch's import included; a Python call's start), not from the Trainer's first step.

    budget = CommandBudget.of(o.time_budget, started)   # None without --time-budget
    ...                                                # read, tokenize, build instances, load a teacher
    Trainer(..., budget=budget)                        # trains what is left, less the end's reserve

The Trainer gets what setup left, less a reserve for what comes after its last step, measured in the
run itself (`Reserve`): that step, the final evaluation, the final checkpoint, the model written beside
it and the loss plot. `TrainingTime` is the Trainer's side: the horizon its schedule ends at, and when
it stops. When setup alone spent the budget, nothing is trained: the job refuses with BudgetSpent (a
ValueError: the CLI's one-line error) rather than write an untrained model as if it were one; `--resume`
(or `--overwrite`) with a larger budget starts the run again in the same directory.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable


class BudgetSpent(ValueError):
    """The command's time budget was spent before its first training step: nothing was trained."""


@dataclass(frozen=True)
class CommandBudget:
    """`seconds` of wall time for a command that began at `started` (a reading of `clock`)."""

    seconds: float
    started: float
    clock: Callable[[], float] = field(default=time.perf_counter, compare=False)

    @classmethod
    def of(
        cls, minutes: float | None, started: float | None = None, clock: Callable[[], float] = time.perf_counter
    ) -> CommandBudget | None:
        """The budget of `minutes` from `started` (None: now, the call's start); None without minutes.

        >>> b = CommandBudget.of(1.5, started=100.0, clock=lambda: 130.0); (b.deadline, b.spent(), b.left())
        (190.0, 30.0, 60.0)
        """
        if minutes is None:
            return None
        return cls(60 * minutes, clock() if started is None else started, clock)

    @property
    def deadline(self) -> float:
        """The reading of `clock` by which the command should have ended."""
        return self.started + self.seconds

    def spent(self) -> float:
        return self.clock() - self.started

    def left(self) -> float:
        return self.deadline - self.clock()


class Reserve:
    """What a budgeted run's end costs after the check that stops it, measured in the run: the last step (the
    mean of this command's, tick to tick), the final evaluation, the final checkpoint, the job's write of the
    model beside it and the loss plot. Nothing is counted before it is measured."""

    def __init__(self, checkpoints: bool, plot: bool, evaluates: bool):
        self.checkpoints, self.plot, self.evaluates = checkpoints, plot, evaluates
        self.measured: dict[str, float] = {}  # evaluation, checkpoint, model, plot: the latest of each
        self._steps, self._step_s = 0, 0.0

    def add_step(self, seconds: float) -> None:
        self._steps, self._step_s = self._steps + 1, self._step_s + seconds

    def seconds(self) -> float:
        m = self.measured
        return (
            (self._step_s / self._steps if self._steps else 0.0)
            + (m.get("evaluation", 0.0) if self.evaluates else 0.0)
            + (m.get("checkpoint", 0.0) if self.checkpoints else 0.0)
            + m.get("model", 0.0)
            + (m.get("plot", 0.0) if self.plot else 0.0)
        )


class TrainingTime:
    """A Trainer's time budget: `time_budget_s` seconds of its own, or under a command `budget` what setup left
    less the `reserve` (a resumed run keeps the horizon its first command planned, and each command its deadline)."""

    def __init__(self, time_budget_s: float | None, budget: CommandBudget | None, reserve: Reserve):
        self.time_budget_s, self.reserve = time_budget_s, reserve
        self.budget = budget if time_budget_s is not None else None
        self.planned_s: float | None = None  # training seconds the deadline allows, reserve included
        self.fixed_s: float | None = None  # a resumed run's recorded horizon, or the one a run stopped at
        self.setup_s: float | None = None  # the command's seconds before its first step

    @property
    def horizon_s(self) -> float | None:
        """The training seconds at which the run stops and its schedule ends."""
        if self.time_budget_s is None:
            return None
        if self.fixed_s is not None:
            return self.fixed_s
        if self.planned_s is None:
            return self.time_budget_s
        return self.planned_s - self.reserve.seconds()

    def out_of_time(self, elapsed_s: float, now: float) -> bool:
        horizon = self.horizon_s
        if horizon is None:
            return False
        # a resumed run's command is bound by its own deadline too, whatever its recorded horizon
        return elapsed_s >= horizon or (
            self.budget is not None and now + self.reserve.seconds() >= self.budget.deadline
        )

    def resumed(self, state: dict[str, Any]) -> None:
        """A checkpoint's recorded horizon goes on (a raised budget lengthens it by the raise)."""
        if self.budget is not None and state.get("horizon_s") is not None:
            before = json.loads(state["args"]).get("time_budget_s") or self.time_budget_s
            self.fixed_s = float(state["horizon_s"]) + self.time_budget_s - before

    def plan(self, elapsed_s: float, where: object) -> None:
        """Before the first step: the seconds the deadline leaves to train, or BudgetSpent when setup spent them."""
        self.setup_s, left = self.budget.spent(), self.budget.left()
        if left <= 0:
            raise BudgetSpent(
                f"{where}: the time budget ({_seconds(self.budget.seconds)} s) was spent before training began "
                f"(setup took {_seconds(self.setup_s)} s: reading, tokenizing, building instances, loading); "
                "nothing was trained. Raise --time-budget, with --resume or --overwrite to start again in this "
                "directory"
            )
        if self.fixed_s is None:
            self.planned_s = elapsed_s + left

    def stopped(self, elapsed_s: float) -> None:
        """The run ran out of the time it planned: its horizon is where it stopped (a resume has no more)."""
        if self.fixed_s is None and self.planned_s is not None:
            self.fixed_s = min(elapsed_s, self.horizon_s)

    def share(self, elapsed_s: float) -> float:
        """The elapsed share of the horizon, which the schedule reads (1 where nothing was left)."""
        horizon = self.horizon_s
        return elapsed_s / horizon if horizon > 0 else 1.0


def _seconds(s: float) -> str:
    return f"{s:.0f}" if s >= 10 else f"{s:.1f}"
