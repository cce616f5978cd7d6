"""WordPiece training.

WordPiece (Schuster & Nakajima 2012; Wu et al. 2016) builds its vocabulary like BPE, bottom-up
from characters with `##` marking pieces that continue a word, but it merges the pair that most
increases the likelihood of the training data under a unigram model of the symbols, not the most
frequent one. Merging a and b changes the log-likelihood by about
count(ab) * log(count(ab) * N / (count(a) * count(b))), and the usual rule ranks pairs by

    score(a, b) = count(ab) / (count(a) * count(b))

so a pair of symbols that are rare on their own but nearly always seen together wins over a
frequent pair of frequent symbols ("##q ##u" before "t ##h").

Hugging Face's `WordPieceTrainer` does not do this: it runs its BPE trainer (frequency) with the
`##` prefix and turns the result into a WordPiece vocabulary. `criterion="frequency"` reproduces
that, for parity; `criterion="likelihood"` (the default) is the definition above.

What the difference does (bench/tokenizers.py measures both, tokens per held-out word): the
score spends the vocabulary on rare symbols that always co-occur (foreign-script n-grams,
rare-word fragments) while common words stay split into pieces, so `criterion="frequency"` is
the better choice for compression; "likelihood" is here because it is what WordPiece means.

The likelihood merges come from LikelihoodMerges (a heap with deferred re-queueing); its
textbook reference, recounting after every merge, is reference_wordpiece, and the tests hold
the two to the same vocabulary.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from typing import Iterable

from .bpe_trainer import (
    MASK,
    SHIFT,
    add_token,
    get_stats,
    initial_vocab,
    merge,
    merge_word,
    merged_token,
    merges_bar,
    symbolize,
    train_bpe,
)
from .wordpiece import WordPiece

# The heap is rebuilt from the live pairs once it holds more than twice their number plus this
# many entries (re-queued pairs leave stale entries behind; this bounds the memory they take).
# Rebuilding costs one entry per live pair, spread over at least as many pushes, so a small slack
# costs little time; a large one let stale entries (about 180 bytes each) make up most of the
# trainer's peak memory.
COMPACT_SLACK = 20_000
# A symbol with more than FEW_PAIRS pairs may wait to have its pairs re-queued after a merge
# lowered its count, until the count fell by a factor RISE or one of them might be the best
# (see LikelihoodMerges); the TOP_KEPT best scores pushed for its pairs are kept for that.
FEW_PAIRS = 64
RISE = 1.05
TOP_KEPT = 8


def likelihood_score(pair_count: int, count_a: int, count_b: int) -> float:
    """count(ab) / (count(a) * count(b)).

    >>> likelihood_score(4, 4, 4)   # a and b only ever occur together
    0.25
    >>> likelihood_score(100, 1000, 1000) < likelihood_score(4, 4, 4)
    True
    """
    return pair_count / (count_a * count_b)


def symbol_counts(words: list[list[int]], counts: list[int]) -> dict[int, int]:
    """How often each symbol occurs, weighted by word counts.

    >>> symbol_counts([[0, 1, 1], [1]], [2, 3])
    {0: 2, 1: 7}
    """
    sc: dict[int, int] = defaultdict(int)
    for w, n in zip(words, counts):
        for s in w:
            sc[s] += n
    return dict(sc)


def pair_index(words: list[list[int]], counts: list[int]) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Packed pair -> weighted count, and packed pair -> the indices of the words holding it.

    A word is listed once per pair, however often it holds it. Lists, not sets (as bpe_trainer's
    count_pairs has them): the index is most of the trainer's memory, and a set takes about four
    times a list's bytes a word. A merge may later list a word again (see merge); visiting it
    twice is harmless, as the second visit finds nothing left to merge.

    >>> pair_counts, where = pair_index([[1, 2, 1, 2], [2, 1]], [3, 1])
    >>> dict(pair_counts), dict(where)
    ({16777218: 6, 33554433: 4}, {16777218: [0], 33554433: [0, 1]})
    """
    pair_counts: dict[int, int] = defaultdict(int)
    where: dict[int, list[int]] = defaultdict(list)
    for wi, w in enumerate(words):
        n = counts[wi]
        for a, b in zip(w, w[1:]):
            k = a << SHIFT | b
            pair_counts[k] += n
            ws = where[k]
            if not ws or ws[-1] != wi:  # words are indexed in order: wi is last if already listed
                ws.append(wi)
    return pair_counts, where


def reference_wordpiece(
    word_counts: dict[str, int], vocab_size: int, min_frequency: int = 0, prefix: str = "##"
) -> dict[str, int]:
    """The textbook likelihood WordPiece, the reference for the fast loop (LikelihoodMerges):
    recount every pair and symbol after every merge and take the best by (score, count,
    smallest ids). Returns the vocabulary token -> id (alphabet in code-point order, no specials).

    >>> reference_wordpiece({"hug": 10, "hugs": 5}, 9)
    {'g': 0, 'h': 1, 's': 2, 'u': 3, '##u': 4, '##g': 5, '##s': 6, 'hu': 7, 'hug': 8}
    """
    id_to_token = sorted({c for w in word_counts for c in w}, key=ord)
    vocab = {s: i for i, s in enumerate(id_to_token)}
    words, counts = symbolize(word_counts, vocab, id_to_token, prefix=prefix)
    while len(id_to_token) < vocab_size:
        stats = {p: c for p, c in get_stats(words, counts).items() if c >= max(min_frequency, 1)}
        if not stats:
            break
        sc = symbol_counts(words, counts)
        pair = min(stats, key=lambda p: (-likelihood_score(stats[p], sc[p[0]], sc[p[1]]), -stats[p], p))
        new = add_token(merged_token(id_to_token[pair[0]], id_to_token[pair[1]], prefix), vocab, id_to_token)
        words = [merge(w, pair, new) for w in words]
    return vocab


class LikelihoodMerges:
    """The merges of likelihood WordPiece without recounting: the fast loop (see `run`).

    The best pair is the max of (score, count, smaller packed ids) over the pairs that can still
    be merged (count >= min_count). A max-heap holds entries (score, count, count(a), count(b))
    for each pair, pushed when the pair forms or changes. A merge of (a, b) lowers some pair
    counts, whose stale entries then score too HIGH (popped, they are re-queued with the current
    counts), and it lowers count(a) and count(b), which RAISES the score of every pair holding
    a or b: those must be re-queued before a lower pair is taken for the best.

    Most symbols have their pairs re-queued right away. A symbol s with many pairs (a frequent
    one, such as "##e", whose pairs would be re-queued after each of its merges) is `tracked`:
    the best scores pushed for its pairs are kept (`top`, `rest`), and after a merge it may
    wait, `dirty`, while its count fell by at most a factor RISE since its pairs were all
    queued (`queued_at[s]`). Then no pair of s scores more than its newest entry times rise(s) =
    queued_at[s] / count(s) times the largest rise (that of its other symbol), so a fresh entry
    on top of the heap is the best pair when that bound is below its score for every dirty s.
    Otherwise (requeue_rivals) the pairs that might beat it are re-queued first: one of the few
    best pairs of s alone (their entries are kept with their counts, so their bound is exact),
    or all pairs of s. The merges are those of re-queueing every pair after every merge, which
    is what reference_wordpiece does by recounting.
    """

    def __init__(self, words: list[list[int]], counts: list[int], min_frequency: int):
        self.words, self.counts = words, counts
        self.pair_counts, self.where = pair_index(words, counts)
        self.sc = defaultdict(int, symbol_counts(words, counts))
        self.min_count = max(min_frequency, 1)
        # Only pairs that can still be merged (count >= min_count) are indexed and queued: a pair's
        # count only grows when a merge forms it next to the new symbol, and then it is queued.
        self.pairs_of: dict[int, set[int]] = defaultdict(set)
        self.queued_at: dict[int, int] = dict(self.sc)
        self.tracked: set[int] = set()
        # tracked s: {pair: (score, count(x), count(y)) of its newest entry} for the few best pairs,
        # the best score pushed for any other pair, and the best score pushed for any of them
        self.top: dict[int, dict[int, tuple[float, int, int]]] = {}
        self.rest: dict[int, float] = {}
        self.best: dict[int, float] = {}
        self.dirty: set[int] = set()
        for k, c in self.pair_counts.items():
            if c >= self.min_count:
                self.pairs_of[k >> SHIFT].add(k)
                self.pairs_of[k & MASK].add(k)
        self.heap: list[tuple] = []
        self._rebuild_heap()

    def run(
        self, vocab: dict[str, int], id_to_token: list[str], vocab_size: int, prefix: str, bar=None
    ) -> list[tuple[int, int]]:
        """Merge the best pair until vocab_size: the merges as (a_id, b_id)."""
        merges = []
        while len(id_to_token) < vocab_size:
            k = self.pop_best()
            if k is None:
                break
            a, b = k >> SHIFT, k & MASK
            new = add_token(merged_token(id_to_token[a], id_to_token[b], prefix), vocab, id_to_token)
            merges.append((a, b))
            self.queue_formed(self.merge(a, b, new))
            self.requeue_after_merge(a, b)
            if bar is not None:
                bar.update(1)
        return merges

    def entry(self, k: int, c: int) -> tuple:
        """The heap entry of pair k with count c (noting its score for a tracked symbol)."""
        # ties: higher count first, then smaller ids (earlier in the vocabulary)
        x, y = k >> SHIFT, k & MASK
        sc = self.sc
        cx, cy = sc[x], sc[y]
        score = c / (cx * cy)
        tracked = self.tracked
        if x in tracked:
            self._note(x, score, k, cx, cy)
        if y in tracked:
            self._note(y, score, k, cx, cy)
        return (-score, -c, k, c, cx, cy)

    def _note(self, s: int, score: float, k: int, cx: int, cy: int) -> None:
        t = self.top[s]
        if k in t:
            t[k] = (score, cx, cy)  # k's newest entry: its older ones score higher than it is worth
        elif score > self.rest[s]:
            t[k] = (score, cx, cy)
            if len(t) > TOP_KEPT:
                low = min(t, key=t.get)
                self.rest[s] = max(self.rest[s], t.pop(low)[0])
        if score > self.best[s]:
            self.best[s] = score

    def _rebuild_heap(self) -> None:
        """A heap of the live pairs alone, every symbol queued now."""
        pair_counts, min_count = self.pair_counts, self.min_count
        live = {k for ps in self.pairs_of.values() for k in ps}
        self.tracked.clear()
        self.dirty.clear()
        self.heap.clear()  # in place: the stale entries go before the new ones are made
        self.heap.extend(self.entry(k, c) for k in live if (c := pair_counts[k]) >= min_count)
        heapq.heapify(self.heap)
        self.queued_at = dict(self.sc)
        self.compact_at = 2 * len(self.heap) + COMPACT_SLACK

    def pop_best(self) -> int | None:
        """The best pair (packed), off the heap; None when no pair can be merged."""
        heap, pair_counts, sc, min_count = self.heap, self.pair_counts, self.sc, self.min_count
        heappop, heappush, entry = heapq.heappop, heapq.heappush, self.entry
        while heap:
            if len(heap) > self.compact_at:  # mostly stale entries by now: rebuild from the live pairs
                self._rebuild_heap()
                heap = self.heap
            e = heappop(heap)
            _, _, k, c, ca, cb = e
            if c != pair_counts[k] or ca != sc[k >> SHIFT] or cb != sc[k & MASK]:
                if pair_counts[k] >= min_count:  # stale: queue it with its current score
                    heappush(heap, entry(k, pair_counts[k]))
                continue
            if self.dirty and self.requeue_rivals(k, -e[0]):  # look again
                heappush(heap, e)
                continue
            return k
        return None

    def requeue_rivals(self, k: int, score: float) -> bool:
        """Re-queue what of the dirty symbols' pairs might beat pair k's (fresh) score; True
        if anything was."""
        sc, pair_counts, min_count = self.sc, self.pair_counts, self.min_count
        rises = {s: self.queued_at[s] / sc[s] for s in self.dirty}
        largest = max(rises.values()) * (1 + 1e-9)  # (the margin covers rounding)
        found = False
        for s, rise in rises.items():
            if self.best[s] * rise * largest < score:
                continue
            if self.rest[s] * rise * largest >= score:
                self.queue_pairs_of(s)
                found = True
                continue
            for kk, (kk_score, cx, cy) in list(self.top[s].items()):
                c = pair_counts[kk]
                if kk == k or c < min_count:
                    continue
                x, y = kk >> SHIFT, kk & MASK
                if (cx != sc[x] or cy != sc[y]) and kk_score * (cx / sc[x]) * (cy / sc[y]) * (1 + 1e-9) >= score:
                    heapq.heappush(self.heap, self.entry(kk, c))
                    found = True
        return found

    def queue_pairs_of(self, s: int) -> None:
        """Re-queue every pair of s with its current score; drop those below min_count."""
        ps = self.pairs_of[s]
        self.tracked.discard(s)
        if len(ps) > FEW_PAIRS:
            self.tracked.add(s)
            self.top[s], self.rest[s], self.best[s] = {}, 0.0, 0.0
        pair_counts, min_count, heap, entry, heappush = (
            self.pair_counts,
            self.min_count,
            self.heap,
            self.entry,
            heapq.heappush,
        )
        dead = []
        for kk in ps:
            c = pair_counts[kk]
            if c < min_count:
                dead.append(kk)
            else:
                heappush(heap, entry(kk, c))
        ps.difference_update(dead)
        self.queued_at[s] = self.sc[s]
        self.dirty.discard(s)

    def merge(self, a: int, b: int, new: int) -> set[int]:
        """Merge (a, b) into new in every word holding it, updating the pair and symbol counts;
        returns the pairs formed."""
        words, counts, sc, pair_counts, where = self.words, self.counts, self.sc, self.pair_counts, self.where
        k = a << SHIFT | b
        formed_pairs: set[int] = set()
        for wi in where.pop(k, ()):  # (a pair formed again as k goes to a new list, not this one)
            n = counts[wi]
            merged, gone, formed = merge_word(words[wi], a, b, new)
            m = len(words[wi]) - len(merged)  # merges made in this word
            words[wi] = merged
            sc[a] -= m * n
            sc[b] -= m * n
            sc[new] += m * n
            pair_counts[k] -= m * n
            for x, y in gone:
                pair_counts[x << SHIFT | y] -= n
            for x, y in formed:
                kk = x << SHIFT | y
                pair_counts[kk] += n
                ws = where[kk]
                if not ws or ws[-1] != wi:  # the same pair formed twice in this word
                    ws.append(wi)
                formed_pairs.add(kk)
        self.queued_at[new] = sc[new]
        return formed_pairs

    def queue_formed(self, formed: set[int]) -> None:
        """Index and queue the pairs a merge formed (they hold the new symbol)."""
        pair_counts, min_count, pairs_of, heap = self.pair_counts, self.min_count, self.pairs_of, self.heap
        for kk in formed:
            c = pair_counts[kk]
            if c >= min_count:
                pairs_of[kk >> SHIFT].add(kk)
                pairs_of[kk & MASK].add(kk)
                heapq.heappush(heap, self.entry(kk, c))

    def requeue_after_merge(self, a: int, b: int) -> None:
        """The pairs of a and b, whose scores rose with the lower count(a), count(b): queued now,
        or (tracked symbols, see the class) later."""
        for s in (a,) if a == b else (a, b):
            if self.sc[s] == 0:  # gone from every word: no pair of it is left to score
                self.pairs_of.pop(s, None)
                self.tracked.discard(s)
                self.dirty.discard(s)
            elif s in self.tracked and self.queued_at[s] <= RISE * self.sc[s]:
                self.dirty.add(s)
            else:
                self.queue_pairs_of(s)


def train_wordpiece(
    word_counts: dict[str, int],
    vocab_size: int = 30000,
    min_frequency: int = 0,
    special_tokens: Iterable[str] = (),
    limit_alphabet: int | None = None,
    initial_alphabet: Iterable[str] = (),
    continuing_subword_prefix: str = "##",
    criterion: str = "likelihood",
    show_progress: bool = False,
) -> dict[str, int]:
    """Train on word counts; returns the vocabulary token -> id (specials, alphabet, merges).

    >>> corpus = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
    >>> v = train_wordpiece(corpus, vocab_size=12)   # 7 characters + 4 "##" forms + 1 merge
    >>> max(v, key=v.get)    # likelihood: "##s" only ever follows "##g": 5 / (20 * 5) wins
    '##gs'
    >>> v = train_wordpiece(corpus, vocab_size=12, criterion="frequency")
    >>> max(v, key=v.get)    # frequency (what tokenizers does): the commonest pair, 20 times
    '##ug'
    """
    if criterion == "frequency":
        vocab, _ = train_bpe(
            word_counts,
            vocab_size,
            min_frequency,
            special_tokens,
            limit_alphabet,
            initial_alphabet,
            continuing_subword_prefix,
            None,
            show_progress,
        )
        return vocab
    if criterion != "likelihood":
        raise ValueError(f"unknown WordPiece criterion {criterion!r}; use 'likelihood' or 'frequency'")
    if not continuing_subword_prefix:
        raise ValueError("WordPiece needs a continuing_subword_prefix (usually '##')")
    vocab, id_to_token, words, counts = initial_vocab(
        word_counts, special_tokens, limit_alphabet, initial_alphabet, continuing_subword_prefix, None, vocab_size
    )
    bar = merges_bar(show_progress, vocab_size - len(id_to_token), "Compute merges")
    LikelihoodMerges(words, counts, min_frequency).run(vocab, id_to_token, vocab_size, continuing_subword_prefix, bar)
    if bar is not None:
        bar.close()
    return vocab


class WordPieceTrainer:
    """Trains a `WordPiece` model. Options as tokenizers' WordPieceTrainer, plus `criterion`."""

    def __init__(
        self,
        vocab_size: int = 30000,
        min_frequency: int = 0,
        special_tokens: Iterable[str] = (),
        limit_alphabet: int | None = None,
        initial_alphabet: Iterable[str] = (),
        continuing_subword_prefix: str = "##",
        criterion: str = "likelihood",
        unk_token: str = "[UNK]",
        max_input_chars_per_word: int = 100,
        show_progress: bool = False,
    ):
        if criterion not in ("likelihood", "frequency"):
            raise ValueError(f"unknown WordPiece criterion {criterion!r}; use 'likelihood' or 'frequency'")
        self.vocab_size = vocab_size
        self.min_frequency = min_frequency
        self.special_tokens = list(special_tokens)
        self.limit_alphabet = limit_alphabet
        self.initial_alphabet = list(initial_alphabet)
        self.continuing_subword_prefix = continuing_subword_prefix
        self.criterion = criterion
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        self.show_progress = show_progress

    def train_vocab(self, word_counts: dict[str, int]) -> dict[str, int]:
        return train_wordpiece(
            word_counts,
            self.vocab_size,
            self.min_frequency,
            self.special_tokens,
            self.limit_alphabet,
            self.initial_alphabet,
            self.continuing_subword_prefix,
            self.criterion,
            self.show_progress,
        )

    def train_from_counts(self, word_counts: dict[str, int]):
        """Train and return a ready `WordPiece` model."""
        return WordPiece(
            self.train_vocab(word_counts),
            unk_token=self.unk_token,
            continuing_subword_prefix=self.continuing_subword_prefix,
            max_input_chars_per_word=self.max_input_chars_per_word,
        )
