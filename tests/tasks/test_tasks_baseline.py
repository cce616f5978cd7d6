"""The bag-of-words baseline: helpers' known answers, the optimum equals scikit-learn's, and it
scores well above chance (0.10) on the real Debian dev split."""

from pathlib import Path

import pytest
import torch

from bertology.tasks.base import Example
from bertology.tasks.baseline import BagOfWordsBaseline, ngrams, smooth_idf, words
from bertology.tasks.classification import ClassifyTask, Prediction

DEBIAN = Path(__file__).resolve().parents[2] / "data" / "debian-sections"


@pytest.fixture(scope="module")
def debian():
    task = ClassifyTask()
    return {split: task.read(DEBIAN / f"{split}.tsv") for split in ("train", "dev")}


@pytest.fixture(scope="module")
def fitted(debian):
    return BagOfWordsBaseline().fit(debian["train"])


def test_helpers():
    assert words("GNU Emacs editor (with GTK+ GUI) — v2") == ["gnu", "emacs", "editor", "with", "gtk", "gui", "v2"]
    assert ngrams(["a", "b", "c"], 2, prefix="2:") == ["2:a", "2:b", "2:c", "2:a b", "2:b c"]
    assert ngrams(["a"], 3) == ["a"]
    assert smooth_idf(1, 1) == 1.0 and smooth_idf(0, 9) == pytest.approx(1 + 2.302585093)


def test_debian_dev_accuracy(fitted, debian):
    # measured: dev accuracy 0.664, macro-F1 0.664 (chance 0.10); test accuracy 0.692
    scores = fitted.score(debian["dev"])
    assert scores["accuracy"] > 0.60 and scores["macro_f1"] > 0.60
    assert len(fitted.labels) == 10 and len(fitted.vocab) == 10025  # unigrams + bigrams of train


def test_predictions_form_and_determinism(fitted, debian):
    preds = fitted.predict(debian["dev"][:5])
    assert all(isinstance(p, Prediction) for p in preds)
    assert all(sum(p.probabilities.values()) == pytest.approx(1.0, abs=1e-5) for p in preds)
    assert all(p.probability == max(p.probabilities.values()) for p in preds)
    again = BagOfWordsBaseline().fit(debian["train"])
    assert torch.equal(again.weight, fitted.weight) and torch.equal(again.bias, fitted.bias)
    unknown = fitted.predict([Example("zzzz qqqq")])[0]  # no known term: the bias alone decides
    assert list(unknown.probabilities.values()) == pytest.approx(fitted.bias.softmax(-1).tolist())


def test_adam_is_seeded(debian):
    train = debian["train"][::5]
    a = BagOfWordsBaseline(optimizer="adam", epochs=3, seed=1).fit(train)
    b = BagOfWordsBaseline(optimizer="adam", epochs=3, seed=1).fit(train)
    c = BagOfWordsBaseline(optimizer="adam", epochs=3, seed=2).fit(train)
    assert torch.equal(a.weight, b.weight) and not torch.equal(a.weight, c.weight)


def test_optimum_equals_sklearn(debian):
    linear_model = pytest.importorskip("sklearn.linear_model")
    sparse = pytest.importorskip("scipy.sparse")
    train, dev = debian["train"][::4], debian["dev"]
    l2 = 3e-3
    ours = BagOfWordsBaseline(l2=l2).fit(train)
    X = sparse.csr_matrix(ours.features(train).to_dense().numpy())
    y = [ours.labels.index(e.label) for e in train]
    # scikit-learn minimises C·Σ CE + ½|W|²; ours mean CE + (l2/2)|W|²: the same for C = 1 / (l2 N)
    ref = linear_model.LogisticRegression(C=1 / (l2 * len(train)), tol=1e-10, max_iter=5000).fit(X, y)
    assert ours.weight.numpy().T == pytest.approx(ref.coef_, abs=2e-3)
    ref_pred = ref.predict(sparse.csr_matrix(ours.features(dev).to_dense().numpy()))
    assert [p.label for p in ours.predict(dev)] == [ours.labels[i] for i in ref_pred]


def test_errors():
    with pytest.raises(ValueError, match="x.tsv:2: training example without a label"):
        BagOfWordsBaseline().fit([Example("a", where="x.tsv:2")])
    with pytest.raises(RuntimeError, match="fit"):
        BagOfWordsBaseline().predict([Example("a")])
    with pytest.raises(ValueError, match="optimizer"):
        BagOfWordsBaseline(optimizer="sgd")


def test_the_cli_fits_on_train_and_scores_each_file_as_the_api_does(fitted, debian, capsys):
    from bertology.cli import main

    assert main(["baseline", str(DEBIAN / "train.tsv"), str(DEBIAN / "dev.tsv")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{DEBIAN / 'train.tsv'}: {len(fitted.labels)} labels")
    accuracy = fitted.score(debian["dev"])["accuracy"]
    assert lines[1].startswith(f"{DEBIAN / 'dev.tsv'}: ") and f"accuracy {accuracy:.4f}" in lines[1]


def test_the_cli_names_a_missing_file_before_fitting(tmp_path, capsys):
    from bertology.cli import main

    assert main(["baseline", str(DEBIAN / "train.tsv"), str(tmp_path / "missing.tsv")]) != 0
    out = capsys.readouterr()
    assert "missing.tsv" in out.err and "labels" not in out.out  # refused before the fit said anything
