"""Pre-tokenizers: cut normalized text into words (pre-tokens) the model then splits further.

Every pre-tokenizer maps a list of NormalizedString pieces to a finer list; each piece keeps its
alignment, so offsets survive. `pre_tokenize_str` shows the result for inspection:

    >>> BertPreTokenizer().pre_tokenize_str("Hey, you!")
    [('Hey', (0, 3)), (',', (3, 4)), ('you', (5, 8)), ('!', (8, 9))]
"""

from __future__ import annotations

import regex

from .base import component_from_json
from .byte_level import BYTE_TO_CHAR, GPT2_PATTERN, ByteLevelSettings, to_byte_chars
from .normalized_string import WHITESPACE, NormalizedString
from .normalizers import pattern_from_json

# Rust's is_ascii_punctuation() || Unicode P*: `tokenizers`' notion of BERT punctuation.
PUNCT = r"\p{P}!-/:-@\[-`{-~"
BERT_RE = regex.compile(rf"[^{WHITESPACE}{PUNCT}]+|[{PUNCT}]")
NON_WS_RE = regex.compile(rf"[^{WHITESPACE}]+")
WHITESPACE_RE = regex.compile(rf"\w+|[^\w{WHITESPACE}]+")
_PUNCT_CHAR_RE = regex.compile(rf"[{PUNCT}]")
_DIGIT_RE = regex.compile(r"\p{N}")


BEHAVIORS = ("removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous")


def split_spans(text: str, pattern: "regex.Pattern", behavior: str, invert: bool = False) -> list[tuple[int, int]]:
    """Cut text at the matches of pattern; `behavior` says what becomes of the matches.

    >>> split_spans("a-b--c", regex.compile("-"), "merged_with_next")
    [(0, 1), (1, 3), (3, 4), (4, 6)]
    """
    parts, prev = [], 0  # (start, end, is_match), covering the text
    for m in pattern.finditer(text):
        a, b = m.span()
        if a == b:
            continue
        if prev < a:
            parts.append((prev, a, invert))
        parts.append((a, b, not invert))
        prev = b
    if prev < len(text):
        parts.append((prev, len(text), invert))
    if behavior == "isolated":
        return [(a, b) for a, b, _ in parts]
    if behavior == "removed":
        return [(a, b) for a, b, m in parts if not m]
    out: list[list[int]] = []
    if behavior == "merged_with_previous":  # a match joins the non-match before it
        last_match = False
        for a, b, m in parts:
            if m and not last_match and out:
                out[-1][1] = b
            else:
                out.append([a, b])
            last_match = m
    elif behavior == "merged_with_next":
        pending = None  # start of a match waiting for what follows
        for a, b, m in parts:
            if m:
                if pending is not None:
                    out.append([pending, a])
                pending = a
            elif pending is not None:
                out.append([pending, b])
                pending = None
            else:
                out.append([a, b])
        if pending is not None:
            out.append([pending, len(text)])
    elif behavior == "contiguous":
        last_match = False
        for a, b, m in parts:
            if m and last_match and out:
                out[-1][1] = b
            else:
                out.append([a, b])
            last_match = m
    else:
        raise ValueError(f"unknown split behavior {behavior!r}; expected one of {BEHAVIORS}")
    return [(a, b) for a, b in out]


def _cut(ns: NormalizedString, spans) -> list[NormalizedString]:
    if ns.spans is None:  # fast path: plain slices of the original
        s, base, orig = ns.normalized, ns.offset, ns.original
        return [NormalizedString(orig, s[a:b], None, base + a) for a, b in spans]
    return [ns.slice(a, b) for a, b in spans]


class PreTokenizer:
    """Base class: `pre_tokenize(pieces) -> pieces`, each piece a NormalizedString."""

    def split(self, ns: NormalizedString) -> list[NormalizedString]:
        raise NotImplementedError

    def pre_tokenize(self, pieces: list[NormalizedString]) -> list[NormalizedString]:
        out = []
        for ns in pieces:
            out.extend(p for p in self.split(ns) if p.normalized)
        return out

    def pre_tokenize_str(self, text: str) -> list[tuple[str, tuple[int, int]]]:
        return [(p.normalized, p.offsets_original()) for p in self.pre_tokenize([NormalizedString(text)])]

    def to_json(self) -> dict:
        return {"type": type(self).__name__}

    @classmethod
    def from_json(cls, data: dict) -> "PreTokenizer":
        return cls()

    def __repr__(self):
        return f"{type(self).__name__}({self.to_json()})"


class _RegexFind(PreTokenizer):
    """Keep the matches of one compiled pattern, drop the rest."""

    pattern: "regex.Pattern"

    def split(self, ns):
        return _cut(ns, [m.span() for m in self.pattern.finditer(ns.normalized)])


class BertPreTokenizer(_RegexFind):
    """Split on whitespace (dropped) and isolate every punctuation char."""

    pattern = BERT_RE


class Whitespace(_RegexFind):
    r"""`\w+|[^\w\s]+`: words and runs of symbols."""

    pattern = WHITESPACE_RE


class WhitespaceSplit(_RegexFind):
    pattern = NON_WS_RE


class Punctuation(PreTokenizer):
    def __init__(self, behavior: str = "isolated"):
        self.behavior = behavior

    def split(self, ns):
        return _cut(ns, split_spans(ns.normalized, _PUNCT_CHAR_RE, self.behavior))

    def to_json(self):
        return {"type": "Punctuation", "behavior": _json_behavior(self.behavior)}

    @classmethod
    def from_json(cls, data):
        return cls(_behavior(data.get("behavior", "Isolated")))


class Digits(PreTokenizer):
    def __init__(self, individual_digits: bool = False):
        self.individual_digits = individual_digits

    def split(self, ns):
        behavior = "isolated" if self.individual_digits else "contiguous"
        return _cut(ns, split_spans(ns.normalized, _DIGIT_RE, behavior))

    def to_json(self):
        return {"type": "Digits", "individual_digits": self.individual_digits}

    @classmethod
    def from_json(cls, data):
        return cls(data.get("individual_digits", False))


class CharDelimiterSplit(PreTokenizer):
    def __init__(self, delimiter: str):
        self.delimiter = delimiter
        self._re = regex.compile(regex.escape(delimiter))

    def split(self, ns):
        return _cut(ns, split_spans(ns.normalized, self._re, "removed"))

    def to_json(self):
        return {"type": "CharDelimiterSplit", "delimiter": self.delimiter}

    @classmethod
    def from_json(cls, data):
        return cls(data["delimiter"])


class Split(PreTokenizer):
    def __init__(self, pattern: str | dict, behavior: str = "isolated", invert: bool = False):
        self.pattern_json = pattern if isinstance(pattern, dict) else {"String": pattern}
        self.pattern, _ = pattern_from_json(self.pattern_json, "Split pre-tokenizer")
        self.behavior = _behavior(behavior)
        self.invert = invert

    def split(self, ns):
        return _cut(ns, split_spans(ns.normalized, self.pattern, self.behavior, self.invert))

    def to_json(self):
        return {
            "type": "Split",
            "pattern": self.pattern_json,
            "behavior": _json_behavior(self.behavior),
            "invert": self.invert,
        }

    @classmethod
    def from_json(cls, data):
        return cls(data["pattern"], data.get("behavior", "Isolated"), data.get("invert", False))


def byte_map(ns: NormalizedString) -> NormalizedString:
    """Replace every char by the stand-ins of its UTF-8 bytes; each byte keeps the char's span."""
    s = ns.normalized
    if s.isascii():
        ns.normalized = to_byte_chars(s)
        return ns
    old = ns.alignments
    align = []
    for c, span in zip(s, old):
        n = len(c.encode("utf-8"))
        align.append(span) if n == 1 else align.extend([span] * n)
    ns.set(to_byte_chars(s), align)
    return ns


class ByteLevel(ByteLevelSettings, PreTokenizer):
    """GPT-2 / RoBERTa: optional prefix space, the GPT-2 regex split, then bytes -> stand-ins.

    `trim_offsets` is only read when ByteLevel is used as a post-processor; it is kept here
    so a tokenizer.json round-trips.
    """

    def __init__(self, add_prefix_space: bool = True, trim_offsets: bool = True, use_regex: bool = True):
        self.add_prefix_space = add_prefix_space
        self.trim_offsets = trim_offsets
        self.use_regex = use_regex

    def split(self, ns):
        if self.add_prefix_space and not ns.normalized.startswith(" "):
            ns.prepend(" ")
        if self.use_regex:
            pieces = _cut(ns, [m.span() for m in GPT2_PATTERN.finditer(ns.normalized)])
        else:
            pieces = [ns]
        return [byte_map(p) for p in pieces]

    @staticmethod
    def alphabet() -> list[str]:
        return list(BYTE_TO_CHAR.values())


class Metaspace(PreTokenizer):
    """SentencePiece style: ' ' -> '▁', a '▁' in front, split before each '▁'."""

    def __init__(self, replacement: str = "▁", prepend_scheme: str = "always", split: bool = True):
        if prepend_scheme not in ("always", "first", "never"):
            raise ValueError(f"Metaspace prepend_scheme must be 'always', 'first' or 'never', got {prepend_scheme!r}")
        if len(replacement) != 1:
            raise ValueError(f"Metaspace replacement must be one char, got {replacement!r}")
        self.replacement = replacement
        self.prepend_scheme = prepend_scheme
        self.split_on_replacement = split
        self._space = regex.compile(" ")
        self._rep = regex.compile(regex.escape(replacement))

    def split(self, ns):
        ns.replace(self._space, self.replacement)
        if not ns.normalized.startswith(self.replacement):
            if self.prepend_scheme == "always" or (self.prepend_scheme == "first" and ns.offsets_original()[0] == 0):
                ns.prepend(self.replacement)
        if not self.split_on_replacement:
            return [ns]
        return _cut(ns, split_spans(ns.normalized, self._rep, "merged_with_next"))

    def to_json(self):
        return {
            "type": "Metaspace",
            "replacement": self.replacement,
            "prepend_scheme": self.prepend_scheme,
            "split": self.split_on_replacement,
        }

    @classmethod
    def from_json(cls, data):
        scheme = data.get("prepend_scheme")
        if scheme is None:  # files written before prepend_scheme existed
            scheme = "always" if data.get("add_prefix_space", True) else "never"
        return cls(data.get("replacement", "▁"), scheme, data.get("split", True))


class Sequence(PreTokenizer):
    def __init__(self, pretokenizers: list[PreTokenizer]):
        self.pretokenizers = list(pretokenizers)

    def pre_tokenize(self, pieces):
        for p in self.pretokenizers:
            pieces = p.pre_tokenize(pieces)
        return pieces

    def to_json(self):
        return {"type": "Sequence", "pretokenizers": [p.to_json() for p in self.pretokenizers]}

    @classmethod
    def from_json(cls, data):
        return cls([pre_tokenizer_from_json(d) for d in data["pretokenizers"]])


def _behavior(name: str) -> str:
    """'MergedWithNext' (tokenizer.json) or 'merged_with_next' -> 'merged_with_next'."""
    snake = regex.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    if snake not in BEHAVIORS:
        raise ValueError(f"unknown split behavior {name!r}; expected one of {BEHAVIORS}")
    return snake


def _json_behavior(snake: str) -> str:
    return "".join(w.capitalize() for w in snake.split("_"))


PRE_TOKENIZERS = {
    "BertPreTokenizer": BertPreTokenizer,
    "ByteLevel": ByteLevel,
    "Metaspace": Metaspace,
    "Whitespace": Whitespace,
    "WhitespaceSplit": WhitespaceSplit,
    "Split": Split,
    "Punctuation": Punctuation,
    "Digits": Digits,
    "CharDelimiterSplit": CharDelimiterSplit,
    "Sequence": Sequence,
}


def pre_tokenizer_from_json(data: dict | None) -> PreTokenizer | None:
    return None if data is None else component_from_json("pre_tokenizer", PRE_TOKENIZERS, data)
