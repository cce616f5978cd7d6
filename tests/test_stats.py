"""One correlation for the house: fine-tuning's regression metric and word-vector similarity are the same
functions, and agree on the undefined case."""

import math

import pytest

from bertology import stats
from bertology.tasks import metrics
from bertology.wordvec import evaluate


def test_every_score_uses_the_same_correlations():
    assert metrics.pearson is stats.pearson is evaluate.pearson
    assert metrics.spearman is stats.spearman is evaluate.spearman


@pytest.mark.parametrize("f", [stats.pearson, stats.spearman])
def test_a_constant_side_correlates_with_nothing(f):
    assert f([2.0, 2.0, 2.0], [1.0, 5.0, 3.0]) == 0.0 == f([1.0, 5.0, 3.0], [4, 4, 4])


def test_known_values_and_bad_input():
    assert stats.pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(5 / math.sqrt(2 * 114 / 9), abs=1e-15)
    assert stats.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="3 predictions but 2 gold"):
        stats.pearson([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="no examples"):
        stats.spearman([], [])
