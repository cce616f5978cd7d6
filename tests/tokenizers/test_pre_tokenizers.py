"""Pre-tokenizers against `tokenizers.pre_tokenizers` (pieces and offsets)."""

from __future__ import annotations

import pytest
import tokenizers
import tokenizers.pre_tokenizers as P

from bertology.tokenizers import pre_tokenizers as ours

PAIRS = [
    (ours.BertPreTokenizer(), P.BertPreTokenizer()),
    (ours.Whitespace(), P.Whitespace()),
    (ours.WhitespaceSplit(), P.WhitespaceSplit()),
    (ours.ByteLevel(), P.ByteLevel()),
    (ours.ByteLevel(add_prefix_space=False), P.ByteLevel(add_prefix_space=False)),
    (ours.ByteLevel(use_regex=False), P.ByteLevel(use_regex=False)),
    (ours.Metaspace(), P.Metaspace()),
    (ours.Metaspace(prepend_scheme="never"), P.Metaspace(prepend_scheme="never")),
    (ours.Metaspace(prepend_scheme="first"), P.Metaspace(prepend_scheme="first")),
    (ours.Metaspace(split=False), P.Metaspace(split=False)),
    *[(ours.Punctuation(b), P.Punctuation(b)) for b in ours.BEHAVIORS],
    (ours.Digits(), P.Digits()),
    (ours.Digits(True), P.Digits(True)),
    *[(ours.Split(" ", b), P.Split(" ", b)) for b in ours.BEHAVIORS],
    (ours.Split({"Regex": r"\s+"}, "removed", invert=True), P.Split(tokenizers.Regex(r"\s+"), "removed", invert=True)),
    (ours.Sequence([ours.WhitespaceSplit(), ours.Digits(True)]), P.Sequence([P.WhitespaceSplit(), P.Digits(True)])),
    (ours.CharDelimiterSplit("o"), P.CharDelimiterSplit("o")),
]


@pytest.mark.parametrize("o,r", PAIRS, ids=[repr(o) for o, _ in PAIRS])
def test_pre_tokenize_str_matches_tokenizers(o, r, real_texts):
    for text in real_texts[::7]:
        assert o.pre_tokenize_str(text) == r.pre_tokenize_str(text), text


def test_split_spans_behaviours():
    import regex

    dash = regex.compile("-")
    assert ours.split_spans("a-b--c", dash, "removed") == [(0, 1), (2, 3), (5, 6)]
    assert ours.split_spans("a-b--c", dash, "contiguous") == [(0, 1), (1, 2), (2, 3), (3, 5), (5, 6)]
    assert ours.split_spans("a-b--c", dash, "merged_with_previous") == [(0, 2), (2, 4), (4, 5), (5, 6)]


def test_bad_behavior_is_named():
    with pytest.raises(ValueError, match="Sideways"):
        ours.Split(" ", "Sideways")
