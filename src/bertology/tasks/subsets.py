"""Class-balanced training subsets for label-efficiency curves: the same classes, fewer labels each.

The subsets of one seed are nested: the k-per-class subset is the first k of each class's one
shuffled order, so a larger k only adds examples and a curve over k never swaps the examples it
started from.
"""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np


def balanced_subset(labels: Sequence[Hashable], per_class: int | None, seed: int) -> list[int]:
    """Indices (ascending: the examples' original order) of `per_class` examples of every class.

    Each class's indices are shuffled once by a numpy Generator seeded with `seed` (classes in
    sorted order, one generator), and the first `per_class` of each are taken: for one seed the
    subsets are nested and the same on every call. `per_class=None` takes every example.

    >>> labels = ["a", "b", "a", "b", "a", "b"]
    >>> small, large = balanced_subset(labels, 1, seed=0), balanced_subset(labels, 2, seed=0)
    >>> [labels[i] for i in small], set(small) <= set(large)
    (['a', 'b'], True)
    >>> balanced_subset(labels, 4, seed=0)
    Traceback (most recent call last):
    ...
    ValueError: labels per class 4: class 'a' has only 3 examples
    """
    if per_class is None:
        return list(range(len(labels)))
    if isinstance(per_class, bool) or not isinstance(per_class, (int, np.integer)) or per_class < 1:
        raise ValueError(f"labels per class {per_class!r}: must be a whole number ≥ 1 (None takes every example)")
    by_class: dict[Hashable, list[int]] = {}
    for i, label in enumerate(labels):
        by_class.setdefault(label, []).append(i)
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for label in sorted(by_class, key=str):  # a fixed class order: the generator's draws go to the same class
        indices = by_class[label]
        order = rng.permutation(len(indices))  # drawn whatever per_class is: that keeps the subsets nested
        if len(indices) < per_class:
            raise ValueError(f"labels per class {per_class}: class {label!r} has only {len(indices)} examples")
        chosen.extend(indices[j] for j in order[:per_class])
    return sorted(chosen)
