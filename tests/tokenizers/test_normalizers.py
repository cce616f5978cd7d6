"""Normalizers against `tokenizers.normalizers`, plus the alignment they keep."""

from __future__ import annotations

import pytest
import tokenizers.normalizers as N
import tokenizers.pre_tokenizers as P

from bertology.tokenizers import normalizers as ours
from bertology.tokenizers.normalizers import NormalizedString

PAIRS = [
    (ours.BertNormalizer(), N.BertNormalizer()),
    (ours.BertNormalizer(lowercase=False), N.BertNormalizer(lowercase=False)),
    (ours.BertNormalizer(strip_accents=True, lowercase=False), N.BertNormalizer(strip_accents=True, lowercase=False)),
    (
        ours.BertNormalizer(clean_text=False, handle_chinese_chars=False),
        N.BertNormalizer(clean_text=False, handle_chinese_chars=False),
    ),
    (ours.NFC(), N.NFC()),
    (ours.NFD(), N.NFD()),
    (ours.NFKC(), N.NFKC()),
    (ours.NFKD(), N.NFKD()),
    (ours.Lowercase(), N.Lowercase()),
    (ours.Sequence([ours.NFD(), ours.StripAccents()]), N.Sequence([N.NFD(), N.StripAccents()])),
    (ours.Replace("``", '"'), N.Replace("``", '"')),
    (ours.Strip(), N.Strip()),
    (ours.Prepend("▁"), N.Prepend("▁")),
]


@pytest.mark.parametrize("o,r", PAIRS, ids=[repr(o) for o, _ in PAIRS])
def test_normalize_str_matches_tokenizers(o, r, real_texts):
    for text in real_texts[::5]:
        assert o.normalize_str(text) == r.normalize_str(text), text


def test_alignment_points_back_to_the_original():
    ns = NormalizedString("Ça ﬁ 中X\x00y")
    ours.Sequence([ours.BertNormalizer(), ours.NFKC()]).normalize(ns)
    assert ns.normalized == "ca fi  中 xy"
    # every normalized char maps to the original char it came from
    spans = dict(zip(range(len(ns.normalized)), ns.alignments))
    assert spans[0] == (0, 1) and spans[3] == (3, 4) and spans[4] == (3, 4)  # 'ﬁ' -> 'f', 'i'
    assert ns.original_span(7, 8) == (5, 6)  # 中
    assert ns.original_span(10, 11) == (8, 9)  # 'y' after the dropped NUL


def test_clean_text_drops_what_tokenizers_drops():
    # controls, format and private-use chars go; unassigned code points and format chars newer
    # than tokenizers' tables stay (found by test_fuzz.py)
    hard = [chr(c) for c in range(0x10000) if not 0xD800 <= c < 0xE000]
    hard += [
        "\U00014647",
        "\U000e0080",
        "\U0010ffff",
        "\U000f0000",
        "\U000110cd",
        "\U00013430",
        "\U0001343f",
        "\U000e0001",
        "\U0001d173",
    ]
    clean_only = {"clean_text": True, "handle_chinese_chars": False, "strip_accents": False, "lowercase": False}
    o, r = ours.BertNormalizer(**clean_only), N.BertNormalizer(**clean_only)
    assert [c for c in hard if o.normalize_str(c) != r.normalize_str(c)] == []


def test_composition_aligns_as_tokenizers_does():
    # a composed char takes the span of its first source char; an inserted char (the second of
    # a decomposition) shares the span of the char before it; reordered marks stay in place
    for form, text, normalized, spans in [
        ("NFC", "e\u0301x", "éx", [(0, 1), (2, 3)]),
        ("NFC", "\u1100\u1161\u11a8", "각", [(0, 1)]),
        ("NFKD", "ﬁ", "fi", [(0, 1), (0, 1)]),
        ("NFD", "\u1fb3\u0301", "α\u0301\u0345", [(0, 1), (1, 2), (1, 2)]),
        ("NFC", "\u1e0b\u0323", "\u1e0d\u0307", [(0, 1), (1, 2)]),
    ]:
        ns = NormalizedString(text)
        getattr(ours, form)().normalize(ns)
        assert (ns.normalized, ns.alignments) == (normalized, spans), (form, text)
        assert spans == _reference_spans(form, text)


def _reference_spans(form: str, text: str) -> list[tuple[int, int]]:
    """tokenizers' alignment of each normalized char: its offsets as a token of its own."""
    import tokenizers
    from tokenizers import Regex, models

    tok = tokenizers.Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.normalizer = getattr(N, form)()
    tok.pre_tokenizer = P.Split(Regex("."), behavior="isolated")
    return [tuple(o) for o in tok.encode(text).offsets]


def test_unknown_type_is_named():
    with pytest.raises(ValueError, match="'Nope'"):
        ours.normalizer_from_json({"type": "Nope"})
