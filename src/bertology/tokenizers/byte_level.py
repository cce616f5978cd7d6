"""Byte-level alphabet (GPT-2): every byte gets a printable stand-in character.

Bytes that are already printable Latin-1 map to themselves; the other 68 (controls, space,
some Latin-1 punctuation) map to U+0100 onwards, so ' ' becomes 'Ġ' and '\\n' becomes 'Ċ'.
With 256 base symbols every input encodes and no unknown token is ever needed.

    >>> to_byte_chars("hé ")
    'hÃ©Ġ'
    >>> from_byte_chars("hÃ©Ġ")
    b'h\\xc3\\xa9 '
"""

from __future__ import annotations

import regex


def bytes_to_unicode() -> dict[int, str]:
    """byte -> stand-in char."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, n = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return table


BYTE_TO_CHAR: dict[int, str] = bytes_to_unicode()
CHAR_TO_BYTE: dict[str, int] = {c: b for b, c in BYTE_TO_CHAR.items()}
# str.translate table over Latin-1 code points: decoding UTF-8 bytes as Latin-1 gives one char
# per byte, and one translate call then maps a whole string at C speed.
_LATIN1_TO_BYTE_CHAR = {b: c for b, c in BYTE_TO_CHAR.items()}

# GPT-2's pre-tokenization pattern: contractions, letters, numbers, other symbols, each with an
# optional leading space; whitespace runs keep their last space for the following word.
GPT2_PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def to_byte_chars(text: str) -> str:
    """The UTF-8 bytes of text, one stand-in char per byte."""
    return text.encode("utf-8").decode("latin-1").translate(_LATIN1_TO_BYTE_CHAR)


def from_byte_chars(text: str) -> bytes | None:
    """Inverse of to_byte_chars; None if a char is not in the byte alphabet."""
    try:
        return bytes(CHAR_TO_BYTE[c] for c in text)
    except KeyError:
        return None


class ByteLevelSettings:
    """The three settings tokenizer.json gives every "ByteLevel" stage (pre-tokenizer,
    post-processor, decoder), and their JSON form, shared by the three classes of that name."""

    add_prefix_space: bool
    trim_offsets: bool
    use_regex: bool

    def to_json(self) -> dict:
        return {
            "type": "ByteLevel",
            "add_prefix_space": self.add_prefix_space,
            "trim_offsets": self.trim_offsets,
            "use_regex": self.use_regex,
        }

    @classmethod
    def from_json(cls, data: dict):
        return cls(data.get("add_prefix_space", True), data.get("trim_offsets", True), data.get("use_regex", True))
