import numpy as np
import pytest
from gensim.models import KeyedVectors as GensimKV

from bertology.wordvec.vectors import KeyedVectors


def random_vectors(n=50, d=8, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(n - 2)] + ["naïve", "東京"]
    return KeyedVectors(words, rng.normal(size=(n, d)).astype(np.float32))


@pytest.mark.parametrize("binary", [False, True])
def test_gensim_reads_what_we_write_and_we_read_what_gensim_writes(tmp_path, binary):
    kv = random_vectors()
    ours = tmp_path / ("ours.bin" if binary else "ours.txt")
    kv.save(ours)
    theirs = GensimKV.load_word2vec_format(str(ours), binary=binary)
    assert theirs.index_to_key == kv.index_to_key and np.array_equal(theirs.vectors, kv.vectors)
    back = tmp_path / "back"
    theirs.save_word2vec_format(str(back), binary=binary)
    again = KeyedVectors.load(back, binary=binary)
    assert again.index_to_key == kv.index_to_key and np.array_equal(again.vectors, kv.vectors)


def test_neighbours_and_similarity_equal_gensims():
    kv = random_vectors(200, 16)
    theirs = GensimKV(16)
    theirs.add_vectors(kv.index_to_key, kv.vectors)
    got, want = kv.most_similar("w3", topn=10), theirs.most_similar("w3", topn=10)
    assert [w for w, _ in got] == [w for w, _ in want] and [s for _, s in got] == pytest.approx(
        [s for _, s in want], abs=1e-6
    )
    got = kv.most_similar(["w1", "w2"], ["w5"], topn=7, restrict_vocab=100)
    want = theirs.most_similar(positive=["w1", "w2"], negative=["w5"], topn=7, restrict_vocab=100)
    assert [w for w, _ in got] == [w for w, _ in want] and [s for _, s in got] == pytest.approx(
        [s for _, s in want], abs=1e-6
    )
    assert kv.similarity("w1", "w9") == pytest.approx(theirs.similarity("w1", "w9"), abs=1e-6)


@pytest.mark.parametrize(
    "content,message",
    [
        (b"3\n", "line 1: header"),
        (b"two 3\na 1 2 3\n", "line 1: header"),
        (b"2 3\na 1 2 3\nb 1 2\n", "line 3: 2 numbers after the word, the header says 3"),
        (b"3 3\na 1 2 3\nb 1 2 3\n", "the header says 3 words, the file has 2 lines"),
        (b"2 2\na 1 x\nb 1 2\n", "line 2: word 'a': a value is not a number"),
        (b"2 2\na 1 2\n\xff\xfe 1 2\n", "line 3: invalid UTF-8"),
        (b"2 2\na 1 2\na 3 4\n", "word 'a' appears twice"),
    ],
)
def test_bad_text_files_are_named_with_their_line(tmp_path, content, message):
    path = tmp_path / "v.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as e:
        KeyedVectors.load(path)
    assert str(path) in str(e.value)


def test_a_short_binary_file_is_refused(tmp_path):
    path = tmp_path / "v.bin"
    random_vectors(5, 4).save(path)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match="the header says 5 words of 4 dimensions, the file ends in word 5"):
        KeyedVectors.load(path)


def test_words_with_spaces_cannot_be_saved(tmp_path):
    kv = KeyedVectors(["new york"], np.ones((1, 2), np.float32))
    with pytest.raises(ValueError, match="holds whitespace"):
        kv.save(tmp_path / "v.txt")
    assert not (tmp_path / "v.txt").exists()
