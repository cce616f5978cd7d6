"""Decoders: tokens -> text, undoing what the pre-tokenizer and model did to spaces and bytes.

Each decoder maps a list of token strings to a list of strings (`decode_chain`, so decoders
chain in a Sequence); `decode` joins the result.

    >>> WordPiece().decode(["un", "##want", "##ed", ",", "it", "'", "s"])
    "unwanted, it ' s"
"""

from __future__ import annotations

import regex

from .base import component_from_json
from .byte_level import ByteLevelSettings, CHAR_TO_BYTE
from .normalizers import pattern_from_json


class Decoder:
    def decode_chain(self, tokens: list[str]) -> list[str]:
        raise NotImplementedError

    def decode(self, tokens: list[str]) -> str:
        return "".join(self.decode_chain(list(tokens)))

    def to_json(self) -> dict:
        return {"type": type(self).__name__}

    @classmethod
    def from_json(cls, data: dict) -> "Decoder":
        return cls()

    def __repr__(self):
        return f"{type(self).__name__}({self.to_json()})"


def cleanup(text: str) -> str:
    """Undo the spaces BERT's tokenization puts before punctuation and English contractions."""
    for a, b in (
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" do not", " don't"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ):
        text = text.replace(a, b)
    return text


class WordPiece(Decoder):
    """'##' pieces join the previous token, other tokens get a space before them."""

    def __init__(self, prefix: str = "##", cleanup: bool = True):
        self.prefix, self.cleanup = prefix, cleanup

    def decode_chain(self, tokens):
        out, p = [], self.prefix
        for i, t in enumerate(tokens):
            if i:
                t = t[len(p) :] if t.startswith(p) else " " + t
            out.append(cleanup(t) if self.cleanup else t)
        return out

    def to_json(self):
        return {"type": "WordPiece", "prefix": self.prefix, "cleanup": self.cleanup}

    @classmethod
    def from_json(cls, data):
        return cls(data.get("prefix", "##"), data.get("cleanup", True))


class ByteLevel(ByteLevelSettings, Decoder):
    """Stand-in chars -> bytes -> UTF-8 (invalid sequences become U+FFFD)."""

    def __init__(self, add_prefix_space: bool = True, trim_offsets: bool = True, use_regex: bool = True):
        self.add_prefix_space, self.trim_offsets, self.use_regex = add_prefix_space, trim_offsets, use_regex

    def decode_chain(self, tokens):
        buf = bytearray()
        for t in tokens:
            try:
                buf.extend(CHAR_TO_BYTE[c] for c in t)
            except KeyError:  # not a byte-level token (e.g. an added token): its own UTF-8
                buf.extend(t.encode("utf-8"))
        return [buf.decode("utf-8", errors="replace")]


class Metaspace(Decoder):
    """'▁' -> ' '; with a prepend scheme, the first token's '▁' are dropped (as `tokenizers`)."""

    def __init__(self, replacement: str = "▁", prepend_scheme: str = "always", split: bool = True):
        self.replacement, self.prepend_scheme, self.split = replacement, prepend_scheme, split

    def decode_chain(self, tokens):
        r = self.replacement
        out = []
        for i, t in enumerate(tokens):
            if i == 0 and self.prepend_scheme != "never":
                out.append(t.replace(r, ""))
            else:
                out.append(t.replace(r, " "))
        return out

    def to_json(self):
        return {
            "type": "Metaspace",
            "replacement": self.replacement,
            "prepend_scheme": self.prepend_scheme,
            "split": self.split,
        }

    @classmethod
    def from_json(cls, data):
        scheme = data.get("prepend_scheme")
        if scheme is None:
            scheme = "always" if data.get("add_prefix_space", True) else "never"
        return cls(data.get("replacement", "▁"), scheme, data.get("split", True))


class BPEDecoder(Decoder):
    """Classic BPE with an end-of-word suffix: the suffix becomes a space (none after the last)."""

    def __init__(self, suffix: str = "</w>"):
        self.suffix = suffix

    def decode_chain(self, tokens):
        n = len(tokens)
        return [t.replace(self.suffix, "" if i == n - 1 else " ") for i, t in enumerate(tokens)]

    def to_json(self):
        return {"type": "BPEDecoder", "suffix": self.suffix}

    @classmethod
    def from_json(cls, data):
        return cls(data.get("suffix", "</w>"))


class Replace(Decoder):
    def __init__(self, pattern: str | dict, content: str):
        self.pattern_json = pattern if isinstance(pattern, dict) else {"String": pattern}
        self.pattern, _ = pattern_from_json(self.pattern_json, "Replace decoder")
        self.content = content

    def decode_chain(self, tokens):
        return [self.pattern.sub(lambda m: self.content, t) for t in tokens]

    def to_json(self):
        return {"type": "Replace", "pattern": self.pattern_json, "content": self.content}

    @classmethod
    def from_json(cls, data):
        return cls(data["pattern"], data["content"])


class Strip(Decoder):
    """Remove up to `start` leading and `stop` trailing copies of `content` from every token."""

    def __init__(self, content: str = " ", start: int = 0, stop: int = 0):
        self.content, self.start, self.stop = content, start, stop

    def decode_chain(self, tokens):
        out = []
        for t in tokens:
            a, b = 0, len(t)
            for _ in range(self.start):
                if t[a : a + 1] == self.content:
                    a += 1
                else:
                    break
            for _ in range(self.stop):
                if b > a and t[b - 1 : b] == self.content:
                    b -= 1
                else:
                    break
            out.append(t[a:b])
        return out

    def to_json(self):
        return {"type": "Strip", "content": self.content, "start": self.start, "stop": self.stop}

    @classmethod
    def from_json(cls, data):
        return cls(data.get("content", " "), data.get("start", 0), data.get("stop", 0))


class Fuse(Decoder):
    def decode_chain(self, tokens):
        return ["".join(tokens)]


_BYTE_TOKEN = regex.compile(r"<0x([0-9A-F]{2})>")


class ByteFallback(Decoder):
    """'<0xE2><0x82><0xAC>' -> '€'; an invalid byte run gives one U+FFFD per byte token."""

    def decode_chain(self, tokens):
        out, pending = [], bytearray()

        def flush():
            if pending:
                try:
                    out.append(pending.decode("utf-8"))
                except UnicodeDecodeError:
                    out.extend("\ufffd" * len(pending))
                pending.clear()

        for t in tokens:
            m = _BYTE_TOKEN.fullmatch(t)
            if m:
                pending.append(int(m.group(1), 16))
            else:
                flush()
                out.append(t)
        flush()
        return out


class Sequence(Decoder):
    def __init__(self, decoders: list[Decoder]):
        self.decoders = list(decoders)

    def decode_chain(self, tokens):
        for d in self.decoders:
            tokens = d.decode_chain(tokens)
        return tokens

    def to_json(self):
        return {"type": "Sequence", "decoders": [d.to_json() for d in self.decoders]}

    @classmethod
    def from_json(cls, data):
        return cls([decoder_from_json(d) for d in data["decoders"]])


DECODERS = {
    "WordPiece": WordPiece,
    "ByteLevel": ByteLevel,
    "Metaspace": Metaspace,
    "BPEDecoder": BPEDecoder,
    "Replace": Replace,
    "Strip": Strip,
    "Fuse": Fuse,
    "ByteFallback": ByteFallback,
    "Sequence": Sequence,
}


def decoder_from_json(data: dict | None) -> Decoder | None:
    return None if data is None else component_from_json("decoder", DECODERS, data)
