"""Normalizers: the first stage of the pipeline, text -> cleaned text that remembers its origin.

Each normalizer edits a `NormalizedString` (normalized_string.py) in place, keeping the
alignment to the original text. `normalizer_from_json` builds one from a tokenizer.json object.

    >>> ns = NormalizedString("Héllo")
    >>> BertNormalizer().normalize(ns)
    >>> ns.normalized, ns.original_span(0, 5)
    ('hello', (0, 5))
"""

from __future__ import annotations

import unicodedata

import regex

from .base import component_from_json
from .normalized_string import WHITESPACE, WHITESPACE_CHARS, NormalizedString, Normalizer, is_whitespace
from .precompiled import Precompiled

__all__ = [
    "NormalizedString",
    "Normalizer",
    "WHITESPACE",
    "WHITESPACE_CHARS",
    "is_whitespace",
    "BertNormalizer",
    "NFD",
    "NFC",
    "NFKD",
    "NFKC",
    "Lowercase",
    "StripAccents",
    "Replace",
    "Strip",
    "Prepend",
    "Sequence",
    "Precompiled",
    "NORMALIZERS",
    "normalizer_from_json",
    "pattern_from_json",
]


def is_chinese_char(cp: int) -> bool:
    """The CJK Unified Ideograph blocks that BERT surrounds with spaces (not Hangul / kana)."""
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B920 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


# Characters BertNormalizer's clean_text drops, as `tokenizers` has it: NUL, U+FFFD, controls
# (Cc), format (Cf) and private-use (Co) characters, except \t \n \r, which count as
# whitespace. It keeps unassigned code points (Cn), and its Cf table predates these format
# characters (added in Unicode 12 and later), which it keeps too.
_CF_NEWER_THAN_TOKENIZERS = "\u0890\u0891\u08e2\U000110cd\U00013430-\U0001343f"
_BERT_DROP = regex.compile(rf"[\x00\ufffd\p{{Cc}}\p{{Cf}}\p{{Co}}--[\t\n\r{_CF_NEWER_THAN_TOKENIZERS}]]", regex.V1)
_BERT_SPACE = regex.compile(r"[\t\n\r\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_CJK = regex.compile(
    "[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f\U0002b740-\U0002b81f"
    "\U0002b920-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f]"
)
_NONSPACING = regex.compile(r"\p{Mn}")


def _strip_nonspacing(ns: NormalizedString) -> None:
    if _NONSPACING.search(ns.normalized):
        ns.transform(["" if unicodedata.category(c) == "Mn" else c for c in ns.normalized])


def nfd_strip_char(c: str) -> str:
    """NFD of one char without its non-spacing marks.

    >>> nfd_strip_char("é")
    'e'
    """
    return "".join(x for x in unicodedata.normalize("NFD", c) if unicodedata.category(x) != "Mn")


class BertNormalizer(Normalizer):
    """BERT's cleaning: drop control chars, whitespace -> ' ', space around CJK, accents, lower.

    strip_accents=None follows `lowercase` (the original BERT uncased behaviour).
    """

    def __init__(self, clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True):
        self.clean_text = clean_text
        self.handle_chinese_chars = handle_chinese_chars
        self.strip_accents = strip_accents
        self.lowercase = lowercase
        self._stripped: dict[str, str] = {}  # char -> nfd_strip_char(char), for the chars seen

    def normalize(self, ns: NormalizedString) -> None:
        s = ns.normalized
        ascii_printable = s.isascii() and s.isprintable()
        if self.clean_text and not ascii_printable:
            if _BERT_DROP.search(s) or _BERT_SPACE.search(s):
                ns.transform(["" if _BERT_DROP.match(c) else " " if _BERT_SPACE.match(c) else c for c in s])
        if self.handle_chinese_chars and not s.isascii() and _CJK.search(ns.normalized):
            ns.transform([f" {c} " if is_chinese_char(ord(c)) else c for c in ns.normalized])
        strip = self.lowercase if self.strip_accents is None else self.strip_accents
        if strip and not ns.normalized.isascii():
            self._strip_accents(ns)
        if self.lowercase:
            ns.lowercase()

    def _strip_accents(self, ns: NormalizedString) -> None:
        """NFD + drop Mn, char by char: canonical reordering only moves combining marks, and the
        non-spacing ones are dropped anyway, so per char equals whole-string here."""
        known = self._stripped.get
        ns.transform([c if c < "\u00c0" else known(c) or self._strip_char(c) for c in ns.normalized])

    def _strip_char(self, c: str) -> str:
        r = self._stripped[c] = nfd_strip_char(c)  # (bounded: there are only so many chars)
        return r

    def to_json(self):
        return {
            "type": "BertNormalizer",
            "clean_text": self.clean_text,
            "handle_chinese_chars": self.handle_chinese_chars,
            "strip_accents": self.strip_accents,
            "lowercase": self.lowercase,
        }

    @classmethod
    def from_json(cls, data):
        return cls(
            data.get("clean_text", True),
            data.get("handle_chinese_chars", True),
            data.get("strip_accents"),
            data.get("lowercase", True),
        )


class _UnicodeForm(Normalizer):
    form = ""

    def normalize(self, ns):
        ns.unicode_normalize(self.form)

    def to_json(self):
        return {"type": self.form}


class NFD(_UnicodeForm):
    form = "NFD"


class NFC(_UnicodeForm):
    form = "NFC"


class NFKD(_UnicodeForm):
    form = "NFKD"


class NFKC(_UnicodeForm):
    form = "NFKC"


class Lowercase(Normalizer):
    def normalize(self, ns):
        ns.lowercase()

    def to_json(self):
        return {"type": "Lowercase"}


class StripAccents(Normalizer):
    """Remove non-spacing marks (use after NFD / NFKD, as `tokenizers` expects)."""

    def normalize(self, ns):
        _strip_nonspacing(ns)

    def to_json(self):
        return {"type": "StripAccents"}


def pattern_from_json(pattern: dict, where: str) -> tuple["regex.Pattern", dict]:
    """A tokenizer.json pattern {"String": s} | {"Regex": r} -> compiled regex."""
    if not isinstance(pattern, dict) or len(pattern) != 1:
        raise ValueError(f"{where}: pattern must be {{'String': ...}} or {{'Regex': ...}}, got {pattern!r}")
    ((kind, value),) = pattern.items()
    if kind == "String":
        return regex.compile(regex.escape(value)), pattern
    if kind == "Regex":
        try:
            return regex.compile(value), pattern
        except regex.error as e:
            raise ValueError(f"{where}: bad regex {value!r}: {e}") from None
    raise ValueError(f"{where}: unknown pattern kind {kind!r} (expected 'String' or 'Regex')")


class Replace(Normalizer):
    def __init__(self, pattern: str | dict, content: str):
        self.pattern_json = pattern if isinstance(pattern, dict) else {"String": pattern}
        self.pattern, _ = pattern_from_json(self.pattern_json, "Replace normalizer")
        self.content = content

    def normalize(self, ns):
        ns.replace(self.pattern, self.content)

    def to_json(self):
        return {"type": "Replace", "pattern": self.pattern_json, "content": self.content}

    @classmethod
    def from_json(cls, data):
        return cls(data["pattern"], data["content"])


class Strip(Normalizer):
    def __init__(self, left: bool = True, right: bool = True):
        self.left, self.right = left, right

    def normalize(self, ns):
        ns.strip(self.left, self.right)

    def to_json(self):
        return {"type": "Strip", "strip_left": self.left, "strip_right": self.right}

    @classmethod
    def from_json(cls, data):
        return cls(data.get("strip_left", True), data.get("strip_right", True))


class Prepend(Normalizer):
    def __init__(self, prepend: str):
        self.prepend = prepend

    def normalize(self, ns):
        ns.prepend(self.prepend)

    def to_json(self):
        return {"type": "Prepend", "prepend": self.prepend}

    @classmethod
    def from_json(cls, data):
        return cls(data["prepend"])


class Sequence(Normalizer):
    def __init__(self, normalizers: list[Normalizer]):
        self.normalizers = list(normalizers)

    def normalize(self, ns):
        for n in self.normalizers:
            n.normalize(ns)

    def to_json(self):
        return {"type": "Sequence", "normalizers": [n.to_json() for n in self.normalizers]}

    @classmethod
    def from_json(cls, data):
        return cls([normalizer_from_json(d) for d in data["normalizers"]])


NORMALIZERS = {
    "BertNormalizer": BertNormalizer,
    "NFD": NFD,
    "NFC": NFC,
    "NFKD": NFKD,
    "NFKC": NFKC,
    "Lowercase": Lowercase,
    "StripAccents": StripAccents,
    "Replace": Replace,
    "Strip": Strip,
    "Prepend": Prepend,
    "Sequence": Sequence,
    "Precompiled": Precompiled,
}


def normalizer_from_json(data: dict | None) -> Normalizer | None:
    """Build a normalizer from the `normalizer` object of a tokenizer.json."""
    return None if data is None else component_from_json("normalizer", NORMALIZERS, data)
