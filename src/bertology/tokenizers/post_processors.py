"""Post-processors: add the special tokens a model family expects, and set type ids.

    BERT / ALBERT  [CLS] A [SEP] B [SEP]        type ids 0 ... 0 1 ... 1
    RoBERTa        <s> A </s></s> B </s>        type ids all 0
    XLNet          A <sep> B <sep> <cls>        type ids 0 / 1, <cls> 2 (and left padding)

A template is a list of pieces: ("A" | "B", type_id) for the sequences, (name, type_id) for a
special token; `special_tokens` maps each name to its ids and tokens.
"""

from __future__ import annotations

import copy

from .base import component_from_json
from .encoding import Encoding
from .normalized_string import WHITESPACE_CHARS
from .byte_level import ByteLevelSettings

_SEQ = ("A", "B")


def parse_template(template: str | list) -> list[tuple[str, str, int]]:
    """'[CLS] $A [SEP] $B:1 [SEP]:1' -> [('special', '[CLS]', 0), ('seq', 'A', 0), ...].

    >>> parse_template("$A <sep> $B:1 <cls>:2")
    [('seq', 'A', 0), ('special', '<sep>', 0), ('seq', 'B', 1), ('special', '<cls>', 2)]
    """
    if isinstance(template, str):
        template = template.split()
    pieces = []
    for item in template:
        if isinstance(item, dict):  # tokenizer.json form
            if "Sequence" in item:
                pieces.append(("seq", item["Sequence"]["id"], int(item["Sequence"]["type_id"])))
            elif "SpecialToken" in item:
                pieces.append(("special", item["SpecialToken"]["id"], int(item["SpecialToken"]["type_id"])))
            else:
                raise ValueError(f"template piece {item!r}: expected a 'Sequence' or 'SpecialToken' key")
            continue
        name, type_id = item, 0
        if ":" in item[1:]:
            name, _, t = item.rpartition(":")
            try:
                type_id = int(t)
            except ValueError:
                raise ValueError(f"template piece {item!r}: type id {t!r} is not an integer") from None
        if name.startswith("$"):
            rest = name[1:]
            if rest in ("", "A", "B"):
                pieces.append(("seq", rest or "A", type_id))
            elif rest.isdigit():
                pieces.append(("seq", "A", int(rest)))
            else:
                raise ValueError(f"template piece {item!r}: a sequence is $A or $B")
        else:
            pieces.append(("special", name, type_id))
    if any(k == "seq" and n not in _SEQ for k, n, _ in pieces):
        raise ValueError(f"template {template!r}: sequence ids must be 'A' or 'B'")
    return pieces


def trim_byte_level_offsets(enc: Encoding, add_prefix_space: bool) -> None:
    """Exclude the 'Ġ' (space) a byte-level token starts or ends with from its offsets."""
    enc.offsets = trimmed_offsets(enc.tokens, enc.offsets, add_prefix_space, [0] if enc.tokens else [])


def trimmed_offsets(tokens, offsets: list[tuple[int, int]], add_prefix_space: bool, firsts) -> list[tuple[int, int]]:
    """trim_byte_level_offsets on the columns of one or more sequences laid end to end
    (firsts: the index of each sequence's first token). Called per encoding and, on the
    batch fast path, once per distinct word (fast.words.WordCache.trimmed_entry).

    >>> trimmed_offsets(["Ġhi", "ĠĠ"], [(3, 6), (6, 8)], False, [0])
    [(4, 6), (8, 8)]
    """
    firsts = set(firsts)
    out = []
    for i, (token, (a, b)) in enumerate(zip(tokens, offsets)):
        n = len(token)
        lead, trail = n - len(token.lstrip(_SPACE_CHARS)), n - len(token.rstrip(_SPACE_CHARS))
        if lead or trail:
            # The space the pre-tokenizer itself put in front of the first word belongs to that
            # token for `tokenizers`; only spaces of the user's are trimmed.
            if lead == 1 and add_prefix_space and (i in firsts or a == 0):
                lead = 0
            a = min(a + lead, b)
            if trail and b >= trail:
                b = max(b - trail, a)
        out.append((a, b))
    return out


_SPACE_CHARS = "Ġ" + "".join(sorted(WHITESPACE_CHARS))  # what a byte-level token's offsets are trimmed of


class PostProcessor:
    def added_tokens(self, is_pair: bool) -> int:
        return 0

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        return encodings

    def process(self, encoding: Encoding, pair: Encoding | None = None, add_special_tokens: bool = True) -> Encoding:
        encodings = [encoding] if pair is None else [encoding, pair]
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
            for o in e.overflowing:
                o.set_sequence_id(i)
            e.type_ids = [i] * len(e)
        encodings = self.process_encodings(encodings, add_special_tokens)
        if len(encodings) == 1 and not encodings[0].overflowing:
            return encodings[0]  # what merging it alone would copy
        return Encoding.merge(encodings)

    def to_json(self) -> dict:
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({self.to_json()})"


class TemplateProcessing(PostProcessor):
    """Special tokens placed by a template, e.g. single='[CLS] $A [SEP]'.

    As in `tokenizers`, the template's type ids apply to the kept part of each sequence; the
    overflowing windows keep the type id of their sequence (0 for A, 1 for B).
    """

    _overflow_types_from_template = False

    def __init__(self, single, pair=None, special_tokens=None):
        self.single = parse_template(single)
        self._parts = None  # see single_parts
        self.pair = parse_template(pair) if pair is not None else None
        self.special_tokens: dict[str, dict] = {}
        if isinstance(special_tokens, dict):
            items = special_tokens.values()
        else:
            items = special_tokens or []
        for st in items:
            if isinstance(st, dict):
                self.special_tokens[st["id"]] = {"id": st["id"], "ids": list(st["ids"]), "tokens": list(st["tokens"])}
            else:
                name, tid = st
                self.special_tokens[name] = {"id": name, "ids": [tid], "tokens": [name]}
        for k, name, _ in self.single + (self.pair or []):
            if k == "special" and name not in self.special_tokens:
                raise ValueError(
                    f"TemplateProcessing: special token {name!r} is used in a template but not "
                    f"given in special_tokens ({sorted(self.special_tokens)})"
                )

    def added_tokens(self, is_pair):
        template = self.pair if is_pair else self.single
        return sum(len(self.special_tokens[n]["ids"]) for k, n, _ in template or [] if k == "special")

    def _trim(self, encodings: list[Encoding]) -> None:
        """What a subclass does to the sequences before the specials go in (RoBERTa trims offsets)."""

    def process(self, encoding, pair=None, add_special_tokens=True):
        parts = self.single_parts()
        if pair is not None or not add_special_tokens or encoding.overflowing or parts is None:
            return super().process(encoding, pair, add_special_tokens)
        # The common case, one sequence and nothing cut off: the result is a concatenation of
        # lists, so build it directly rather than merging Encoding objects.
        before, type_id, after = parts
        self._trim([encoding])
        n = len(encoding)
        encoding.type_ids, encoding.sequence_ids = [type_id] * n, [0] * n
        return Encoding(*(getattr(before, f) + getattr(encoding, f) + getattr(after, f) for f in Encoding.FIELDS))

    def single_parts(self) -> tuple[Encoding, int, Encoding] | None:
        """The single template as (specials before $A, $A's type id, specials after); None if it
        is not of that shape. Cached, and rebuilt if the template or the specials change."""
        cached = self._parts
        if cached is None or cached[0] != self.single or cached[1] != self.special_tokens:
            seqs = [i for i, (kind, _, _) in enumerate(self.single) if kind == "seq"]
            parts = None
            if len(seqs) == 1 and self.single[seqs[0]][1] == "A":

                def specials(pieces):
                    return Encoding.merge(
                        [
                            Encoding.special(self.special_tokens[n]["ids"], self.special_tokens[n]["tokens"], t)
                            for _, n, t in pieces
                        ]
                    )

                i = seqs[0]
                parts = specials(self.single[:i]), self.single[i][2], specials(self.single[i + 1 :])
            cached = self._parts = (list(self.single), copy.deepcopy(self.special_tokens), parts)
        return cached[2]

    def process_encodings(self, encodings, add_special_tokens):
        if len(encodings) == 2 and self.pair is None:
            raise ValueError("TemplateProcessing: a pair was given but the template has no 'pair' form")
        template = self.pair if len(encodings) == 2 else self.single
        out, used = [], set()
        for kind, name, type_id in template:
            if kind == "seq":
                e = encodings[_SEQ.index(name)]
                if name in used:  # the same sequence twice in a template: do not alias it
                    e = e.copy()
                used.add(name)
                e.type_ids = [type_id] * len(e)
                if self._overflow_types_from_template:
                    for o in e.overflowing:
                        o.type_ids = [type_id] * len(o)
                out.append(e)
            elif add_special_tokens:
                st = self.special_tokens[name]
                out.append(Encoding.special(st["ids"], st["tokens"], type_id))
        return out

    def to_json(self):
        def piece(k, n, t):
            return {"Sequence": {"id": n, "type_id": t}} if k == "seq" else {"SpecialToken": {"id": n, "type_id": t}}

        return {
            "type": "TemplateProcessing",
            "single": [piece(*p) for p in self.single],
            "pair": [piece(*p) for p in self.pair or []],
            "special_tokens": dict(self.special_tokens),
        }

    @classmethod
    def from_json(cls, data):
        return cls(data["single"], data.get("pair") or None, data.get("special_tokens", {}))


class BertProcessing(TemplateProcessing):
    """[CLS] A [SEP] (B [SEP]), B with type id 1."""

    _overflow_types_from_template = True

    def __init__(self, sep: tuple[str, int], cls: tuple[str, int]):
        self.sep, self.cls = tuple(sep), tuple(cls)
        s, c = self.sep[0], self.cls[0]
        super().__init__(f"{c} $A {s}", f"{c} $A {s} $B:1 {s}:1", [self.cls, self.sep])

    def process_encodings(self, encodings, add_special_tokens):
        if not add_special_tokens:
            return encodings
        return super().process_encodings(encodings, add_special_tokens)

    def to_json(self):
        return {"type": "BertProcessing", "sep": list(self.sep), "cls": list(self.cls)}

    @classmethod
    def from_json(cls, data):
        return cls(data["sep"], data["cls"])


class RobertaProcessing(TemplateProcessing):
    """<s> A </s> (</s> B </s>), all type ids 0; trims byte-level offsets first."""

    _overflow_types_from_template = True

    def __init__(
        self, sep: tuple[str, int], cls: tuple[str, int], trim_offsets: bool = True, add_prefix_space: bool = True
    ):
        self.sep, self.cls = tuple(sep), tuple(cls)
        self.trim_offsets, self.add_prefix_space = trim_offsets, add_prefix_space
        s, c = self.sep[0], self.cls[0]
        super().__init__(f"{c} $A {s}", f"{c} $A {s} {s} $B {s}", [self.cls, self.sep])

    def _trim(self, encodings):
        if self.trim_offsets:
            for e in encodings:
                trim_byte_level_offsets(e, self.add_prefix_space)
                for o in e.overflowing:
                    trim_byte_level_offsets(o, self.add_prefix_space)

    def process_encodings(self, encodings, add_special_tokens):
        self._trim(encodings)
        if not add_special_tokens:
            return encodings
        return super().process_encodings(encodings, add_special_tokens)

    def to_json(self):
        return {
            "type": "RobertaProcessing",
            "sep": list(self.sep),
            "cls": list(self.cls),
            "trim_offsets": self.trim_offsets,
            "add_prefix_space": self.add_prefix_space,
        }

    @classmethod
    def from_json(cls, data):
        return cls(data["sep"], data["cls"], data.get("trim_offsets", True), data.get("add_prefix_space", True))


class ByteLevel(ByteLevelSettings, PostProcessor):
    """Only trims byte-level offsets (see trim_byte_level_offsets)."""

    def __init__(self, add_prefix_space: bool = True, trim_offsets: bool = True, use_regex: bool = True):
        self.add_prefix_space, self.trim_offsets, self.use_regex = add_prefix_space, trim_offsets, use_regex

    def process_encodings(self, encodings, add_special_tokens):
        if self.trim_offsets:
            for e in encodings:
                trim_byte_level_offsets(e, self.add_prefix_space)
                for o in e.overflowing:
                    trim_byte_level_offsets(o, self.add_prefix_space)
        return encodings


class Sequence(PostProcessor):
    def __init__(self, processors: list[PostProcessor]):
        self.processors = list(processors)

    def added_tokens(self, is_pair):
        return sum(p.added_tokens(is_pair) for p in self.processors)

    def process_encodings(self, encodings, add_special_tokens):
        for p in self.processors:
            encodings = p.process_encodings(encodings, add_special_tokens)
        return encodings

    def to_json(self):
        return {"type": "Sequence", "processors": [p.to_json() for p in self.processors]}

    @classmethod
    def from_json(cls, data):
        return cls([post_processor_from_json(d) for d in data["processors"]])


# -- the families' templates -------------------------------------------------------------------


def bert_processing(cls_id: int, sep_id: int, cls: str = "[CLS]", sep: str = "[SEP]") -> TemplateProcessing:
    """BERT and ALBERT: [CLS] A [SEP] B [SEP], type ids 0 for A, 1 for B."""
    return TemplateProcessing(
        f"{cls}:0 $A:0 {sep}:0", f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1", [(cls, cls_id), (sep, sep_id)]
    )


albert_processing = bert_processing


def roberta_processing(bos_id: int, eos_id: int, bos: str = "<s>", eos: str = "</s>") -> RobertaProcessing:
    """RoBERTa: <s> A </s></s> B </s>, with byte-level offset trimming."""
    return RobertaProcessing((eos, eos_id), (bos, bos_id))


def xlnet_processing(sep_id: int, cls_id: int, sep: str = "<sep>", cls: str = "<cls>") -> TemplateProcessing:
    """XLNet: A <sep> B <sep> <cls> at the END (type id 2); pad on the left (pad type id 3)."""
    return TemplateProcessing(
        f"$A:0 {sep}:0 {cls}:2", f"$A:0 {sep}:0 $B:1 {sep}:1 {cls}:2", [(sep, sep_id), (cls, cls_id)]
    )


POST_PROCESSORS = {
    "TemplateProcessing": TemplateProcessing,
    "BertProcessing": BertProcessing,
    "RobertaProcessing": RobertaProcessing,
    "ByteLevel": ByteLevel,
    "Sequence": Sequence,
}


def post_processor_from_json(data: dict | None) -> PostProcessor | None:
    return None if data is None else component_from_json("post_processor", POST_PROCESSORS, data)
