"""NormalizedString: text being normalized that remembers, per character, where it came from.

A `NormalizedString` holds the normalized text and, for every normalized character, the
[start, end) character span it came from in the ORIGINAL text. That alignment is what lets a
token produced three stages later report offsets into the user's string.

Most real text needs no change (or only ASCII lower-casing, which keeps lengths), so the
alignment is stored lazily: `spans is None` means "character i comes from
original[offset + i]". A per-character list is only built once a step changes lengths.

    >>> ns = NormalizedString("Hello")
    >>> ns.lowercase(); ns.normalized, ns.spans, ns.original_span(1, 3)
    ('hello', None, (1, 3))
    >>> ns.transform(["h", "", "l", "l", "oo"]); ns.normalized, ns.original_span(3, 5)
    ('hlloo', (4, 5))

`Normalizer` is the interface of the pipeline's first stage (normalizers.py, precompiled.py,
sentencepiece_model.py implement it): it edits a NormalizedString in place.
"""

from __future__ import annotations

import unicodedata

import regex

# Rust's char::is_whitespace (the Unicode White_Space property), which `tokenizers` uses;
# Python's str.isspace() also counts \x1c-\x1f, so we spell the set out.
WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
WHITESPACE_CHARS = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(chr(c) for c in range(0x2000, 0x200B))
)


def is_whitespace(c: str) -> bool:
    return c in WHITESPACE_CHARS


class NormalizedString:
    """Normalized text plus, per normalized char, its span in `original` (absolute offsets).

    A slice of a NormalizedString (what pre-tokenizers produce) keeps pointing into the same
    original text, so offsets never need re-basing.

    The alignment, read by the pipeline's fast paths:
      spans   None while the text is an unchanged slice of the original (char i comes from
              original[offset + i]); else one (start, end) original span per normalized char
      offset  where the text starts in the original while spans is None
    """

    __slots__ = ("original", "normalized", "spans", "offset")

    def __init__(
        self,
        original: str,
        normalized: str | None = None,
        alignments: list[tuple[int, int]] | None = None,
        start: int = 0,
    ):
        self.original = original
        self.normalized = original if normalized is None else normalized
        self.spans = alignments  # None: identity, char i <- original[start + i]
        self.offset = start

    def __repr__(self):
        return f"NormalizedString({self.normalized!r}, span={self.offsets_original()})"

    def __len__(self):
        return len(self.normalized)

    @property
    def alignments(self) -> list[tuple[int, int]]:
        if self.spans is None:
            s = self.offset
            return [(s + i, s + i + 1) for i in range(len(self.normalized))]
        return self.spans

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """Span in the original text of normalized[start:end]."""
        if self.spans is None:
            return self.offset + start, self.offset + end
        align = self.spans
        if end > start:
            return align[start][0], align[end - 1][1]
        # An empty range sits at the start of the next char (or the end of the last one).
        if start < len(align):
            return align[start][0], align[start][0]
        if align:
            return align[-1][1], align[-1][1]
        return self.offset, self.offset

    def offsets_original(self) -> tuple[int, int]:
        return self.original_span(0, len(self.normalized))

    def slice(self, start: int, end: int) -> "NormalizedString":
        if self.spans is None:
            return NormalizedString(self.original, self.normalized[start:end], None, self.offset + start)
        align = self.spans[start:end]
        base = align[0][0] if align else self.original_span(start, start)[0]
        return NormalizedString(self.original, self.normalized[start:end], align, base)

    # -- edits. Each keeps the alignment right; all are in place. -------------------------

    def set(self, normalized: str, alignments: list[tuple[int, int]] | None) -> None:
        """Replace the text; `alignments` None keeps the current (same-length) alignment."""
        if alignments is not None:
            assert len(alignments) == len(normalized)
            self.spans = alignments
        else:
            assert len(normalized) == len(self.normalized)
        self.normalized = normalized

    def transform(self, pieces: list[str]) -> None:
        """Replace char i by pieces[i] (0, 1 or more chars, all aligned to char i's span)."""
        new = "".join(pieces)
        # equal length with no piece longer than one char: every piece is exactly one char
        if len(new) == len(self.normalized) and max(map(len, pieces), default=1) == 1:
            self.normalized = new
            return
        old = self.alignments
        align = []
        for span, p in zip(old, pieces):
            if len(p) == 1:
                align.append(span)
            elif p:
                align.extend([span] * len(p))
        self.normalized, self.spans = new, align

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
        """NFD / NFC / NFKD / NFKC, aligned as `tokenizers` aligns them: walking the output with
        each char's change in length (see normalize_with_changes), a char that replaces source
        chars takes the span of the first of them; an inserted char shares the span of the
        source char before it."""
        s = self.normalized
        if s.isascii() or unicodedata.is_normalized(form, s):
            return
        chars, changes = normalize_with_changes(s, form)
        old = self.alignments
        align, cursor = [], 0  # cursor: the next source char
        for change in changes:
            if change > 0:
                align.append(old[cursor - 1] if cursor else (old[0][0], old[0][0]))
            else:
                align.append(old[cursor])
                cursor += 1 - change
        self.normalized, self.spans = "".join(chars), align

    def nfd(self):
        self.unicode_normalize("NFD")

    def nfc(self):
        self.unicode_normalize("NFC")

    def nfkd(self):
        self.unicode_normalize("NFKD")

    def nfkc(self):
        self.unicode_normalize("NFKC")

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
                    span = (old[0][0], old[0][0]) if old else (self.offset, self.offset)
                out.append(content)
                align.extend([span] * len(content))
            last = b
        out.append(s[last:])
        align.extend(old[last:])
        self.normalized, self.spans = "".join(out), align

    def prepend(self, text: str) -> None:
        """Insert text at the front; it shares the first char's span (nothing if empty)."""
        if not self.normalized or not text:
            return
        old = self.alignments
        self.normalized, self.spans = text + self.normalized, [old[0]] * len(text) + old

    def append(self, text: str) -> None:
        if not self.normalized or not text:
            return
        old = self.alignments
        self.normalized, self.spans = self.normalized + text, old + [old[-1]] * len(text)

    def strip(self, left: bool = True, right: bool = True) -> None:
        s, a, b = self.normalized, 0, len(self.normalized)
        if left:
            while a < b and s[a] in WHITESPACE_CHARS:
                a += 1
        if right:
            while b > a and s[b - 1] in WHITESPACE_CHARS:
                b -= 1
        if (a, b) != (0, len(s)):
            sliced = self.slice(a, b)
            self.normalized, self.spans, self.offset = sliced.normalized, sliced.spans, sliced.offset


def normalize_with_changes(s: str, form: str) -> tuple[list[str], list[int]]:
    """Unicode normalization of s, with each output char's change in length: 0 for a char that
    stands for one source char, +1 for an inserted one (the 2nd, 3rd ... char of a
    decomposition), -k for one that absorbed k more source chars by composition.

    The steps of UAX #15, carrying the changes along: decompose char by char, order each run
    of combining marks by combining class, then (NFC, NFKC) compose each mark with the last
    starter unless a mark in between blocks it.

    >>> normalize_with_changes("A\u0300x", "NFC")
    (['À', 'x'], [-1, 0])
    >>> normalize_with_changes("ﬁ", "NFKD")
    (['f', 'i'], [0, 1])
    """
    chars, changes = [], []
    decomposition = "NFKD" if form in ("NFKC", "NFKD") else "NFD"
    for c in s:
        d = unicodedata.normalize(decomposition, c)
        chars.extend(d)
        changes.append(0)
        changes.extend([1] * (len(d) - 1))
    # canonical ordering: a stable sort of each run of marks (combining class > 0) by class
    i = 0
    while i < len(chars):
        if unicodedata.combining(chars[i]) == 0:
            i += 1
            continue
        j = i
        while j < len(chars) and unicodedata.combining(chars[j]) > 0:
            j += 1
        run = sorted(zip(chars[i:j], changes[i:j]), key=lambda cc: unicodedata.combining(cc[0]))
        chars[i:j], changes[i:j] = [c for c, _ in run], [k for _, k in run]
        i = j
    if form not in ("NFC", "NFKC"):
        return chars, changes
    out, out_changes, starter = [], [], None  # starter: index in out of the last starter
    for c, change in zip(chars, changes):
        ccc = unicodedata.combining(c)
        if starter is not None:
            between = unicodedata.combining(out[-1]) if len(out) - 1 > starter else None
            if between is None or 0 < between < ccc:  # not blocked from the starter
                composed = unicodedata.normalize("NFC", out[starter] + c)
                if len(composed) == 1:
                    out[starter] = composed
                    out_changes[starter] += change - 1
                    continue
        if ccc == 0:
            starter = len(out)
        out.append(c)
        out_changes.append(change)
    return out, out_changes


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
