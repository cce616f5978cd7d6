"""BPE model: known answers, merge order, unknowns, and parity with `tokenizers.models.BPE`."""
from __future__ import annotations

import json

import pytest
import tokenizers.models as M

from bertology.tokenizers.bpe import BPE, apply_merges


def test_merges_apply_by_rank_not_position():
    vocab = {c: i for i, c in enumerate("abc")} | {"bc": 3, "ab": 4, "abc": 5}
    bpe = BPE(vocab, [("b", "c"), ("a", "b"), ("a", "bc")])
    assert [t.value for t in bpe.tokenize("abc")] == ["abc"]  # b+c first (rank 0), then a+bc
    assert [t.value for t in bpe.tokenize("abab")] == ["ab", "ab"]
    assert [t.offsets for t in bpe.tokenize("abab")] == [(0, 2), (2, 4)]


def test_unknown_chars_fuse_or_not():
    vocab = {"<unk>": 0, "a": 1}
    assert [t.value for t in BPE(vocab, [], unk_token="<unk>").tokenize("xya")] == ["<unk>", "<unk>", "a"]
    fused = BPE(vocab, [], unk_token="<unk>", fuse_unk=True).tokenize("xya")
    assert [(t.value, t.offsets) for t in fused] == [("<unk>", (0, 2)), ("a", (2, 3))]
    assert [t.value for t in BPE(vocab, []).tokenize("xya")] == ["a"]  # no unk token: dropped, as tokenizers


def test_bad_merge_is_named():
    with pytest.raises(ValueError, match=r"merge 0 .*'ab'"):
        BPE({"a": 0, "b": 1}, [("a", "b")])


def test_apply_merges_pure():
    ids, spans = [1, 1, 1], [[0, 1], [1, 2], [2, 3]]
    apply_merges(ids, spans, {(1, 1): (0, 2)})
    assert ids == [2, 1] and spans == [[0, 2], [2, 3]]  # leftmost occurrence first, no overlap


def test_dropout_is_seeded():
    vocab = {"a": 0, "b": 1, "ab": 2}
    seq = lambda seed: [[t.value for t in BPE(vocab, [("a", "b")], dropout=0.5, seed=seed).tokenize("ab" * 8)]]
    assert seq(1) == seq(1)
    assert BPE(vocab, [("a", "b")], dropout=1.0).tokenize("ab")[0].value == "a"


def test_matches_tokenizers_model(bytelevel_bpe_json, real_texts):
    data = json.loads(bytelevel_bpe_json.read_text())["model"]
    ours = BPE.from_json(data)
    ref = M.BPE(data["vocab"], [tuple(m) for m in data["merges"]])
    from bertology.tokenizers.byte_level import to_byte_chars
    words = sorted({to_byte_chars(" " + w) for t in real_texts for w in t.split()})[:3000]
    for w in words:  # (the Rust model reports byte offsets, ours are chars: compare ids and values)
        assert [(t.id, t.value) for t in ours.tokenize(w)] == [(t.id, t.value) for t in ref.tokenize(w)], w
