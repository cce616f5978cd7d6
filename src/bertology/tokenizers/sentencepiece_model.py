"""SentencePiece .model files without protobuf: a small wire-format reader, and spm_spec().

A .model file is a serialized `ModelProto` (sentencepiece_model.proto):
  1 pieces (repeated: 1 piece string, 2 score float, 3 type enum), 2 trainer_spec,
  3 normalizer_spec (1 name, 2 precompiled_charsmap bytes, 3 add_dummy_prefix,
  4 remove_extra_whitespaces, 5 escape_whitespaces), 4 self_test_data, 5 denormalizer_spec.
Only the fields that change encoding are decoded; the rest are skipped by wire type.

spm_spec(path) describes a tokenizer that encodes as SentencePieceProcessor.encode does
(`Tokenizer.load(path)` builds it):
SentencePieceNormalizer (the charsmap's longest-match rewrite plus SentencePiece's whitespace
rules) -> Unigram over the whole normalized sentence, in float32 (control/unknown/byte/unused
pieces are never matched in text) -> Metaspace decoder.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from .decoders import Metaspace as MetaspaceDecoder
from .normalized_string import NormalizedString, Normalizer
from .precompiled import CharsMap
from .spec import TokenizerSpec
from .unigram import Unigram

PIECE_TYPES = {1: "normal", 2: "unknown", 3: "control", 4: "user_defined", 5: "unused", 6: "byte"}
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}


@dataclass
class TrainerSpec:
    model_type: str = "unigram"
    vocab_size: int = 8000
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    byte_fallback: bool = False
    split_by_whitespace: bool = True
    treat_whitespace_as_suffix: bool = False
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"


@dataclass
class NormalizerSpec:
    name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True


@dataclass
class SentencePieceModel:
    pieces: list[tuple[str, float, str]] = field(default_factory=list)  # (piece, score, type)
    trainer_spec: TrainerSpec = field(default_factory=TrainerSpec)
    normalizer_spec: NormalizerSpec = field(default_factory=NormalizerSpec)


# -- protobuf wire format -------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, source: str):
        self.data, self.source = data, source

    def fail(self, offset: int, what: str):
        raise ValueError(f"{self.source}: malformed SentencePiece model at byte offset {offset}: {what}")

    def varint(self, pos: int, end: int, what: str) -> tuple[int, int]:
        result = shift = 0
        start = pos
        while True:
            if pos >= end:
                self.fail(start, f"truncated varint in {what}")
            b = self.data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result, pos
            shift += 7
            if shift >= 70:
                self.fail(start, f"varint longer than 10 bytes in {what}")

    def fields(self, start: int, end: int, what: str):
        """Yield (field number, wire type, value, offset of the key) of one message."""
        pos = start
        while pos < end:
            at = pos
            key, pos = self.varint(pos, end, what)
            num, wire = key >> 3, key & 7
            if num == 0:
                self.fail(at, f"field number 0 in {what}")
            if wire == 0:
                value, pos = self.varint(pos, end, f"{what} field {num}")
            elif wire == 1:
                if pos + 8 > end:
                    self.fail(at, f"truncated 64-bit field {num} in {what}")
                value, pos = self.data[pos : pos + 8], pos + 8
            elif wire == 2:
                length, pos = self.varint(pos, end, f"{what} field {num} length")
                if pos + length > end:
                    self.fail(at, f"field {num} of {what} claims {length} bytes, only {end - pos} left")
                value, pos = (pos, pos + length), pos + length
            elif wire == 5:
                if pos + 4 > end:
                    self.fail(at, f"truncated 32-bit field {num} in {what}")
                value, pos = self.data[pos : pos + 4], pos + 4
            else:
                self.fail(at, f"unsupported wire type {wire} for field {num} in {what}")
            yield num, wire, value, at

    def text(self, span, at: int, what: str) -> str:
        try:
            return self.data[span[0] : span[1]].decode("utf-8")
        except UnicodeDecodeError:
            self.fail(at, f"{what} is not valid UTF-8")


def _expect(r: _Reader, wire: int, want: int, at: int, what: str):
    if wire != want:
        r.fail(at, f"{what} has wire type {wire}, expected {want}")


def _int32(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def parse_model(data: bytes, source: str = "<bytes>") -> SentencePieceModel:
    """Decode a serialized ModelProto (the contents of a .model file)."""
    r = _Reader(bytes(data), source)
    model = SentencePieceModel()
    for num, wire, value, at in r.fields(0, len(r.data), "ModelProto"):
        if num == 1:
            _expect(r, wire, 2, at, "ModelProto.pieces")
            piece, score, kind = None, 0.0, 1
            for n, w, v, a in r.fields(*value, f"piece #{len(model.pieces)}"):
                if n == 1:
                    _expect(r, w, 2, a, "SentencePiece.piece")
                    piece = r.text(v, a, "SentencePiece.piece")
                elif n == 2:
                    _expect(r, w, 5, a, "SentencePiece.score")
                    (score,) = struct.unpack("<f", v)
                elif n == 3:
                    _expect(r, w, 0, a, "SentencePiece.type")
                    if v not in PIECE_TYPES:
                        r.fail(a, f"unknown piece type {v} for piece #{len(model.pieces)}")
                    kind = v
            if piece is None:
                r.fail(at, f"piece #{len(model.pieces)} has no piece string")
            model.pieces.append((piece, float(score), PIECE_TYPES[kind]))
        elif num == 2:
            _expect(r, wire, 2, at, "ModelProto.trainer_spec")
            _trainer_spec(r, value, model.trainer_spec)
        elif num == 3:
            _expect(r, wire, 2, at, "ModelProto.normalizer_spec")
            _normalizer_spec(r, value, model.normalizer_spec)
    if not model.pieces:
        raise ValueError(f"{source}: no pieces: not a SentencePiece model")
    return model


def _trainer_spec(r: _Reader, span, spec: TrainerSpec) -> None:
    ints = {40: "unk_id", 41: "bos_id", 42: "eos_id", 43: "pad_id"}
    bools = {35: "byte_fallback", 22: "split_by_whitespace", 24: "treat_whitespace_as_suffix"}
    strings = {45: "unk_piece", 46: "bos_piece", 47: "eos_piece", 48: "pad_piece"}
    for num, wire, value, at in r.fields(*span, "TrainerSpec"):
        if num == 3:
            _expect(r, wire, 0, at, "TrainerSpec.model_type")
            if value not in MODEL_TYPES:
                r.fail(at, f"unknown model_type {value}")
            spec.model_type = MODEL_TYPES[value]
        elif num == 4:
            _expect(r, wire, 0, at, "TrainerSpec.vocab_size")
            spec.vocab_size = _int32(value)
        elif num in ints:
            _expect(r, wire, 0, at, f"TrainerSpec.{ints[num]}")
            setattr(spec, ints[num], _int32(value))
        elif num in bools:
            _expect(r, wire, 0, at, f"TrainerSpec.{bools[num]}")
            setattr(spec, bools[num], bool(value))
        elif num in strings:
            _expect(r, wire, 2, at, f"TrainerSpec.{strings[num]}")
            setattr(spec, strings[num], r.text(value, at, f"TrainerSpec.{strings[num]}"))


def _normalizer_spec(r: _Reader, span, spec: NormalizerSpec) -> None:
    bools = {3: "add_dummy_prefix", 4: "remove_extra_whitespaces", 5: "escape_whitespaces"}
    for num, wire, value, at in r.fields(*span, "NormalizerSpec"):
        if num == 1:
            _expect(r, wire, 2, at, "NormalizerSpec.name")
            spec.name = r.text(value, at, "NormalizerSpec.name")
        elif num == 2:
            _expect(r, wire, 2, at, "NormalizerSpec.precompiled_charsmap")
            spec.precompiled_charsmap = r.data[value[0] : value[1]]
        elif num in bools:
            _expect(r, wire, 0, at, f"NormalizerSpec.{bools[num]}")
            setattr(spec, bools[num], bool(value))


def read_model(path: str | os.PathLike) -> SentencePieceModel:
    with open(path, "rb") as f:
        data = f.read()
    return parse_model(data, str(path))


# -- SentencePiece's normalization ----------------------------------------------------------


class SentencePieceNormalizer(Normalizer):
    """SentencePiece's Normalizer: longest-match charsmap rewrite, then its whitespace rules
    (drop leading, trailing and repeated spaces; a "▁" dummy prefix; spaces as "▁")."""

    def __init__(
        self,
        precompiled_charsmap: bytes = b"",
        add_dummy_prefix: bool = True,
        remove_extra_whitespaces: bool = True,
        escape_whitespaces: bool = True,
        treat_whitespace_as_suffix: bool = False,
    ):
        self.charsmap = CharsMap(precompiled_charsmap)
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.escape_whitespaces = escape_whitespaces
        self.treat_whitespace_as_suffix = treat_whitespace_as_suffix

    def normalize(self, ns: NormalizedString) -> None:
        space = "▁" if self.escape_whitespaces else " "
        pieces = self.charsmap.normalize_spm(ns.normalized)
        if self.remove_extra_whitespaces:
            k = 0
            while k < len(pieces) and pieces[k][0] == " ":
                k += 1
            pieces = pieces[k:]
        chars: list[str] = []
        align: list[tuple[int, int]] = []
        if not pieces:
            ns.set("", [])
            return
        first_span = ns.original_span(pieces[0][1], pieces[0][2])
        if self.add_dummy_prefix and not self.treat_whitespace_as_suffix:
            chars.append(space)
            align.append(first_span)
        prev_space = self.remove_extra_whitespaces
        for rep, cs, ce in pieces:
            if prev_space:
                rep = rep.lstrip(" ")
            if rep:
                span = ns.original_span(cs, ce)
                for c in rep:
                    chars.append(space if c == " " else c)
                    align.append(span)
                prev_space = rep.endswith(" ")
            if not self.remove_extra_whitespaces:
                prev_space = False
        if self.remove_extra_whitespaces:
            while chars and chars[-1] == space:
                chars.pop()
                align.pop()
        if self.add_dummy_prefix and self.treat_whitespace_as_suffix and chars:
            chars.append(space)
            align.append(align[-1])
        ns.set("".join(chars), align)

    def to_json(self) -> dict:
        raise NotImplementedError("SentencePieceNormalizer has no tokenizer.json form; save the .model file itself")


# -- the tokenizer ------------------------------------------------------------------------------


def unigram_from_spm(model: SentencePieceModel) -> Unigram:
    """The Unigram model of a parsed .model, matching only normal and user-defined pieces."""
    spec = model.trainer_spec
    if spec.model_type != "unigram":
        raise ValueError(
            f"SentencePiece model_type {spec.model_type!r} is not supported (only 'unigram' .model files can be loaded)"
        )
    unk_ids = [i for i, (_, _, t) in enumerate(model.pieces) if t == "unknown"]
    unk_id = unk_ids[0] if unk_ids else (spec.unk_id if 0 <= spec.unk_id < len(model.pieces) else None)
    unmatchable = [i for i, (_, _, t) in enumerate(model.pieces) if t in ("unknown", "control", "byte", "unused")]
    return Unigram(
        [(p, s) for p, s, _ in model.pieces],
        unk_id=unk_id,
        byte_fallback=spec.byte_fallback,
        unmatchable=unmatchable,
        float32=True,
    )


def spm_spec(path: str | os.PathLike) -> TokenizerSpec:
    """A tokenizer that encodes like `SentencePieceProcessor(model_file=path).encode(text)`."""
    model = read_model(path)
    try:
        unigram = unigram_from_spm(model)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    ts, ns = model.trainer_spec, model.normalizer_spec
    normalizer = SentencePieceNormalizer(
        ns.precompiled_charsmap,
        ns.add_dummy_prefix,
        ns.remove_extra_whitespaces,
        ns.escape_whitespaces,
        ts.treat_whitespace_as_suffix,
    )
    # No pre-tokenizer: although no piece holds an inner "▁" (split_by_whitespace), SentencePiece
    # runs one float32 lattice over the whole sentence, and the path sum carried into a word
    # decides how its equal-scoring segmentations round (unigram.py on ties), so the best path of
    # each "▁"-word alone is not always SentencePiece's.
    pre_tokenizer = None
    decoder = MetaspaceDecoder("▁", prepend_scheme="always" if ns.add_dummy_prefix else "never")
    return TokenizerSpec(unigram, normalizer=normalizer, pre_tokenizer=pre_tokenizer, decoder=decoder)
