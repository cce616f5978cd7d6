"""Encoding: the output of a tokenizer for one input (a sequence or a pair).

Offsets are [start, end) character spans into the ORIGINAL text (special tokens and padding
get (0, 0)); word_ids say which pre-token each token came from (None for special tokens);
sequence_ids say which input of a pair (None for special tokens and padding). When truncation
cuts an encoding, what was cut is kept in `overflowing`, so nothing is lost silently.
"""

from __future__ import annotations

from itertools import chain, repeat
from operator import attrgetter
from typing import NamedTuple


class EncodedIds(NamedTuple):
    """A batch of texts as ids alone (Tokenizer.encode_batch_ids): what a token store keeps.

    ids: every text's ids (no special tokens), one text after the other; lengths: tokens of each
    text; word_sizes: tokens of each word (of those with any), the texts' words one after the
    other, so that the running sum of word_sizes marks where each word begins.
    """

    ids: list[int]
    lengths: list[int]
    word_sizes: list[int]


class Encoding:
    """One input's tokens: eight equal-length columns (FIELDS) and the overflowing windows.

    The columns are plain lists, read and changed in place like attributes (properties over
    slots, so that the fast encoder's DeferredEncoding can make them when first read).
    """

    FIELDS = (
        "ids",
        "tokens",
        "offsets",
        "word_ids",
        "type_ids",
        "special_tokens_mask",
        "attention_mask",
        "sequence_ids",
    )
    __slots__ = tuple("_" + f for f in FIELDS) + ("overflowing",)
    __hash__ = None  # mutable

    def __init__(
        self,
        ids=None,
        tokens=None,
        offsets=None,
        word_ids=None,
        type_ids=None,
        special_tokens_mask=None,
        attention_mask=None,
        sequence_ids=None,
        overflowing: list["Encoding"] | None = None,
    ):
        self._ids = [] if ids is None else ids
        self._tokens = [] if tokens is None else tokens
        self._offsets = [] if offsets is None else offsets
        self._word_ids = [] if word_ids is None else word_ids
        self._type_ids = [] if type_ids is None else type_ids
        self._special_tokens_mask = [] if special_tokens_mask is None else special_tokens_mask
        self._attention_mask = [] if attention_mask is None else attention_mask
        self._sequence_ids = [] if sequence_ids is None else sequence_ids
        self.overflowing = [] if overflowing is None else overflowing

    def __len__(self):
        return len(self.ids)

    def __eq__(self, other):
        if not isinstance(other, Encoding):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self.FIELDS) and self.overflowing == other.overflowing

    def __repr__(self):
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.FIELDS)
        return f"Encoding({fields}, overflowing={self.overflowing!r})"

    def __reduce__(self):
        # Offsets travel as one flat list of ints, which pickles in about half the time of a
        # list of tuples (encode_batch's worker processes send their encodings back this way).
        return _from_flat, (
            self.ids,
            self.tokens,
            list(chain.from_iterable(self.offsets)),
            self.word_ids,
            self.type_ids,
            self.special_tokens_mask,
            self.attention_mask,
            self.sequence_ids,
            self.overflowing,
        )

    @property
    def n_sequences(self) -> int:
        return len({s for s in self.sequence_ids if s is not None})

    @classmethod
    def special(cls, ids: list[int], tokens: list[str], type_id: int) -> "Encoding":
        n = len(ids)
        return cls(list(ids), list(tokens), [(0, 0)] * n, [None] * n, [type_id] * n, [1] * n, [1] * n, [None] * n)

    def copy(self) -> "Encoding":
        return Encoding(*(list(getattr(self, f)) for f in self.FIELDS), [o.copy() for o in self.overflowing])

    def _slice(self, a: int, b: int) -> "Encoding":
        return Encoding(*(getattr(self, f)[a:b] for f in self.FIELDS))

    def set_sequence_id(self, seq: int) -> None:
        self.sequence_ids = [seq] * len(self.ids)

    def merge_with(self, other: "Encoding") -> None:
        """Append other; overflowing parts combine as `tokenizers` combines them."""
        overflowing = []
        for mine in self.overflowing:
            o = mine.copy()
            o.merge_with(other.copy())
            overflowing.append(o)
            for theirs in other.overflowing:
                o = mine.copy()
                o.merge_with(theirs.copy())
                overflowing.append(o)
        for theirs in other.overflowing:
            # (`tokenizers` also nests our own overflowing inside these; we keep one flat level)
            o = self.copy()
            o.overflowing = []
            o.merge_with(theirs.copy())
            overflowing.append(o)
        for f in self.FIELDS:
            getattr(self, f).extend(getattr(other, f))
        self.overflowing = overflowing

    @classmethod
    def merge(cls, encodings: list["Encoding"]) -> "Encoding":
        out = cls()
        for e in encodings:
            out.merge_with(e)
        return out

    def truncate(self, max_length: int, stride: int = 0, direction: str = "right") -> None:
        """Keep max_length tokens; the rest goes to `overflowing` as windows overlapping by stride."""
        n = len(self)
        if max_length >= n:
            return
        if max_length == 0:
            whole = self._slice(0, n)
            for f in self.FIELDS:
                setattr(self, f, [])
            self.overflowing = [whole]
            return
        if stride >= max_length:
            raise ValueError(
                f"truncation stride ({stride}) must be smaller than the length kept ({max_length}; "
                "special tokens are already subtracted)"
            )
        step = max_length - stride
        windows = []
        if direction == "right":
            for start in range(0, n, step):
                stop = min(start + max_length, n)
                windows.append((start, stop))
                if stop == n:
                    break
        elif direction == "left":
            for stop in range(n, 0, -step):
                start = max(stop - max_length, 0)
                windows.append((start, stop))
                if start == 0:
                    break
        else:
            raise ValueError(f"truncation direction must be 'left' or 'right', got {direction!r}")
        parts = [self._slice(a, b) for a, b in windows]
        main = parts[0]
        for f in self.FIELDS:
            setattr(self, f, getattr(main, f))
        self.overflowing = parts[1:]

    def pad(
        self, length: int, pad_id: int = 0, pad_type_id: int = 0, pad_token: str = "[PAD]", direction: str = "right"
    ) -> None:
        for o in self.overflowing:
            o.pad(length, pad_id, pad_type_id, pad_token, direction)
        k = length - len(self)
        if k <= 0:
            return
        # one pad value per field, in FIELDS order
        values = (pad_id, pad_token, (0, 0), None, pad_type_id, 1, 0, None)
        if direction == "right":
            for f, v in zip(self.FIELDS, values):
                getattr(self, f).extend(repeat(v, k))
        elif direction == "left":
            for f, v in zip(self.FIELDS, values):
                setattr(self, f, [v] * k + getattr(self, f))
        else:
            raise ValueError(f"padding direction must be 'left' or 'right', got {direction!r}")

    def char_to_token(self, char: int, sequence: int = 0) -> int | None:
        for i, ((a, b), s) in enumerate(zip(self.offsets, self.sequence_ids)):
            if s == sequence and a <= char < b:
                return i
        return None


def _column(name: str) -> property:
    slot = "_" + name

    def set(self, value):
        setattr(self, slot, value)

    return property(attrgetter(slot), set)


for _name in Encoding.FIELDS:
    setattr(Encoding, _name, _column(_name))


def _from_flat(ids, tokens, flat_offsets, *rest) -> Encoding:
    """Encoding.__reduce__'s inverse: [a0, b0, a1, b1, ...] -> [(a0, b0), (a1, b1), ...]."""
    it = iter(flat_offsets)
    return Encoding(ids, tokens, list(zip(it, it)), *rest)


def model_tensors(encodings: list[Encoding]) -> dict:
    """input_ids, token_type_ids, attention_mask of equal-length encodings as (rows, T) torch tensors."""
    import torch  # only when tensors are asked for: the tokenizer itself needs no torch

    return {
        "input_ids": torch.tensor([e.ids for e in encodings], dtype=torch.long),
        "token_type_ids": torch.tensor([e.type_ids for e in encodings], dtype=torch.long),
        "attention_mask": torch.tensor([e.attention_mask for e in encodings], dtype=torch.long),
    }
