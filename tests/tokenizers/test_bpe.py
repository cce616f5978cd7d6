"""BPE model: known answers, merge order, unknowns, and parity with `tokenizers.models.BPE`."""

from __future__ import annotations

import json

import pytest
import tokenizers.models as M
from hypothesis import given, settings, strategies as st

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

    def seq(seed):
        return [[t.value for t in BPE(vocab, [("a", "b")], dropout=0.5, seed=seed).tokenize("ab" * 8)]]

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


def _apply_merges_by_scanning(ids, spans, ranks):
    """The plain rule (the reference): find the lowest-ranked pair, merge it left to right, again."""
    while len(ids) > 1:
        ranked = [(ranks[p][0], p) for p in zip(ids, ids[1:]) if p in ranks]
        if not ranked:
            return
        _, (a, b) = min(ranked)
        merged, i = ranks[(a, b)][1], 0
        while i < len(ids) - 1:
            if ids[i] == a and ids[i + 1] == b:
                ids[i] = merged
                spans[i][1] = spans[i + 1][1]
                del ids[i + 1], spans[i + 1]
            i += 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=30), st.randoms(use_true_random=False))
def test_apply_merges_equals_the_plain_rule(ids, rng):
    """Random merge tables over a 4-symbol alphabet (repeats like 'aaaa' included): merge r
    joins two symbols that exist by then into the new symbol 4 + r."""
    ranks = {}
    for r in range(10):
        ranks.setdefault((rng.randrange(4 + r), rng.randrange(4 + r)), (r, 4 + r))
    spans = [[i, i + 1] for i in range(len(ids))]
    a_ids, a_spans = list(ids), [list(s) for s in spans]
    apply_merges(a_ids, a_spans, ranks)
    _apply_merges_by_scanning(ids, spans, ranks)
    assert (a_ids, a_spans) == (ids, spans)
