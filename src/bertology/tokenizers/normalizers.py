"""Normalizers: the first stage of the pipeline, text -> cleaned text that remembers its origin.

A `NormalizedString` holds the normalized text and, for every normalized character, the
[start, end) character span it came from in the ORIGINAL text. That alignment is what lets a
token produced three stages later report offsets into the user's string.

Most real text needs no change (or only ASCII lower-casing, which keeps lengths), so the
alignment is stored lazily: `None` means "character i comes from original[start + i]". A
per-character list is only built once a step changes lengths.

    >>> ns = NormalizedString("Héllo")
    >>> BertNormalizer().normalize(ns)
    >>> ns.normalized, ns.original_span(0, 5)
    ('hello', (0, 5))
"""
from __future__ import annotations

import unicodedata

import regex

from .base import component_from_json

# Rust's char::is_whitespace (the Unicode White_Space property), which `tokenizers` uses;
# Python's str.isspace() also counts \x1c-\x1f, so we spell the set out.
WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_WS_CHARS = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
)


def is_whitespace(c: str) -> bool:
    return c in _WS_CHARS


class NormalizedString:
    """Normalized text plus, per normalized char, its span in `original` (absolute offsets).

    A slice of a NormalizedString (what pre-tokenizers produce) keeps pointing into the same
    original text, so offsets never need re-basing.
    """

    __slots__ = ("original", "normalized", "_align", "_start")

    def __init__(self, original: str, normalized: str | None = None,
                 alignments: list[tuple[int, int]] | None = None, start: int = 0):
        self.original = original
        self.normalized = original if normalized is None else normalized
        self._align = alignments  # None: identity, char i <- original[start + i]
        self._start = start

    def __repr__(self):
        return f"NormalizedString({self.normalized!r}, span={self.offsets_original()})"

    def __len__(self):
        return len(self.normalized)

    @property
    def alignments(self) -> list[tuple[int, int]]:
        if self._align is None:
            s = self._start
            return [(s + i, s + i + 1) for i in range(len(self.normalized))]
        return self._align

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """Span in the original text of normalized[start:end]."""
        if self._align is None:
            return self._start + start, self._start + end
        align = self._align
        if end > start:
            return align[start][0], align[end - 1][1]
        # An empty range sits at the start of the next char (or the end of the last one).
        if start < len(align):
            return align[start][0], align[start][0]
        if align:
            return align[-1][1], align[-1][1]
        return self._start, self._start

    def offsets_original(self) -> tuple[int, int]:
        return self.original_span(0, len(self.normalized))

    def slice(self, start: int, end: int) -> "NormalizedString":
        if self._align is None:
            return NormalizedString(self.original, self.normalized[start:end], None, self._start + start)
        align = self._align[start:end]
        base = align[0][0] if align else self.original_span(start, start)[0]
        return NormalizedString(self.original, self.normalized[start:end], align, base)

    # -- edits. Each keeps the alignment right; all are in place. -------------------------

    def set(self, normalized: str, alignments: list[tuple[int, int]] | None) -> None:
        """Replace the text; `alignments` None keeps the current (same-length) alignment."""
        if alignments is not None:
            assert len(alignments) == len(normalized)
            self._align = alignments
        else:
            assert len(normalized) == len(self.normalized)
        self.normalized = normalized

    def transform(self, pieces: list[str]) -> None:
        """Replace char i by pieces[i] (0, 1 or more chars, all aligned to char i's span)."""
        new = "".join(pieces)
        if len(new) == len(self.normalized) and all(len(p) == 1 for p in pieces):
            self.normalized = new
            return
        old = self.alignments
        align = []
        for span, p in zip(old, pieces):
            if len(p) == 1:
                align.append(span)
            elif p:
                align.extend([span] * len(p))
        self.normalized, self._align = new, align

    def map_chars(self, fn) -> None:
        """Apply fn: char -> str to every char."""
        self.transform([fn(c) for c in self.normalized])

    def filter(self, keep) -> None:
        if all(keep(c) for c in self.normalized):
            return
        self.transform([c if keep(c) else "" for c in self.normalized])

    def lowercase(self) -> None:
        s = self.normalized
        low = s.lower()
        # str.lower() is char-by-char except for Greek final sigma; `tokenizers` maps every
        # 'Σ' to 'σ'. Equal length means every char lowered to exactly one char.
        if len(low) == len(s) and "Σ" not in s:
            self.normalized = low
        else:
            self.transform([c.lower() for c in s])

    def unicode_normalize(self, form: str) -> None:
        """NFD / NFC / NFKD / NFKC with alignment (a composed char spans all its sources)."""
        s = self.normalized
        if s.isascii() or unicodedata.is_normalized(form, s):
            return
        whole = unicodedata.normalize(form, s)
        old = self.alignments
        # Cut before every starter (combining class 0): Unicode normalization never moves
        # characters across such a boundary, except for composition (Hangul jamo, some
        # starters that compose with a following starter), which `_segments` merges back.
        cuts = [i for i, c in enumerate(s) if i == 0 or unicodedata.combining(c) == 0]
        cuts.append(len(s))
        pieces, spans = _segments(s, cuts, form)
        if "".join(pieces) != whole:  # interaction across segments we did not anticipate
            pieces, spans = [whole], [(0, len(s))]
        new_align = []
        for piece, (a, b) in zip(pieces, spans):
            seg = s[a:b]
            if piece == seg:
                new_align.extend(old[a:b])
            elif b - a == 1:
                new_align.extend([old[a]] * len(piece))
            else:
                span = (old[a][0], old[b - 1][1])
                new_align.extend([span] * len(piece))
        self.normalized, self._align = whole, new_align

    def nfd(self): self.unicode_normalize("NFD")
    def nfc(self): self.unicode_normalize("NFC")
    def nfkd(self): self.unicode_normalize("NFKD")
    def nfkc(self): self.unicode_normalize("NFKC")

    def replace(self, pattern: "regex.Pattern", content: str) -> None:
        """Replace every match; like `tokenizers`, new chars take the span of the match's last char."""
        s = self.normalized
        matches = list(pattern.finditer(s))
        if not matches:
            return
        old = self.alignments
        out, align, last = [], [], 0
        for m in matches:
            a, b = m.span()
            out.append(s[last:a])
            align.extend(old[last:a])
            if content:
                if b > a:
                    span = old[b - 1]
                elif a > 0:
                    span = old[a - 1]
                else:
                    span = (old[0][0], old[0][0]) if old else (self._start, self._start)
                out.append(content)
                align.extend([span] * len(content))
            last = b
        out.append(s[last:])
        align.extend(old[last:])
        self.normalized, self._align = "".join(out), align

    def prepend(self, text: str) -> None:
        """Insert text at the front; it shares the first char's span (nothing if empty)."""
        if not self.normalized or not text:
            return
        old = self.alignments
        self.normalized, self._align = text + self.normalized, [old[0]] * len(text) + old

    def append(self, text: str) -> None:
        if not self.normalized or not text:
            return
        old = self.alignments
        self.normalized, self._align = self.normalized + text, old + [old[-1]] * len(text)

    def strip(self, left: bool = True, right: bool = True) -> None:
        s, a, b = self.normalized, 0, len(self.normalized)
        if left:
            while a < b and s[a] in _WS_CHARS:
                a += 1
        if right:
            while b > a and s[b - 1] in _WS_CHARS:
                b -= 1
        if (a, b) != (0, len(s)):
            sliced = self.slice(a, b)
            self.normalized, self._align, self._start = sliced.normalized, sliced._align, sliced._start


def _segments(s: str, cuts: list[int], form: str) -> tuple[list[str], list[tuple[int, int]]]:
    """Normalize s segment by segment, merging neighbours whose normalization interacts.

    >>> _segments("e\u0301a", [0, 2, 3], "NFC")
    (['é', 'a'], [(0, 2), (2, 3)])
    """
    pieces, spans = [], []
    for a, b in zip(cuts, cuts[1:]):
        piece = unicodedata.normalize(form, s[a:b])
        if pieces:
            pa = spans[-1][0]
            joined = unicodedata.normalize(form, s[pa:b])
            if joined != pieces[-1] + piece:
                pieces[-1], spans[-1] = joined, (pa, b)
                continue
        pieces.append(piece)
        spans.append((a, b))
    return pieces, spans


class Normalizer:
    """Base class: `normalize(ns)` edits a NormalizedString in place."""

    def normalize(self, ns: NormalizedString) -> None:
        raise NotImplementedError

    def normalize_str(self, text: str) -> str:
        ns = NormalizedString(text)
        self.normalize(ns)
        return ns.normalized

    def to_json(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_json(cls, data: dict) -> "Normalizer":
        return cls()

    def __repr__(self):
        return f"{type(self).__name__}({self.to_json()})"


def is_chinese_char(cp: int) -> bool:
    """The CJK Unified Ideograph blocks that BERT surrounds with spaces (not Hangul / kana)."""
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B920 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


# Characters BertNormalizer's clean_text drops: NUL, U+FFFD and every "Other" (Cc, Cf, Cn, Co,
# Cs) except \t \n \r, which count as whitespace.
_BERT_DROP = regex.compile(r"[\x00\ufffd\p{C}--[\t\n\r]]", regex.V1)
_BERT_SPACE = regex.compile(r"[\t\n\r\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_CJK = regex.compile(
    "[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f\U0002b740-\U0002b81f"
    "\U0002b920-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f]"
)
_NONSPACING = regex.compile(r"\p{Mn}")


def _strip_nonspacing(ns: NormalizedString) -> None:
    if _NONSPACING.search(ns.normalized):
        ns.transform(["" if unicodedata.category(c) == "Mn" else c for c in ns.normalized])


_NFD_STRIPPED: dict[str, str] = {}


def _nfd_strip_char(c: str) -> str:
    """NFD of one char without its non-spacing marks ('é' -> 'e'), memoized."""
    r = _NFD_STRIPPED.get(c)
    if r is None:
        r = "".join(x for x in unicodedata.normalize("NFD", c) if unicodedata.category(x) != "Mn")
        if len(_NFD_STRIPPED) < 200_000:
            _NFD_STRIPPED[c] = r
    return r


def _nfd_strip_accents(ns: NormalizedString) -> None:
    """NFD + drop Mn, char by char: canonical reordering only moves combining marks, and the
    non-spacing ones are dropped anyway, so per char equals whole-string here."""
    s = ns.normalized
    pieces = [c if c < "\u00c0" else _nfd_strip_char(c) for c in s]
    ns.transform(pieces)


class BertNormalizer(Normalizer):
    """BERT's cleaning: drop control chars, whitespace -> ' ', space around CJK, accents, lower.

    strip_accents=None follows `lowercase` (the original BERT uncased behaviour).
    """

    def __init__(self, clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True):
        self.clean_text = clean_text
        self.handle_chinese_chars = handle_chinese_chars
        self.strip_accents = strip_accents
        self.lowercase = lowercase

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
            _nfd_strip_accents(ns)
        if self.lowercase:
            ns.lowercase()

    def to_json(self):
        return {"type": "BertNormalizer", "clean_text": self.clean_text,
                "handle_chinese_chars": self.handle_chinese_chars,
                "strip_accents": self.strip_accents, "lowercase": self.lowercase}

    @classmethod
    def from_json(cls, data):
        return cls(data.get("clean_text", True), data.get("handle_chinese_chars", True),
                   data.get("strip_accents"), data.get("lowercase", True))


class _UnicodeForm(Normalizer):
    form = ""

    def normalize(self, ns):
        ns.unicode_normalize(self.form)

    def to_json(self):
        return {"type": self.form}


class NFD(_UnicodeForm): form = "NFD"
class NFC(_UnicodeForm): form = "NFC"
class NFKD(_UnicodeForm): form = "NFKD"
class NFKC(_UnicodeForm): form = "NFKC"


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
    (kind, value), = pattern.items()
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


def _precompiled():
    from .precompiled import Precompiled  # T3's SentencePiece normalizer
    return Precompiled


NORMALIZERS = {
    "BertNormalizer": BertNormalizer, "NFD": NFD, "NFC": NFC, "NFKD": NFKD, "NFKC": NFKC,
    "Lowercase": Lowercase, "StripAccents": StripAccents, "Replace": Replace, "Strip": Strip,
    "Prepend": Prepend, "Sequence": Sequence, "Precompiled": _precompiled,
}


def normalizer_from_json(data: dict | None) -> Normalizer | None:
    """Build a normalizer from the `normalizer` object of a tokenizer.json."""
    return None if data is None else component_from_json("normalizer", NORMALIZERS, data)
