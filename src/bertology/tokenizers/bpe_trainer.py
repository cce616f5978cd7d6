"""BPE training: start from characters, repeatedly merge the most frequent adjacent pair.

The algorithm (Sennrich et al. 2016) on a table of word counts:

1. the vocabulary starts with the special tokens, then the alphabet (every character seen, or the
   `limit_alphabet` most frequent ones, plus `initial_alphabet`), sorted by code point;
2. every word becomes a list of symbol ids (`##c` for non-initial characters when a
   `continuing_subword_prefix` is set, `c</w>` for final ones with an `end_of_word_suffix`);
3. count every adjacent pair, weighted by the word's count;
4. merge the most frequent pair everywhere, add it to the vocabulary, repeat until `vocab_size`
   or until the best pair is rarer than `min_frequency`.

Step 4 never recounts: an index from each pair to the words holding it says which words a merge
touches, and a merge only changes the counts of the pairs around each occurrence (a max-heap with
lazy invalidation finds the next best pair). Ties go to the pair with the smallest ids (earlier
in the vocabulary), exactly as Hugging Face's `BpeTrainer`, so at equal settings the two produce
the same merges.

`reference_bpe` states the algorithm with the pure helpers `get_stats` and `merge`;
`_merge_loop` is the same thing, made incremental (the tests hold the two to the same merges):
`merge_word` merges one word and says which neighbouring pairs changed, which is all the
counts need. The WordPiece trainer shares these.
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from typing import Iterable


from ..progress import progress_bar
from .bpe import BPE

# A pair (a, b) of symbol ids is packed into one int, a << SHIFT | b: int dict keys hash faster
# than tuples, and the packed order is the (a, b) lexicographic order the tie-break needs.
SHIFT = 24
MASK = (1 << SHIFT) - 1


def get_stats(words: list[list[int]], counts: list[int] | None = None) -> dict[tuple[int, int], int]:
    """Count adjacent symbol pairs over all words, each weighted by its word's count.

    >>> get_stats([[1, 2, 3], [1, 2]], [2, 5])
    {(1, 2): 7, (2, 3): 2}
    """
    stats: dict[tuple[int, int], int] = {}
    for i, word in enumerate(words):
        n = 1 if counts is None else counts[i]
        for pair in zip(word, word[1:]):
            stats[pair] = stats.get(pair, 0) + n
    return stats


def merge(symbols: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every occurrence of `pair` in `symbols` by `new_id`, left to right, no overlaps.

    >>> merge([1, 2, 1, 2, 2], (1, 2), 9)
    [9, 9, 2]
    >>> merge([5, 5, 5], (5, 5), 7)
    [7, 5]
    """
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def merge_word(
    word: list[int], a: int, b: int, new: int
) -> tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    """Merge every (a, b) in word into `new`, left to right, no overlaps. Also returns the
    adjacent pairs that merging took away and those it formed (the neighbours of each merged
    pair, in order): the trainers update their pair counts from them instead of recounting
    (the merged pair itself is left to them).

    >>> merge_word([1, 2, 3, 1, 2], 1, 2, 9)
    ([9, 3, 9], [(2, 3), (3, 1)], [(9, 3), (3, 9)])
    """
    out: list[int] = []
    gone: list[tuple[int, int]] = []
    formed: list[tuple[int, int]] = []
    i, last = 0, len(word) - 1
    for _ in range(word.count(a)):  # list.count and list.index scan in C
        try:
            j = word.index(a, i)
        except ValueError:  # merging (a, a) consumed some of the counted a's
            break
        if j < last and word[j + 1] == b:
            out += word[i:j]
            if out:
                gone.append((out[-1], a))
                formed.append((out[-1], new))
            if j + 1 < last:
                gone.append((b, word[j + 2]))
                formed.append((new, word[j + 2]))
            out.append(new)
            i = j + 2
        else:
            out += word[i : j + 1]
            i = j + 1
    out += word[i:]
    return out, gone, formed


def merged_token(left: str, right: str, prefix: str | None) -> str:
    """The token a merge makes: right's continuation prefix goes.

    >>> merged_token("hu", "##g", "##")
    'hug'
    """
    if prefix and right.startswith(prefix):
        right = right[len(prefix) :]
    return left + right


def add_token(token: str, vocab: dict[str, int], id_to_token: list[str]) -> int:
    """token's id, added at the end of the vocabulary when new."""
    i = vocab.get(token)
    if i is None:
        i = vocab[token] = len(id_to_token)
        id_to_token.append(token)
    return i


def compute_alphabet(
    word_counts: dict[str, int], limit_alphabet: int | None = None, initial_alphabet: Iterable[str] = ()
) -> list[str]:
    """The characters that start the vocabulary, sorted by code point.

    Characters of `initial_alphabet` are always kept (unless `limit_alphabet` is below their
    number); beyond `limit_alphabet`, the rarest characters are dropped (ties: the higher code
    point goes first), and words lose those characters when they are split into symbols.

    >>> compute_alphabet({"aab": 2, "bc": 1}, limit_alphabet=2)
    ['a', 'b']
    >>> compute_alphabet({"ab": 1}, initial_alphabet=["z"])
    ['a', 'b', 'z']
    """
    freq: dict[str, int] = defaultdict(int)
    for word, n in word_counts.items():
        for c in word:
            freq[c] += n
    for s in initial_alphabet:
        if not s:
            raise ValueError("initial_alphabet holds an empty string; give single characters")
        freq[s[0]] = float("inf")  # only the first character counts, as in tokenizers
    kept = list(freq)
    if limit_alphabet is not None and len(kept) > limit_alphabet:
        kept.sort(key=lambda c: (-freq[c], ord(c)))
        kept = kept[:limit_alphabet]
    return sorted(kept, key=ord)


def symbolize(
    word_counts: dict[str, int],
    vocab: dict[str, int],
    id_to_token: list[str],
    prefix: str | None = None,
    suffix: str | None = None,
) -> tuple[list[list[int]], list[int]]:
    """Split every word into the ids of its characters, adding `##c` / `c</w>` forms to `vocab`.

    Characters outside `vocab` (dropped by `limit_alphabet`) are skipped. `vocab` and
    `id_to_token` are extended in place, in order of first appearance.

    >>> vocab = {"a": 0, "b": 1}; itos = ["a", "b"]
    >>> symbolize({"aba": 3, "bx": 1}, vocab, itos, prefix="##")
    ([[0, 2, 3], [1]], [3, 1])
    >>> itos
    ['a', 'b', '##b', '##a']
    """
    words, counts = [], []
    for word, n in word_counts.items():
        ids = []
        last = len(word) - 1
        for i, c in enumerate(word):
            if c not in vocab:
                continue
            s = c
            if prefix and i > 0:
                s = prefix + s
            if suffix and i == last:
                s = s + suffix
            idx = vocab.get(s)
            if idx is None:
                idx = vocab[s] = len(id_to_token)
                id_to_token.append(s)
            ids.append(idx)
        words.append(ids)
        counts.append(n)
    return words, counts


def initial_vocab(
    word_counts: dict[str, int],
    special_tokens: Iterable[str],
    limit_alphabet: int | None,
    initial_alphabet: Iterable[str],
    prefix: str | None,
    suffix: str | None,
    vocab_size: int,
):
    """Steps 1-2: specials, alphabet, words as symbol ids. Checks vocab_size leaves room to merge."""
    if not word_counts:
        raise ValueError("cannot train on an empty corpus: no words were counted")
    if not 0 < vocab_size < 1 << SHIFT:
        raise ValueError(f"vocab_size must be between 1 and {(1 << SHIFT) - 1}, got {vocab_size}")
    vocab: dict[str, int] = {}
    id_to_token: list[str] = []
    for tok in special_tokens:
        tok = getattr(tok, "content", tok)  # an AddedToken counts by its content
        if tok not in vocab:
            vocab[tok] = len(id_to_token)
            id_to_token.append(tok)
    n_special = len(id_to_token)
    for c in compute_alphabet(word_counts, limit_alphabet, initial_alphabet):
        if c not in vocab:
            vocab[c] = len(id_to_token)
            id_to_token.append(c)
    words, counts = symbolize(word_counts, vocab, id_to_token, prefix, suffix)
    if len(id_to_token) > vocab_size:
        raise ValueError(
            f"vocab_size={vocab_size} is smaller than the {n_special} special tokens plus the "
            f"{len(id_to_token) - n_special} alphabet symbols the corpus needs; raise vocab_size "
            f"or set limit_alphabet"
        )
    return vocab, id_to_token, words, counts


def merges_bar(show: bool, total: int, desc: str):
    """A progress bar over merges, or None when not shown."""
    if not show:
        return None
    return progress_bar(total=total, desc=desc, unit="merge")


def count_pairs(words: list[list[int]], counts: list[int]):
    """Step 3: packed pair -> weighted count, and packed pair -> set of indices of words holding it."""
    pair_counts: dict[int, int] = defaultdict(int)
    where: dict[int, set[int]] = defaultdict(set)
    for wi, w in enumerate(words):
        n = counts[wi]
        for a, b in zip(w, w[1:]):
            k = a << SHIFT | b
            pair_counts[k] += n
            where[k].add(wi)
    return pair_counts, where


def _merge_loop(words, counts, vocab, id_to_token, vocab_size, min_frequency, prefix, show_progress):
    """Step 4, incremental. Returns the merges as (a_id, b_id) in order; mutates words and vocab.

    Each heap entry carries the set of words it was created for (as tokenizers does): the
    initial entries hold every word with the pair, later ones only the words where a merge just
    formed it. An entry whose count is stale is pushed back with the current count.
    """
    pair_counts, where = count_pairs(words, counts)
    seq = itertools.count()
    heap = [(-pair_counts[k], k, next(seq), pos) for k, pos in where.items() if pair_counts[k] > 0]
    heapq.heapify(heap)
    del where
    merges: list[tuple[int, int]] = []
    bar = merges_bar(show_progress, vocab_size - len(id_to_token), "Compute merges")
    heappush, heappop = heapq.heappush, heapq.heappop
    while len(id_to_token) < vocab_size and heap:
        negc, k, _, pos = heappop(heap)
        c = pair_counts[k]
        if c != -negc:
            heappush(heap, (-c, k, next(seq), pos))
            continue
        if c < 1 or c < min_frequency:
            break
        a, b = k >> SHIFT, k & MASK
        new = add_token(merged_token(id_to_token[a], id_to_token[b], prefix), vocab, id_to_token)
        merges.append((a, b))
        fresh: dict[int, set[int]] = defaultdict(set)
        for wi in pos:
            # (a stale entry can list a word that no longer holds the pair: nothing changes)
            words[wi], gone, formed = merge_word(words[wi], a, b, new)
            n = counts[wi]
            for x, y in gone:
                pair_counts[x << SHIFT | y] -= n
            for x, y in formed:
                kk = x << SHIFT | y
                pair_counts[kk] += n
                fresh[kk].add(wi)
        for kk, ws in fresh.items():
            c2 = pair_counts[kk]
            if c2 > 0:
                heappush(heap, (-c2, kk, next(seq), ws))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return merges


def reference_bpe(
    word_counts: dict[str, int], vocab_size: int, min_frequency: int = 0, prefix: str | None = None
) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Textbook BPE, the reference for _merge_loop: recount all pairs after every merge, take
    the most frequent (ties to the smallest (a, b) ids). Returns the vocabulary (alphabet in
    code-point order, no specials) and the merges.

    >>> reference_bpe({"hug": 10, "hugs": 5}, 6)
    ({'g': 0, 'h': 1, 's': 2, 'u': 3, 'hu': 4, 'hug': 5}, [('h', 'u'), ('hu', 'g')])
    """
    id_to_token = sorted({c for w in word_counts for c in w}, key=ord)
    vocab = {s: i for i, s in enumerate(id_to_token)}
    words, counts = symbolize(word_counts, vocab, id_to_token, prefix=prefix)
    merges = []
    while len(id_to_token) < vocab_size:
        stats = get_stats(words, counts)
        if not stats:
            break
        pair = min(stats, key=lambda p: (-stats[p], p))
        if stats[pair] < max(min_frequency, 1):
            break
        new = add_token(merged_token(id_to_token[pair[0]], id_to_token[pair[1]], prefix), vocab, id_to_token)
        merges.append((id_to_token[pair[0]], id_to_token[pair[1]]))
        words = [merge(w, pair, new) for w in words]
    return vocab, merges


def dedupe_merges(merges: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop repeated merges, keeping the LAST occurrence's rank (what tokenizers' map keeps).

    A pair can be merged twice when its result already existed under another spelling path
    (``t + he`` after ``th + e``): both runs add the same token, the vocabulary does not grow.

    >>> dedupe_merges([("a", "b"), ("c", "d"), ("a", "b")])
    [('c', 'd'), ('a', 'b')]
    """
    last = {m: i for i, m in enumerate(merges)}
    return [m for i, m in enumerate(merges) if last[m] == i]


def train_bpe(
    word_counts: dict[str, int],
    vocab_size: int = 30000,
    min_frequency: int = 0,
    special_tokens: Iterable[str] = (),
    limit_alphabet: int | None = None,
    initial_alphabet: Iterable[str] = (),
    continuing_subword_prefix: str | None = None,
    end_of_word_suffix: str | None = None,
    show_progress: bool = False,
):
    """Train on word counts; returns (vocab: token -> id, merges: list of (left, right) strings).

    >>> vocab, merges = train_bpe({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, vocab_size=10)
    >>> merges
    [('u', 'g'), ('u', 'n'), ('h', 'ug')]
    >>> sorted(vocab, key=vocab.get)[-3:]
    ['ug', 'un', 'hug']
    """
    vocab, id_to_token, words, counts = initial_vocab(
        word_counts,
        special_tokens,
        limit_alphabet,
        initial_alphabet,
        continuing_subword_prefix,
        end_of_word_suffix,
        vocab_size,
    )
    merges = _merge_loop(
        words, counts, vocab, id_to_token, vocab_size, min_frequency, continuing_subword_prefix, show_progress
    )
    return vocab, dedupe_merges([(id_to_token[a], id_to_token[b]) for a, b in merges])


class BpeTrainer:
    """Trains a `BPE` model; the same options as tokenizers' BpeTrainer (max_token_length aside)."""

    def __init__(
        self,
        vocab_size: int = 30000,
        min_frequency: int = 0,
        special_tokens: Iterable[str] = (),
        limit_alphabet: int | None = None,
        initial_alphabet: Iterable[str] = (),
        continuing_subword_prefix: str | None = None,
        end_of_word_suffix: str | None = None,
        show_progress: bool = False,
        unk_token: str | None = None,
    ):
        if vocab_size < 1:
            raise ValueError(f"vocab_size must be positive, got {vocab_size}")
        self.vocab_size = vocab_size
        self.min_frequency = min_frequency
        self.special_tokens = list(special_tokens)
        self.limit_alphabet = limit_alphabet
        self.initial_alphabet = list(initial_alphabet)
        self.continuing_subword_prefix = continuing_subword_prefix
        self.end_of_word_suffix = end_of_word_suffix
        self.show_progress = show_progress
        self.unk_token = unk_token

    def train_vocab(self, word_counts: dict[str, int]):
        """(vocab, merges) as plain data."""
        return train_bpe(
            word_counts,
            self.vocab_size,
            self.min_frequency,
            self.special_tokens,
            self.limit_alphabet,
            self.initial_alphabet,
            self.continuing_subword_prefix,
            self.end_of_word_suffix,
            self.show_progress,
        )

    def train_from_counts(self, word_counts: dict[str, int]):
        """Train and return a ready `BPE` model."""
        vocab, merges = self.train_vocab(word_counts)
        return BPE(
            vocab,
            merges,
            unk_token=self.unk_token,
            continuing_subword_prefix=self.continuing_subword_prefix,
            end_of_word_suffix=self.end_of_word_suffix,
        )
