"""Normalizers against `tokenizers.normalizers`, plus the alignment they keep."""
from __future__ import annotations

import pytest
import tokenizers.normalizers as N

from bertology.tokenizers import normalizers as ours
from bertology.tokenizers.normalizers import NormalizedString

PAIRS = [
    (ours.BertNormalizer(), N.BertNormalizer()),
    (ours.BertNormalizer(lowercase=False), N.BertNormalizer(lowercase=False)),
    (ours.BertNormalizer(strip_accents=True, lowercase=False), N.BertNormalizer(strip_accents=True, lowercase=False)),
    (ours.BertNormalizer(clean_text=False, handle_chinese_chars=False), N.BertNormalizer(clean_text=False, handle_chinese_chars=False)),
    (ours.NFC(), N.NFC()), (ours.NFD(), N.NFD()), (ours.NFKC(), N.NFKC()), (ours.NFKD(), N.NFKD()),
    (ours.Lowercase(), N.Lowercase()),
    (ours.Sequence([ours.NFD(), ours.StripAccents()]), N.Sequence([N.NFD(), N.StripAccents()])),
    (ours.Replace("``", '"'), N.Replace("``", '"')), (ours.Strip(), N.Strip()), (ours.Prepend("▁"), N.Prepend("▁")),
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


def test_composition_spans_both_sources():
    ns = NormalizedString("e\u0301x")
    ours.NFC().normalize(ns)
    assert ns.normalized == "éx" and ns.alignments == [(0, 2), (2, 3)]


def test_unknown_type_is_named():
    with pytest.raises(ValueError, match="'Nope'"):
        ours.normalizer_from_json({"type": "Nope"})
