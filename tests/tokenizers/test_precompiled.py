"""Precompiled (SentencePiece charsmap) normalizer: parsing, matching, parity with tokenizers."""

import base64

import pytest

from bertology.tokenizers.normalizers import NormalizedString
from bertology.tokenizers.precompiled import CharsMap, Precompiled, build_charsmap
from bertology.tokenizers.sentencepiece_model import read_model
from test_sentencepiece_model import HARD, RUSSIAN, train_spm
from test_unigram import wiki_lines


@pytest.fixture(scope="module")
def charsmap(tmp_path_factory):
    """The nmt_nfkc table of a SentencePiece model trained here."""
    path = train_spm(tmp_path_factory.mktemp("pc"), "nfkc", vocab_size=500)
    return read_model(path).normalizer_spec.precompiled_charsmap


def test_hand_built_table_known_answers():
    cm = CharsMap(build_charsmap({"a": "b", "ab": "c", "é": "e", "ﬁ": "fi", "z": ""}))
    assert [(n, cm.replacement(v)) for n, v in cm.prefix_matches(b"abc")] == [(1, "b"), (2, "c")]
    assert cm.prefix_matches("éa".encode()) == [(2, cm.prefix_matches("é".encode())[0][1])]
    assert cm.prefix_matches(b"q") == []
    assert cm.normalize_spm("xaabéz") == [("x", 0, 1), ("b", 1, 2), ("c", 2, 4), ("e", 4, 5), ("", 5, 6)]
    assert cm.lookup_first("ab") == "b"  # tokenizers takes the first (shortest) match


def test_alignment_of_expansions_and_removals():
    norm = Precompiled(build_charsmap({"ﬁ": "fi", "z": "", "ab": "X"}))
    ns = NormalizedString("aﬁzb")
    norm.normalize(ns)
    assert ns.normalized == "afib"
    assert ns.alignments == [(0, 1), (1, 2), (1, 2), (3, 4)]


def test_malformed_tables_are_rejected():
    with pytest.raises(ValueError, match="too short"):
        CharsMap(b"\x01")
    with pytest.raises(ValueError, match="trie size 4000"):
        CharsMap(b"\xa0\x0f\x00\x00" + b"\x00" * 8)
    with pytest.raises(ValueError, match="not base64"):
        Precompiled.from_json({"type": "Precompiled", "precompiled_charsmap": "@@@"})


def test_json_round_trip(charsmap):
    data = Precompiled(charsmap).to_json()
    assert data["type"] == "Precompiled" and base64.b64decode(data["precompiled_charsmap"]) == charsmap
    assert Precompiled.from_json(data).charsmap.blob == charsmap


def test_normalize_str_equals_tokenizers(charsmap):
    from tokenizers import normalizers

    ref = normalizers.Precompiled(charsmap)
    ours = Precompiled(charsmap)
    texts = wiki_lines(0, 150) + RUSSIAN + HARD + ["e\u0301\u0301 a\u0308bc ﬃ ① Ⅻ ｶﾞ ＡＢＣ \u200b\u200dx ǆ"]
    for t in texts:
        assert ours.normalize_str(t) == ref.normalize_str(t), t


def test_offsets_equal_tokenizers(charsmap):
    """Char-level Unigram behind the normalizer: every token's offsets expose the alignment."""
    from tokenizers import Tokenizer as HFTokenizer, models, normalizers
    from bertology.tokenizers import Tokenizer
    from bertology.tokenizers.unigram import Unigram

    texts = ["ﬁne ＡＢＣ① café cafe\u0301 ½ ㎏ ™", "Ünïcödé ǅ ß ﬀ", "a\u3000b\u00a0c\u200bd", RUSSIAN[0]]
    chars = sorted({c for t in texts for c in Precompiled(charsmap).normalize_str(t)})
    vocab = [("<unk>", 0.0)] + [(c, -1.0) for c in chars]
    hf = HFTokenizer(models.Unigram(vocab, 0, False))
    hf.normalizer = normalizers.Precompiled(charsmap)
    ours = Tokenizer(Unigram(vocab, 0), normalizer=Precompiled(charsmap))
    for t in texts:
        a, b = ours.encode(t, add_special_tokens=False), hf.encode(t, add_special_tokens=False)
        assert a.tokens == b.tokens and a.offsets == b.offsets, t
