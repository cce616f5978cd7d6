"""Our evaluation equals gensim's own evaluate_word_analogies / evaluate_word_pairs on the same vectors."""

import numpy as np
import pytest
from gensim.models import KeyedVectors as GensimKV

from bertology.stats import rank, spearman
from bertology.wordvec.evaluate import evaluate_analogies, evaluate_pairs
from bertology.wordvec.vectors import KeyedVectors


@pytest.fixture(scope="module")
def analogy_file(test_data, tmp_path_factory):
    """Every 12th question of questions-words.txt (all sections), and three malformed lines."""
    lines = (test_data / "questions-words.txt").read_text(encoding="utf-8").splitlines()
    kept, k = [], 0
    for line in lines:
        if line.startswith(": "):
            kept.append(line)
        else:
            k += 1
            if k % 12 == 0:
                kept.append(line)
    kept[3:3] = ["only three words", "", "five words are one too many"]
    path = tmp_path_factory.mktemp("eval") / "questions.txt"
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def structured_vectors(analogy_file):
    """Vectors in which many analogies hold: going through the questions, a fourth word met for the
    first time is placed at c + b − a plus a little noise, any other new word at random; and two
    mixed-case duplicates placed after the originals (less frequent: the first spelling must win)."""
    rng = np.random.default_rng(0)
    vec = {}
    for line in analogy_file.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if line.startswith(": ") or len(parts) != 4:
            continue
        a, b, c, d = parts
        for w in (a, b, c):
            vec.setdefault(w, rng.normal(size=24))
        vec.setdefault(d, vec[c] + vec[b] - vec[a] + rng.normal(size=24) * 0.3)
    words = list(vec) + ["PARIS", "aThens"]
    vectors = list(vec.values()) + [rng.normal(size=24), rng.normal(size=24)]
    return KeyedVectors(words, np.array(vectors, dtype=np.float32))


def gensim_kv(kv):
    theirs = GensimKV(kv.vector_size)
    theirs.add_vectors(kv.index_to_key, kv.vectors)
    return theirs


def test_analogies_equal_gensims(structured_vectors, analogy_file):
    ours = evaluate_analogies(structured_vectors, analogy_file)
    score, sections = gensim_kv(structured_vectors).evaluate_word_analogies(str(analogy_file))
    theirs = {s["section"]: (len(s["correct"]), len(s["correct"]) + len(s["incorrect"])) for s in sections}
    total = theirs.pop("Total accuracy")
    assert ours.sections == theirs
    assert (ours.correct, ours.asked) == total and ours.accuracy == score
    assert 0.2 < ours.accuracy < 0.95  # a real test: neither all right nor all wrong
    assert ours.skipped_lines == 3


def test_restricted_vocabulary_equal_gensims(structured_vectors, analogy_file):
    ours = evaluate_analogies(structured_vectors, analogy_file, restrict_vocab=300)
    score, _ = gensim_kv(structured_vectors).evaluate_word_analogies(str(analogy_file), restrict_vocab=300)
    assert ours.accuracy == score and ours.oov_ratio > 0


@pytest.mark.parametrize("name", ["wordsim353.tsv", "simlex999.txt"])
def test_word_pairs_equal_gensims(test_data, name):
    words = set()
    for line in (test_data / name).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            words.update(line.split("\t")[:2])
    words = sorted(words)[::2]  # half of them: some pairs out of vocabulary
    rng = np.random.default_rng(1)
    kv = KeyedVectors(words, rng.normal(size=(len(words), 10)).astype(np.float32))
    ours = evaluate_pairs(kv, test_data / name)
    pearson, spear, oov = gensim_kv(kv).evaluate_word_pairs(str(test_data / name))
    assert ours.spearman == pytest.approx(spear.statistic, abs=1e-12)
    assert ours.pearson == pytest.approx(pearson.statistic, abs=1e-6)
    assert 100 * ours.oov_ratio == pytest.approx(oov)


def test_spearman_is_scipys():
    from scipy import stats

    rng = np.random.default_rng(2)
    x, y = rng.integers(0, 10, 50).astype(float), rng.normal(size=50)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert rank(x) == stats.rankdata(x).tolist()


def test_a_question_before_any_section_is_an_error(tmp_path, structured_vectors):
    path = tmp_path / "q.txt"
    path.write_text("athens greece paris france\n", encoding="utf-8")
    with pytest.raises(ValueError, match="q.txt: line 1: a question before the first ': section' line"):
        evaluate_analogies(structured_vectors, path)


def test_non_utf8_evaluation_file_names_the_line(tmp_path, structured_vectors):
    path = tmp_path / "pairs.tsv"
    path.write_bytes(b"# comment\nathens\tgreece\t5.0\ncaf\xe9\tparis\t3.0\n")
    with pytest.raises(ValueError, match=r"pairs.tsv: line 3: invalid UTF-8"):
        evaluate_pairs(structured_vectors, path)
