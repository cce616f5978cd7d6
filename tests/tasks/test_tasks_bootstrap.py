"""paired_bootstrap: known answers on constructed cases."""

import math

import numpy as np
import pytest

from bertology.tasks.bootstrap import paired_bootstrap, significant


def test_identical_arms_give_a_zero_interval():
    a = np.random.default_rng(0).random(200) < 0.7
    r = paired_bootstrap(a, a)
    assert (r["diff"], r["low"], r["high"], r["significant"]) == (0.0, 0.0, 0.0, False)
    assert not significant(r)


def test_a_right_everywhere_b_wrong_everywhere():
    r = paired_bootstrap([True] * 50, [False] * 50)
    assert (r["diff"], r["low"], r["high"]) == (1.0, 1.0, 1.0) and significant(r)
    r = paired_bootstrap([0] * 50, [1] * 50)
    assert (r["diff"], r["low"], r["high"]) == (-1.0, -1.0, -1.0) and significant(r)


def _binomial_quantile(n: int, p: float, q: float) -> int:
    """The smallest k with P(Binomial(n, p) ≤ k) ≥ q."""
    total = 0.0
    for k in range(n + 1):
        total += math.comb(n, k) * p**k * (1 - p) ** (n - k)
        if total >= q:
            return k
    return n


def test_exact_binomial_case():
    # A right on 12 of 60 items where B is wrong, the same elsewhere: a resample's difference is
    # Binomial(60, 12/60) / 60 exactly, so the percentiles are binomial quantiles (± one step for sampling).
    n, k = 60, 12
    a, b = np.zeros(n), np.zeros(n)
    a[:k] = 1
    r = paired_bootstrap(a, b, resamples=40_000, seed=1)
    assert r["diff"] == pytest.approx(k / n)
    assert abs(r["low"] * n - _binomial_quantile(n, k / n, 0.025)) <= 1
    assert abs(r["high"] * n - _binomial_quantile(n, k / n, 0.975)) <= 1
    assert significant(r)


def test_large_n_matches_the_normal_approximation():
    rng = np.random.default_rng(2)
    n = 4000
    a = rng.random(n) < 0.62
    b = rng.random(n) < 0.60
    d = a.astype(float) - b.astype(float)
    half = 1.959964 * d.std(ddof=1) / math.sqrt(n)
    r = paired_bootstrap(a, b, resamples=5000, seed=3)
    assert r["diff"] == pytest.approx(d.mean())
    assert r["low"] == pytest.approx(d.mean() - half, abs=0.15 * half)
    assert r["high"] == pytest.approx(d.mean() + half, abs=0.15 * half)
    assert significant(r) == (r["low"] > 0)


def test_seeded_and_checked():
    a, b = [1, 0, 1, 1, 0], [0, 0, 1, 0, 1]
    assert paired_bootstrap(a, b, seed=4) == paired_bootstrap(a, b, seed=4)
    with pytest.raises(ValueError, match="same items"):
        paired_bootstrap([1, 0], [1])
    with pytest.raises(ValueError, match="no items"):
        paired_bootstrap([], [])
