"""The sample index: each pretraining instance as a few token spans of the token store, not a copy.

An instance is [CLS] piece_1 [SEP] piece_2 [SEP] ... piece_k [SEP], each piece a contiguous run
of the token store (a sentence pair: k = 2, A then B; a packed sequence: one piece per document it
draws on, the separator between documents RoBERTa's). The index holds, per part (training or
held-out) and for the instance recipe and seed:

    piece_start  (pieces,)        uint32 (int64 past 2^32 tokens): global token offset
    piece_len    (pieces,)        uint8 (uint16 from max_seq_length 258 on): tokens
    first_piece  (instances + 1,) uint32 / int64: where each instance's pieces begin (packing only;
                                  a pair's are 2i and 2i + 1)
    label        (instances,)     int8: the NSP / SOP label (pairs only)

A pair index is kept on disk more compactly (`compact_pairs`: A's start as a 2-byte offset from a
base shared by 64 pairs, the labels as bits, about 8.3 bytes a pair instead of 11) and read back by
`piece_starts` and `pair_labels`; the index also keeps its token counts (build.py).

It is made by the very algorithms of instances.py, on sentence lengths instead of token lists:
`pair_spans` consumes a random.Random exactly as `instances.create_pair_instances` does (tests hold
the two to the same pairs), `pack_spans` cuts exactly where `instances.pack_sentences` cuts; each
dupe_factor pass of pairs has the generator it had when instances were written out, so instance i
is the instance it was, and its static mask (keyed by i) the same. Packing draws nothing, so its
passes are one pass repeated: the index holds one, and instance i is instance i mod N of it.
"""

from __future__ import annotations

import multiprocessing as mp
import random
from array import array
from functools import partial

import numpy as np

from ..progress import progress_bar
from .masking import seeded_generator

PairSpan = tuple[int, int, int, int, int]  # (a_start, a_len, b_start, b_len, label)
PARALLEL_MIN_DOCS = 20_000  # documents over all passes below which a fork costs more than it saves


def negative_window(k: int, n: int, size: int) -> tuple[int, int]:
    """(documents after, documents before) position k of n that `instances.DocumentWindow` of `size`
    offers as NSP negatives while it holds document k: the next `size` and the `size` before.

    >>> negative_window(0, 5, 2), negative_window(3, 5, 2), negative_window(4, 5, 10)
    ((2, 0), (1, 2), (0, 4))
    """
    return min(size, n - 1 - k), min(size, k)


def pair_spans(
    starts: list[int],
    lengths: list[int],
    max_num_tokens: int,
    short_seq_prob: float,
    objective: str,
    rng: random.Random,
    negative=None,
) -> list[PairSpan]:
    """`instances.create_pair_instances` of one document given as its sentences' token offsets
    `starts` and `lengths`: the same pairs, as spans. `negative(rng)` draws a random other document
    as (starts, lengths) (NSP only).

    >>> pair_spans([0, 2, 4, 6, 8, 10], [2] * 6, 6, 0.0, "sop", random.Random(1))
    [(2, 4, 0, 2, 1), (10, 2, 6, 4, 1)]
    """
    out: list[PairSpan] = []
    random, below = rng.random, partial(_below, rng.getrandbits)  # rng.random(), rng.randrange(n): the same draws

    def next_target() -> int:  # instances.target_length
        return below(max_num_tokens - 1) + 2 if random() < short_seq_prob else max_num_tokens

    target = next_target()
    first, n_chunk, length, i, n = 0, 0, 0, 0, len(lengths)
    while i < n:
        if n_chunk == 0:
            first = i
        n_chunk += 1
        length += lengths[i]
        if i == n - 1 or length >= target:
            a_end = below(n_chunk - 1) + 1 if n_chunk >= 2 else 1  # rng.randint(1, n_chunk - 1)
            a0 = starts[first]
            a_len = starts[first + a_end - 1] + lengths[first + a_end - 1] - a0
            pair = None
            if objective == "nsp" and n_chunk == 1 and a_len >= 2 and random() < 0.5:
                cut = below(a_len - 1) + 1  # one long sentence, cut (see instances.py)
                pair = (a0, cut, a0 + cut, a_len - cut, 0)
            elif objective == "nsp":
                if n_chunk == 1 or random() < 0.5:
                    o_starts, o_lengths = negative(rng)
                    j = below(len(o_lengths))
                    b_len = 0
                    for m in range(j, len(o_lengths)):
                        b_len += o_lengths[m]
                        if b_len >= target - a_len:
                            break
                    i -= n_chunk - a_end  # the chunk's sentences after A go back to the stream
                    pair = (a0, a_len, o_starts[j], b_len, 1)
                else:
                    pair = (a0, a_len, a0 + a_len, length - a_len, 0)
            else:
                b = None
                if n_chunk >= 2:
                    b = (a0 + a_len, length - a_len)
                elif a_len >= 2:
                    cut = below(a_len - 1) + 1
                    a_len, b = cut, (a0 + cut, a_len - cut)
                if b is not None:
                    pair = (b[0], b[1], a0, a_len, 1) if random() < 0.5 else (a0, a_len, b[0], b[1], 0)
            if pair is not None:
                out.append(truncate_spans(pair, max_num_tokens, rng) if pair[1] + pair[3] > max_num_tokens else pair)
            n_chunk, length = 0, 0
            target = next_target()
        i += 1
    return out


def _below(getrandbits, n: int) -> int:
    """random.Random.randrange(n) for n ≥ 1 as CPython draws it (_randbelow_with_getrandbits: k =
    n.bit_length() bits a try until one is below n), without its argument checks: the same number,
    the generator left the same (tests/data/test_samples.py holds it to randrange).

    >>> import random
    >>> g, h = random.Random(5), random.Random(5)
    >>> [_below(g.getrandbits, n) for n in (1, 7, 1000)] == [h.randrange(n) for n in (1, 7, 1000)]
    True
    """
    if n < 1:
        raise ValueError(f"empty range for randrange({n})")
    k = int(n).bit_length()  # (n may be a numpy integer, as randrange allows)
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return r


def truncate_spans(pair: PairSpan, max_num_tokens: int, rng: random.Random) -> PairSpan:
    """`instances.truncate_pair` on spans: the longer one loses a token at a random end until both fit.

    Which segment loses each token depends on the lengths alone (the longer; B on a tie), so the
    schedule is worked out at once and only the draws (one a token, front when < 0.5) are made in turn.

    >>> truncate_spans((0, 4, 10, 1, 0), 3, random.Random(0))
    (0, 2, 10, 1, 0)
    """
    a0, a_len, b0, b_len, label = pair
    excess = a_len + b_len - max_num_tokens
    if excess <= 0:
        return pair
    fronts = _front_draws(rng, excess)  # byte j: 1 where token j goes from the front
    # first the longer loses tokens until the two are level (A while A > B; B down to A - 1 otherwise),
    # then they alternate, the one that did not lose last going first
    if a_len > b_len:
        k = min(excess, a_len - b_len)
        a_steps, b_steps = (fronts[:k], fronts[k + 1 :: 2]), (fronts[k::2],)
    else:
        k = min(excess, b_len - a_len + 1)
        a_steps, b_steps = (fronts[k::2],), (fronts[:k], fronts[k + 1 :: 2])
    a0, a_len = a0 + sum(s.count(1) for s in a_steps), a_len - sum(map(len, a_steps))
    b0, b_len = b0 + sum(s.count(1) for s in b_steps), b_len - sum(map(len, b_steps))
    return a0, a_len, b0, b_len, label


_HIGH_BIT_CLEAR = bytes(1 if b < 0x80 else 0 for b in range(256))  # a byte's top bit clear -> 1


def _front_draws(rng: random.Random, n: int) -> bytes:
    """[rng.random() < 0.5 for _ in range(n)] as bytes of 0 / 1, in one call, the generator left as
    those n calls leave it. random() makes a float of two 32-bit words of the Mersenne Twister,
    a * 2**26 + b over 2**53 with a = w1 >> 5, b = w2 >> 6: it is < 0.5 exactly when w1's top bit
    is clear; getrandbits(64 n) draws the same 2n words, word i at bits 32 i of the little-endian
    integer, so the top byte of word 2j is byte 8 j + 3. (tests/data/test_samples.py holds it to
    the calls, the generator's next draw included.)"""
    return rng.getrandbits(64 * n).to_bytes(8 * n, "little")[3::8].translate(_HIGH_BIT_CLEAR)


def pack_spans(documents, max_num_tokens: int, cross_documents: bool) -> tuple[list[int], list[int], list[int]]:
    """`instances.pack_sentences` on spans: `documents` yields each document's (starts, lengths);
    returns (piece starts, piece lengths, first piece of each sequence + the total).

    >>> pack_spans([([0, 2], [2, 1]), ([3], [2])], 6, True)
    ([0, 3], [3, 2], [0, 2])
    >>> pack_spans([([0, 2], [2, 1]), ([3], [2])], 4, True)
    ([0, 3], [3, 2], [0, 1, 2])
    """
    p_start: list[int] = []
    p_len: list[int] = []
    first: list[int] = [0]
    used = 0  # tokens (and separators) in the sequence being filled
    for starts, lengths in documents:
        if used and not cross_documents:
            first.append(len(p_start))
            used = 0
        new_doc = used > 0
        for s, n in zip(starts, lengths):
            for k in range(0, n, max_num_tokens):
                size = min(max_num_tokens, n - k)
                need = size + (1 if new_doc else 0)
                if used and used + need > max_num_tokens:
                    first.append(len(p_start))
                    used, need, new_doc = 0, size, False
                if used == 0 or new_doc:  # a new piece: a new sequence, or a document after its separator
                    p_start.append(s + k)
                    p_len.append(size)
                    new_doc = False
                else:  # the rest of the same document runs on
                    p_len[-1] += size
                used += need
    if used:
        first.append(len(p_start))
    return p_start, p_len, first


def build_index(
    corpus, doc_ids: list[int], r, seed: int, show_progress: bool, desc: str, workers: int = 1
) -> dict[str, np.ndarray]:
    """The index arrays (module docstring) of documents `doc_ids` of a TokenizedCorpus under recipe `r`;
    the dupe_factor passes of pairs, independent of one another, on `workers` forked processes."""
    M = r.max_seq_length - (3 if r.pair_task else 2)
    doc_ids = np.asarray(doc_ids, dtype=np.int64)
    sentences = _Sentences(corpus.sent_offsets, corpus.doc_offsets)
    bar = progress_bar(total=r.dupe_factor * len(doc_ids), desc=desc, unit="doc", disable=not show_progress)
    with bar:
        if r.pair_task is None:
            p_start, p_len, first = pack_spans(
                _counted(map(sentences, doc_ids.tolist()), bar, r.dupe_factor), M, r.packing == "full-sentences"
            )
            out = {"first_piece": np.asarray(first, dtype=np.int64)}
        else:
            if r.pair_task == "nsp" and len(doc_ids) < 2:
                raise ValueError("NSP needs at least two documents (random next segments come from another document)")
            job = (sentences, doc_ids, r, M, seed)
            parallel = (
                workers > 1
                and r.dupe_factor > 1
                and r.dupe_factor * len(doc_ids) >= PARALLEL_MIN_DOCS
                and "fork" in mp.get_all_start_methods()
                and not mp.current_process().daemon
            )
            passes = None if parallel else [_pair_pass(job, dupe, bar) for dupe in range(r.dupe_factor)]
            if passes is None:
                with mp.get_context("fork").Pool(min(workers, r.dupe_factor), _init_pass, (job,)) as pool:
                    passes = []
                    for done in pool.imap(_run_pass, range(r.dupe_factor)):
                        passes.append(done)
                        bar.update(len(doc_ids))
            p_start = np.concatenate([p[0] for p in passes])
            p_len = np.concatenate([p[1] for p in passes])
            out = {"label": np.concatenate([p[2] for p in passes]).astype(np.int8)}
    wide = corpus.num_tokens >= 1 << 32
    out["piece_start"] = np.asarray(p_start, dtype=np.int64 if wide else np.uint32)
    out["piece_len"] = np.asarray(p_len, dtype=np.uint8 if M < 1 << 8 else np.uint16)
    if "first_piece" in out and not len(p_start) >= 1 << 32:
        out["first_piece"] = out["first_piece"].astype(np.uint32)
    return out


class _Sentences:
    """Document d -> (token offsets, lengths) of its sentences, as lists (the loops below read scalars)."""

    def __init__(self, sent_offsets: np.ndarray, doc_offsets: np.ndarray):
        self.sent, self.lengths = sent_offsets, np.diff(sent_offsets)
        self.docs = doc_offsets.tolist()  # (a list: a scalar read off an array costs more than the slice)

    def __call__(self, d: int) -> tuple[list[int], list[int]]:
        s0, s1 = self.docs[d], self.docs[d + 1]
        return self.sent[s0:s1].tolist(), self.lengths[s0:s1].tolist()


def _pair_pass(job, dupe: int, bar=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One dupe_factor pass of pairs over the documents, with the generator instances.py's pass had:
    (piece starts (2n,), piece lengths (2n,), labels (n,)), A then B of each pair."""
    sentences, doc_ids, r, M, seed = job
    rng = random.Random(int(seeded_generator(seed, 1, dupe).initial_seed()))
    n, nsp, ids = len(doc_ids), r.pair_task == "nsp", doc_ids.tolist()
    pieces = array("q")  # 8 bytes an entry (a list of ints would hold ~36)
    for k, d in enumerate(ids):

        def negative(g: random.Random, k=k) -> tuple[list[int], list[int]]:
            after, before = negative_window(k, n, r.negative_window)
            j = g.randrange(after + before)
            return sentences(ids[k + 1 + j] if j < after else ids[k - before + j - after])

        starts, lengths = sentences(d)
        for pair in pair_spans(starts, lengths, M, r.short_seq_prob, r.pair_task, rng, negative if nsp else None):
            pieces.extend(pair)
        if bar is not None:
            bar.update(1)
    table = np.frombuffer(pieces, dtype=np.int64).reshape(-1, 5)  # (n, 5): a0, a_len, b0, b_len, label
    return table[:, [0, 2]].ravel(), table[:, [1, 3]].ravel(), table[:, 4]


_pass_job = None  # a forked worker's (sentences, doc_ids, recipe, M, seed), set by its initializer


def _init_pass(job) -> None:
    global _pass_job
    _pass_job = job


def _run_pass(dupe: int):
    return _pair_pass(_pass_job, dupe)


def _counted(items, bar, weight: int = 1):
    """`items`, each counted `weight` times on `bar` (packing's one pass stands for dupe_factor passes)."""
    for item in items:
        yield item
        bar.update(weight)


# ---- the pair index on disk: A's starts as offsets from a base a block, labels as bits ----------------

OFFSET_BLOCK = 64  # pairs that share a base for their A starts


def compact_pairs(index: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """build_index's pair arrays as they are kept (about 8.3 bytes a pair instead of 11):

        a_base       (ceil(n / 64),) the lowest A start of each block of 64 pairs
        a_offset     (n,) uint16     A's start less its block's base (0 for the far ones)
        a_far        (k,)            the pairs whose A start is 65,536 or more past the base (a pass
        a_far_start  (k,)            that begins within a block), and their starts
        b_start      (n,)            B's start (NSP's random B lies anywhere in its window)
        piece_len    (2n,)           as build_index gives it
        label_bits   (ceil(n / 8),)  uint8, pair i's label at bit i % 8 of byte i // 8

    A pass's A starts only grow (its chunks follow one another through the documents), so a block's
    offsets are within a few thousand tokens; where they are not (a held-out part's documents lie
    scattered through the corpus) and the offsets would take more room, A's starts are kept as they
    are (`a_start`). `piece_starts` and `pair_labels` read either back.

    >>> ix = compact_pairs({"piece_start": np.array([5, 9, 7, 1, 8, 2], np.uint32),
    ...                     "piece_len": np.array([2, 2, 1, 3, 4, 4], np.uint8), "label": np.array([1, 0, 1], np.int8)})
    >>> ix["a_base"].tolist(), ix["a_offset"].tolist(), ix["a_far"].tolist(), ix["label_bits"].tolist()
    ([5], [0, 2, 3], [], [5])
    >>> piece_starts(ix, np.arange(6)).tolist(), pair_labels(ix, np.array([2, 0, 1])).tolist()
    ([5, 9, 7, 1, 8, 2], [1, 1, 0])
    """
    starts = np.asarray(index["piece_start"], dtype=np.int64)
    a, b = starts[0::2], starts[1::2]
    n = len(a)
    wide = index["piece_start"].dtype  # uint32, or int64 past 2^32 tokens
    base = np.minimum.reduceat(a, np.arange(0, n, OFFSET_BLOCK)) if n else np.zeros(0, np.int64)
    offset = a - np.repeat(base, OFFSET_BLOCK)[:n]
    far = np.flatnonzero(offset > np.iinfo(np.uint16).max)
    far_start = a[far]
    offset[far] = 0
    kept = {
        "a_base": base.astype(wide),
        "a_offset": offset.astype(np.uint16),
        "a_far": far.astype(np.uint32 if n < 1 << 32 else np.int64),
        "a_far_start": far_start.astype(wide),
    }
    if sum(v.nbytes for v in kept.values()) >= n * wide.itemsize:  # pairs far apart (a held-out part's
        kept = {"a_start": a.astype(wide)}  # scattered documents): A's starts as they are
    return {
        **kept,
        "b_start": b.astype(wide),
        "piece_len": index["piece_len"],
        "label_bits": np.packbits(np.asarray(index["label"]) != 0, bitorder="little"),
    }


def piece_starts(index, piece: np.ndarray) -> np.ndarray:
    """(P,) int64 token offsets of pieces `piece` of an index as kept (compact_pairs' or packing's)."""
    piece = np.asarray(piece, dtype=np.int64)
    if "piece_start" in index:
        return np.asarray(index["piece_start"][piece], dtype=np.int64)
    pair, is_b = piece >> 1, (piece & 1).astype(bool)
    out = np.asarray(index["b_start"][pair], dtype=np.int64)
    a = pair[~is_b]
    if "a_start" in index:
        out[~is_b] = np.asarray(index["a_start"][a], dtype=np.int64)
        return out
    a_start = np.asarray(index["a_base"][a // OFFSET_BLOCK], np.int64) + np.asarray(index["a_offset"][a], np.int64)
    far, far_start = np.asarray(index["a_far"], np.int64), index["a_far_start"]
    if len(far):
        at = np.minimum(np.searchsorted(far, a), len(far) - 1)
        hit = far[at] == a
        a_start[hit] = np.asarray(far_start[at[hit]], np.int64)
    out[~is_b] = a_start
    return out


def pair_labels(index, pair: np.ndarray) -> np.ndarray:
    """(B,) int64 NSP / SOP labels of pairs `pair`."""
    pair = np.asarray(pair, dtype=np.int64)
    return ((np.asarray(index["label_bits"][pair >> 3]) >> (pair & 7)) & 1).astype(np.int64)
