"""Post-processing a batch of single texts in one step: the Frame, and Encodings made when read.

When post-processing one sequence only puts special tokens around it (BERT's and RoBERTa's
templates, a ByteLevel post-processor, none at all), it is a `Frame`, and `framed_encodings`
builds every text's finished, padded Encoding straight from the batch's Flat. Each is a
`DeferredEncoding` that makes a column when it is first read, as `tokenizers` makes its lists
when they are read: a batch of padded encodings is mostly columns nobody reads, and the
garbage collector walks every list that exists.
"""

from __future__ import annotations

from itertools import repeat
from typing import NamedTuple

from ..encoding import Encoding
from ..post_processors import BertProcessing, ByteLevel, RobertaProcessing, TemplateProcessing
from .words import Flat


class Frame(NamedTuple):
    """What post-processing one sequence amounts to, when it only puts special tokens around
    it: `before` + the sequence (type id `type_id`, sequence id 0) + `after`, the sequence's
    offsets first trimmed by post_processors.trimmed_offsets with add_prefix_space=trim unless
    trim is None."""

    before: Encoding
    type_id: int
    after: Encoding
    trim: bool | None


def frame_of(post_processor, add_special_tokens: bool = True) -> Frame | None:
    """post_processor.process(encoding) of one sequence as a Frame, when it is one (exact types
    only: a subclass may do more); else None."""
    if post_processor is None:
        return Frame(Encoding(), 0, Encoding(), None)
    if not add_special_tokens:
        return None
    kind = type(post_processor)
    if kind is ByteLevel:
        return Frame(
            Encoding(), 0, Encoding(), post_processor.add_prefix_space if post_processor.trim_offsets else None
        )
    if kind is TemplateProcessing or kind is BertProcessing or kind is RobertaProcessing:
        parts = post_processor.single_parts()
        if parts is None:
            return None
        trim = None
        if kind is RobertaProcessing and post_processor.trim_offsets:
            trim = post_processor.add_prefix_space
        return Frame(*parts, trim)
    return None


class DeferredEncoding(Encoding):
    """An Encoding of n tokens whose column f is source.column(f, index), made when first read;
    after that, a plain Encoding."""

    __slots__ = ("_source", "_index", "_n")

    def __init__(self, source: "FramedBatch", index: int, n: int):
        super().__init__()
        self._ids = self._tokens = self._offsets = self._word_ids = self._type_ids = None
        self._special_tokens_mask = self._attention_mask = self._sequence_ids = None
        self._source, self._index, self._n = source, index, n

    def __len__(self):
        ids = self._ids
        return self._n if ids is None else len(ids)


def _deferred_column(name: str) -> property:
    slot = "_" + name

    def get(self):
        value = getattr(self, slot)
        if value is None:  # made now
            value = self._source.column(name, self._index)
            setattr(self, slot, value)
        return value

    def set(self, value):
        setattr(self, slot, value)

    return property(get, set)


for _name in Encoding.FIELDS:
    setattr(DeferredEncoding, _name, _deferred_column(_name))


class FramedBatch:
    """The source of the deferred Encodings framed_encodings makes: text k's column, built from
    the batch's Flat as process() then pad() would make it. (The Flat stays in memory while
    any encoding of the batch is kept: about one more copy of its unpadded ids, tokens,
    offsets and word ids.)"""

    def __init__(self, flat: Flat, frame: Frame, pad_to: int, pad: dict | None):
        self.flat, self.frame, self.pad_to = flat, frame, pad_to
        self.pad_id, self.pad_token, self.pad_type = (
            (pad["pad_id"], pad["pad_token"], pad["pad_type_id"]) if pad else (0, "", 0)
        )

    def column(self, name: str, k: int) -> list:
        bounds = self.flat.bounds
        s, e = bounds[k], bounds[k + 1]
        b, type_id, a, _ = self.frame
        nb, n, na = len(b), e - s, len(a)
        k_pad = max(self.pad_to - nb - n - na, 0)
        if name == "ids":
            return [*b.ids, *self.flat.ids[s:e], *a.ids, *repeat(self.pad_id, k_pad)]
        if name == "tokens":
            return [*b.tokens, *self.flat.tokens[s:e], *a.tokens, *repeat(self.pad_token, k_pad)]
        if name == "offsets":
            return [*b.offsets, *self.flat.offsets[s:e], *a.offsets, *repeat((0, 0), k_pad)]
        if name == "word_ids":
            return [*b.word_ids, *self.flat.words[s:e], *a.word_ids, *repeat(None, k_pad)]
        if name == "type_ids":
            return [*b.type_ids, *repeat(type_id, n), *a.type_ids, *repeat(self.pad_type, k_pad)]
        if name == "special_tokens_mask":
            return [*b.special_tokens_mask, *repeat(0, n), *a.special_tokens_mask, *repeat(1, k_pad)]
        if name == "attention_mask":
            return [*repeat(1, nb + n + na), *repeat(0, k_pad)]
        if name == "sequence_ids":
            return [*b.sequence_ids, *repeat(0, n), *a.sequence_ids, *repeat(None, k_pad)]
        raise KeyError(name)


def framed_encodings(flat: Flat, which, frame: Frame, pad_to: int, pad: dict | None) -> list[Encoding]:
    """The Encoding of each text k in `which`, post-processed by `frame` (flat's offsets are
    already trimmed) and padded on the right to pad_to tokens, as the pad dict says (see
    truncation.padding_settings): what process() then pad() would make of it, in one step.
    Each is a DeferredEncoding: its columns are made from the batch when first read."""
    batch = FramedBatch(flat, frame, pad_to, pad)
    bounds, n_frame = flat.bounds, len(frame.before) + len(frame.after)
    return [DeferredEncoding(batch, k, max(bounds[k + 1] - bounds[k] + n_frame, pad_to)) for k in which]
