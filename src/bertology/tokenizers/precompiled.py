"""SentencePiece's precompiled normalization table ("precompiled_charsmap") as a Normalizer.

The blob is `<uint32 LE: trie size in bytes><double-array trie><replacement strings>`. The trie
(Darts-clone's double array) maps UTF-8 byte sequences to an offset into the replacement blob,
where a NUL-terminated replacement string starts. Two matching disciplines exist:

- SentencePiece walks the UTF-8 text and, at each position, rewrites the longest matching key
  (`CharsMap.normalize_spm`, used by `sentencepiece_model.load_spm`);
- HF tokenizers' `Precompiled` walks grapheme clusters: a short cluster (< 6 bytes) whose start
  matches a key is replaced as a whole by the first (shortest) match; otherwise each char is
  looked up on its own (`Precompiled.normalize`, the tokenizer.json normalizer).
"""

from __future__ import annotations

import base64
import struct

import regex

from .normalized_string import NormalizedString, Normalizer

_GRAPHEME = regex.compile(r"\X")


class CharsMap:
    """A parsed precompiled_charsmap: prefix search over UTF-8 bytes, replacement lookup."""

    def __init__(self, blob: bytes, source: str = "precompiled_charsmap"):
        self.blob = bytes(blob)
        if not blob:  # the "identity" rule: no table, nothing is rewritten
            self.units, self.normalized = [], b""
            return
        if len(blob) < 4:
            raise ValueError(f"{source}: {len(blob)} bytes, too short for the trie size header")
        (size,) = struct.unpack_from("<I", blob, 0)
        if size % 4 or size > len(blob) - 4:
            raise ValueError(
                f"{source}: trie size {size} (at offset 0) does not fit a {len(blob)}-byte blob of 4-byte units"
            )
        self.units = list(struct.unpack_from(f"<{size // 4}I", blob, 4))
        self.normalized = blob[4 + size :]
        self._cache: dict[bytes, list[tuple[int, int]]] = {}

    def prefix_matches(self, data: bytes, start: int = 0) -> list[tuple[int, int]]:
        """(length, replacement offset) of every key that is a prefix of data[start:], shortest first.

        >>> cm = CharsMap(build_charsmap({"a": "b", "ab": "c"}))
        >>> [(n, cm.replacement(v)) for n, v in cm.prefix_matches(b"abz")]
        [(1, 'b'), (2, 'c')]
        """
        units = self.units
        if not units:
            return []
        results = []
        pos = _offset(units[0])
        for i in range(start, len(data)):
            byte = data[i]
            if byte == 0:
                break  # NUL never appears in a key
            pos ^= byte
            if pos >= len(units):
                break
            unit = units[pos]
            if unit & 0x800000FF != byte:  # label mismatch: no child for this byte
                break
            pos ^= _offset(unit)
            if (unit >> 8) & 1:  # has a leaf: a key ends here
                results.append((i - start + 1, units[pos] & 0x7FFFFFFF))
        return results

    def replacement(self, offset: int) -> str:
        end = self.normalized.find(b"\x00", offset)
        if offset >= len(self.normalized) or end < 0:
            raise ValueError(
                f"precompiled_charsmap: replacement offset {offset} is outside the "
                f"{len(self.normalized)}-byte string blob"
            )
        return self.normalized[offset:end].decode("utf-8")

    def lookup_first(self, text: str) -> str | None:
        """tokenizers' rule: the replacement of the shortest key that is a prefix of text."""
        found = self.prefix_matches(text.encode("utf-8"))
        return self.replacement(found[0][1]) if found else None

    def normalize_spm(self, text: str) -> list[tuple[str, int, int]]:
        """SentencePiece's rule: greedy longest match; returns (replacement, char start, char end).

        Characters no key matches come back unchanged, one per entry.
        >>> CharsMap(build_charsmap({"a": "b", "ab": "c"})).normalize_spm("aab")
        [('b', 0, 1), ('c', 1, 3)]
        """
        data = text.encode("utf-8")
        # byte offset -> char index, for the char-aligned spans the pipeline wants
        char_at = {}
        b = 0
        for i, c in enumerate(text):
            char_at[b] = i
            b += len(c.encode("utf-8"))
        char_at[b] = len(text)
        out, pos = [], 0
        while pos < len(data):
            found = self.prefix_matches(data, pos)
            ci = char_at[pos]
            if found and found[-1][0] > 0 and pos + found[-1][0] in char_at:
                length, value = found[-1]
                out.append((self.replacement(value), ci, char_at[pos + length]))
                pos += length
            else:
                out.append((text[ci], ci, ci + 1))
                pos += len(text[ci].encode("utf-8"))
        return out


def _offset(unit: int) -> int:
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)


class Precompiled(Normalizer):
    """HF tokenizers' `Precompiled` normalizer (ALBERT, XLNet, T5 … tokenizer.json files)."""

    def __init__(self, precompiled_charsmap: bytes):
        self.charsmap = CharsMap(precompiled_charsmap)

    def normalize(self, ns: NormalizedString) -> None:
        if not self.charsmap.units:
            return
        text = ns.normalized
        old = ns.alignments
        new_chars: list[str] = []
        align: list[tuple[int, int]] = []
        modified = False
        pos = 0  # char index in text
        for m in _GRAPHEME.finditer(text):
            g = m.group()
            norm = self.charsmap.lookup_first(g) if len(g.encode("utf-8")) < 6 else None
            if norm is not None:
                modified = True
                _replace(new_chars, align, old, pos, len(g), norm)
            else:
                for k, c in enumerate(g):
                    norm = self.charsmap.lookup_first(c)
                    if norm is None:
                        new_chars.append(c)
                        align.append(old[pos + k])
                    else:
                        modified = True
                        _replace(new_chars, align, old, pos + k, 1, norm)
            pos += len(g)
        if modified:
            ns.set("".join(new_chars), align)

    def to_json(self) -> dict:
        return {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(self.charsmap.blob).decode("ascii")}

    @classmethod
    def from_json(cls, data: dict) -> "Precompiled":
        raw = data["precompiled_charsmap"]
        try:
            blob = base64.b64decode(raw or "", validate=True)
        except (ValueError, TypeError) as e:
            raise ValueError(f"Precompiled normalizer: precompiled_charsmap is not base64 ({e})") from None
        return cls(blob)

    def __repr__(self):
        return f"Precompiled({len(self.charsmap.blob)} bytes)"


def _replace(
    chars: list[str], align: list[tuple[int, int]], old: list[tuple[int, int]], start: int, count: int, norm: str
) -> None:
    """Alignment of `count` old chars rewritten as `norm`, the way tokenizers assigns it:
    new chars map one-to-one onto the old ones; extra new chars share the last old char's span;
    when shrinking, the last new char takes the span of its old char and the rest is dropped
    (an empty replacement drops the old chars altogether)."""
    for k, c in enumerate(norm):
        chars.append(c)
        align.append(old[start + min(k, count - 1)])


def build_charsmap(rules: dict[str, str]) -> bytes:
    """A precompiled_charsmap for `rules` (key -> replacement), for tests and custom tables.

    Builds a Darts-style double array: units are `(pos ^ base) << 10 | has_leaf << 8 | label`, a leaf
    unit (child at byte 0) holds the replacement offset. Offsets are kept below 2**21 so that
    the extended-offset bit is never needed.
    >>> CharsMap(build_charsmap({"x": "yz"})).lookup_first("xq")
    'yz'
    """
    blob, value_of = b"", {}
    for key in sorted(rules):
        value_of[key] = len(blob)
        blob += rules[key].encode("utf-8") + b"\x00"
    keys = sorted(k.encode("utf-8") for k in rules)
    if any(not k or b"\x00" in k for k in keys):
        raise ValueError("charsmap keys must be non-empty and contain no NUL")
    keyset = set(keys)
    units = [0] * 256
    used, bases = {0}, set()

    def children(prefix: bytes) -> list[int]:
        return sorted({k[len(prefix)] for k in keys if k.startswith(prefix) and len(k) > len(prefix)})

    def place(node: int, prefix: bytes) -> None:
        labels = children(prefix)
        leaf = prefix in keyset
        slots = ([0] if leaf else []) + labels
        base = 1
        # a base serves one node only: then slot base ^ label with the right label is our child
        while base in bases or any((base ^ s) in used for s in slots):
            base += 1
        bases.add(base)
        if node ^ base >= 1 << 21:
            raise ValueError("charsmap too large for this simple builder")
        while len(units) <= max(base ^ s for s in slots) + 256:
            units.extend([0] * 256)
        units[node] |= (node ^ base) << 10 | (1 << 8 if leaf else 0)  # offsets are relative
        for s in slots:
            used.add(base ^ s)
        if leaf:
            units[base] = 0x80000000 | value_of[prefix.decode("utf-8")]  # leaf: value, high bit set
        for lab in labels:
            units[base ^ lab] = lab
        for lab in labels:
            place(base ^ lab, prefix + bytes([lab]))

    place(0, b"")
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + blob
