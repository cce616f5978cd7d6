"""Intrinsic evaluation with gensim's protocol, so numbers compare with gensim's on the same vectors.

Analogies (`questions-words.txt`: ": section" lines, then "a b c d" meaning a : b :: c : d): only
the `restrict_vocab` most frequent words (300,000) are known, words compare case-insensitively
(upper-cased, the most frequent spelling wins), a question with an unknown word is not asked (its
share reported as out-of-vocabulary), the answer is the 3CosAdd nearest of b − a + c among the
known words other than a, b, c; sections whose name starts with "gram" are syntactic, the others
semantic.

Word pairs (`wordsim353.tsv`, `simlex999.txt`: "w1<TAB>w2<TAB>score", "#" comments): Spearman and
Pearson correlation of the cosine with the human score over the pairs whose words are both known.

Malformed lines (not four words; not two words and a number) are skipped and counted, as gensim
skips them; a question before any section header is an error, as in gensim.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..stats import pearson, spearman
from .vectors import KeyedVectors, unit

RESTRICT_VOCAB = 300_000


@dataclass
class AnalogyResult:
    sections: dict[str, tuple[int, int]]  # section → (correct, asked)
    correct: int
    asked: int
    questions: int  # every well-formed question, asked or not
    skipped_lines: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.asked if self.asked else 0.0

    @property
    def oov_ratio(self) -> float:
        return (self.questions - self.asked) / self.questions if self.questions else 0.0

    def part(self, semantic: bool) -> tuple[int, int]:
        """(correct, asked) over the semantic or the syntactic ("gram…") sections."""
        pairs = [v for k, v in self.sections.items() if k.startswith("gram") != semantic]
        return sum(c for c, _ in pairs), sum(a for _, a in pairs)


@dataclass
class PairResult:
    spearman: float
    pearson: float
    pairs: int  # pairs scored
    oov: int  # pairs with an unknown word
    skipped_lines: int = 0
    gold: list[float] = field(default_factory=list, repr=False)
    model: list[float] = field(default_factory=list, repr=False)

    @property
    def oov_ratio(self) -> float:
        return self.oov / (self.pairs + self.oov) if self.pairs + self.oov else 0.0


def known_words(kv: KeyedVectors, restrict_vocab: int = RESTRICT_VOCAB) -> dict[str, int]:
    """Upper-cased word → index among the first `restrict_vocab`; the most frequent spelling wins."""
    return {w.upper(): i for i, w in reversed(list(enumerate(kv.index_to_key[:restrict_vocab])))}


def _lines(path: str | os.PathLike):
    with open(path, "rb") as f:
        for line_no, raw in enumerate(f, 1):
            try:
                yield line_no, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(
                    f"{os.fspath(path)}: line {line_no}: invalid UTF-8 byte(s) {raw[e.start : e.end]!r}"
                ) from None


def evaluate_analogies(
    kv: KeyedVectors, path: str | os.PathLike, restrict_vocab: int = RESTRICT_VOCAB
) -> AnalogyResult:
    """Accuracy on an analogy file, as gensim's `evaluate_word_analogies` (case-insensitive)."""
    ok = known_words(kv, restrict_vocab)
    sections: dict[str, tuple[int, int]] = {}
    section = None
    questions = skipped = 0
    for line_no, line in _lines(path):
        if line.startswith(": "):
            section = line.lstrip(": ").strip()
            sections.setdefault(section, (0, 0))
            continue
        if section is None:
            raise ValueError(f"{os.fspath(path)}: line {line_no}: a question before the first ': section' line")
        words = line.upper().split()
        if len(words) != 4:
            skipped += 1
            continue
        questions += 1
        a, b, c, expected = words
        if not all(w in ok for w in words):
            continue
        query = {a, b, c}
        predicted = None
        for i, _ in kv.nearest([ok[b], ok[c]], [ok[a]], topn=5, restrict_vocab=restrict_vocab):
            predicted = kv.index_to_key[i].upper()
            if predicted in ok and predicted not in query:
                break
        correct, asked = sections[section]
        sections[section] = (correct + (predicted == expected), asked + 1)
    return AnalogyResult(
        sections, sum(c for c, _ in sections.values()), sum(a for _, a in sections.values()), questions, skipped
    )


def evaluate_pairs(
    kv: KeyedVectors, path: str | os.PathLike, restrict_vocab: int = RESTRICT_VOCAB, delimiter: str = "\t"
) -> PairResult:
    """Correlation of cosine similarity with human scores, as gensim's `evaluate_word_pairs`."""
    ok = known_words(kv, restrict_vocab)
    gold, model = [], []
    oov = skipped = 0
    for _, line in _lines(path):
        if not line or line.startswith("#"):
            continue
        parts = line.upper().split(delimiter)
        try:
            a, b, score = parts
            score = float(score)
        except ValueError:
            skipped += 1
            continue
        if a not in ok or b not in ok:
            oov += 1
            continue
        gold.append(score)
        model.append(float(np.dot(unit(kv.vectors[ok[a]]), unit(kv.vectors[ok[b]]))))
    if len(gold) < 2:
        raise ValueError(
            f"{os.fspath(path)}: {len(gold)} scorable pairs ({oov} with unknown words, {skipped} malformed lines)"
        )
    return PairResult(spearman(gold, model), pearson(gold, model), len(gold), oov, skipped, gold, model)
