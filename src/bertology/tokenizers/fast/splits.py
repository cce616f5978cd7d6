"""Word splits: a pre-tokenizer that only keeps the matches of one pattern, as one `pattern.split`.

`word_split(pre_tokenizer)` is the one place that knows which pre-tokenizers are of that shape
(BERT's, Whitespace, WhitespaceSplit, ByteLevel without a prefix space); the encoder then cuts
a whole text in C instead of making a NormalizedString per word.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import regex

from ..byte_level import GPT2_PATTERN
from ..normalized_string import WHITESPACE
from ..pre_tokenizers import (
    BERT_RE,
    NON_WS_RE,
    PUNCT,
    WHITESPACE_RE,
    BertPreTokenizer,
    ByteLevel,
    Whitespace,
    WhitespaceSplit,
)


class WordSplit(NamedTuple):
    """What a pre-tokenizer does when all it does is keep the matches of one pattern as words.

    The Tokenizer then cuts a whole text at C speed with `pattern.split(text)`: each pattern
    here is the whole expression in ONE group, so the result alternates [gap, word, gap, ...,
    word, gap] and the running sum of the part lengths gives every word's offset.
    """

    unicode: "regex.Pattern"
    ascii: "re.Pattern"  # the same matches on ASCII-only text; stdlib re is faster there
    byte_level: bool  # the model sees each word as byte stand-ins (to_byte_chars)
    tiles: bool = False  # every char is in a match: the words laid end to end are the text


def _ascii_members(cls: str) -> str:
    """The ASCII chars that the `regex` class `cls` matches, as the body of a stdlib-re class.
    Deriving the set from `regex` itself makes the ASCII pattern equal by construction.

    >>> _ascii_members(r"\\p{N}")
    '0123456789'
    """
    pattern = regex.compile(cls)
    return "".join(re.escape(chr(c)) for c in range(128) if pattern.fullmatch(chr(c)))


def _word_split(unicode_body: str, ascii_body: str, byte_level: bool = False, tiles: bool = False) -> WordSplit:
    return WordSplit(regex.compile(f"({unicode_body})"), re.compile(f"({ascii_body})"), byte_level, tiles)


# The ASCII members of each character class the patterns use (class bodies for stdlib re).
_ASCII_WHITESPACE = _ascii_members(f"[{WHITESPACE}]")  # Rust's whitespace: what BERT splits on
_ASCII_PUNCT = _ascii_members(f"[{PUNCT}]")
_ASCII_SPACE = _ascii_members(r"\s")  # regex's \s: what GPT-2's pattern uses
_ASCII_LETTER = _ascii_members(r"\p{L}")
_ASCII_NUMBER = _ascii_members(r"\p{N}")
_ASCII_WORD = _ascii_members(r"\w")
BERT_SPLIT = _word_split(BERT_RE.pattern, f"[^{_ASCII_WHITESPACE}{_ASCII_PUNCT}]+|[{_ASCII_PUNCT}]")
NON_WS_SPLIT = _word_split(NON_WS_RE.pattern, f"[^{_ASCII_WHITESPACE}]+")
WHITESPACE_SPLIT = _word_split(WHITESPACE_RE.pattern, f"[{_ASCII_WORD}]+|[^{_ASCII_WORD}{_ASCII_WHITESPACE}]+")
# GPT-2's pattern (byte_level.GPT2_PATTERN) spelled with the ASCII classes
GPT2_SPLIT = _word_split(
    GPT2_PATTERN.pattern,
    f"'s|'t|'re|'ve|'m|'ll|'d| ?[{_ASCII_LETTER}]+| ?[{_ASCII_NUMBER}]+"
    f"| ?[^{_ASCII_SPACE}{_ASCII_LETTER}{_ASCII_NUMBER}]+|[{_ASCII_SPACE}]+(?![^{_ASCII_SPACE}])|[{_ASCII_SPACE}]+",
    byte_level=True,
    tiles=True,
)  # (a char is a space, a letter, a number or none of these)


def word_split(pre_tokenizer) -> WordSplit | None:
    """The WordSplit that does what pre_tokenizer does, when it only keeps the matches of a
    pattern (exact types only: a subclass may do more); else None."""
    kind = type(pre_tokenizer)
    if kind is BertPreTokenizer:
        return BERT_SPLIT
    if kind is Whitespace:
        return WHITESPACE_SPLIT
    if kind is WhitespaceSplit:
        return NON_WS_SPLIT
    if kind is ByteLevel and pre_tokenizer.use_regex and not pre_tokenizer.add_prefix_space:
        return GPT2_SPLIT  # (a prefix space would be a char that is not in the original text)
    return None
