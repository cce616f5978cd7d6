"""Training a Unigram LM tokenizer, following SentencePiece's algorithm (Kudo 2018).

1. Seed: every character, plus the most frequent substrings (up to max_piece_length, not crossing
   a word's "▁" prefix nor a Unicode script boundary) ranked by frequency × length, as
   SentencePiece ranks the nodes of its suffix tree. Only substrings that are suffix-tree nodes
   (seen with two different next characters, or at a word end) qualify, as there.
2. EM: the E step runs forward-backward over every word's segmentation lattice and collects the
   expected count of each piece (reference_e_step: the same, one word at a time); the M step drops pieces expected less than 0.5 times and sets
   log p = digamma(count) - digamma(total) (SentencePiece's Bayesian, sparsity-inducing update).
3. Prune: each piece's loss is how much the corpus likelihood drops when the piece is replaced by
   its best alternative segmentation; keep the best `shrinking_factor` share each round (single
   characters always), until the vocabulary is within 10% of the target; then keep the top scores.

Words are distinct pre-tokens with counts; all of their lattices are processed at once with numpy:
the text is one array of characters, lattice nodes are edges (src, dst, piece) between character
boundaries, and the dynamic programmes run wavefront by wavefront (all edges ending at the same
depth inside their word at once). The edges are sorted once; indices are int32 and the E step runs
in float32 (as SentencePiece's), so memory follows the distinct words' text (tens of bytes per
edge), not the corpus's size.
"""

from __future__ import annotations

import math
import unicodedata

import numpy as np
import regex

from ..progress import progress_bar
from .unigram import UNK_PENALTY, Unigram

METASPACE = "▁"  # the space marker of SentencePiece-style pieces
_SCRIPTS = [
    "Latin",
    "Greek",
    "Cyrillic",
    "Armenian",
    "Hebrew",
    "Arabic",
    "Syriac",
    "Thaana",
    "Devanagari",
    "Bengali",
    "Gurmukhi",
    "Gujarati",
    "Oriya",
    "Tamil",
    "Telugu",
    "Kannada",
    "Malayalam",
    "Sinhala",
    "Thai",
    "Lao",
    "Tibetan",
    "Myanmar",
    "Georgian",
    "Hangul",
    "Ethiopic",
    "Khmer",
    "Mongolian",
    "Han",
    "Hiragana",
    "Katakana",
]
_SCRIPT_RE = [(s, regex.compile(rf"\p{{Script={s}}}")) for s in _SCRIPTS]
_COMMON = regex.compile(r"\p{Script=Common}")
_INHERITED = regex.compile(r"\p{Script=Inherited}")


def script_of(c: str) -> str | None:
    """A character's script as SentencePiece groups them; None for '▁' and combining marks.

    >>> script_of("a"), script_of("ж"), script_of("ア"), script_of("ー"), script_of(","), script_of("▁")
    ('Latin', 'Cyrillic', 'Han', 'Han', 'Common', None)
    """
    if c == METASPACE or _INHERITED.match(c):
        return None  # '▁' may start any piece; a combining mark takes the previous char's script
    if c == "\u30fc":
        return "Han"  # the Katakana long vowel mark is Common in Unicode, Katakana for SentencePiece
    for name, pattern in _SCRIPT_RE:
        if pattern.match(c):
            return "Han" if name in ("Hiragana", "Katakana") else name
    if _COMMON.match(c):
        return "Common"
    return unicodedata.name(c, "UNKNOWN").split()[0]  # a rarer script: the first word of its name


def digamma(x: np.ndarray) -> np.ndarray:
    """ψ(x) for x > 0: recurrence ψ(x) = ψ(x+1) - 1/x up to x >= 6, then the asymptotic series.

    >>> [round(float(v), 6) for v in digamma(np.array([1.0, 0.5, 10.0]))]
    [-0.577216, -1.96351, 2.251753]
    """
    x = np.asarray(x, dtype=np.float64).copy()
    result = np.zeros_like(x)
    small = x < 6
    while small.any():
        result[small] -= 1.0 / x[small]
        x[small] += 1.0
        small = x < 6
    inv2 = 1.0 / (x * x)
    result += np.log(x) - 0.5 / x - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 / 240)))
    return result


class Lattices:
    """Many segmentation lattices as one edge list, with the orderings the wavefront DPs need.

    States are character boundaries; `first[w]`/`last[w]` are lattice w's start and end states.
    Edges are (src, dst) state pairs; `lattice[e]` is edge e's lattice. The forward pass takes
    the edges by (depth of dst in its lattice, dst), the backward pass by (height of src, src);
    `orders` are those two sorts, which `subset` keeps instead of sorting again.
    """

    def __init__(
        self,
        src: np.ndarray,
        dst: np.ndarray,
        n_states: int,
        first: np.ndarray,
        last: np.ndarray,
        lattice_of_state: np.ndarray,
        orders=None,
        backward: bool = True,
    ):
        ix = index_type(n_states)  # int32 where it fits: half the memory of the edge arrays
        src, dst = src.astype(ix, copy=False), dst.astype(ix, copy=False)
        self.src, self.dst, self.n_states = src, dst, n_states
        self.first, self.last, self.lattice_of_state = first, last, lattice_of_state
        self.lattice = lattice_of_state[src]
        depth = dst - first.astype(ix)[self.lattice]
        height = last.astype(ix)[self.lattice] - src  # distance of src from its lattice's end
        if orders is None:
            # One integer key per pass (depth is a function of dst, height of src); last, the
            # length, so that the edges into a state come earliest start first, as the Unigram
            # model finds them (a tie in `viterbi` keeps the first).
            length = dst - src
            span = int(length.max(initial=0)) + 1
            orders = (
                np.argsort((depth.astype(np.int64) * n_states + dst) * span + (span - 1 - length)).astype(ix),
                np.argsort((height.astype(np.int64) * n_states + src) * span + length).astype(ix) if backward else None,
            )
        self.orders = orders
        self.fwd = self._plan(orders[0], depth, dst, src)
        self.bwd = self._plan(orders[1], height, src, dst) if orders[1] is not None else None  # viterbi needs none

    def subset(self, keep: np.ndarray) -> "Lattices":
        """The same lattices with only the edges where `keep` is True (sorted as before)."""
        new_index = (np.cumsum(keep) - 1).astype(self.src.dtype)
        orders = tuple(None if o is None else new_index[o[keep[o]]] for o in self.orders)
        return Lattices(
            self.src[keep], self.dst[keep], self.n_states, self.first, self.last, self.lattice_of_state, orders
        )

    @staticmethod
    def _plan(order: np.ndarray, level: np.ndarray, key: np.ndarray, other: np.ndarray):
        """The sorted edges split into levels, each with its edges' other ends and its groups of
        equal key (the key determines the level, so no group spans two levels)."""
        lv, ky, other = level[order], key[order], other[order]
        level_starts = np.flatnonzero(np.diff(lv)) + 1
        bounds = np.concatenate(([0], level_starts, [len(order)]))
        group_starts = np.concatenate(([0], np.flatnonzero(np.diff(ky)) + 1))
        cut = np.searchsorted(group_starts, bounds)
        steps = []
        for a, b, g0, g1 in zip(bounds[:-1], bounds[1:], cut[:-1], cut[1:]):
            starts = group_starts[g0:g1]
            steps.append((order[a:b], other[a:b], starts - a, ky[starts]))
        return steps

    def forward(self, score: np.ndarray) -> np.ndarray:
        """alpha[state]: log-sum of exp(path score) over paths from the lattice start."""
        alpha = np.full(self.n_states, -np.inf, dtype=score.dtype)
        alpha[self.first] = 0.0
        for edges, sources, starts, targets in self.fwd:
            alpha[targets] = _logsumexp_groups(alpha[sources] + score[edges], starts)
        return alpha

    def backward(self, score: np.ndarray) -> np.ndarray:
        beta = np.full(self.n_states, -np.inf, dtype=score.dtype)
        beta[self.last] = 0.0
        for edges, sources, starts, targets in self.bwd:
            beta[targets] = _logsumexp_groups(beta[sources] + score[edges], starts)
        return beta

    def viterbi(self, score: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Best path of every lattice: (best score per lattice, edges of each path from the end)."""
        best = np.full(self.n_states, -np.inf)
        best[self.first] = 0.0
        back = np.full(self.n_states, -1, dtype=np.int64)
        for edges, sources, starts, targets in self.fwd:
            vals = best[sources] + score[edges]
            gmax = np.maximum.reduceat(vals, starts)
            sizes = np.diff(np.append(starts, len(vals)))
            # the first edge (earliest start) reaching the maximum of its group
            idx = np.where(vals == np.repeat(gmax, sizes), np.arange(len(vals)), len(vals))
            back[targets] = edges[np.minimum.reduceat(idx, starts)]
            best[targets] = gmax
        paths, cur = [], self.last.copy()
        active = np.flatnonzero(cur != self.first)
        while len(active):
            e = back[cur[active]]
            step = np.full(len(self.last), -1, dtype=np.int64)
            step[active] = e
            paths.append(step)
            cur[active] = self.src[e]
            active = active[cur[active] != self.first[active]]
        return best[self.last], paths


def index_type(n: int) -> type:
    """The integer type for indices below n."""
    return np.int32 if n < 2**31 else np.int64


def _logsumexp_groups(vals: np.ndarray, starts: np.ndarray) -> np.ndarray:
    m = np.maximum.reduceat(vals, starts)
    sizes = np.diff(np.append(starts, len(vals)))
    safe = np.where(np.isfinite(m), m, 0.0)
    return safe + np.log(np.add.reduceat(np.exp(vals - np.repeat(safe, sizes)), starts))


def reference_e_step(word_counts: dict[str, int], pieces: list[str], logp) -> tuple[np.ndarray, float]:
    """The textbook E step, the reference for UnigramTrainer's vectorised one (Lattices): for each
    word on its own, forward-backward over its segmentations into pieces (log p > -inf), in
    double precision. Returns each piece's expected count, weighted by the word counts, and the
    objective -(sum of count * log Z(word)) / (total count).

    >>> counts, _ = reference_e_step({"ab": 2}, ["a", "b", "ab"], np.log([0.25, 0.25, 0.5]))
    >>> [round(float(c), 3) for c in counts]   # Z = 1/16 + 1/2: "ab" alone has 8/9 of it
    [0.222, 0.222, 1.778]
    """
    index = {p: k for k, p in enumerate(pieces) if logp[k] > -math.inf}

    def logsumexp(values: list[float]) -> float:
        top = max(values, default=-math.inf)
        return top if top == -math.inf else top + math.log(sum(math.exp(v - top) for v in values))

    expected = np.zeros(len(pieces))
    loglik = 0.0
    for word, count in word_counts.items():
        n = len(word)
        edges = [(i, j, index[word[i:j]]) for i in range(n) for j in range(i + 1, n + 1) if word[i:j] in index]
        alpha, beta = [-math.inf] * (n + 1), [-math.inf] * (n + 1)  # log-sums of paths into / out of each boundary
        alpha[0], beta[n] = 0.0, 0.0
        for j in range(1, n + 1):
            alpha[j] = logsumexp([alpha[a] + logp[k] for a, b, k in edges if b == j])
        for i in range(n - 1, -1, -1):
            beta[i] = logsumexp([logp[k] + beta[b] for a, b, k in edges if a == i])
        logz = alpha[n]
        loglik += count * logz
        for a, b, k in edges:
            expected[k] += count * math.exp(alpha[a] + logp[k] + beta[b] - logz)
    return expected, -loglik / sum(word_counts.values())


class UnigramTrainer:
    """SentencePiece's Unigram training on word counts; `train_from_counts` returns a Unigram.

    The final vocabulary is the special tokens (score 0; unk_token first if not among them), then
    the pieces by decreasing score, `vocab_size` entries in all (fewer if the corpus is small).
    """

    def __init__(
        self,
        vocab_size: int = 8000,
        special_tokens=(),
        unk_token: str | None = "<unk>",
        shrinking_factor: float = 0.75,
        max_piece_length: int = 16,
        n_sub_iterations: int = 2,
        seed_size: int = 1_000_000,
        initial_alphabet=(),
        split_by_unicode_script: bool = True,
        byte_fallback: bool = False,
        show_progress: bool = False,
    ):
        if not 0 < shrinking_factor < 1:
            raise ValueError(f"shrinking_factor must be in (0, 1), got {shrinking_factor}")
        if max_piece_length < 1:
            raise ValueError(f"max_piece_length must be >= 1, got {max_piece_length}")
        self.vocab_size = vocab_size
        self.special_tokens = [getattr(t, "content", t) for t in special_tokens]
        self.unk_token = unk_token
        self.shrinking_factor = shrinking_factor
        self.max_piece_length = max_piece_length
        self.n_sub_iterations = n_sub_iterations
        self.seed_size = seed_size
        self.initial_alphabet = list(initial_alphabet)
        self.split_by_unicode_script = split_by_unicode_script
        self.byte_fallback = byte_fallback
        self.show_progress = show_progress
        n_meta = len(self.special_tokens) + (unk_token is not None and unk_token not in self.special_tokens)
        if vocab_size <= n_meta:
            raise ValueError(f"vocab_size {vocab_size} leaves no room beside {n_meta} special tokens")

    # -- corpus as arrays ----------------------------------------------------------------------
    def _corpus(self, word_counts: dict[str, int]):
        words = [w for w, c in word_counts.items() if w and c > 0]
        if not words:
            raise ValueError("cannot train a Unigram model on an empty corpus")
        for w in words:
            if "\x00" in w:
                raise ValueError(f"word {w!r} contains a NUL character")
        self.text = "\x00".join(words) + "\x00"  # one separator after each word
        codes = np.frombuffer(self.text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        lengths = np.array([len(w) for w in words], dtype=np.int64)
        self.first = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
        self.last = self.first + lengths
        self.word_count = np.array([word_counts[w] for w in words], dtype=np.float64)
        word_of = np.repeat(np.arange(len(words), dtype=index_type(len(codes))), lengths + 1)
        self.word_of = word_of
        return codes, word_of

    # -- 1. seed -------------------------------------------------------------------------------
    def _seed(self, codes: np.ndarray, word_of: np.ndarray):
        """Seed pieces (chars first) and every occurrence of a seed in the text as an edge."""
        n = len(codes)
        count_at = self.word_count[word_of]
        remaining = self.last[word_of] - np.arange(n)  # chars left in the word, 0 at separators
        uniq, inv = np.unique(codes, return_inverse=True)
        chars = [chr(int(u)) for u in uniq]
        if self.split_by_unicode_script:
            names = {}
            script = np.array(
                [
                    names.setdefault(script_of(c), len(names)) if c != "\x00" and script_of(c) is not None else -1
                    for c in chars
                ]
            )[inv]
        else:
            script = np.full(n, -1)
        is_ws = codes == ord(METASPACE)
        none = np.iinfo(np.int64).max  # "no script yet" (only '▁' and combining marks so far)
        # Candidates: start positions whose substring of the current length may still become a
        # seed, with its hash and its lowest / highest script. A substring is never more frequent
        # than its prefix, and a '▁' inside or two scripts never leave it, so the set only shrinks.
        pos = np.flatnonzero(remaining >= 1)
        h = (codes[pos] + 1).astype(np.uint64)
        lo = np.where(script[pos] < 0, none, script[pos])
        hi = script[pos]
        base = np.uint64(1_000_003)
        occ_pos, occ_gid, cand = [], [], []  # per length: occurrences and their group ids
        n_groups = 0
        for length in range(1, self.max_piece_length + 1):
            if length > 1:
                ok = remaining[pos] >= length
                pos, h, lo, hi = pos[ok], h[ok], lo[ok], hi[ok]
                nxt = pos + length - 1
                h = h * base + (codes[nxt] + 1).astype(np.uint64)
                s = script[nxt]
                hi = np.maximum(hi, s)
                lo = np.minimum(lo, np.where(s < 0, none, s))
                ok = ~is_ws[nxt] & ((lo == none) | (lo == hi))
                pos, h, lo, hi = pos[ok], h[ok], lo[ok], hi[ok]
            if not len(pos):
                break
            order = np.argsort(h)
            pos, h, lo, hi = pos[order], h[order], lo[order], hi[order]
            starts = np.concatenate(([0], np.flatnonzero(h[1:] != h[:-1]) + 1))
            sizes = np.diff(np.append(starts, len(pos)))
            gid = np.repeat(np.arange(n_groups, n_groups + len(starts)), sizes)
            freq = np.add.reduceat(count_at[pos], starts)
            follow = np.where(remaining[pos] > length, codes[np.minimum(pos + length, n - 1)], -1)
            fmin, fmax = np.minimum.reduceat(follow, starts), np.maximum.reduceat(follow, starts)
            node = (fmin != fmax) | (fmin < 0)  # two different next chars, or at a word end
            keep = np.ones(len(starts), bool) if length == 1 else node & (freq >= 2)
            first_at = np.minimum.reduceat(pos, starts)  # the first occurrence stands for the group
            cand.append((np.flatnonzero(keep) + n_groups, freq[keep], first_at[keep], np.full(int(keep.sum()), length)))
            sel = np.repeat(keep, sizes)  # the occurrences of candidate seeds only
            occ_pos.append(pos[sel].astype(index_type(n)))
            occ_gid.append(gid[sel])
            n_groups += len(starts)
            viable = np.repeat(freq >= 2, sizes)  # only these can start a longer seed
            pos, h, lo, hi = pos[viable], h[viable], lo[viable], hi[viable]
        gids = np.concatenate([c[0] for c in cand])
        freq = np.concatenate([c[1] for c in cand])
        rep = np.concatenate([c[2] for c in cand])
        lens = np.concatenate([c[3] for c in cand])
        # chars first (all of them), then substrings by frequency × length
        is_char = lens == 1
        score = np.where(is_char, freq, freq * lens)
        char_idx = np.flatnonzero(is_char)
        char_idx = char_idx[np.argsort(-freq[char_idx], kind="stable")]
        sub_idx = np.flatnonzero(~is_char)
        room = max(self.seed_size - len(char_idx), 0)
        if len(sub_idx) > room:
            sub_idx = sub_idx[np.argpartition(-score[sub_idx], room - 1)[:room]] if room else sub_idx[:0]
        sub_idx = sub_idx[np.lexsort((rep[sub_idx], -score[sub_idx]))]
        chosen = np.concatenate((char_idx, sub_idx))
        seed_of_group = np.full(n_groups, -1, dtype=np.int64)
        seed_of_group[gids[chosen]] = np.arange(len(chosen))
        pieces = [self.text[p : p + length] for p, length in zip(rep[chosen].tolist(), lens[chosen].tolist())]
        logp = np.log(score[chosen]) - np.log(score[chosen].sum())
        src, dst, pid = [], [], []
        ix = index_type(n)
        for length, (pos, gid) in enumerate(zip(occ_pos, occ_gid), start=1):
            sid = seed_of_group[gid]
            sel = sid >= 0
            src.append(pos[sel].astype(ix))
            dst.append((pos[sel] + length).astype(ix))
            pid.append(sid[sel].astype(ix))
        return (pieces, logp, lens[chosen] == 1, np.concatenate(src), np.concatenate(dst), np.concatenate(pid))

    # -- 2. EM ---------------------------------------------------------------------------------
    def _edge_scores(self, logp, alive, is_char, pid, dtype=np.float64):
        """Edge scores: the piece's log-prob, -inf once removed; a removed char becomes <unk>."""
        unk_score = logp[alive].min() - UNK_PENALTY
        return np.where(alive, logp, np.where(is_char, unk_score, -np.inf)).astype(dtype)[pid]

    def _e_step(self, lat: Lattices, pid, score, n_pieces, alive):
        # forward-backward in single precision, as SentencePiece's: half the memory traffic
        # (expected counts move by ~1e-4 relative; they are summed in double precision)
        score = score.astype(np.float32, copy=False)
        alpha, beta = lat.forward(score), lat.backward(score)
        logz = alpha[self.last]
        expected = np.zeros(n_pieces)
        for a in range(0, len(pid), 1 << 20):  # in chunks: the temporaries stay small
            e = slice(a, a + (1 << 20))
            w = lat.lattice[e]
            post = np.exp(alpha[lat.src[e]] + score[e] + beta[lat.dst[e]] - logz[w]) * self.word_count[w]
            expected += np.bincount(pid[e], weights=post, minlength=n_pieces)
        expected[~alive] = 0.0  # a removed char's edges stood in for <unk>
        objective = -(logz.astype(np.float64) * self.word_count).sum() / self.word_count.sum()
        return expected, objective

    @staticmethod
    def _m_step(expected, alive):
        """Drop pieces expected < 0.5 times; log p = ψ(count) - ψ(total) (Bayesian EM)."""
        keep = alive & (expected >= 0.5)
        logp = np.full(len(expected), -np.inf)
        logp[keep] = digamma(expected[keep]) - digamma(np.array([expected[keep].sum()]))[0]
        return logp, keep

    # -- 3. prune ------------------------------------------------------------------------------
    def _prune(self, lat: Lattices, pid, score, logp, alive, is_char, desired: int):
        n_pieces = len(logp)
        _, paths = lat.viterbi(score)
        freq = np.zeros(n_pieces)
        occurrence = np.full(n_pieces, -1, dtype=np.int64)  # an edge where the piece is on a best path
        for step in paths:
            words = np.flatnonzero(step >= 0)
            e = step[words]
            live = alive[pid[e]]
            freq += np.bincount(pid[e][live], weights=self.word_count[words][live], minlength=n_pieces)
            occurrence[pid[e][live]] = e[live]
        kept_chars = np.flatnonzero(alive & is_char & (freq > 0))
        cand = np.flatnonzero(alive & ~is_char & (freq > 0))
        total, vsum = freq.sum(), self.word_count.sum()
        loss = np.full(len(cand), -np.inf)
        if len(cand):
            alt_score, alt_pairs = self._alternatives(lat, pid, score, occurrence[cand])
            # a piece whose own best split beats it can never be on a best path: remove it
            own = logp[cand]
            removable = alt_score > own
            k, alt_piece = alt_pairs
            f_i = freq[cand]
            n_alive = int(alive.sum())
            # SentencePiece spreads freq_i over all pieces here (its `alternatives.size()` is the
            # number of pieces, not of the alternative's pieces); kept as is for parity.
            logsum_alt = np.log(total + f_i * (n_alive - 1))
            logprob_alt = np.bincount(k, weights=np.log(freq[alt_piece] + f_i[k]) - logsum_alt[k], minlength=len(cand))
            logprob_sp = np.log(f_i) - np.log(total)
            loss = np.where(removable, -np.inf, f_i / vsum * (logprob_sp - logprob_alt))
        size = max(desired, int(self.shrinking_factor * alive.sum()))
        room = max(size - len(kept_chars), 0)
        order = np.lexsort((cand, -loss))
        order = order[np.isfinite(loss[order])][:room]
        new_alive = np.zeros(n_pieces, dtype=bool)
        new_alive[kept_chars] = True
        new_alive[cand[order]] = True
        return new_alive

    def _alternatives(self, lat: Lattices, pid, score, occ_edges):
        """Best segmentation with at least two pieces of each candidate's own occurrence span."""
        a_pos, b_pos = lat.src[occ_edges], lat.dst[occ_edges]
        live = np.isfinite(score)
        e_all = np.flatnonzero(live)
        e_all = e_all[np.argsort(lat.src[e_all], kind="stable")]
        src_sorted = lat.src[e_all]
        lo, hi = np.searchsorted(src_sorted, a_pos), np.searchsorted(src_sorted, b_pos)
        sizes = hi - lo
        k = np.repeat(np.arange(len(occ_edges)), sizes)
        within = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        e = e_all[np.repeat(lo, sizes) + within]
        keep = (lat.dst[e] <= b_pos[k]) & ~((lat.src[e] == a_pos[k]) & (lat.dst[e] == b_pos[k]))
        e, k = e[keep], k[keep]
        span = b_pos - a_pos
        offset = np.concatenate(([0], np.cumsum(span + 1)[:-1]))
        sub = Lattices(
            offset[k] + lat.src[e] - a_pos[k],
            offset[k] + lat.dst[e] - a_pos[k],
            int((span + 1).sum()),
            offset,
            offset + span,
            np.repeat(np.arange(len(span)), span + 1),
            backward=False,
        )
        best, paths = sub.viterbi(score[e])
        ks, pieces = [], []
        for step in paths:
            cands = np.flatnonzero(step >= 0)
            ks.append(cands)
            pieces.append(pid[e[step[cands]]])
        return best, (np.concatenate(ks), np.concatenate(pieces))

    # -- driver --------------------------------------------------------------------------------
    def train_from_counts(self, word_counts: dict[str, int]) -> Unigram:
        """Train on {pre-token: count} (Metaspace pre-tokens, "▁" prefixed) and return the model."""
        codes, word_of = self._corpus(word_counts)
        pieces, logp, is_char, src, dst, pid = self._seed(codes, word_of)
        n_pieces = len(pieces)
        alive = np.ones(n_pieces, dtype=bool)
        n_meta = len(self.special_tokens) + (self.unk_token is not None and self.unk_token not in self.special_tokens)
        desired = int(self.vocab_size * 1.1)
        self.history = []  # (live pieces, objective = -mean log-likelihood per word) per EM step
        bar = progress_bar(desc="Unigram EM", unit="step", disable=not self.show_progress)
        with bar, np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lat = Lattices(src, dst, len(codes), self.first, self.last, word_of)
            del src, dst
            while True:
                for _ in range(self.n_sub_iterations):
                    score = self._edge_scores(logp, alive, is_char, pid, np.float32)
                    expected, objective = self._e_step(lat, pid, score, n_pieces, alive)
                    logp, alive = self._m_step(expected, alive)
                    self.history.append((int(alive.sum()), float(objective)))
                    bar.update(1)
                    bar.set_postfix(pieces=int(alive.sum()), objective=f"{objective:.3f}")
                if alive.sum() <= desired:
                    break
                score = self._edge_scores(logp, alive, is_char, pid)
                alive = self._prune(lat, pid, score, logp, alive, is_char, desired)
                # compact: keep edges of live pieces, and of chars (which stand in for <unk>)
                keep = alive[pid] | is_char[pid]
                lat, pid = lat.subset(keep), pid[keep]
        return self._finalize(pieces, logp, alive, is_char, n_meta)

    def _finalize(self, pieces, logp, alive, is_char, n_meta) -> Unigram:
        """Every char (rarest ones scored just below the minimum), then the best-scored pieces."""
        min_score = logp[alive].min()
        final: dict[str, float] = {}
        char_ids = np.flatnonzero(is_char)  # seeded by decreasing frequency
        penalty = 0.0
        extra = [c for c in self.initial_alphabet if c not in set(pieces[i] for i in char_ids)]
        for piece, ok, lp in [(pieces[i], alive[i], logp[i]) for i in char_ids] + [(c, False, 0) for c in extra]:
            if ok:
                final[piece] = float(lp)
            else:
                final[piece] = float(min_score + penalty)
                penalty += 1e-4
        room = self.vocab_size - n_meta
        for i in np.flatnonzero(alive)[np.argsort(-logp[alive], kind="stable")]:
            if len(final) >= room:
                break
            final.setdefault(pieces[i], float(logp[i]))
        body = sorted(final.items(), key=lambda kv: -kv[1])
        specials = [(t, 0.0) for t in self.special_tokens]
        unk_id = None
        if self.unk_token is not None:
            if self.unk_token in self.special_tokens:
                unk_id = self.special_tokens.index(self.unk_token)
            else:
                specials.insert(0, (self.unk_token, 0.0))
                unk_id = 0
        body = [(p, s) for p, s in body if p not in set(self.special_tokens) | {self.unk_token}]
        return Unigram(specials + body, unk_id=unk_id, byte_fallback=self.byte_fallback)
