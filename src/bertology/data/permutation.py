"""Permutation-LM pretraining data as the original XLNet built it (zihangdai/xlnet, data_utils.py).

Not transformers' collator (which replaces targets with <mask> and keeps no memory): here the
targets keep their tokens in the content stream, the query stream alone hides them, and the
segments of each stream of text go to consecutive batches at the same batch row, so the memory of
one step is the context of the next.

1. The documents are one token stream, each followed by an end-of-document token (</s>: the
   recipe's tokenizer has no <eod>), with a flag that flips at every sentence (`Stream`; pretraining
   reads it from the token store a window at a time: stored_stream.py).
2. `batchify`: the stream is cut into `rows` streams of equal length, one per batch row; with
   bi_data, half the rows and the same streams backwards (the model runs them with negated
   relative positions).
3. Step k of an epoch takes, from every row at offset p = k·reuse_len, an example
       [reuse_len tokens from p] + A + <sep> + B + <sep> + <cls>        segment ids 0 … 0 1 … 1 2
   where A starts at p + reuse_len; half of the time B is A's continuation (cut at a sentence
   boundary), otherwise a random span of the row's stream (`split_a_b`). The next step's reuse part
   starts where this one's reuse part ends: the memory (the first reuse_len states) precedes it.
4. Targets (`sample_spans`): word-aligned n-grams, n ∈ 1..5 with p(n) ∝ 1/n, each inside a context
   of n·mask_alpha/mask_beta tokens, topped up with single tokens to exactly num_predict (half in
   the reuse part, half in the rest); never <sep> or <cls>.
5. Factorisation order (`block_order`): the same random permutation of perm_size offsets in every
   block of perm_size positions, drawn separately for the reuse part and the rest;
   `permutation_mask`: a target sees the non-targets and the targets before it in the order (not
   itself); a non-target sees every non-target and no target; the reuse part never sees the rest.

Randomness: example (epoch e, step k, row r) draws from numpy's Generator seeded by (seed, e, k, r),
so a batch is a pure function of the step (exact resume, data parallelism).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import torch

from .instances import Segment, SpecialTokens


@dataclass(frozen=True)
class PermutationSettings:
    """The original's flags (seq_len 512, reuse_len 256, num_predict 85, perm_size 256, mask_alpha 6,
    mask_beta 1, max_gram 5); `scaled(seq_len)` keeps their proportions for shorter sequences."""

    seq_len: int = 512
    reuse_len: int = 256
    num_predict: int = 85
    perm_size: int = 256
    bi_data: bool = False
    mask_alpha: int = 6
    mask_beta: int = 1
    max_gram: int = 5

    def __post_init__(self):
        for name in ("seq_len", "reuse_len", "num_predict", "perm_size", "mask_alpha", "mask_beta", "max_gram"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        room = self.seq_len - self.reuse_len
        if room < 5:
            raise ValueError(
                f"reuse_len {self.reuse_len} leaves {room} of seq_len {self.seq_len} for A + <sep> + B + "
                "<sep> + <cls>; it needs at least 5"
            )
        for part, length in (("reuse_len", self.reuse_len), ("seq_len - reuse_len", room)):
            if length % self.perm_size:
                raise ValueError(
                    f"perm_size {self.perm_size} does not divide {part} = {length}: the permutation "
                    "runs over whole blocks of perm_size positions"
                )
        first, second = self.split_predictions()
        if first > self.reuse_len or second > room - 3:
            raise ValueError(
                f"num_predict {self.num_predict} is more than the tokens there are to predict "
                f"({self.reuse_len} in the reuse part, {room - 3} in A and B)"
            )

    def split_predictions(self) -> tuple[int, int]:
        """Targets in the reuse part and in the rest, as the original splits them."""
        second = self.num_predict // 2
        return self.num_predict - second, second

    @classmethod
    def scaled(cls, seq_len: int, **overrides) -> "PermutationSettings":
        """The original's proportions at another length: reuse half, num_predict 85/512 of it, perm_size = reuse_len.

        >>> s = PermutationSettings.scaled(128); (s.reuse_len, s.num_predict, s.perm_size)
        (64, 21, 64)
        """
        reuse = overrides.pop("reuse_len", None) or seq_len // 2
        defaults = dict(
            reuse_len=reuse,
            num_predict=max(2, round(85 * seq_len / 512)),
            perm_size=_largest_common_divisor(reuse, seq_len - reuse, seq_len // 2),
        )
        return cls(seq_len=seq_len, **{**defaults, **{k: v for k, v in overrides.items() if v is not None}})


def _largest_common_divisor(a: int, b: int, at_most: int) -> int:
    return max(d for d in range(1, max(1, min(at_most, a, b)) + 1) if a % d == 0 and b % d == 0)


# ---- the stream ----------------------------------------------------------------------------------


@dataclass
class Stream:
    """Token ids, word-start flags and a flag that flips at every sentence; 1-D, or 2-D (rows, length)."""

    ids: np.ndarray
    starts: np.ndarray
    sentence: np.ndarray

    def __len__(self) -> int:
        return self.ids.shape[-1]

    def rows(self, n_rows: int, bi_data: bool = False) -> "Stream":
        """`batchify`: the stream cut into rows (as StoredStream.rows cuts a stream in the token store)."""
        return batchify(self, n_rows, bi_data)

    def row(self, r: int, position: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, word starts, sentence flags) of row `r` of a cut stream (for an example at `position`: a
        StoredStream's rows read ahead from it)."""
        return self.ids[r], self.starts[r], self.sentence[r]


def build_stream(documents: Iterable[list[Segment]], eod: int) -> Stream:
    """Documents (lists of sentences) → one stream; each document ends with `eod`, its own sentence.

    >>> s = build_stream([[Segment([5, 6], [True, False]), Segment([7], [True])]], eod=2)
    >>> s.ids.tolist(), s.sentence.astype(int).tolist()
    ([5, 6, 7, 2], [0, 0, 1, 0])
    """
    ids, starts, sentence = [], [], []
    flag = False
    for document in documents:
        for segment in list(document) + [Segment([eod], [True])]:
            ids += segment.ids
            starts += segment.starts
            sentence += [flag] * len(segment)
            flag = not flag
    return Stream(np.array(ids, dtype=np.int64), np.array(starts, dtype=bool), np.array(sentence, dtype=bool))


def batchify(stream: Stream, rows: int, bi_data: bool = False) -> Stream:
    """Cut a stream into `rows` equal streams (the tail that does not divide is dropped); with
    bi_data, rows/2 streams followed by the same streams reversed.

    >>> batchify(Stream(np.arange(7), np.ones(7, bool), np.zeros(7, bool)), 2, bi_data=True).ids.tolist()
    [[0, 1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1, 0]]
    """
    if bi_data and rows % 2:
        raise ValueError(f"bi_data needs an even batch size (forward rows and the same rows backwards), got {rows}")
    n = rows // 2 if bi_data else rows
    length = len(stream) // n
    cut = [a[: n * length].reshape(n, length) for a in (stream.ids, stream.starts, stream.sentence)]
    if bi_data:
        cut = [np.concatenate([a, a[:, ::-1]]) for a in cut]
    return Stream(*cut)


# ---- one example ---------------------------------------------------------------------------------


def sentence_bounds(sentence: np.ndarray, begin: int, stop: int) -> np.ndarray:
    """Positions i in (begin, stop) where a sentence starts (sentence[i] != sentence[i - 1]).

    >>> sentence_bounds(np.array([0, 0, 1, 1, 1, 0], bool), 0, 6).tolist()
    [2, 5]
    """
    return np.flatnonzero(sentence[begin + 1 : stop] != sentence[begin : stop - 1]) + begin + 1


def _boundary_at_or_after(sentence: np.ndarray, position: int, window: int = 64) -> int:
    """The first sentence start ≥ `position` ≥ 1 (len(sentence) when there is none)."""
    n = len(sentence)
    while position < n:
        stop = min(n, position + window)
        found = sentence_bounds(sentence, position - 1, stop)
        if len(found):
            return int(found[0])
        position, window = stop, window * 4
    return n


def _boundary_at_or_before(sentence: np.ndarray, position: int, window: int = 64) -> int:
    """The last sentence start ≤ `position` (0 when there is none)."""
    while position > 0:
        start = max(0, position - window)
        found = sentence_bounds(sentence, start, position + 1)
        if len(found):
            return int(found[-1])
        position, window = start, window * 4
    return 0


def split_a_b(sentence: np.ndarray, begin: int, total: int, rng: np.random.Generator) -> tuple[int, int, int, int, int]:
    """A from `begin` and B, `total` tokens together: (a_begin, a_end, b_begin, b_end, label),
    label 1 = B continues A, 0 = B is a random span of the stream. The original's _split_a_and_b."""
    n = len(sentence)
    window = total + 64
    while True:  # the sentence starts within `total` of begin (cuts), and the first one beyond (end)
        stop = min(n, begin + window)
        bounds = sentence_bounds(sentence, begin, stop)
        beyond = bounds[bounds - begin >= total]
        if len(beyond) or stop == n:
            break
        window *= 4
    cuts = bounds[bounds - begin < total].tolist()
    end = int(beyond[0]) if len(beyond) else n
    if not cuts or rng.random() < 0.5:
        label = 0
        a_end = end if not cuts else cuts[rng.integers(len(cuts))]
        b_len = max(1, total - (a_end - begin))
        b_begin = int(rng.integers(0, n - b_len))  # anywhere in the stream, then out to sentence boundaries
        b_begin = _boundary_at_or_before(sentence, b_begin)
        b_end = b_begin + b_len
        if b_end < n - 1:  # out to the end of its sentence (the stream's last token at most)
            b_end = min(_boundary_at_or_after(sentence, b_end), n - 1)
    else:
        label = 1
        a_end = cuts[rng.integers(len(cuts))]
        b_begin, b_end = a_end, end
    a_len, b_len = a_end - begin, b_end - b_begin
    while a_len + b_len > total:  # trim the longer one at its end
        if a_len > b_len:
            a_len -= 1
        else:
            b_len -= 1
    return begin, begin + a_len, b_begin, b_begin + b_len, label


def sample_spans(
    starts: np.ndarray,
    goal: int,
    rng: np.random.Generator,
    allowed: np.ndarray | None = None,
    mask_alpha: int = 6,
    mask_beta: int = 1,
    max_gram: int = 5,
) -> np.ndarray:
    """Exactly `goal` targets: word-aligned n-grams (p(n) ∝ 1/n) each in a context of n·alpha/beta
    tokens, then single tokens at random until `goal` is reached. `allowed` excludes positions.

    Where the original counts pieces instead of words (it tests the span's first piece at every
    step), this counts words, as the paper describes; a span longer than the budget left is cut.

    >>> mask = sample_spans(np.ones(40, bool), 7, np.random.default_rng(0))
    >>> int(mask.sum())
    7
    """
    n = len(starts)
    allowed = np.ones(n, bool) if allowed is None else allowed
    if goal > int(allowed.sum()):
        raise ValueError(f"cannot choose {goal} targets among {int(allowed.sum())} positions")
    mask = np.zeros(n, bool)
    cumulative = np.cumsum(1.0 / np.arange(1, max_gram + 1))
    cumulative /= cumulative[-1]  # p(n) ∝ 1/n
    starts = starts.tolist()  # scalar reads below: a list is several times faster than an array
    chosen, cur = 0, 0
    while cur < n and chosen < goal:
        g = min(int(np.searchsorted(cumulative, rng.random(), side="right")) + 1, goal - chosen)
        context = g * mask_alpha // mask_beta
        left = int(rng.integers(context)) if context > 0 else 0
        begin = cur + left
        while begin < n and not starts[begin]:  # a span starts at a word's first piece
            begin += 1
        if begin >= n:
            break
        end, words = begin + 1, 1
        while end < n:  # up to the start of the (g+1)-th word
            if starts[end]:
                words += 1
                if words > g:
                    break
            end += 1
        if end >= n:
            break
        span = np.flatnonzero(allowed[begin:end] & ~mask[begin:end])[: goal - chosen] + begin
        mask[span] = True
        chosen += len(span)
        cur = end + context - left
    while chosen < goal:
        i = int(rng.integers(n))
        if allowed[i] and not mask[i]:
            mask[i] = True
            chosen += 1
    return mask


def block_order(n: int, perm_size: int, rng: np.random.Generator) -> np.ndarray:
    """Each position's rank in the factorisation order: blocks of perm_size in turn, the same
    random permutation of offsets inside each block (the original's _local_perm).

    >>> block_order(6, 3, np.random.default_rng(2)).tolist()
    [2, 0, 1, 5, 3, 4]
    """
    offsets = rng.permutation(perm_size)
    positions = np.arange(n)
    return (positions // perm_size) * perm_size + offsets[positions % perm_size]


def permutation_mask(order: np.ndarray, targets: np.ndarray, functional: np.ndarray) -> np.ndarray:
    """hidden[i, j] = True where i may not see j. Non-targets (not <sep> / <cls>) come first in the
    order: seen by all, seeing no target. A target sees what precedes it in the order, not itself;
    <sep> / <cls> see themselves.

    >>> permutation_mask(np.array([1, 0, 2]), np.array([True, False, True]), np.zeros(3, bool)).astype(int).tolist()
    [[1, 0, 1], [1, 0, 1], [0, 0, 1]]
    """
    plain = ~targets & ~functional  # visible to everyone, first in the order
    rank = np.where(plain, -1, order)
    own = np.where(targets, rank, rank + 1)  # a target may not see itself; other tokens may
    return (own[:, None] <= rank[None, :]) & ~plain[None, :]


def make_example(
    rows: Stream,
    row: int,
    position: int,
    s: PermutationSettings,
    specials: SpecialTokens,
    rng: np.random.Generator,
    reverse: bool = False,
) -> dict[str, np.ndarray]:
    """The example of batch row `row` whose reuse part starts at `position` of that row's stream."""
    ids, starts, sentence = rows.row(row, position)
    R = s.reuse_len
    a0, a1, b0, b1, label = split_a_b(sentence, position + R, s.seq_len - R - 3, rng)
    sep, cls = np.array([specials.sep]), np.array([specials.cls])
    tokens = np.concatenate([ids[position : position + R], ids[a0:a1], sep, ids[b0:b1], sep, cls])
    word = np.concatenate([starts[position : position + R], starts[a0:a1], [True], starts[b0:b1], [True, True]])
    types = np.array([0] * (R + a1 - a0 + 1) + [1] * (b1 - b0 + 1) + [2])
    functional = (tokens == specials.sep) | (tokens == specials.cls)
    first, second = s.split_predictions()
    targets = np.zeros(s.seq_len, bool)
    perm = np.zeros((s.seq_len, s.seq_len), bool)
    for part, goal in ((slice(0, R), first), (slice(R, s.seq_len), second)):
        flip = (lambda a: a[::-1]) if reverse else (lambda a: a)  # a backward row: spans over the forward words
        targets[part] = flip(
            sample_spans(flip(word[part]), goal, rng, flip(~functional[part]), s.mask_alpha, s.mask_beta, s.max_gram)
        )
        order = block_order(part.stop - part.start, s.perm_size, rng)
        perm[part, part] = permutation_mask(order, targets[part], functional[part])
    perm[:R, R:] = True  # the reuse part never sees the new part (the new part sees all of it)
    where = np.flatnonzero(targets)
    mapping = np.zeros((s.num_predict, s.seq_len), np.float32)
    mapping[np.arange(s.num_predict), where] = 1
    return dict(
        input_ids=tokens,
        token_type_ids=types,
        perm_mask=perm.astype(np.float32),
        target_mapping=mapping,
        labels=tokens[where],
        is_continuation=np.array(label),
    )


class PermutationData:
    """Global batches of a token stream: `batch(step)` is a pure function of the step.

    Row r of step k holds the k-th example of stream r; at k = 0 (a new epoch) `first` is set and
    the memory starts empty. `row` numbers the global batch rows, so that a micro-batch or a rank
    finds its rows' memory."""

    def __init__(
        self, stream: Stream, settings: PermutationSettings, specials: SpecialTokens, batch_size: int, seed: int = 0
    ):
        self.settings, self.specials, self.batch_size, self.seed = settings, specials, batch_size, seed
        self.rows = stream.rows(batch_size, settings.bi_data)  # a Stream in memory, or a StoredStream
        length = len(self.rows)
        if length < settings.seq_len + 1:
            raise ValueError(
                f"the corpus gives {length} tokens per batch row at batch size {batch_size}; "
                f"--max-length {settings.seq_len} needs more than that: a larger corpus, a smaller "
                "--batch-size or --max-length"
            )
        self.steps_per_epoch = (length - 1 - settings.seq_len) // settings.reuse_len + 1

    def batch(self, step: int) -> dict[str, torch.Tensor]:
        epoch, k = divmod(step, self.steps_per_epoch)
        B = self.batch_size
        half = B // 2 if self.settings.bi_data else B
        examples = [
            make_example(
                self.rows,
                r,
                k * self.settings.reuse_len,
                self.settings,
                self.specials,
                np.random.default_rng([self.seed, epoch, k, r]),
                reverse=r >= half,
            )
            for r in range(B)
        ]
        out = {key: torch.from_numpy(np.stack([e[key] for e in examples])) for key in examples[0]}
        out["attention_mask"] = torch.ones_like(out["input_ids"])
        out["row"] = torch.arange(B)
        out["first"] = torch.full((B,), k == 0)
        return out
