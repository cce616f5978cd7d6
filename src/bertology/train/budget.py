"""--time-budget as a bound on a whole command: its minutes count from when the command began (the CLI's
start, torch's import included; a Python call's start), not from the Trainer's first step.

    budget = CommandBudget.of(o.time_budget, started)   # None without --time-budget
    ...                                                # read, tokenize, build instances, load a teacher
    Trainer(..., budget=budget)                        # trains what is left, less the end's reserve

The Trainer gets what setup left, less a reserve for what comes after its last step, measured in the
run itself (trainer.py, `Reserve`): that step, the final evaluation, the final checkpoint, the model
written beside it and the loss plot. When setup alone spent the budget, nothing is trained: the job refuses
with BudgetSpent (a ValueError: the CLI's one-line error) rather than write an untrained model as if it were
one; the output directory keeps its tokenizer and instances for a `--resume` with a larger budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable


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
