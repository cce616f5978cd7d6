"""CoNLL files and the CoNLL shared-task chunk score, computed as `conlleval` (the Perl script) does.

A CoNLL file holds one word per line, columns separated by whitespace (word first, the tag in
the last column by default), sentences separated by blank lines, `-DOCSTART-` lines between
documents. Tags are PREFIX-TYPE (B-PER, I-LOC) or O.

conlleval's chunk rules, which these functions follow to the letter:
- a chunk starts at B (always), at I or E after O, at E or I after E, and wherever the type
  changes (`[` and `]` are one-token chunks);
- a chunk ends before B, O, after E, and wherever the type changes;
- so IOB1 (I-X after O opens a chunk, B only between two adjacent X chunks) and IOB2/BIO (every
  chunk opens with B) are both read correctly, and a stray I-X after O counts as a chunk;
- a predicted chunk is correct when it starts and ends where a gold chunk does, with its type;
- a sentence boundary counts as O.
Scores are percentages, as conlleval prints them.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .base import Example
from ..readers import read_text


def split_tag(tag: str) -> tuple[str, str]:
    """(prefix, type) of a tag: everything before the first '-' and everything after it.

    >>> split_tag("B-PER"), split_tag("I-MISC-X"), split_tag("O")
    (('B', 'PER'), ('I', 'MISC-X'), ('O', ''))
    """
    prefix, dash, kind = tag.partition("-")
    return (prefix, kind) if dash else (tag, "")


def end_of_chunk(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    """Does a chunk end between the previous token and this one? (prefixes and types apart)

    >>> end_of_chunk("I", "B", "PER", "PER"), end_of_chunk("I", "I", "PER", "LOC"), end_of_chunk("I", "I", "PER", "PER")
    (True, True, False)
    """
    end = (prev_tag, tag) in {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
    if prev_tag not in ("O", ".") and prev_type != type_:
        end = True
    return end or prev_tag in ("]", "[")  # bracket chunks have length one


def start_of_chunk(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    """Does a chunk start at this token?

    >>> start_of_chunk("O", "I", "", "PER"), start_of_chunk("I", "I", "PER", "PER"), start_of_chunk("I", "B", "PER", "PER")
    (True, False, True)
    """
    start = (prev_tag, tag) in {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}
    if tag not in ("O", ".") and prev_type != type_:
        start = True
    return start or tag in ("[", "]")


def chunks(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """The chunks of one sentence as (type, first, last) word indices, by conlleval's rules.

    >>> chunks(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    [('PER', 0, 1), ('LOC', 3, 3), ('LOC', 4, 4), ('ORG', 5, 5)]
    """
    out: list[tuple[str, int, int]] = []
    prev, prev_type, first = "O", "", None
    for i, t in enumerate([*tags, "O"]):  # the trailing O closes an open chunk
        tag, kind = split_tag(t)
        if first is not None and end_of_chunk(prev, tag, prev_type, kind):
            out.append((prev_type, first, i - 1))
            first = None
        if i < len(tags) and start_of_chunk(prev, tag, prev_type, kind):
            first = i
        prev, prev_type = tag, kind
    return out


@dataclass
class ChunkCounts:
    """conlleval's counters: chunks found in gold / guessed, chunks right, tokens, tokens right."""

    found_correct: int = 0
    found_guessed: int = 0
    correct_chunks: int = 0
    tokens: int = 0
    correct_tags: int = 0
    by_type: dict[str, list[int]] = field(default_factory=dict)  # type -> [found_correct, found_guessed, correct]

    def _bump(self, kind: str, slot: int) -> None:
        self.by_type.setdefault(kind, [0, 0, 0])[slot] += 1


def count_chunks(gold: Iterable[Sequence[str]], guessed: Iterable[Sequence[str]]) -> ChunkCounts:
    """Run conlleval's counting loop over sentences of gold and guessed tags (one pass, as the script).

    >>> c = count_chunks([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])
    >>> c.found_correct, c.found_guessed, c.correct_chunks, c.tokens, c.correct_tags
    (1, 1, 0, 3, 2)
    """
    c = ChunkCounts()
    in_correct = False
    last_c, last_g, last_ct, last_gt = "O", "O", "", ""
    lines: list[tuple[str, str] | None] = []
    for n, (gs, ps) in enumerate(zip(gold, guessed, strict=True)):
        if len(gs) != len(ps):
            raise ValueError(f"sentence {n}: {len(gs)} gold tags but {len(ps)} guessed tags")
        lines.extend(zip(gs, ps))
        lines.append(None)  # the blank line between sentences
    for line in lines:
        boundary = line is None
        (correct, c_type), (guess, g_type) = (
            (("O", ""), ("O", "")) if boundary else (split_tag(line[0]), split_tag(line[1]))
        )
        end_c = end_of_chunk(last_c, correct, last_ct, c_type)
        end_g = end_of_chunk(last_g, guess, last_gt, g_type)
        start_c = start_of_chunk(last_c, correct, last_ct, c_type)
        start_g = start_of_chunk(last_g, guess, last_gt, g_type)
        if in_correct:
            if end_c and end_g and last_gt == last_ct:
                in_correct = False
                c.correct_chunks += 1
                c._bump(last_ct, 2)
            elif end_c != end_g or g_type != c_type:
                in_correct = False
        if start_c and start_g and g_type == c_type:
            in_correct = True
        if start_c:
            c.found_correct += 1
            c._bump(c_type, 0)
        if start_g:
            c.found_guessed += 1
            c._bump(g_type, 1)
        if not boundary:
            c.tokens += 1
            c.correct_tags += correct == guess and c_type == g_type
        last_c, last_g, last_ct, last_gt = correct, guess, c_type, g_type
    if in_correct:
        c.correct_chunks += 1
        c._bump(last_ct, 2)
    return c


def _prf(correct: int, guessed: int, found: int) -> tuple[float, float, float]:
    p = 100.0 * correct / guessed if guessed else 0.0
    r = 100.0 * correct / found if found else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def conlleval(gold: Iterable[Sequence[str]], guessed: Iterable[Sequence[str]]) -> dict[str, float]:
    """precision / recall / f1 over chunks and token accuracy, in percent; per type as TYPE_f1 etc.

    >>> s = conlleval([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "B-ORG"]])
    >>> s["precision"], s["recall"], s["f1"], s["accuracy"], s["PER_f1"]
    (50.0, 50.0, 50.0, 75.0, 100.0)
    """
    c = count_chunks(gold, guessed)
    p, r, f = _prf(c.correct_chunks, c.found_guessed, c.found_correct)
    out = {"precision": p, "recall": r, "f1": f, "accuracy": 100.0 * c.correct_tags / c.tokens if c.tokens else 0.0}
    for kind in sorted(c.by_type):
        found, guessed_n, correct = c.by_type[kind]
        tp, tr, tf = _prf(correct, guessed_n, found)
        out.update({f"{kind}_precision": tp, f"{kind}_recall": tr, f"{kind}_f1": tf})
    return out


def read_conll(path: str, word_column: int = 0, label_column: int | None = -1) -> list[Example]:
    """Sentences of a CoNLL file as Examples (text: words, label: tags; label None when label_column is None).

    Every non-blank line must have the word and label columns; errors name file:line.
    """
    examples: list[Example] = []
    words: list[str] = []
    tags: list[str] = []
    first_line = 0

    def flush():
        if words:
            examples.append(
                Example(
                    list(words),
                    None,
                    list(tags) if label_column is not None else None,
                    id=str(len(examples)),
                    where=f"{path}:{first_line}",
                )
            )
            words.clear()
            tags.clear()

    for n, line in enumerate(io.StringIO(read_text(path), newline=None), 1):  # universal newlines, as open() reads
        cols = line.split()
        if not cols:
            flush()
            continue
        if cols[0] == "-DOCSTART-":
            flush()
            continue
        need = max(word_column, label_column if label_column is not None else 0)
        low = min(word_column, label_column if label_column is not None else 0)
        if need >= len(cols) or -low > len(cols):
            raise ValueError(
                f"{path}:{n}: expected a word in column {word_column} and a label in column "
                f"{label_column}, got {len(cols)} column(s): {line.rstrip()!r}"
            )
        if label_column is not None and len(cols) < 2:
            raise ValueError(f"{path}:{n}: a word without a label column: {line.rstrip()!r}")
        if not words:
            first_line = n
        words.append(cols[word_column])
        if label_column is not None:
            tags.append(cols[label_column])
    flush()
    if not examples:
        raise ValueError(f"{path}: no sentences (a CoNLL file has one 'word ... tag' per line)")
    return examples
