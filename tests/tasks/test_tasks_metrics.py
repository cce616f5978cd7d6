"""Metric known answers (hand-computed) and parity with scikit-learn / scipy where installed."""

import math
import random

import pytest

from bertology.tasks.metrics import accuracy, f1_per_class, macro_f1, matthews_corrcoef, pearson, rank, spearman


def test_accuracy_and_length_checks():
    assert accuracy([1, 2, 3, 4], [1, 2, 0, 4]) == 0.75
    with pytest.raises(ValueError, match="3 predictions but 2 gold"):
        accuracy([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="no examples"):
        macro_f1([], [])


def test_mcc_binary_by_hand():
    # TP 3 (0, 4, 6), FP 1 (1), FN 1 (5), TN 3 (2, 3, 7): (3·3 − 1·1) / sqrt(4·4·4·4) = 8 / 16
    pred = [1, 1, 0, 0, 1, 0, 1, 0]
    gold = [1, 0, 0, 0, 1, 1, 1, 0]
    assert matthews_corrcoef(pred, gold) == pytest.approx(0.5, abs=1e-15)
    assert matthews_corrcoef(gold, gold) == 1.0
    assert matthews_corrcoef([1 - g for g in gold], gold) == -1.0


def test_mcc_multiclass_by_hand():
    # c = 4 correct of s = 6; predicted a2 b3 c1, true a2 b2 c2:
    # (4·6 − (2·2 + 3·2 + 1·2)) / sqrt((36 − 14)(36 − 12)) = 12 / sqrt(528)
    pred = list("abbbca")
    gold = list("aabbcc")
    assert matthews_corrcoef(pred, gold) == pytest.approx(12 / math.sqrt(528), abs=1e-15)


def test_mcc_undefined_is_zero():
    assert matthews_corrcoef([1, 1, 1, 1], [1, 0, 1, 0]) == 0.0
    assert matthews_corrcoef([1, 0, 1, 0], [1, 1, 1, 1]) == 0.0


def test_macro_f1_with_a_class_never_predicted():
    # a: tp 2, predicted 3, true 2 → 4/5; b: tp 1, 2, 2 → 1/2; c: never predicted, true once → 0
    pred = list("aabab")
    gold = list("aabbc")
    assert f1_per_class(pred, gold) == {"a": pytest.approx(0.8), "b": pytest.approx(0.5), "c": 0.0}
    assert macro_f1(pred, gold) == pytest.approx(1.3 / 3, abs=1e-15)


def test_rank_ties_average():
    assert rank([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0]) == [4, 1.5, 5, 1.5, 6.5, 9, 3, 8, 6.5]
    assert rank([]) == []


def test_pearson_and_spearman_by_hand():
    # x = 1 2 3, y = 2 4 7: dx = −1 0 1, dy = −7/3 −1/3 8/3 → Σdxdy = 5, Σdx² = 2, Σdy² = 114/9
    assert pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(5 / math.sqrt(2 * 114 / 9), abs=1e-15)
    # ranks x = 1 2.5 2.5 4, y = 1 3 2 4: Σdxdy = 4.5, Σdx² = 4.5, Σdy² = 5
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5), abs=1e-15)
    assert spearman([1, 2, 3, 4], [10, 20, 1000, 1e6]) == pytest.approx(1.0)
    assert pearson([1, 1, 1], [1, 2, 3]) == 0.0  # constant: defined as no correlation


def test_against_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    rng = random.Random(0)
    for n_classes in (2, 3, 5):
        gold = [rng.randrange(n_classes) for _ in range(200)]
        pred = [g if rng.random() < 0.6 else rng.randrange(n_classes) for g in gold]
        assert matthews_corrcoef(pred, gold) == pytest.approx(sk.matthews_corrcoef(gold, pred), abs=1e-12)
        assert macro_f1(pred, gold) == pytest.approx(sk.f1_score(gold, pred, average="macro"), abs=1e-12)
        assert accuracy(pred, gold) == pytest.approx(sk.accuracy_score(gold, pred))


def test_against_scipy_with_ties():
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(1)
    x = [rng.randrange(6) for _ in range(100)]  # many ties
    y = [a + rng.randrange(4) for a in x]
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
