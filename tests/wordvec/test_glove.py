from collections import defaultdict

import numpy as np
import pytest

from bertology.wordvec import kernels
from bertology.wordvec.corpus import Corpus
from bertology.wordvec.glove import cooccurrence, glove, glove_cost, glove_gradients, weighting
from bertology.wordvec.options import TrainOptions
from bertology.wordvec.vocab import Vocab


def brute_force_counts(sentences, window):
    """GloVe's cooccur, symmetric, by the book: for each word, each of the `window` words before it."""
    counts = defaultdict(float)
    for s in sentences:
        for i in range(len(s)):
            for d in range(1, min(i, window) + 1):
                counts[s[i], s[i - d]] += 1 / d
                counts[s[i - d], s[i]] += 1 / d
    return dict(counts)


def test_cooccurrence_counts_equal_the_definition_whatever_the_chunking():
    rng = np.random.default_rng(0)
    sentences = [[int(x) for x in rng.integers(0, 12, size=rng.integers(1, 30))] for _ in range(60)]
    starts = np.concatenate([[0], np.cumsum([len(s) for s in sentences])])
    corpus = Corpus(np.concatenate(sentences).astype(np.int32), starts, starts.copy())
    expected = brute_force_counts(sentences, 4)
    for chunk in (7, 50, 10_000):
        rows, cols, values = cooccurrence(corpus, 12, 4, chunk_words=chunk)
        got = {(int(r), int(c)): float(v) for r, c, v in zip(rows, cols, values)}
        assert got.keys() == expected.keys()
        assert [got[k] for k in sorted(got)] == pytest.approx([expected[k] for k in sorted(got)], rel=1e-12)


def small_problem(seed=0, V=7, D=4, n=20):
    rng = np.random.default_rng(seed)
    cells = rng.choice(V * V, size=n, replace=False)
    rows, cols = (cells // V).astype(np.int32), (cells % V).astype(np.int32)
    values = rng.uniform(0.5, 150, size=n)  # some above x_max = 100
    W, C = rng.normal(size=(V, D)) * 0.3, rng.normal(size=(V, D)) * 0.3
    bw, bc = rng.normal(size=V) * 0.1, rng.normal(size=V) * 0.1
    return W, C, bw, bc, rows, cols, values


def test_glove_gradient_matches_finite_differences():
    W, C, bw, bc, rows, cols, values = small_problem()
    grads = glove_gradients(W, C, bw, bc, rows, cols, values)
    eps = 1e-6
    for param, grad in zip((W, C, bw, bc), grads):
        flat, g = param.reshape(-1), grad.reshape(-1)
        for k in range(0, flat.size, 3):
            old = flat[k]
            flat[k] = old + eps
            up = glove_cost(W, C, bw, bc, rows, cols, values)
            flat[k] = old - eps
            down = glove_cost(W, C, bw, bc, rows, cols, values)
            flat[k] = old
            assert (up - down) / (2 * eps) == pytest.approx(g[k], rel=1e-5, abs=1e-7)


def test_weighting_function():
    assert weighting(np.array([10.0, 100.0, 1000.0])).tolist() == pytest.approx([0.1**0.75, 1.0, 1.0])


def test_kernel_step_is_glove_c_adagrad():
    """One pass of the compiled kernel equals AdaGrad written out in numpy, entry by entry."""
    W, C, bw, bc, rows, cols, values = small_problem(1)
    W, C, bw, bc = (x.astype(np.float32) for x in (W, C, bw, bc))
    state = [
        W.copy(),
        C.copy(),
        bw.copy(),
        bc.copy(),
        np.ones_like(W),
        np.ones_like(C),
        np.ones_like(bw),
        np.ones_like(bc),
    ]
    order = np.arange(len(values))
    eta = 0.05
    cost = kernels.glove_job(*state, rows, cols, values, order, 0, len(values), 100.0, 0.75, eta, 100.0)
    w, c, b, bb = (x.astype(np.float64) for x in (W, C, bw, bc))
    gw, gc, gb, gbb = np.ones_like(w), np.ones_like(c), np.ones_like(b), np.ones_like(bb)
    expected_cost = 0.0
    for i, j, x in zip(rows, cols, values):
        diff = w[i] @ c[j] + b[i] + bb[j] - np.log(x)
        fdiff = weighting(np.array([x]))[0] * diff
        expected_cost += 0.5 * fdiff * diff
        step_w, step_c = eta * fdiff * c[j], eta * fdiff * w[i]
        w[i] -= step_w / np.sqrt(gw[i])
        c[j] -= step_c / np.sqrt(gc[j])
        gw[i] += step_w**2
        gc[j] += step_c**2
        b[i] -= eta * fdiff / np.sqrt(gb[i])
        bb[j] -= eta * fdiff / np.sqrt(gbb[j])
        gb[i] += (eta * fdiff) ** 2
        gbb[j] += (eta * fdiff) ** 2
    assert cost == pytest.approx(expected_cost, rel=1e-4)
    for got, want in zip(state[:4], (w, c, b, bb)):
        assert got == pytest.approx(want, abs=1e-5)


def test_glove_training_lowers_the_cost_and_groups_topics():
    from test_word2vec import topical_corpus

    sentences = topical_corpus(n=2000)
    vocab = Vocab.build(sentences, min_count=1)
    options = TrainOptions(algorithm="glove", vector_size=10, window=3, epochs=30, workers=2, x_max=10)
    kv, stats = glove(Corpus.encode(sentences, vocab), vocab, options, np.random.default_rng(0))
    assert stats["cost"][-1] < 0.5 * stats["cost"][0]
    assert kv.similarity("cat", "dog") > kv.similarity("cat", "car") + 0.3
