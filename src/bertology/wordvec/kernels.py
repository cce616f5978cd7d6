"""The compiled inner loops of word2vec and GloVe: one sentence (or one co-occurrence) at a time,
sparse SGD updates of the rows they touch, as the C tools and gensim's Cython do.

They are compiled by numba (the optional extra `bertology[wordvec]`) with `nogil`, so the trainers
run them in several Python threads over disjoint jobs at once, lock-free ("Hogwild"), as gensim's
workers do; without numba the same functions run as plain Python (correct, but far slower), and
`COMPILED` says which. Randomness inside a job comes from the C tool's linear congruential
generator, seeded per job by the caller's numpy Generator.
"""

from __future__ import annotations

import math

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - exercised only without the extra
    numba = None

COMPILED = numba is not None


def _jit(function):
    return numba.njit(nogil=True, fastmath=True, cache=True)(function) if COMPILED else function


MAX_EXP = 6.0  # σ(x) is taken as 0 / 1 beyond ±MAX_EXP, as in the C tool
EXP_TABLE_SIZE = 1000
EXP_TABLE = np.array(
    [1 / (1 + math.exp(-(i / EXP_TABLE_SIZE * 2 - 1) * MAX_EXP)) for i in range(EXP_TABLE_SIZE)], dtype=np.float32
)
KEEP_ALWAYS = 2**32  # keep threshold of a word subsampling never drops

_A = np.uint64(25214903917)
_C = np.uint64(11)
_MASK48 = np.uint64(281474976710655)
_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(16)


@_jit
def lcg(state):
    """The C tool's generator: next = (next · 25214903917 + 11) mod 2^48."""
    return (state * _A + _C) & _MASK48


@_jit
def _sigmoid(f, table):
    if f >= MAX_EXP:
        return np.float32(1.0)
    if f <= -MAX_EXP:
        return np.float32(0.0)
    return table[int((f + MAX_EXP) * (EXP_TABLE_SIZE / MAX_EXP / 2))]


@_jit
def _output_layer(
    h, target, alpha, work, syn1neg, syn1, noise, h_offsets, h_codes, h_points, negative, hs, table, state
):
    """One prediction of word `target` from the hidden vector h: negative sampling (target against
    `negative` noise words) and/or hierarchical softmax (one logistic unit per node on its Huffman
    path). Updates the output rows in place, accumulates dL/dh into `work`; returns the rng state."""
    size = h.shape[0]
    if hs:
        for k in range(h_offsets[target], h_offsets[target + 1]):
            row = syn1[h_points[k]]
            f = np.float32(0.0)
            for d in range(size):
                f += h[d] * row[d]
            g = (np.float32(1.0) - np.float32(h_codes[k]) - _sigmoid(f, table)) * alpha
            for d in range(size):
                work[d] += g * row[d]
                row[d] += g * h[d]
    if negative > 0:
        slots = np.uint64(noise.shape[0])
        for n in range(negative + 1):
            if n == 0:
                word, label = target, np.float32(1.0)
            else:  # alias method: a uniform slot, kept or replaced by its alias
                slot = np.int64((state >> _SHIFT) % slots)
                state = lcg(state)
                word = slot if np.int64((state >> _SHIFT) & _MASK32) < noise[slot, 0] else noise[slot, 1]
                state = lcg(state)
                if word == target:
                    continue
                label = np.float32(0.0)
            row = syn1neg[word]
            f = np.float32(0.0)
            for d in range(size):
                f += h[d] * row[d]
            g = (label - _sigmoid(f, table)) * alpha
            for d in range(size):
                work[d] += g * row[d]
                row[d] += g * h[d]
    return state


@_jit
def context_span(i, n, window, shrink, state):
    """The context of position i in a sentence of n words: positions [lo, hi) other than i; returns
    (lo, hi, rng state). word2vec's dynamic window (`shrink`) spans window - b on each side, b drawn
    uniformly from [0, window), so near words count more; without it (item2vec, with a window as long
    as the longest basket) the context is the whole sentence. The draw is made either way, so both
    consume the generator alike.

    >>> context_span(2, 5, 5, False, np.uint64(1))[:2]      # the whole basket
    (0, 5)
    """
    state = lcg(state)
    b = np.int64((state >> _SHIFT) % np.uint64(window)) if shrink else np.int64(0)
    return max(0, i - window + b), min(n, i + window + 1 - b), state


@_jit
def word2vec_job(
    syn0,
    syn1neg,
    syn1,
    tokens,
    starts,
    raw_before,
    s_begin,
    s_end,
    keep,
    noise,
    h_offsets,
    h_codes,
    h_points,
    sg,
    hs,
    negative,
    window,
    shrink,
    cbow_mean,
    alpha0,
    min_alpha,
    raw_offset,
    raw_total,
    seed,
    table,
    buf,
    work,
    neu1,
):
    """Train on sentences [s_begin, s_end). The learning rate falls linearly from alpha0 to
    min_alpha over raw_total words read (raw_offset of them before this job's corpus pass).
    `shrink`: word2vec's dynamic window (see `context_span`). Returns the number of words trained
    on after subsampling."""
    state = np.uint64(seed) & _MASK48
    size = syn0.shape[1]
    effective = 0
    for s in range(s_begin, s_end):
        progress = (raw_offset + raw_before[s]) / raw_total
        alpha = np.float32(max(min_alpha, alpha0 - (alpha0 - min_alpha) * progress))
        n = 0
        for t in range(starts[s], starts[s + 1]):  # subsampling: word w survives if its threshold ≥ a 32-bit draw
            w = tokens[t]
            if keep[w] < KEEP_ALWAYS:
                state = lcg(state)
                if keep[w] < np.int64((state >> _SHIFT) & _MASK32):
                    continue
            buf[n] = w
            n += 1
        effective += n
        for i in range(n):
            lo, hi, state = context_span(i, n, window, shrink, state)
            if sg:
                for j in range(lo, hi):  # skip-gram: each context word's vector predicts the centre word
                    if j == i:
                        continue
                    h = syn0[buf[j]]
                    work[:] = 0
                    state = _output_layer(
                        h,
                        buf[i],
                        alpha,
                        work,
                        syn1neg,
                        syn1,
                        noise,
                        h_offsets,
                        h_codes,
                        h_points,
                        negative,
                        hs,
                        table,
                        state,
                    )
                    for d in range(size):
                        h[d] += work[d]
            else:
                neu1[:] = 0  # CBOW: the mean (or sum) of the context vectors predicts the centre word
                count = 0
                for j in range(lo, hi):
                    if j != i:
                        row = syn0[buf[j]]
                        for d in range(size):
                            neu1[d] += row[d]
                        count += 1
                if count == 0:
                    continue
                if cbow_mean:
                    for d in range(size):
                        neu1[d] /= count
                work[:] = 0
                state = _output_layer(
                    neu1,
                    buf[i],
                    alpha,
                    work,
                    syn1neg,
                    syn1,
                    noise,
                    h_offsets,
                    h_codes,
                    h_points,
                    negative,
                    hs,
                    table,
                    state,
                )
                if not cbow_mean:  # a sum's error is shared out over its terms
                    for d in range(size):
                        work[d] /= count
                for j in range(lo, hi):
                    if j != i:
                        row = syn0[buf[j]]
                        for d in range(size):
                            row[d] += work[d]
    return effective


@_jit
def cooccurrence_chunk(tokens, starts, s_begin, s_end, window, vocab_size):
    """Co-occurrences of sentences [s_begin, s_end) within `window` words, each weighted by
    1 / distance, as GloVe's cooccur counts them. A pair is stored once under the key
    min(i, j) · V + max(i, j) (the matrix is symmetric); returns (sorted unique keys, summed weights)."""
    n_pairs = 0
    for s in range(s_begin, s_end):
        length = starts[s + 1] - starts[s]
        for i in range(length):
            n_pairs += min(i, window)
    keys = np.empty(n_pairs, dtype=np.int64)
    weights = np.empty(n_pairs, dtype=np.float64)
    k = 0
    for s in range(s_begin, s_end):
        base = starts[s]
        for i in range(starts[s + 1] - base):
            a = np.int64(tokens[base + i])
            for d in range(1, min(i, window) + 1):
                b = np.int64(tokens[base + i - d])
                keys[k] = min(a, b) * vocab_size + max(a, b)
                weights[k] = 1.0 / d
                k += 1
    order = np.argsort(keys)
    out_keys = np.empty(n_pairs, dtype=np.int64)
    out_weights = np.empty(n_pairs, dtype=np.float64)
    m = -1
    for t in range(n_pairs):
        key = keys[order[t]]
        if m < 0 or out_keys[m] != key:
            m += 1
            out_keys[m] = key
            out_weights[m] = 0.0
        out_weights[m] += weights[order[t]]
    return out_keys[: m + 1].copy(), out_weights[: m + 1].copy()


@_jit
def merge_counts(keys1, weights1, keys2, weights2):
    """Merge two sorted sparse count lists, summing the weights of equal keys (linear time)."""
    keys = np.empty(len(keys1) + len(keys2), dtype=np.int64)
    weights = np.empty(len(keys1) + len(keys2), dtype=np.float64)
    i = j = m = 0
    while i < len(keys1) or j < len(keys2):
        if j == len(keys2) or (i < len(keys1) and keys1[i] < keys2[j]):
            keys[m], weights[m] = keys1[i], weights1[i]
            i += 1
        elif i == len(keys1) or keys2[j] < keys1[i]:
            keys[m], weights[m] = keys2[j], weights2[j]
            j += 1
        else:
            keys[m], weights[m] = keys1[i], weights1[i] + weights2[j]
            i += 1
            j += 1
        m += 1
    return keys[:m].copy(), weights[:m].copy()


@_jit
def glove_job(W, C, bw, bc, gW, gC, gbw, gbc, rows, cols, values, order, begin, end, x_max, power, eta, clip):
    """AdaGrad on GloVe's weighted least squares for the co-occurrences order[begin:end], exactly
    as glove.c updates them: f(x) · (wᵢ·w̃ⱼ + bᵢ + b̃ⱼ − log x)², the step's gradient (eta
    included, clipped to ±clip) divided by √(sum of squared earlier steps, started at 1).
    Returns the summed cost ½ f(x) diff² before each update."""
    size = W.shape[1]
    cost = 0.0
    for t in range(begin, end):
        a = order[t]
        i, j, x = rows[a], cols[a], values[a]
        wi, cj, gwi, gcj = W[i], C[j], gW[i], gC[j]
        diff = np.float32(0.0)
        for d in range(size):
            diff += wi[d] * cj[d]
        diff += bw[i] + bc[j] - np.float32(math.log(x))
        fdiff = diff if x > x_max else np.float32((x / x_max) ** power) * diff
        cost += 0.5 * fdiff * diff
        fdiff *= eta
        for d in range(size):
            t1 = min(max(fdiff * cj[d], -clip), clip)
            t2 = min(max(fdiff * wi[d], -clip), clip)
            u1 = t1 / math.sqrt(gwi[d])
            u2 = t2 / math.sqrt(gcj[d])
            gwi[d] += t1 * t1
            gcj[d] += t2 * t2
            wi[d] -= u1
            cj[d] -= u2
        bw[i] -= fdiff / math.sqrt(gbw[i])
        bc[j] -= fdiff / math.sqrt(gbc[j])
        gbw[i] += fdiff * fdiff
        gbc[j] += fdiff * fdiff
    return cost
