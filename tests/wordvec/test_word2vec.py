import numpy as np
import pytest

from bertology.wordvec.corpus import Corpus
from bertology.wordvec.options import TrainOptions
from bertology.wordvec.vocab import Vocab, keep_probability
from bertology.wordvec.word2vec import job_bounds, word2vec


def topical_corpus(seed=0, n=3000):
    """Two topics: animals appear only around animal words, vehicles only around vehicle words."""
    rng = np.random.default_rng(seed)
    topics = {
        "animal": (["cat", "dog", "horse", "cow"], ["eats", "runs", "barks", "fur", "tail"]),
        "vehicle": (["car", "bus", "truck", "van"], ["drives", "wheel", "engine", "road", "fuel"]),
    }
    sentences = []
    for _ in range(n):
        centre, context = topics["animal" if rng.random() < 0.5 else "vehicle"]
        sentences.append(
            [str(rng.choice(context)), str(rng.choice(centre)), str(rng.choice(context)), str(rng.choice(context))]
        )
    return sentences


@pytest.mark.parametrize(
    "algorithm,hs,negative", [("skipgram", False, 5), ("skipgram", True, 0), ("cbow", False, 5), ("cbow", True, 0)]
)
def test_words_of_the_same_context_are_nearest(algorithm, hs, negative):
    sentences = topical_corpus()
    vocab = Vocab.build(sentences, min_count=1)
    options = TrainOptions(
        algorithm=algorithm, hs=hs, negative=negative, vector_size=20, window=3, epochs=5, workers=1, sample=0
    )
    kv, stats = word2vec(Corpus.encode(sentences, vocab), vocab, options, np.random.default_rng(0))
    animals, vehicles = {"cat", "dog", "horse", "cow"}, {"car", "bus", "truck", "van"}
    for group in (animals, vehicles):
        for w in group:
            nearest = {x for x, _ in kv.most_similar(w, topn=3, restrict_vocab=None) if x in animals | vehicles}
            assert nearest and nearest <= group - {w}, (w, kv.most_similar(w, topn=5))
    assert stats["raw_words"] == 5 * sum(map(len, sentences))


def test_same_seed_same_vectors_with_one_worker(lee_sentences):
    vocab = Vocab.build(lee_sentences, min_count=5)
    corpus = Corpus.encode(lee_sentences, vocab)
    options = TrainOptions(algorithm="skipgram", workers=1, epochs=1, vector_size=16)
    a, _ = word2vec(corpus, vocab, options, np.random.default_rng(3))
    b, _ = word2vec(corpus, vocab, options, np.random.default_rng(3))
    c, _ = word2vec(corpus, vocab, options, np.random.default_rng(4))
    assert np.array_equal(a.vectors, b.vectors) and not np.array_equal(a.vectors, c.vectors)


def test_subsampling_keeps_the_expected_share_of_words(lee_sentences):
    vocab = Vocab.build(lee_sentences, min_count=5)
    corpus = Corpus.encode(lee_sentences, vocab)
    options = TrainOptions(algorithm="cbow", workers=2, epochs=3, vector_size=8, sample=1e-3)
    _, stats = word2vec(corpus, vocab, options, np.random.default_rng(0))
    p = keep_probability(vocab.counts, 1e-3)
    expected = 3 * float(np.sum(vocab.counts * p))
    sd = np.sqrt(3 * float(np.sum(vocab.counts * p * (1 - p))))
    assert abs(stats["effective_words"] - expected) < 5 * sd, (stats["effective_words"], expected, sd)


def test_jobs_cover_the_corpus_once():
    sentences = [["w"] * n for n in [3, 7, 2, 9, 4, 1, 8]]
    vocab = Vocab.build(sentences, min_count=1)
    corpus = Corpus.encode(sentences, vocab)
    bounds = job_bounds(corpus, 10)
    assert bounds[0] == 0 and bounds[-1] == len(sentences) and np.all(np.diff(bounds) > 0)


def test_quality_close_to_gensim_on_the_same_corpus(lee_sentences):
    """Same corpus and settings: our vectors and gensim's agree on which pairs are similar as much
    as two gensim runs with different seeds agree with each other."""
    from gensim.models import Word2Vec

    vocab = Vocab.build(lee_sentences, min_count=5)
    ours, _ = word2vec(
        Corpus.encode(lee_sentences, vocab),
        vocab,
        TrainOptions(algorithm="skipgram", workers=2, epochs=10),
        np.random.default_rng(1),
    )
    g1, g2 = (Word2Vec(lee_sentences, sg=1, workers=2, epochs=10, seed=s).wv for s in (1, 2))
    words = vocab.words[50:250]
    rng = np.random.default_rng(0)
    pairs = [tuple(rng.choice(words, 2, replace=False)) for _ in range(400)]

    def agreement(x, y):
        return np.corrcoef([x.similarity(a, b) for a, b in pairs], [y.similarity(a, b) for a, b in pairs])[0, 1]

    assert agreement(ours, g1) > agreement(g1, g2) - 0.1, (agreement(ours, g1), agreement(g1, g2))
