"""Unigram language-model tokenization (Kudo 2018), as in SentencePiece and HF tokenizers.

Every piece has a log-probability (its score). A word's segmentations are the paths through a
lattice whose nodes are the vocabulary pieces found in the word; the tokenization is the best path
(Viterbi), the k best paths (n-best, by A*), or a path sampled with probability proportional to
exp(alpha * score) (subword regularization).

A character no piece covers becomes an unknown node scored `min_score - 10` (SentencePiece's
penalty); consecutive unknowns are fused into one unknown token, and with `byte_fallback` an
unknown token is spelled as its UTF-8 bytes `<0xXX>` when those pieces exist.

The lattice is stored as `starts[i] = [(end, id, score), ...]`, nodes beginning at char i ordered
by length, an unknown node last. The pure functions below work on that list.

Ties. Equal-scoring segmentations are common on runs of one character ("========" as a+b or b+a),
so which one wins is decided by arithmetic, and we do the peers' arithmetic exactly:
  * the rule (tokenizers' `encode_optimized`, SentencePiece's `EncodeOptimized`): nodes are
    relaxed by increasing start, then increasing length, unknown last; a node replaces the best
    path into its end only if its sum is strictly greater, so the first-found one stays;
  * tokenizers reads a tokenizer.json's scores with serde_json's fast float parser (digits as a
    u64, then one multiply or divide by a power of ten), which is off by one ulp on many 17-digit
    scores: `json_f64` reads them the same way, and a+b = b+a then rounds the same way too;
  * SentencePiece keeps scores and path sums in single precision and runs one lattice over the
    whole normalized sentence, so the sum carried in from earlier words changes the rounding:
    `Unigram(..., float32=True)` rounds every path sum to float32, and its .model tokenizers
    do not split the sentence into words (sentencepiece_model.py).
"""

from __future__ import annotations

import heapq
import math
import random
from array import array
from typing import Callable, Iterable

from .base import Model, Token

UNK_PENALTY = 10.0  # SentencePiece's kUnkPenalty: an unknown char costs 10 nats below the rarest piece

Node = tuple[int, int, float]  # (end, id, score) of a node starting at the list's position
Lattice = list[list[Node]]


def build_lattice(
    sequence: str,
    pieces: dict[str, int],
    scores: list[float],
    prefixes: set[str],
    max_len: int,
    unk_id: int | None,
    unk_score: float,
) -> Lattice:
    """All vocabulary pieces in `sequence`, plus an unknown node where no single char matches.

    >>> p = {"a": 0, "b": 1, "ab": 2}
    >>> build_lattice("abc", p, [-1.0, -2.0, -1.5], {"a", "b", "ab"}, 2, 3, -12.0)
    [[(1, 0, -1.0), (2, 2, -1.5)], [(2, 1, -2.0)], [(3, 3, -12.0)]]
    """
    n = len(sequence)
    starts: Lattice = []
    for i in range(n):
        nodes = []
        has_single = False
        for j in range(i + 1, min(n, i + max_len) + 1):
            sub = sequence[i:j]
            if sub not in prefixes:
                break
            pid = pieces.get(sub)
            if pid is not None:
                nodes.append((j, pid, scores[pid]))
                has_single = has_single or j == i + 1
        if not has_single:
            if unk_id is None:
                raise ValueError(
                    f"character {sequence[i]!r} at {i} of {sequence!r} is not in the "
                    "vocabulary and the Unigram model has no unk_id"
                )
            nodes.append((i + 1, unk_id, unk_score))
        starts.append(nodes)
    return starts


def viterbi(starts: Lattice, float32: bool = False) -> list[tuple[int, int, int]]:
    """Best path as (start, end, id) nodes; a tie keeps the first-found node (see the module
    docstring); `float32` rounds every path sum to single precision, as SentencePiece does.

    >>> viterbi([[(1, 0, -1.0), (2, 2, -1.5)], [(2, 1, -2.0)]])
    [(0, 2, 2)]
    >>> viterbi([[(1, 1, -1.0), (2, 2, -2.0)], [(2, 1, -1.0)]])  # a tie: the node found first wins
    [(0, 2, 2)]
    """
    n = len(starts)
    best = [-math.inf] * (n + 1)
    back: list[tuple[int, int]] = [(-1, -1)] * (n + 1)  # (start, id) of the best node ending here
    best[0] = 0.0
    single = array("f", [0.0]) if float32 else None  # storing in it rounds to float32
    for i, nodes in enumerate(starts):
        here = best[i]
        for end, pid, score in nodes:
            cand = here + score
            if single is not None:
                single[0] = cand
                cand = single[0]
            if back[end][0] < 0 or cand > best[end]:
                best[end], back[end] = cand, (i, pid)
    path, end = [], n
    while end > 0:
        start, pid = back[end]
        path.append((start, end, pid))
        end = start
    return path[::-1]


def _ends(starts: Lattice) -> list[list[tuple[int, int, float]]]:
    """Re-index the lattice by end position: ends[j] = [(start, id, score), ...]."""
    ends: list[list[tuple[int, int, float]]] = [[] for _ in range(len(starts) + 1)]
    for i, nodes in enumerate(starts):
        for end, pid, score in nodes:
            ends[end].append((i, pid, score))
    return ends


def forward(starts: Lattice, theta: float = 1.0) -> list[float]:
    """alpha[j] = log of the summed exp(theta * score) of all paths from 0 to position j.

    >>> a = forward([[(1, 0, math.log(0.5)), (2, 2, math.log(0.25))], [(2, 1, math.log(0.5))]])
    >>> round(math.exp(a[2]), 6)  # 0.5 * 0.5 + 0.25
    0.5
    """
    alpha = [-math.inf] * (len(starts) + 1)
    alpha[0] = 0.0
    for i, nodes in enumerate(starts):
        for end, _, score in nodes:
            alpha[end] = _logaddexp(alpha[end], alpha[i] + theta * score)
    return alpha


def marginals(starts: Lattice) -> tuple[dict[int, float], float]:
    """Expected count of every piece id over all segmentations (forward-backward), and log Z.

    >>> m, logz = marginals([[(1, 0, math.log(0.5)), (2, 2, math.log(0.25))], [(2, 1, math.log(0.5))]])
    >>> {k: round(v, 6) for k, v in sorted(m.items())}, round(math.exp(logz), 6)
    ({0: 0.5, 1: 0.5, 2: 0.5}, 0.5)
    """
    n = len(starts)
    alpha = forward(starts)
    beta = [-math.inf] * (n + 1)
    beta[n] = 0.0
    for i in range(n - 1, -1, -1):
        for end, _, score in starts[i]:
            beta[i] = _logaddexp(beta[i], score + beta[end])
    logz = alpha[n]
    expected: dict[int, float] = {}
    for i, nodes in enumerate(starts):
        for end, pid, score in nodes:
            expected[pid] = expected.get(pid, 0.0) + math.exp(alpha[i] + score + beta[end] - logz)
    return expected, logz


def nbest(starts: Lattice, n: int) -> list[tuple[list[tuple[int, int, int]], float]]:
    """The n best paths, best first, with their scores (A* from the end, exact Viterbi heuristic).

    >>> [(p, round(s, 2)) for p, s in nbest([[(1, 0, -1.0), (2, 2, -1.5)], [(2, 1, -2.0)]], 5)]
    [([(0, 2, 2)], -1.5), ([(0, 1, 0), (1, 2, 1)], -3.0)]
    """
    length = len(starts)
    if n < 1 or length == 0:
        return [([], 0.0)] if n >= 1 else []
    ends = _ends(starts)
    # h[j]: the best score of a path from 0 to j, the exact remaining cost for A* going leftwards.
    h = [-math.inf] * (length + 1)
    h[0] = 0.0
    for i, nodes in enumerate(starts):
        for end, _, score in nodes:
            h[end] = max(h[end], h[i] + score)
    results = []
    tie = 0  # insertion counter: equal priorities pop first-in first-out
    # agenda items: (-f, tie, position, g, suffix path as a linked tuple)
    agenda = [(-h[length], tie, length, 0.0, None)]
    while agenda and len(results) < n:
        _, _, pos, g, suffix = heapq.heappop(agenda)
        if pos == 0:
            path = []
            while suffix is not None:
                node, suffix = suffix
                path.append(node)
            results.append((path, g))
            continue
        for start, pid, score in ends[pos]:
            tie += 1
            heapq.heappush(agenda, (-(h[start] + score + g), tie, start, g + score, ((start, pos, pid), suffix)))
    return results


def sample(starts: Lattice, theta: float, uniform: Callable[[], float]) -> list[tuple[int, int, int]]:
    """A path drawn with probability exp(theta * score(path)) / Z: forward filtering, backward sampling.

    >>> sample([[(1, 0, -1.0), (2, 2, -1.5)], [(2, 1, -2.0)]], 1.0, lambda: 0.0)
    [(0, 2, 2)]
    """
    alpha = forward(starts, theta)
    ends = _ends(starts)
    path, pos = [], len(starts)
    while pos > 0:
        nodes = ends[pos]
        weights = [math.exp(alpha[s] + theta * score - alpha[pos]) for s, _, score in nodes]
        k = _draw(weights, uniform)
        start, pid, _ = nodes[k]
        path.append((start, pos, pid))
        pos = start
    return path[::-1]


def _draw(weights: list[float], uniform: Callable[[], float]) -> int:
    u = uniform() * sum(weights)
    acc = 0.0
    for k, w in enumerate(weights):
        acc += w
        if u < acc:
            return k
    return max(k for k, w in enumerate(weights) if w > 0)  # u rounded up to the total


_POW10 = [float(f"1e{k}") for k in range(309)]  # serde_json's table: each correctly rounded


def json_f64(x: float) -> float:
    """The float tokenizers gets when a tokenizer.json holds repr(x) (Python's and serde_json's
    own shortest form), read as serde_json's default parser does: up to 19 digits as an integer
    (digits that would overflow a u64 are dropped), converted to f64, then one multiply or divide
    by 10^k. Exact when the digits fit in 2^53 and k <= 22, one ulp off on many 17-digit scores.

    >>> json_f64(-7.2473703017017606), json_f64(-1.5), json_f64(1e-300)
    (-7.24737030170176, -1.5, 1e-300)
    """
    if not math.isfinite(x):
        return x
    text = repr(float(x)).lstrip("-")
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    significand, exponent = 0, int(exp or 0)
    for k, d in enumerate(whole):
        if significand * 10 + int(d) >= 1 << 64:
            exponent += len(whole) - k  # the integer digits left are dropped
            break
        significand = significand * 10 + int(d)
    for d in frac:
        if significand * 10 + int(d) >= 1 << 64:
            break  # and so are the fraction digits from the first that would overflow
        significand, exponent = significand * 10 + int(d), exponent - 1
    f = float(significand)
    while exponent < -308 and f != 0.0:
        f /= 1e308
        exponent += 308
    if exponent >= 0:
        f *= _POW10[exponent]
    elif f != 0.0:
        f /= _POW10[-exponent]
    return -f if math.copysign(1.0, x) < 0 else f


def _logaddexp(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    m = max(a, b)
    return m + math.log1p(math.exp(-abs(a - b)))


def _single(x: float) -> float:
    """x rounded to float32 (as a Python float)."""
    return array("f", [x])[0]


def uniform_source(generator) -> Callable[[], float]:
    """A [0, 1) float source from random.Random, numpy.random.Generator, torch.Generator or None."""
    if generator is None:
        return random.random
    if isinstance(generator, random.Random):
        return generator.random
    if hasattr(generator, "bit_generator"):  # numpy.random.Generator
        return lambda: float(generator.random())
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency of the library
        torch = None
    if torch is not None and isinstance(generator, torch.Generator):
        return lambda: float(torch.rand((), generator=generator))
    raise TypeError(
        f"generator must be random.Random, numpy.random.Generator or torch.Generator, got {type(generator).__name__}"
    )


class Unigram(Model):
    """Vocabulary of (piece, log-probability) pairs; the id of a piece is its index in `vocab`.

    `unmatchable` lists ids that are never looked up in text (SentencePiece's control, unknown,
    byte and unused pieces); tokenizers' own files match every piece. The lattice scores are the
    vocabulary's as tokenizers reads them from a tokenizer.json (`json_f64`), or with `float32`
    SentencePiece's single-precision ones and sums (see the module docstring on ties).
    """

    def __init__(
        self,
        vocab: list[tuple[str, float]],
        unk_id: int | None = None,
        byte_fallback: bool = False,
        *,
        unmatchable: Iterable[int] = (),
        float32: bool = False,
    ):
        if not vocab:
            raise ValueError("Unigram vocabulary is empty")
        if unk_id is not None and not 0 <= unk_id < len(vocab):
            raise ValueError(f"unk_id {unk_id} is outside the vocabulary of {len(vocab)} pieces")
        self.vocab = [(str(p), float(s)) for p, s in vocab]
        self.unk_id = unk_id
        self.byte_fallback = byte_fallback
        self.unmatchable = frozenset(unmatchable)
        self._ids: dict[str, int] = {}
        for i, (piece, score) in enumerate(self.vocab):
            if piece in self._ids:
                raise ValueError(
                    f"piece {piece!r} appears twice in the Unigram vocabulary (ids {self._ids[piece]} and {i})"
                )
            if math.isnan(score):
                raise ValueError(f"piece {piece!r} (id {i}) has a NaN score")
            self._ids[piece] = i
        self.float32 = float32
        self.scores = [_single(s) if float32 else json_f64(s) for _, s in self.vocab]
        self.pieces = {p: i for p, i in self._ids.items() if i not in self.unmatchable and p}  # matchable
        self._prefixes = {p[:k] for p in self.pieces for k in range(1, len(p) + 1)}
        self.max_len = max((len(p) for p in self.pieces), default=1)
        self.min_score = min(self.scores)
        self.unk_score = self.min_score - UNK_PENALTY
        if float32:
            self.unk_score = _single(self.unk_score)
        self._cache: dict[str, list[Token]] = {}

    # -- lattice -----------------------------------------------------------------------------
    def lattice(self, sequence: str) -> Lattice:
        return build_lattice(
            sequence, self.pieces, self.scores, self._prefixes, self.max_len, self.unk_id, self.unk_score
        )

    def _to_tokens(self, sequence: str, path: list[tuple[int, int, int]]) -> list[Token]:
        """Path nodes to Tokens: fuse runs of unknowns, then spell unknowns as bytes if asked."""
        fused: list[tuple[int, int, int]] = []
        for start, end, pid in path:
            if pid == self.unk_id and fused and fused[-1][2] == self.unk_id:
                fused[-1] = (fused[-1][0], end, pid)
            else:
                fused.append((start, end, pid))
        tokens = []
        for start, end, pid in fused:
            text = sequence[start:end]
            if pid == self.unk_id and self.byte_fallback:
                byte_ids = [self._ids.get(f"<0x{b:02X}>") for b in text.encode("utf-8")]
                if all(i is not None for i in byte_ids):
                    tokens.extend(Token(i, self.vocab[i][0], (start, end)) for i in byte_ids)
                    continue
            tokens.append(Token(pid, text, (start, end)))
        return tokens

    # -- Model API ---------------------------------------------------------------------------
    def tokenize(self, sequence: str) -> list[Token]:
        """The Viterbi segmentation of one pre-token, offsets in characters of `sequence`."""
        cached = self._cache.get(sequence)
        if cached is None:
            cached = self._to_tokens(sequence, viterbi(self.lattice(sequence), self.float32))
            if len(self._cache) < 100_000 and len(sequence) <= 64:  # words, not whole sentences
                self._cache[sequence] = cached
        return list(cached)

    def nbest(self, sequence: str, n: int) -> list[tuple[list[Token], float]]:
        """The n best segmentations with their total log-probability, best first."""
        return [(self._to_tokens(sequence, p), s) for p, s in nbest(self.lattice(sequence), n)]

    def sample(self, sequence: str, alpha: float = 0.1, nbest_size: int = -1, generator=None) -> list[Token]:
        """A segmentation for subword regularization, drawn with P ∝ exp(alpha * score).

        nbest_size < 0 samples from all segmentations (forward filtering, backward sampling);
        nbest_size > 1 samples among the nbest_size best; 0 or 1 is the Viterbi segmentation.
        """
        uniform = uniform_source(generator)
        starts = self.lattice(sequence)
        if nbest_size < 0:
            return self._to_tokens(sequence, sample(starts, alpha, uniform))
        if nbest_size <= 1:
            return self._to_tokens(sequence, viterbi(starts, self.float32))
        best = nbest(starts, nbest_size)
        top = max(alpha * s for _, s in best)
        k = _draw([math.exp(alpha * s - top) for _, s in best], uniform)
        return self._to_tokens(sequence, best[k][0])

    def token_to_id(self, token: str) -> int | None:
        return self._ids.get(token)

    def id_to_token(self, id: int) -> str | None:
        return self.vocab[id][0] if 0 <= id < len(self.vocab) else None

    def get_vocab(self) -> dict[str, int]:
        return dict(self._ids)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def to_json(self) -> dict:
        return {
            "type": "Unigram",
            "unk_id": self.unk_id,
            "vocab": [[p, s] for p, s in self.vocab],
            "byte_fallback": self.byte_fallback,
        }

    @classmethod
    def from_json(cls, data: dict) -> "Unigram":
        if data.get("type", "Unigram") != "Unigram":
            raise ValueError(f"model type {data.get('type')!r} is not 'Unigram'")
        if "vocab" not in data:
            raise ValueError("Unigram model JSON has no 'vocab' key")
        vocab = []
        for i, entry in enumerate(data["vocab"]):
            if not (
                isinstance(entry, (list, tuple))
                and len(entry) == 2
                and isinstance(entry[0], str)
                and isinstance(entry[1], (int, float))
            ):
                raise ValueError(f"Unigram vocab entry {i} is {entry!r}, expected [piece, score]")
            vocab.append((entry[0], float(entry[1])))
        return cls(vocab, data.get("unk_id"), bool(data.get("byte_fallback", False)))

    def __repr__(self) -> str:
        return f"Unigram(vocab_size={len(self.vocab)}, unk_id={self.unk_id}, byte_fallback={self.byte_fallback})"
