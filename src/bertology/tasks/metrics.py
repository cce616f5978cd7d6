"""Scores for predictions against gold labels: pure functions over plain sequences.

Classification: accuracy, macro-F1, Matthews correlation (binary and multiclass).
Regression: Pearson and Spearman correlation (ties get their average rank).
Undefined cases get 0.0 by convention (a constant prediction correlates with nothing; a class that
is never predicted has precision 0), never NaN, so a dev metric can always pick a checkpoint.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Hashable, Sequence

from ..stats import pearson, rank, spearman  # noqa: F401 (regression metrics: the house's one correlation)


def _check(predicted: Sequence, gold: Sequence) -> None:
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predictions but {len(gold)} gold labels")
    if not gold:
        raise ValueError("no examples to score")


def accuracy(predicted: Sequence[Hashable], gold: Sequence[Hashable]) -> float:
    """Fraction of exact matches.

    >>> accuracy(["a", "b", "b", "a"], ["a", "b", "a", "a"])
    0.75
    """
    _check(predicted, gold)
    return sum(p == g for p, g in zip(predicted, gold)) / len(gold)


def f1_per_class(predicted: Sequence[Hashable], gold: Sequence[Hashable]) -> dict[Hashable, float]:
    """F1 of every class that occurs in gold or predicted (precision or recall 0/0 counts as 0).

    >>> f1_per_class(["a", "a", "b"], ["a", "b", "b"])
    {'a': 0.6666666666666666, 'b': 0.6666666666666666}
    """
    _check(predicted, gold)
    tp, n_pred, n_gold = Counter(), Counter(predicted), Counter(gold)
    for p, g in zip(predicted, gold):
        if p == g:
            tp[g] += 1
    out = {}
    for c in sorted(set(n_pred) | set(n_gold), key=str):
        # F1 = 2PR/(P+R) = 2 tp / (n_pred + n_gold): no 0/0 unless the class never occurs at all
        out[c] = 2 * tp[c] / (n_pred[c] + n_gold[c])
    return out


def macro_f1(predicted: Sequence[Hashable], gold: Sequence[Hashable]) -> float:
    """Unweighted mean of per-class F1 over the classes in gold or predicted (as scikit-learn's
    f1_score(average="macro"); a gold class never predicted contributes F1 = 0).

    >>> macro_f1(["a", "a", "a", "b"], ["a", "a", "c", "b"])  # F1: a 0.8, b 1, c 0
    0.6
    """
    scores = f1_per_class(predicted, gold)
    return sum(scores.values()) / len(scores)


def matthews_corrcoef(predicted: Sequence[Hashable], gold: Sequence[Hashable]) -> float:
    """Matthews correlation coefficient; for K classes Gorodkin's R_K, which is the usual
    (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) when K = 2. In [-1, 1]; 0 when undefined
    (all predictions, or all gold labels, one class).

        c = correct, s = n, p_k / t_k = times class k is predicted / true
        MCC = (c·s − Σ p_k t_k) / sqrt((s² − Σ p_k²)(s² − Σ t_k²))

    >>> matthews_corrcoef([1, 1, 0, 0, 1], [1, 0, 0, 0, 1])  # TP 2, TN 2, FP 1, FN 0
    0.6666666666666666
    """
    _check(predicted, gold)
    s = len(gold)
    c = sum(p == g for p, g in zip(predicted, gold))
    n_pred, n_gold = Counter(predicted), Counter(gold)
    cov = c * s - sum(n_pred[k] * n_gold[k] for k in n_pred)
    var_p = s * s - sum(v * v for v in n_pred.values())
    var_g = s * s - sum(v * v for v in n_gold.values())
    if var_p == 0 or var_g == 0:
        return 0.0
    return cov / math.sqrt(var_p * var_g)
