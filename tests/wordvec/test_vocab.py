import math

import numpy as np
import pytest

from bertology.wordvec.vocab import (
    Vocab,
    alias_probabilities,
    alias_table,
    huffman_tree,
    keep_probability,
    noise_distribution,
    noise_table,
)


def test_keep_probability_is_word2vecs_formula():
    counts = np.array([50_000, 5_000, 500, 50, 5])
    sample = 1e-3
    t = sample * counts.sum()
    expected = [min(1.0, (math.sqrt(c / t) + 1) * t / c) for c in counts]
    assert keep_probability(counts, sample).tolist() == pytest.approx(expected, rel=1e-12)
    assert keep_probability(counts, 1e-3)[0] == pytest.approx(
        0.034444, abs=1e-6
    )  # (√(50000/55.555)+1)·55.555/50000 = 31 / 900
    assert keep_probability(counts, 0).tolist() == [1.0] * 5


def test_noise_distribution_and_tables():
    counts = np.array([81, 16, 1])
    p = noise_distribution(counts, 0.75)
    assert p.tolist() == pytest.approx([27 / 36, 8 / 36, 1 / 36])  # 81^.75 = 27, 16^.75 = 8, 1
    table = noise_table(counts, 0.75)
    assert table[-1] == 2**31 - 1 and np.diff(table / table[-1], prepend=0) == pytest.approx(p, abs=1e-9)
    rng = np.random.default_rng(0)
    big = rng.integers(5, 100_000, size=5_000)
    assert alias_probabilities(alias_table(big, 0.75)) == pytest.approx(noise_distribution(big, 0.75), abs=1e-12)


def test_alias_draws_follow_the_noise_distribution():
    """Draws with the kernel's rule (uniform slot, kept if a 32-bit u is below its threshold)."""
    counts = np.array([1000, 300, 100, 30, 10])
    table = alias_table(counts, 0.75)
    rng = np.random.default_rng(1)
    slots = rng.integers(0, len(counts), size=200_000)
    u = rng.integers(0, 2**32, size=200_000)
    words = np.where(u < table[slots, 0], slots, table[slots, 1])
    observed = np.bincount(words, minlength=len(counts)) / len(words)
    assert observed == pytest.approx(noise_distribution(counts, 0.75), abs=0.004)


def test_huffman_codes_of_a_known_table():
    # CLRS's example (a:45 b:13 c:12 d:16 e:9 f:5): optimal code lengths 1, 3, 3, 3, 4, 4
    counts = np.array([45, 16, 13, 12, 9, 5])
    tree = huffman_tree(counts)
    codes = [tree.code(w) for w in range(6)]
    assert [len(c) for c in codes] == [1, 3, 3, 3, 4, 4]
    strings = ["".join(map(str, c)) for c in codes]
    assert not any(a != b and b.startswith(a) for a in strings for b in strings)  # prefix-free
    assert sum(c * len(s) for c, s in zip(counts, strings)) == 224  # CLRS: 224 bits per 100 chars
    assert set(tree.points.tolist()) == set(range(5))  # V − 1 inner nodes


def test_vocabulary_and_huffman_tree_equal_gensims(lee_sentences):
    from gensim.models import Word2Vec

    vocab = Vocab.build(lee_sentences, min_count=5)
    model = Word2Vec(vector_size=10, min_count=5, hs=1, negative=0, workers=1)
    model.build_vocab(lee_sentences)
    wv = model.wv
    assert sorted(zip(vocab.words, vocab.counts.tolist())) == sorted(
        (w, wv.get_vecattr(w, "count")) for w in wv.index_to_key
    )
    assert vocab.total_words == model.corpus_total_words
    if vocab.words == wv.index_to_key:  # same tie order: the trees must then be identical
        tree = huffman_tree(vocab.counts)
        for w in range(len(vocab)):
            assert tree.code(w) == wv.get_vecattr(w, "code").tolist()
            assert tree.points[tree.offsets[w] : tree.offsets[w + 1]].tolist() == wv.get_vecattr(w, "point").tolist()


def test_max_vocab_size_prunes_rare_words_while_counting():
    sentences = [["common"] * 5 + [f"rare{i}"] for i in range(100)]
    vocab = Vocab.build(sentences, min_count=1, max_vocab_size=10)
    assert vocab.words[0] == "common" and vocab.counts[0] == 500
    assert len(vocab) <= 11 and vocab.total_words == 600
