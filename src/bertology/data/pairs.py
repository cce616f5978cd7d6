"""Segment pairs (BERT NSP, ALBERT SOP) of many documents at once, from keyed draws: the pair index
is a count of pairs per (pass, document), and a pair is made again from its key at batch time.

Each document of each dupe_factor pass gets its own stream of random numbers, draw t of document d
in pass p being a hash of (seed, p, d, t) (`KeyedRandom` is the stream as a random.Random-like
object). `instances.create_pair_instances` run on document d with `KeyedRandom(seed, p, d)` makes
the document's pairs; `document_pairs` makes exactly the same pairs (tests hold the two together),
for many documents in lockstep with numpy: every chunk step of every document at once, its draws
taken at the positions create_pair_instances would take them. Nothing is carried from one document
to the next, so

* building the index is one vectorised sweep over the documents (the sentence offsets of the token
  store) that keeps only how many pairs each document gave in each pass: a byte or two a document
  a pass, not a record a pair;
* pair j of document d in pass p is made again at batch time by the same sweep over that document
  alone, stopped at its j-th pair.

A long document is made piece by piece (`document_pieces`: about PIECE_SEQUENCES sequences a piece,
each with its own draws), so that no sweep steps through thousands of chunks of one document.
NSP's random next segments come from the documents around the current one (`DocumentWindow`'s
window: the next `negative_window` and the previous `negative_window` of the part), as the
streaming builder drew them.
"""

from __future__ import annotations

import multiprocessing as mp

import numpy as np

from ..progress import progress_bar
from .rows import ranges

BLOCK = 1 << 15  # documents swept at once while the index is built (bounded memory, progress between)
PARALLEL_MIN_DOCS = 200_000  # document visits (all passes) below which a fork costs more than it saves
PIECE_SEQUENCES = 32  # a long document is cut into pieces of about this many max_seq_length (document_pieces)

_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # splitmix64's finaliser
_GOLDEN, _STEP = 0x9E3779B97F4A7C15, 0xD1B54A32D192ED03  # odd constants: document and draw strides
_PIECE = 0xA0761D6478BD642F  # the stride of a long document's pieces
_SALT = 0x5851F42D4C957F2D  # the key of a draw's lower 52 bits (its top bit is a bit of a shared word)
_MASK = (1 << 64) - 1
_U64 = np.uint64


def _mix(x: int) -> int:
    x ^= x >> 30
    x = (x * _M1) & _MASK
    x ^= x >> 27
    x = (x * _M2) & _MASK
    return x ^ (x >> 31)


def mix64(x: np.ndarray) -> np.ndarray:  # _mix on uint64 arrays (their arithmetic wraps; shuffle.py's too)
    x = x ^ (x >> _U64(30))
    x = x * _U64(_M1)
    x = x ^ (x >> _U64(27))
    x = x * _U64(_M2)
    return x ^ (x >> _U64(31))


def pass_base(seed: int, dupe: int) -> int:
    """The 64-bit base of pass `dupe`'s streams (numpy's SeedSequence of (seed, 1, dupe), as the
    passes' generators were seeded before)."""
    return int(np.random.SeedSequence([int(seed), 1, int(dupe)]).generate_state(1, dtype=np.uint64)[0])


class KeyedRandom:
    """The draws of document `doc` (its piece `piece`, see document_pieces) in pass `dupe`: random(),
    randint(a, b) and randrange(n), each one 64-bit hash of (seed, dupe, doc, piece, t) for the t-th draw. The same seed, pass and document give
    the same numbers whatever else was drawn before (the reference of `document_pairs`).

    >>> g, h = KeyedRandom(0, 0, 5), KeyedRandom(0, 0, 5)
    >>> [g.randint(1, 6) for _ in range(3)] == [h.randint(1, 6) for _ in range(3)], 0 <= g.random() < 1
    (True, True)
    """

    def __init__(self, seed: int, dupe: int, doc: int, piece: int = 0):
        self.key, self.t = _mix((pass_base(seed, dupe) + doc * _GOLDEN + piece * _PIECE) & _MASK), 0

    def random(self) -> float:
        t, self.t = self.t, self.t + 1
        word = _mix((self.key + ((t >> 6) + 1) * _STEP) & _MASK)  # draws 64 t' .. 64 t' + 63 share it
        rest = _mix(((self.key ^ _SALT) + (t + 1) * _STEP) & _MASK) >> 12
        return (((word >> (t & 63)) & 1) << 52 | rest) * 2.0**-53

    def randrange(self, n: int) -> int:
        if n < 1:
            raise ValueError(f"empty range for randrange({n})")
        return min(int(self.random() * n), n - 1)

    def randint(self, a: int, b: int) -> int:
        return a + self.randrange(b - a + 1)


def _keys(seed: int, dupes: np.ndarray, docs: np.ndarray, pieces: np.ndarray) -> np.ndarray:
    """KeyedRandom(seed, dupe, doc, piece).key of each job."""
    passes = np.unique(dupes)
    bases = np.array([pass_base(seed, int(p)) for p in passes], dtype=_U64)
    base = bases[np.searchsorted(passes, dupes)]
    return mix64(base + docs.astype(_U64) * _U64(_GOLDEN) + pieces.astype(_U64) * _U64(_PIECE))


def document_pieces(sent_offsets, doc_offsets, doc_ids, piece_tokens: int):
    """A long document's pairs are made piece by piece, each piece with its own draws, so that no
    sweep runs more than about PIECE_SEQUENCES chunk steps (a corpus of one document would otherwise be
    swept one chunk at a time, and pair j made again from its j chunks): a piece starts at each sentence
    whose document offset has passed another multiple of `piece_tokens`. Returns, per piece in order,
    (position of its document in doc_ids, first sentence); a document within piece_tokens is one piece.

    >>> so, do = np.array([0, 5, 10, 15, 20, 22]), np.array([0, 4, 5])   # documents of 20 and 2 tokens
    >>> [a.tolist() for a in document_pieces(so, do, np.array([0, 1]), 8)]
    [[0, 0, 1], [0, 2, 4]]
    """
    so, do = np.asarray(sent_offsets), np.asarray(doc_offsets)  # (read by index, widened: _wide)
    doc_ids = np.asarray(doc_ids, np.int64)
    first, end = _wide(do, doc_ids), _wide(do, doc_ids + 1)
    long = np.flatnonzero(_wide(so, end) - _wide(so, first) > piece_tokens)
    if len(long) == 0:
        return np.arange(len(doc_ids)), first
    n = end[long] - first[long]
    owner = np.repeat(long, n)
    sent = ranges(first[long], n)
    piece = (_wide(so, sent) - _wide(so, first[owner])) // piece_tokens
    new = np.r_[True, (owner[1:] != owner[:-1]) | (piece[1:] != piece[:-1])]
    short = np.setdiff1d(np.arange(len(doc_ids)), long, assume_unique=True)
    pos, at = np.concatenate([short, owner[new]]), np.concatenate([first[short], sent[new]])
    order = np.lexsort((at, pos))
    return pos[order], at[order]


def piece_bounds(pos, first, doc_offsets, doc_ids) -> tuple[np.ndarray, np.ndarray]:
    """(stop sentence, number within its document) of each piece (document_pieces' pos, first)."""
    pos, first = np.asarray(pos, np.int64), np.asarray(first, np.int64)
    same = np.r_[pos[1:] == pos[:-1], False]  # the next piece is of the same document
    stop = np.where(same, np.r_[first[1:], 0], _wide(doc_offsets, np.asarray(doc_ids, np.int64)[pos] + 1))
    k = np.arange(len(pos))
    opens = np.r_[True, pos[1:] != pos[:-1]]
    return stop, k - np.maximum.accumulate(np.where(opens, k, 0))


def _draw(key: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The t-th draw of each key as KeyedRandom.random() makes it: floats in [0, 1)."""
    t = t.astype(_U64)
    word = mix64(key + ((t >> _U64(6)) + _U64(1)) * _U64(_STEP))
    rest = mix64((key ^ _U64(_SALT)) + (t + _U64(1)) * _U64(_STEP)) >> _U64(12)
    return (((word >> (t & _U64(63))) & _U64(1)) << _U64(52) | rest).astype(np.float64) * 2.0**-53


def _coin(key: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Whether the t-th draw is < 0.5 (its top bit, a bit of a word shared by 64 draws: clear)."""
    t = t.astype(_U64)
    word = mix64(key + ((t >> _U64(6)) + _U64(1)) * _U64(_STEP))
    return ((word >> (t & _U64(63))) & _U64(1)) == 0


def _below(u: np.ndarray, n: np.ndarray) -> np.ndarray:
    """KeyedRandom.randrange(n) of the draws u (n < 1 where the draw is not used: 0)."""
    n = np.maximum(n, 1)
    return np.minimum((u * n).astype(np.int64), n - 1)


def document_pairs(
    sent_offsets: np.ndarray,
    doc_offsets: np.ndarray,
    doc_ids: np.ndarray,
    dupes: np.ndarray,
    positions: np.ndarray,
    *,
    max_num_tokens: int,
    short_seq_prob: float,
    objective: str,
    window: int,
    seed: int,
    want: np.ndarray | None = None,
    pieces: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    only_jobs: bool = False,
) -> dict[str, np.ndarray]:
    """The pairs of documents doc_ids[positions] in passes `dupes` (one job each), as
    create_pair_instances makes them with KeyedRandom(seed, dupe, document): spans of the token
    store (sent_offsets: each sentence's token offset, then the total; doc_offsets: each document's
    first sentence, then the total).

    Returns arrays, one entry a pair: job (which of the jobs), a_start, a_len, b_start, b_len,
    label; a job's pairs in their order. With `want` (one per job), only pair want[i] of job i is
    kept and each job stops there (batch time); a job with fewer pairs keeps none. With `pieces`
    ((first sentence, stop sentence, piece number) per job), a job is that piece of its document,
    made as a document of its own with KeyedRandom(seed, dupe, document, piece) (document_pieces).
    With `only_jobs`, only "job" is returned (the index counts pairs: truncation's draws are then
    counted, not drawn).
    """
    so, doc_offsets = np.asarray(sent_offsets), np.asarray(doc_offsets)  # (read by index, widened: _wide)
    doc_ids = np.asarray(doc_ids, dtype=np.int64)
    positions = np.asarray(positions, dtype=np.int64)
    M, nsp, n_docs = int(max_num_tokens), objective == "nsp", len(doc_ids)
    if objective not in ("nsp", "sop"):
        raise ValueError(f"pair objective must be 'nsp' or 'sop', got {objective!r}")
    if nsp and n_docs < 2:
        raise ValueError("NSP needs at least two documents (random next segments come from another document)")
    docs = doc_ids[positions]
    job = np.arange(len(positions))
    if pieces is None:
        i, end, number = _wide(doc_offsets, docs), _wide(doc_offsets, docs + 1), np.zeros(len(docs), np.int64)
    else:
        i, end, number = (np.asarray(a, dtype=np.int64) for a in pieces)
    key = _keys(seed, np.asarray(dupes, np.int64), docs, number)
    k = positions
    t = np.zeros(len(job), np.int64)  # draws made so far
    made = np.zeros(len(job), np.int64)  # pairs made so far
    want = None if want is None else np.asarray(want, dtype=np.int64)
    left = want
    out: list[tuple[np.ndarray, ...]] = []
    while len(job):
        # the chunk's target length (instances.target_length)
        short = _draw(key, t) < short_seq_prob
        target = np.where(short, 2 + _below(_draw(key, t + 1), np.full(len(t), M - 1)), M)
        t = t + 1 + short
        # the chunk: sentences i .. e - 1, the first run of sentences of `target` tokens or the rest
        s0 = _wide(so, i)
        e = _first_reaching(so, s0 + target, i + 1, end)
        n, length = e - i, _wide(so, e) - s0
        two = n >= 2
        a_end = np.where(two, 1 + _below(_draw(key, t), n - 1), 1)
        t = t + two
        a_len = _wide(so, i + a_end) - s0
        one_long = ~two & (a_len >= 2)
        if nsp:
            coin = _coin(key, t)
            t = t + one_long
            cut_case = one_long & coin  # one long sentence cut at a token, a true pair
            cut = 1 + _below(_draw(key, t), a_len - 1)
            t = t + cut_case
            coin = _coin(key, t)
            t = t + (~cut_case & two)
            rand = ~cut_case & (~two | coin)  # B from another document
            after, before = np.minimum(window, n_docs - 1 - k), np.minimum(window, k)
            j = _below(_draw(key, t), after + before)
            other = doc_ids[np.where(j < after, k + 1 + j, k - before + j - after)]
            o0, o1 = _wide(doc_offsets, other), _wide(doc_offsets, other + 1)
            st = o0 + _below(_draw(key, t + 1), o1 - o0)
            t = t + 2 * rand
            b0 = _wide(so, st)
            b_end = _first_reaching(so, b0 + (target - a_len), st + 1, o1)
            x0, x_len = s0, np.where(cut_case, cut, a_len)
            y0 = np.where(cut_case, s0 + cut, np.where(rand, b0, s0 + a_len))
            y_len = np.where(cut_case, a_len - cut, np.where(rand, _wide(so, b_end) - b0, length - a_len))
            label = rand
            emit = np.ones(len(job), bool)
            i = np.where(rand, i + a_end, e)  # a random next puts the chunk's sentences after A back
        else:
            cut = 1 + _below(_draw(key, t), a_len - 1)
            t = t + one_long
            emit = two | one_long  # a lone one-token sentence makes no ordered pair
            a_len = np.where(one_long, cut, a_len)
            b0, b_len = s0 + a_len, np.where(one_long, length - cut, length - a_len)
            label = _coin(key, t) & emit  # swapped
            t = t + emit
            x0, x_len = np.where(label, b0, s0), np.where(label, b_len, a_len)
            y0, y_len = np.where(label, s0, b0), np.where(label, a_len, b_len)
            i = e
        if only_jobs:  # a truncated pair spends a draw a token removed
            t = t + np.where(emit, np.maximum(x_len + y_len - M, 0), 0)
            made_now = (job,)
        else:
            x0, x_len, y0, y_len, t = _truncate(key, t, emit, x0, x_len, y0, y_len, M)
            made_now = (job, x0, x_len, y0, y_len, label)
        if want is None:
            out.append(tuple(a[emit] for a in made_now))
            keep = i < end
        else:
            hit = emit & (made == left)
            out.append(tuple(a[hit] for a in made_now))
            made = made + emit
            keep = (i < end) & ~hit
            left = left[keep]
        job, key, k, i, end, t, made = job[keep], key[keep], k[keep], i[keep], end[keep], t[keep], made[keep]
    names = ("job", "a_start", "a_len", "b_start", "b_len", "label")[: 1 if only_jobs else 6]
    result = {n: np.concatenate([o[c] for o in out]) if out else np.zeros(0, np.int64) for c, n in enumerate(names)}
    if not only_jobs:
        result["label"] = result["label"].astype(np.int8)
    return result


def _first_reaching(so: np.ndarray, value: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The first sentence s with so[s] >= value, clipped to [lo, hi] (each entry its own): a search
    of so[min(lo) : max(hi) + 1] alone, whose answers clip to the same. A block of neighbouring
    documents searches the offsets of its own sentences, which stay in the cache, not all of them."""
    if len(value) == 0:
        return np.asarray(lo, np.int64)
    a, b = int(lo.min()), int(hi.max()) + 1
    # the values in the offsets' dtype (a search across dtypes copies what it searches); a value past the
    # dtype's top, searched as the top, is found at or past the last offset all the same, and clips to hi
    value = np.minimum(value, np.iinfo(so.dtype).max).astype(so.dtype)
    return np.clip(a + np.searchsorted(so[a:b], value, "left"), lo, hi)


def _wide(offsets: np.ndarray, at: np.ndarray) -> np.ndarray:
    """offsets[at] as int64: the stores keep offsets in uint32 where they fit, whose arithmetic wraps."""
    return offsets[at].astype(np.int64)


def _truncate(key, t, emit, x0, x_len, y0, y_len, M):
    """instances.truncate_pair on every emitted pair longer than M: a draw a token removed (front
    when < 0.5), the longer segment losing it (the second on a tie). Who loses each token is known
    from the lengths, and a draw's "< 0.5" is a bit of a word shared by 64 draws (KeyedRandom), so
    the fronts are counted 64 draws at a time: popcounts of each word under the segment's bits."""
    excess = np.where(emit, x_len + y_len - M, 0)
    cut = np.flatnonzero(excess > 0)
    if len(cut) == 0:
        return x0, x_len, y0, y_len, t
    ex, t0, xl, yl = excess[cut], t[cut], x_len[cut], y_len[cut]
    first_x = xl > yl  # X loses tokens until the two are level, else Y until it is one shorter
    level = np.where(first_x, np.minimum(ex, xl - yl), np.minimum(ex, yl - xl + 1))
    # X loses: case first_x, draws [0, level) and then every other one from level + 1; else every
    # other one from level
    x_lost = np.where(first_x, level + (ex - level) // 2, (ex - level + 1) // 2)
    w0, w1 = t0 >> 6, (t0 + ex - 1) >> 6
    nw = w1 - w0 + 1
    lane = np.repeat(np.arange(len(cut)), nw)
    at = np.cumsum(nw) - nw  # each lane's first word
    widx = ranges(w0, nw)
    clear = ~mix64(key[cut][lane] + (widx.astype(_U64) + _U64(1)) * _U64(_STEP))  # bits of draws < 0.5
    first = widx << 6  # each word's first draw

    def span(lo, hi):  # the bits of draws [lo, hi) (per lane) within each word
        a = np.clip(lo[lane] - first, 0, 64).astype(_U64)
        b = np.clip(hi[lane] - first, 0, 64).astype(_U64)
        return _low_bits(b) & ~_low_bits(a)

    end = t0 + ex
    alt = t0 + level + first_x  # X's every-other draws start here
    pattern = np.where((alt[lane] & 1) == 0, _U64(0x5555555555555555), _U64(0xAAAAAAAAAAAAAAAA))
    x_bits = np.where(first_x[lane], span(t0, t0 + level), _U64(0)) | (span(alt, end) & pattern)
    fronts = np.add.reduceat(np.bitwise_count(clear & span(t0, end)).astype(np.int64), at)
    x_front = np.add.reduceat(np.bitwise_count(clear & x_bits).astype(np.int64), at)
    x0, x_len, y0, y_len, t = x0.copy(), x_len.copy(), y0.copy(), y_len.copy(), t.copy()
    x0[cut] += x_front
    x_len[cut] -= x_lost
    y0[cut] += fronts - x_front
    y_len[cut] -= ex - x_lost
    t[cut] += ex
    return x0, x_len, y0, y_len, t


def _low_bits(n: np.ndarray) -> np.ndarray:
    """(uint64) the n lowest bits set, n in 0 .. 64."""
    full = n >= _U64(64)
    return np.where(full, ~_U64(0), (_U64(1) << np.where(full, _U64(0), n)) - _U64(1))


def pair_index(
    corpus, doc_ids, r, seed: int, show_progress: bool, desc: str, workers: int = 1
) -> dict[str, np.ndarray]:
    """The pair index of documents `doc_ids` (a part) of a TokenizedCorpus under recipe `r`:
    "doc_ids" (the part's documents), "pair_count" (pairs of each (pass, piece), pass after pass; a
    piece is a document, or a part of a long one: document_pieces) and, where a document was cut,
    "piece_doc" and "piece_first" (each piece's document position and first sentence); blocks of
    pieces swept on `workers` forked processes (the counts are the same)."""
    doc_ids = np.asarray(doc_ids, dtype=np.int64)
    n, passes = len(doc_ids), r.dupe_factor
    if r.pair_task == "nsp" and n < 2:
        raise ValueError("NSP needs at least two documents (random next segments come from another document)")
    pos, first = document_pieces(corpus.sent_offsets, corpus.doc_offsets, doc_ids, piece_tokens(r))
    P = len(pos)
    stop, number = piece_bounds(pos, first, corpus.doc_offsets, doc_ids)
    job = (corpus.sent_offsets, corpus.doc_offsets, doc_ids, pos, (first, stop, number), r, seed)
    blocks = [(dupe, lo) for dupe in range(passes) for lo in range(0, P, BLOCK)]
    opened = [int((number[lo : lo + BLOCK] == 0).sum()) for _, lo in blocks]  # documents a block begins
    parallel = (
        workers > 1
        and passes * P >= PARALLEL_MIN_DOCS
        and "fork" in mp.get_all_start_methods()
        and not mp.current_process().daemon
    )
    counts = []
    with progress_bar(total=passes * n, desc=desc, unit="doc", disable=not show_progress) as bar:
        if parallel:
            with mp.get_context("fork").Pool(min(workers, len(blocks)), _init_block, (job,)) as pool:
                for done, docs in zip(pool.imap(_run_block, blocks), opened):
                    counts.append(done)
                    bar.update(docs)
        else:
            for block, docs in zip(blocks, opened):
                counts.append(_block_counts(job, *block))
                bar.update(docs)
    counts = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    top = int(counts.max(initial=0))
    index = {
        "doc_ids": doc_ids.astype(np.uint32 if n and doc_ids.max() < 1 << 32 else np.int64),
        "pair_count": counts.astype(
            next(t for t in (np.uint8, np.uint16, np.uint32, np.int64) if top <= np.iinfo(t).max)
        ),
    }
    if P > n:  # a document was cut into pieces
        index["piece_doc"] = pos.astype(np.uint32 if n < 1 << 32 else np.int64)
        index["piece_first"] = first.astype(np.uint32 if len(corpus.sent_offsets) < 1 << 32 else np.int64)
    return index


def piece_tokens(r) -> int:
    """The tokens after which a long document starts a new piece (document_pieces)."""
    return PIECE_SEQUENCES * r.max_seq_length


def _block_counts(job, dupe: int, lo: int) -> np.ndarray:
    """Pairs of each piece lo .. lo + BLOCK - 1 in pass `dupe`."""
    sent_offsets, doc_offsets, doc_ids, pos, (first, stop, number), r, seed = job
    sel = slice(lo, min(lo + BLOCK, len(pos)))
    got = document_pairs(
        sent_offsets, doc_offsets, doc_ids, np.full(len(pos[sel]), dupe), pos[sel],
        max_num_tokens=r.max_seq_length - 3, short_seq_prob=r.short_seq_prob,
        objective=r.pair_task, window=r.negative_window, seed=seed,
        pieces=(first[sel], stop[sel], number[sel]), only_jobs=True,
    )  # fmt: skip
    return np.bincount(got["job"], minlength=len(pos[sel]))


_block_job = None  # a forked worker's _block_counts job, set by its initializer


def _init_block(job) -> None:
    global _block_job
    _block_job = job


def _run_block(block: tuple[int, int]) -> np.ndarray:
    return _block_counts(_block_job, *block)


class PairIndex:
    """Pairs read back from a pair index: pair i of the part is pair j of piece q (a document, or a
    part of a long one) in pass p, numbered pass after pass, piece after piece, a piece's pairs in order."""

    def __init__(self, index, corpus, r, seed: int):
        self.corpus, self.r, self.seed = corpus, r, seed
        self.doc_ids = np.asarray(index["doc_ids"], dtype=np.int64)
        if "piece_doc" in index:
            self.pos = np.asarray(index["piece_doc"], dtype=np.int64)
            self.first_sentence = np.asarray(index["piece_first"], dtype=np.int64)
        else:  # every document one piece
            self.pos = np.arange(len(self.doc_ids))
            self.first_sentence = _wide(corpus.doc_offsets, self.doc_ids)
        self.stop, self.number = piece_bounds(self.pos, self.first_sentence, corpus.doc_offsets, self.doc_ids)
        counts = np.asarray(index["pair_count"], dtype=np.int64)
        self.first = np.concatenate([[0], np.cumsum(counts)])  # (passes * pieces + 1,)

    def __len__(self) -> int:
        return int(self.first[-1])

    def _make(self, jobs: np.ndarray, want=None) -> dict[str, np.ndarray]:
        dupe, q = np.divmod(jobs, len(self.pos))
        return document_pairs(
            self.corpus.sent_offsets, self.corpus.doc_offsets, self.doc_ids, dupe, self.pos[q],
            max_num_tokens=self.r.max_seq_length - 3, short_seq_prob=self.r.short_seq_prob,
            objective=self.r.pair_task, window=self.r.negative_window, seed=self.seed, want=want,
            pieces=(self.first_sentence[q], self.stop[q], self.number[q]),
        )  # fmt: skip

    def pairs(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """Pairs `idx` (B,), made again from their keys: a_start, a_len, b_start, b_len, label, in idx's order."""
        idx = np.asarray(idx, dtype=np.int64)
        job = np.searchsorted(self.first, idx, "right") - 1
        got = self._make(job, want=idx - self.first[job])
        if len(got["job"]) != len(idx):
            raise RuntimeError(f"{len(idx) - len(got['job'])} pair(s) of the index could not be made again")
        order = np.argsort(got["job"])
        return {name: a[order] for name, a in got.items() if name != "job"}

    def all(self) -> dict[str, np.ndarray]:
        """Every pair, in index order (tests and small corpora: one sweep over all of them)."""
        got = self._make(np.arange(len(self.first) - 1))
        order = np.argsort(got["job"], kind="stable")
        return {name: a[order] for name, a in got.items() if name != "job"}
