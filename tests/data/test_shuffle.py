"""The epoch order (data/shuffle.py): a keyed bijection of [0, N) with no table."""

import numpy as np
import pytest

from bertology.data.shuffle import EpochOrder


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 255, 256, 257, 1000, 4097])
def test_every_position_maps_to_a_distinct_instance(n):
    got = EpochOrder(n, seed=3, epoch=1)(np.arange(n))
    assert got.dtype == np.int64
    assert sorted(got.tolist()) == list(range(n))


def test_the_order_is_a_function_of_seed_and_epoch():
    n = 5000
    a = EpochOrder(n, seed=0, epoch=0)(np.arange(n))
    assert np.array_equal(a, EpochOrder(n, seed=0, epoch=0)(np.arange(n)))  # another object, the same order
    assert not np.array_equal(a, EpochOrder(n, seed=0, epoch=1)(np.arange(n)))
    assert not np.array_equal(a, EpochOrder(n, seed=1, epoch=0)(np.arange(n)))
    assert not np.array_equal(a, np.arange(n))
    # any subset of positions, in any order, gets the same instances as the whole epoch gives them
    some = np.array([4999, 0, 17, 17, 2500])
    assert np.array_equal(EpochOrder(n, seed=0, epoch=0)(some), a[some])


def test_the_first_instance_is_spread_evenly_over_the_keys():
    # the instance at position 0 over 3500 epochs of 7 instances: each about 500 times (a binomial's
    # standard deviation is 21)
    firsts = [int(EpochOrder(7, seed=11, epoch=e)(np.zeros(1))[0]) for e in range(3500)]
    counts = np.bincount(firsts, minlength=7)
    assert counts.min() > 430 and counts.max() < 570, counts


def test_neighbouring_positions_are_not_neighbouring_instances():
    n = 100_000
    got = EpochOrder(n, seed=0, epoch=0)(np.arange(n))
    steps = np.abs(np.diff(got))
    assert np.median(steps) > n / 5  # a uniform shuffle's median gap is about 0.29 n
    assert abs(np.corrcoef(np.arange(n), got)[0, 1]) < 0.02


def test_a_huge_epoch_costs_only_its_batch():
    n = 10**12  # an array of this epoch would take 8 TB
    got = EpochOrder(n, seed=0, epoch=0)(np.arange(32) * 997)
    assert len(set(got.tolist())) == 32 and got.min() >= 0 and got.max() < n


def test_positions_outside_the_epoch_are_refused():
    with pytest.raises(IndexError, match=r"\[0, 10\)"):
        EpochOrder(10, seed=0, epoch=0)(np.array([10]))
    with pytest.raises(ValueError, match="at least one instance"):
        EpochOrder(0, seed=0, epoch=0)
