"""Learning-rate schedules: a multiplier of the peak rate as a function of optimizer steps taken,
or, for a run with a time budget, of the share of the budget spent (`budget_schedule`).

    linear    BERT's: 0 → 1 over `warmup` steps, then linearly to 0 at the last step.
    triangle  a budget-tied one-cycle (Cramming, Geiping & Goldstein 2022, found a triangle best
              for a small budget): starts at `start` of the peak, reaches the peak at `peak_at`
              of the run, then falls linearly to 0 at the last step. Its shape depends only on
              the budget, so a shorter or longer run keeps the same proportions.

    >>> f = schedule("triangle", total=100); [round(f(s), 3) for s in (0, 25, 75, 90, 100)]
    [0.25, 0.5, 1.0, 0.4, 0.0]

A time budget (Cramming's budget schedule) measures warmup and decay in seconds, not steps: the
run does not know in advance how many steps it will reach, so the multiplier is a function of the
elapsed share of the budget, and the decay ends exactly when the time does, on any machine.

    >>> f = budget_schedule("linear", warmup_share=0.1); [round(f(p), 3) for p in (0, 0.05, 0.1, 0.55, 1.0)]
    [0.0, 0.5, 1.0, 0.5, 0.0]
"""

from __future__ import annotations

from typing import Callable

SCHEDULES = ("linear", "triangle")


def linear_schedule(warmup: int, total: int) -> Callable[[int], float]:
    """0 → 1 over `warmup` steps, then 1 → 0 at `total`.

    >>> f = linear_schedule(2, 10); [round(f(s), 3) for s in (0, 1, 2, 6, 10)]
    [0.5, 1.0, 1.0, 0.5, 0.0]
    """

    def factor(step: int) -> float:  # `step` = optimizer steps taken so far
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return factor


def triangle_schedule(total: int, peak_at: float = 0.75, start: float = 0.25) -> Callable[[int], float]:
    """`start` → 1 linearly up to step peak_at·total, then 1 → 0 linearly at `total`.

    >>> f = triangle_schedule(8, peak_at=0.5, start=0.0); [f(s) for s in (0, 2, 4, 6, 8)]
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    if not 0 < peak_at <= 1:
        raise ValueError(f"peak_at must be in (0, 1], got {peak_at}")
    if not 0 <= start <= 1:
        raise ValueError(f"start must be in [0, 1], got {start}")
    peak = peak_at * total

    def factor(step: int) -> float:
        if step < peak:
            return start + (1 - start) * step / peak
        return max(0.0, (total - step) / max(1e-9, total - peak)) if total > peak else 1.0

    return factor


def budget_schedule(name: str, warmup_share: float = 0.1) -> Callable[[float], float]:
    """The named schedule over the elapsed share `p` of a time budget (clipped to [0, 1]): linear
    rises over the first `warmup_share` and falls to 0 at the end; triangle is `triangle_schedule`'s
    shape (its own warmup, 25% → peak at 75%).

    >>> f = budget_schedule("triangle"); [round(f(p), 3) for p in (0, 0.375, 0.75, 0.875, 1.0)]
    [0.25, 0.625, 1.0, 0.5, 0.0]
    """
    if not 0 <= warmup_share < 1:
        raise ValueError(f"warmup share must be in [0, 1), got {warmup_share}")
    if name == "linear":

        def factor(p: float) -> float:
            p = min(max(p, 0.0), 1.0)
            return p / warmup_share if p < warmup_share else (1 - p) / (1 - warmup_share)

        return factor
    if name == "triangle":
        shape = triangle_schedule(1)
        return lambda p: shape(min(max(p, 0.0), 1.0))
    raise ValueError(f"unknown learning-rate schedule {name!r}; choose one of {', '.join(SCHEDULES)}")


def schedule(name: str, total: int, warmup: int = 0) -> Callable[[int], float]:
    """The named schedule for a run of `total` optimizer steps (`warmup` is the linear one's)."""
    if name == "linear":
        return linear_schedule(warmup, total)
    if name == "triangle":
        return triangle_schedule(total)
    raise ValueError(f"unknown learning-rate schedule {name!r}; choose one of {', '.join(SCHEDULES)}")
