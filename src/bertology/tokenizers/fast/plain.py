"""Which texts of a batch the hot path can take: no added token, normalized char for char."""

from __future__ import annotations

from ..added_tokens import AddedVocabulary
from ..normalized_string import NormalizedString
from ..normalizers import BertNormalizer


def normalize_aligned(normalizer, texts: list[str]) -> list[str | None]:
    """Each text normalized, where the result is aligned with the text char for char (char i
    comes from the text's char i, as `spans is None` at offset 0 says); None where it is not.
    (A right strip keeps alignment; a left strip does not: char 0 then comes from a later char.)
    BERT's normalizer only lowercases printable ASCII text (if that), so that takes no
    NormalizedString.

    >>> normalize_aligned(BertNormalizer(), ["Hi There", "café", "x\\x00y"])  # NUL is dropped
    ['hi there', 'cafe', None]
    """
    if type(normalizer) is BertNormalizer:
        lower = normalizer.lowercase
        out = [(t.lower() if lower else t) if t.isascii() and t.isprintable() else None for t in texts]
    else:
        out = [None] * len(texts)
    for i, text in enumerate(texts):
        if out[i] is None:
            ns = NormalizedString(text)
            normalizer.normalize(ns)
            out[i] = ns.normalized if ns.spans is None and ns.offset == 0 else None
    return out


def plain_texts(added: AddedVocabulary, texts: list[str], normalizer) -> list[str | None]:
    """For each text, its normalized form when added.split would give it as ONE piece with no
    added token, aligned char for char with the text; else None."""
    raw, norm = added.raw_pattern, added.normalized_pattern
    if raw is not None:
        texts = [None if raw.search(t) else t for t in texts]
    if normalizer is None:
        out = list(texts)
    else:
        todo = [i for i, t in enumerate(texts) if t is not None]
        out = [None] * len(texts)
        for i, s in zip(todo, normalize_aligned(normalizer, [texts[i] for i in todo])):
            out[i] = s
    if norm is not None:
        out = [None if s is None or norm.search(s) else s for s in out]
    return out
