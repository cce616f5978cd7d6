"""Correlations, shared by every score in the house: fine-tuning's regression metrics (tasks/metrics.py)
and word-vector similarity (wordvec/evaluate.py) agree because they are these functions.

A correlation with a constant side is undefined (scipy says nan); here it is 0.0, the value that says
"no relation", so that a dev metric can always pick a checkpoint. Ties share their average rank
(scipy's rankdata 'average'), so Spearman is right with ties.
"""

from __future__ import annotations

import math
from typing import Sequence


def _check(x: Sequence, y: Sequence) -> None:
    if len(x) != len(y):
        raise ValueError(f"{len(x)} predictions but {len(y)} gold labels")
    if not len(y):
        raise ValueError("no examples to score")


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's correlation coefficient (0.0 when either side is constant).

    >>> pearson([1, 2, 3], [2, 4, 7])
    0.9933992677987828
    """
    _check(x, y)
    x, y = [float(v) for v in x], [float(v) for v in y]
    n = len(x)
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    dx, dy = [a - mx for a in x], [b - my for b in y]
    sxy = math.fsum(a * b for a, b in zip(dx, dy))
    sxx, syy = math.fsum(a * a for a in dx), math.fsum(b * b for b in dy)
    if sxx == 0 or syy == 0:
        return 0.0
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def rank(values: Sequence[float]) -> list[float]:
    """1-based ranks; tied values share the average of the ranks they span.

    >>> rank([10, 20, 10, 30, 20, 20])
    [1.5, 4.0, 1.5, 6.0, 4.0, 4.0]
    """
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):  # positions i..j (0-based) hold ranks i+1..j+1: their mean
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation: Pearson on average ranks (correct with ties, unlike the
    1 − 6Σd²/(n(n²−1)) shortcut).

    >>> spearman([1, 2, 2, 3], [1, 3, 2, 4])
    0.9486832980505138
    """
    _check(x, y)
    return pearson(rank(x), rank(y))
