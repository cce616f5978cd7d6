"""Pretraining instances from tokenized documents: segment pairs (BERT NSP, ALBERT SOP) and
packed sequences (RoBERTa FULL-SENTENCES / DOC-SENTENCES).

A document is a list of sentences; a sentence is a `Segment`: token ids plus, per token, whether
it starts a word (for whole-word and n-gram masking). Randomness comes only from the
`random.Random` passed in, so the same seed gives the same instances.

Pairs follow Google's create_pretraining_data.py: sentences are gathered into a chunk until it
reaches a target length (max_num_tokens, or with probability short_seq_prob a shorter random
one), the chunk is cut at a random sentence boundary into A and B; for NSP, half the time B is
replaced by sentences from a random other document (label 1) and the chunk's unused sentences
are put back to start the next chunk. For SOP (ALBERT) B is always the true continuation and
half the time A and B are swapped (label 1).

Three choices differ from Google's script, on purpose:
* the short target is re-drawn for every chunk, not once per document, so that about
  short_seq_prob of the instances are short as the paper describes;
* SOP with a chunk of a single sentence cuts that sentence at a random token (A = first part,
  B = second) instead of ALBERT's fallback to a random document, so SOP label 0 always means
  "A really precedes B";
* NSP with a chunk of a single sentence makes, half the time, a true-next pair by cutting it at a
  random token; Google's script always pairs it with a random document, which tilts the labels
  (70 / 30 on data/wiki.txt at length 128; 50 / 50 with the cut).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from ..models.family import get_family


@dataclass(frozen=True)
class SpecialTokens:
    """The ids of the family record's special tokens (models/family.py: the one record of them)."""

    cls: int
    sep: int
    mask: int
    pad: int
    all_ids: tuple[int, ...]  # every special id of the tokenizer: never masked, never a random replacement
    eod: int | None = None  # end of document (XLNet's streams)


def special_tokens(tokenizer, family: str) -> SpecialTokens:
    """The family's special token ids, or a ValueError naming every token the tokenizer lacks."""
    roles = get_family(family).specials
    names = {role: getattr(roles, role) for role in ("cls", "sep", "mask", "pad", "eod") if getattr(roles, role)}
    ids = {role: tokenizer.token_to_id(t) for role, t in names.items()}
    missing = [names[role] for role, i in ids.items() if i is None]
    if missing:
        raise ValueError(
            f"the tokenizer lacks the {family!r} family's special token(s) "
            f"{', '.join(repr(t) for t in missing)} (needs {', '.join(names.values())})"
        )
    specials = {a.content for a in getattr(tokenizer, "added_tokens", []) if a.special} | set(names.values())
    all_ids = tuple(sorted({tokenizer.token_to_id(t) for t in specials} - {None}))
    return SpecialTokens(**ids, all_ids=all_ids)


# ---------------------------------------------------------------------------------------- words


def word_starts(word_ids: Sequence[int | None]) -> list[bool]:
    """Whether each token of ONE sentence starts a word, from the encoding's word_ids (the
    pre-tokenizer's words): a token starts a word when its word differs from the token before's;
    the first token always does, and so does a token of no word (an added token).

    >>> word_starts([0, 0, 0, 1, 2])       # un ##want ##ed , run
    [True, False, False, True, True]
    >>> word_starts([0, 1, 1, None, 2])
    [True, True, False, True, True]
    """
    return [i == 0 or w is None or w != word_ids[i - 1] for i, w in enumerate(word_ids)]


@dataclass
class Segment:
    """Token ids of a piece of text and, per token, whether it starts a word."""

    ids: list[int]
    starts: list[bool]

    def __len__(self):
        return len(self.ids)

    @staticmethod
    def concat(segments: Iterable["Segment"]) -> "Segment":
        ids, starts = [], []
        for s in segments:
            ids.extend(s.ids)
            starts.extend(s.starts)
        return Segment(ids, starts)


def tokenize_document(sentences: Iterable[str], tokenizer) -> list[Segment]:
    """Encode each sentence (no special tokens); sentences with no tokens are dropped."""
    out = []
    for s in sentences:
        enc = tokenizer.encode(s, add_special_tokens=False)
        if enc.ids:
            out.append(Segment(list(enc.ids), word_starts(enc.word_ids)))
    return out


# ---------------------------------------------------------------------------------------- pairs


@dataclass
class PairInstance:
    a: Segment
    b: Segment
    label: int  # NSP: 0 = B is the real next segment, 1 = random; SOP: 0 = in order, 1 = swapped


def truncate_pair(a: Segment, b: Segment, max_num_tokens: int, rng: random.Random) -> None:
    """Cut the longer of A and B, one token at a time, at a random end (front or back), until
    both fit in max_num_tokens. Cutting at both ends (not only the back) avoids a bias of
    always losing sentence ends.

    >>> a, b = Segment([1, 2, 3, 4], [True] * 4), Segment([5], [True])
    >>> truncate_pair(a, b, 3, random.Random(0)); len(a.ids), b.ids
    (2, [5])
    """
    while len(a) + len(b) > max_num_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer.ids[0], longer.starts[0]
        else:
            longer.ids.pop()
            longer.starts.pop()


class DocumentWindow:
    """Bounded memory source of "random other documents" for NSP negatives while streaming.

    Google's script samples from ALL documents held in memory. Here a document is processed
    once `size` later documents have been read; its negatives are drawn uniformly from the
    window of up to `size` following and `size` preceding documents (2*size documents held at
    most). With size >= the number of documents this is Google's sampling exactly.
    """

    def __init__(self, size: int = 1000):
        if size < 1:
            raise ValueError(f"negative window size must be >= 1, got {size}")
        self.size = size
        self.ahead: deque = deque()
        self.past: deque = deque(maxlen=size)

    def push(self, doc) -> Iterator:
        """Add a document; yield the document whose turn has come (at most one)."""
        self.ahead.append(doc)
        if len(self.ahead) > self.size:
            yield from self._pop()

    def drain(self) -> Iterator:
        while self.ahead:
            yield from self._pop()

    def _pop(self):
        doc = self.ahead.popleft()
        yield doc
        self.past.append(doc)

    def __len__(self):  # documents available as negatives for the current one
        return len(self.ahead) + len(self.past)

    def sample(self, rng: random.Random):
        i = rng.randrange(len(self))
        return self.ahead[i] if i < len(self.ahead) else self.past[i - len(self.ahead)]


def target_length(max_num_tokens: int, short_seq_prob: float, rng: random.Random) -> int:
    # Mostly fill the sequence (no compute wasted on padding), but sometimes use a shorter one so
    # that the model also sees short inputs like the fine-tuning tasks'.
    if rng.random() < short_seq_prob:
        return rng.randint(2, max_num_tokens)
    return max_num_tokens


def create_pair_instances(
    document: list[Segment],
    max_num_tokens: int,
    short_seq_prob: float,
    objective: str,
    rng: random.Random,
    negatives: DocumentWindow | None = None,
) -> list[PairInstance]:
    """Segment pairs of one document for objective "nsp" (needs `negatives`) or "sop".

    >>> doc = [Segment([i, i], [True, False]) for i in range(1, 7)]
    >>> [(p.a.ids, p.b.ids, p.label) for p in create_pair_instances(doc, 6, 0.0, "sop", random.Random(1))]
    [([2, 2, 3, 3], [1, 1], 1), ([6, 6], [4, 4, 5, 5], 1)]
    """
    if objective not in ("nsp", "sop"):
        raise ValueError(f"pair objective must be 'nsp' or 'sop', got {objective!r}")
    if objective == "nsp" and (negatives is None or len(negatives) == 0):
        raise ValueError("NSP needs at least two documents (random next segments come from another document)")
    instances: list[PairInstance] = []
    target = target_length(max_num_tokens, short_seq_prob, rng)
    chunk: list[Segment] = []
    length, i = 0, 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target:
            # A = the first a_end sentences of the chunk (at least one)
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            a = Segment.concat(chunk[:a_end])
            pair = None
            if objective == "nsp" and len(chunk) == 1 and len(a) >= 2 and rng.random() < 0.5:
                # One long sentence: Google's script always makes it a random-next pair, which tilts
                # the labels towards 1 (70/30 on data/wiki.txt at length 128); cut it at a random
                # token instead, so that label 0 keeps half of these chunks too.
                cut = rng.randint(1, len(a) - 1)
                pair = PairInstance(Segment(a.ids[:cut], a.starts[:cut]), Segment(a.ids[cut:], a.starts[cut:]), 0)
            elif objective == "nsp":
                if len(chunk) == 1 or rng.random() < 0.5:
                    # random next: B from another document, from a random sentence on, to fill
                    # the target; the chunk's sentences not used for A go back to the stream.
                    other = negatives.sample(rng)
                    b = Segment([], [])
                    for s in other[rng.randint(0, len(other) - 1) :]:
                        b = Segment.concat([b, s])
                        if len(b) >= target - len(a):
                            break
                    i -= len(chunk) - a_end
                    pair = PairInstance(a, b, 1)
                else:
                    pair = PairInstance(a, Segment.concat(chunk[a_end:]), 0)
            else:
                if len(chunk) >= 2:
                    b = Segment.concat(chunk[a_end:])
                elif len(a) >= 2:  # one sentence: cut it at a random token (see module docstring)
                    cut = rng.randint(1, len(a) - 1)
                    a, b = Segment(a.ids[:cut], a.starts[:cut]), Segment(a.ids[cut:], a.starts[cut:])
                else:
                    b = None  # a lone one-token sentence cannot make an ordered pair
                if b is not None:
                    # half the time swap the two segments: the model must tell the order
                    pair = PairInstance(b, a, 1) if rng.random() < 0.5 else PairInstance(a, b, 0)
            if pair is not None:
                truncate_pair(pair.a, pair.b, max_num_tokens, rng)
                instances.append(pair)
            chunk, length = [], 0
            target = target_length(max_num_tokens, short_seq_prob, rng)
        i += 1
    return instances


def assemble_pair(pair: PairInstance, sp: SpecialTokens) -> tuple[list[int], list[int], list[bool]]:
    """[CLS] A [SEP] B [SEP]: (ids, token type ids, word starts)."""
    ids = [sp.cls, *pair.a.ids, sp.sep, *pair.b.ids, sp.sep]
    types = [0] * (len(pair.a) + 2) + [1] * (len(pair.b) + 1)
    starts = [False, *pair.a.starts, False, *pair.b.starts, False]
    return ids, types, starts


# -------------------------------------------------------------------------------------- packing


def pack_sentences(
    documents: Iterable[list[Segment]], max_num_tokens: int, cross_documents: bool, doc_sep: int
) -> Iterator[Segment]:
    """RoBERTa's FULL-SENTENCES (cross_documents=True) and DOC-SENTENCES packing.

    Whole sentences are added while they fit in max_num_tokens. With FULL-SENTENCES a sequence
    may run on into the next document, with `doc_sep` between the two; with DOC-SENTENCES a
    document's end ends the sequence (which may then be short). A sentence longer than
    max_num_tokens is cut into pieces that are packed like sentences (nothing is dropped).

    >>> docs = [[Segment([1, 1], [True, False]), Segment([2], [True])], [Segment([3, 3], [True, True])]]
    >>> [s.ids for s in pack_sentences(docs, 6, True, 0)]
    [[1, 1, 2, 0, 3, 3]]
    >>> [s.ids for s in pack_sentences(docs, 6, False, 0)]
    [[1, 1, 2], [3, 3]]
    >>> [s.ids for s in pack_sentences(docs, 4, True, 0)]   # no room for the separator + next sentence
    [[1, 1, 2], [3, 3]]
    """
    ids: list[int] = []
    starts: list[bool] = []
    for document in documents:
        if ids and not cross_documents:
            yield Segment(ids, starts)
            ids, starts = [], []
        new_doc = bool(ids)  # a separator goes in front of the first sentence, if it joins a sequence
        for sentence in document:
            for k in range(0, len(sentence), max_num_tokens):
                piece = Segment(sentence.ids[k : k + max_num_tokens], sentence.starts[k : k + max_num_tokens])
                need = len(piece) + (1 if new_doc else 0)
                if ids and len(ids) + need > max_num_tokens:
                    yield Segment(ids, starts)
                    ids, starts, need, new_doc = [], [], len(piece), False
                if new_doc:
                    ids.append(doc_sep)
                    starts.append(False)
                    new_doc = False
                ids.extend(piece.ids)
                starts.extend(piece.starts)
    if ids:
        yield Segment(ids, starts)


def assemble_single(seq: Segment, sp: SpecialTokens) -> tuple[list[int], list[int], list[bool]]:
    """<s> tokens </s> (or [CLS] tokens [SEP]): (ids, token type ids, word starts)."""
    return [sp.cls, *seq.ids, sp.sep], [0] * (len(seq) + 2), [False, *seq.starts, False]
