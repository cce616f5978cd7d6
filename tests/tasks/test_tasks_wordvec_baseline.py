"""The word-vector baseline (mean of word vectors + the bag-of-words baseline's logistic
regression) on a constructed case whose answers are known."""

import numpy as np
import pytest
import torch

from bertology.tasks.base import Example
from bertology.tasks.baseline import BagOfWordsBaseline, WordVectorBaseline, fit_logistic_regression
from bertology.wordvec.vectors import KeyedVectors

# animals point along x, vehicles along y; "the" is noise shared by both
VECTORS = KeyedVectors(
    ["cat", "dog", "cow", "car", "bus", "van", "the"],
    np.array([[3, 0], [2, 0.2], [1, 0.1], [0, 3], [0.2, 2], [0.1, 1], [1, 1]], dtype=np.float32),
)


def test_features_are_the_unit_mean_of_known_words():
    model = WordVectorBaseline(VECTORS)
    (row,) = model.features([Example("The cat, the DOG and a zebra")]).tolist()  # "a", "zebra": no vector
    mean = (2 * np.array([1, 1]) + np.array([3, 0]) + np.array([2, 0.2])) / 4
    assert row == pytest.approx((mean / np.linalg.norm(mean)).tolist(), abs=1e-6)
    assert model.features([Example("zebra okapi")]).tolist() == [[0.0, 0.0]]  # nothing known: zeros


def test_a_few_labels_per_class_classify_unseen_texts():
    train = [
        Example("cat", label="animal"),
        Example("the dog", label="animal"),
        Example("car", label="vehicle"),
        Example("the bus", label="vehicle"),
    ]
    model = WordVectorBaseline(VECTORS).fit(train)
    unseen = [
        Example("cow", label="animal"),
        Example("a van", label="vehicle"),
        Example("cow and the cat", label="animal"),
    ]
    assert [p.label for p in model.predict(unseen)] == ["animal", "vehicle", "animal"]
    assert model.score(unseen) == {"accuracy": 1.0, "macro_f1": 1.0}
    unknown = model.predict([Example("zebra")])[0]  # zero features: the bias alone decides
    assert list(unknown.probabilities.values()) == pytest.approx(model.bias.softmax(-1).tolist())


def test_pairs_get_their_own_half():
    train = [
        Example("cat", "car", label="a-v"),
        Example("bus", "dog", label="v-a"),
        Example("dog", "van", label="a-v"),
        Example("car", "cow", label="v-a"),
    ]
    model = WordVectorBaseline(VECTORS).fit(train)
    assert model.features(train[:1]).tolist() == [[1.0, 0.0, 0.0, 1.0]]
    assert [p.label for p in model.predict([Example("cow", "bus"), Example("van", "cat")])] == ["a-v", "v-a"]


def test_a_tokenizer_supplies_the_tokens():
    class Pieces:  # splits on "+": stands for a subword tokenizer
        def encode(self, text, add_special_tokens=True):
            assert not add_special_tokens
            return type("Encoding", (), {"tokens": text.split("+")})()

    model = WordVectorBaseline(VECTORS, tokenizer=Pieces())
    assert model.tokens("cat+dog") == ["cat", "dog"]
    assert model.features([Example("cat+car")])[0].tolist() == pytest.approx([2**-0.5, 2**-0.5])


def test_the_logistic_regression_is_shared_sparse_or_dense():
    examples = [
        Example(t, label=label)
        for t, label in [
            ("cat dog", "a"),
            ("car bus", "v"),
            ("dog cow", "a"),
            ("van car", "v"),
            ("the cat", "a"),
            ("the bus", "v"),
        ]
    ]
    bow = BagOfWordsBaseline(l2=0.1).fit(examples)  # a penalty that makes the optimum well-conditioned
    X = bow.features(examples)
    y = torch.tensor([0, 1, 0, 1, 0, 1])
    W, b = fit_logistic_regression(X.to_dense(), y, 2, bow.l2)
    assert torch.allclose(W, bow.weight, atol=1e-4) and torch.allclose(b, bow.bias, atol=1e-4)
    assert W.abs().max() > 0.1


def test_needs_two_labels():
    with pytest.raises(ValueError, match="at least 2 labels"):
        WordVectorBaseline(VECTORS).fit([Example("cat", label="animal")])
