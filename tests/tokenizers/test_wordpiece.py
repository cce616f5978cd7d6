"""WordPiece model: known answers and parity with `tokenizers.models.WordPiece`."""

from __future__ import annotations

import pytest
import tokenizers.models as M

from bertology.tokenizers.wordpiece import WordPiece, greedy_longest_match

VOCAB = {"[UNK]": 0, "un": 1, "##want": 2, "##ed": 3, "runn": 4, "##ing": 5, "want": 6, "##wa": 7, "u": 8}


def test_unwanted_running():  # the example of the BERT paper / google-research/bert
    wp = WordPiece(VOCAB)
    assert [t.value for t in wp.tokenize("unwanted")] == ["un", "##want", "##ed"]
    assert [t.offsets for t in wp.tokenize("unwanted")] == [(0, 2), (2, 6), (6, 8)]
    assert [t.value for t in wp.tokenize("running")] == ["runn", "##ing"]


def test_uncoverable_and_too_long_words_are_one_unknown():
    wp = WordPiece(VOCAB, max_input_chars_per_word=10)
    assert wp.tokenize("unwantedX") == [(0, "[UNK]", (0, 9))]
    assert wp.tokenize("un" * 6) == [(0, "[UNK]", (0, 12))]  # 12 chars > 10


def test_missing_unk_is_a_clear_error():
    with pytest.raises(KeyError, match=r"\[UNK\]"):
        WordPiece({"a": 0}).tokenize("b")


def test_matches_tokenizers_model(minilm_vocab, real_texts):
    ours = WordPiece.from_vocab_txt(minilm_vocab)
    ref = M.WordPiece.from_file(str(minilm_vocab), unk_token="[UNK]")
    words = {w for t in real_texts for w in t.lower().split()}
    for w in sorted(words)[:3000]:
        o, r = ours.tokenize(w), ref.tokenize(w)
        assert [(t.id, t.value) for t in o] == [(t.id, t.value) for t in r], w
        if w.isascii():  # the Rust model reports byte offsets, ours chars: equal on ASCII
            assert [t.offsets for t in o] == [t.offsets for t in r], w


def test_greedy_longest_match_is_pure():
    assert greedy_longest_match("unwant", VOCAB) == [("un", 0, 2), ("##want", 2, 6)]
    assert greedy_longest_match("x", VOCAB) is None
