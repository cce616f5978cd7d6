"""balanced_subset: deterministic, balanced, nested across sizes, and clear about a short class."""

from collections import Counter

import pytest

from bertology.tasks.subsets import balanced_subset

LABELS = [f"c{i % 4}" for i in range(40)] + ["c0"] * 5  # 4 classes, c0 has 15 examples, the others 10


def test_balanced_in_original_order_and_deterministic():
    subset = balanced_subset(LABELS, 3, seed=7)
    assert Counter(LABELS[i] for i in subset) == {"c0": 3, "c1": 3, "c2": 3, "c3": 3}
    assert subset == sorted(subset) and len(set(subset)) == 12
    assert balanced_subset(LABELS, 3, seed=7) == subset
    assert balanced_subset(LABELS, 3, seed=8) != subset


def test_nested_for_one_seed():
    sizes = [balanced_subset(LABELS, k, seed=3) for k in (1, 3, 6, 10)]
    for small, large in zip(sizes, sizes[1:]):
        assert set(small) < set(large)
    assert balanced_subset(LABELS, None, seed=3) == list(range(len(LABELS)))


def test_a_short_class_is_named():
    with pytest.raises(ValueError, match=r"class 'c1' has only 10 examples"):
        balanced_subset(LABELS, 11, seed=0)
    with pytest.raises(ValueError, match="whole number"):
        balanced_subset(LABELS, 0, seed=0)


def test_the_first_k_of_one_shuffle_per_class():
    # reference: numpy's permutation per class, classes in sorted order, from one generator
    import numpy as np

    rng = np.random.default_rng(5)
    expected = []
    for c in ("c0", "c1", "c2", "c3"):
        indices = [i for i, label in enumerate(LABELS) if label == c]
        expected += [indices[j] for j in rng.permutation(len(indices))[:2]]
    assert balanced_subset(LABELS, 2, seed=5) == sorted(expected)
