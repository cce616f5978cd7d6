"""Random walks over a graph as sentences for skip-gram: DeepWalk (Perozzi et al. 2014) and node2vec
(Grover & Leskovec 2016), generated in parallel, reproducibly from a seed, and streamed to the
word2vec trainer.

DeepWalk steps from v to a neighbour x with probability ∝ w(v, x). node2vec's step depends on the
node t the walk came from too: the unnormalised weight of x is w(v, x) · α(t, x), with
α = 1/p if x = t (back), 1 if x is a neighbour of t (an edge t → x; a common neighbour), 1/q
otherwise (outward); the first step of a walk is first-order. Two exact samplers:

* rejection (pecanpy's and KnightKing's way): draw x first-order, keep it with probability
  α(t, x) / max(1/p, 1, 1/q), else draw again; memory O(E); a step costs a binary search in t's
  sorted neighbours per try;
* alias: a Walker alias table per edge (t → v) over v's neighbours, built once: a step is two
  reads, but the tables hold Σ_v in-degree(v)·degree(v) entries (Σ degree² undirected), what
  makes the `node2vec` package run out of memory on large graphs.

    >>> g = Graph.from_edges([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])
    >>> transition_weights(g, "a", "c", p=2.0, q=0.5)    # from c, having come from a
    {'a': 0.5, 'b': 1.0, 'd': 2.0}

Jobs: each of `num_walks` rounds walks once from every node with an edge out, in blocks of
about JOB_WORDS nodes walked; a job is one block of one round, with its own seed drawn from the
caller's Generator, so the walks are the same for a seed whatever the number of threads. A job's
walks are generated in the thread that trains on them; a first pass over the jobs counts the
visits (the vocabulary: subsampling and the noise distribution need them) and keeps the walks
only when they fit in `cache_bytes`, else training generates them again from the same seeds.
Shapes: n nodes, E stored edges; a job's walks are one int32 array of node ids and (walks + 1,)
int64 bounds.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from . import kernels
from .graph import Graph
from .options import TrainOptions
from .vectors import KeyedVectors
from .vocab import Vocab
from .word2vec import JOB_WORDS, Jobs, word2vec
from .workers import run_jobs

CACHE_BYTES = 1 << 30  # walks kept between the counting pass and training up to this size
ALIAS_LIMIT = 1 << 27  # second-order alias entries (12 bytes each) beyond which "alias" refuses
DEEPWALK, REJECTION, ALIAS = 0, 1, 2

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)


def jit(function):
    return kernels.numba.njit(nogil=True, cache=True)(function) if kernels.COMPILED else function


@jit
def uniform(state):
    """splitmix64: (next state, a double uniform in [0, 1) from the top 53 bits)."""
    state = state + _GOLDEN
    z = state
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z = z ^ (z >> _S31)
    return state, np.float64(z >> _S11) * (1.0 / 9007199254740992.0)


@jit
def alias_fill(weight, begin, end, prob, alias, small, large):
    """Vose's alias table of weight[begin:end] into prob / alias[begin:end] (alias: local indices);
    small and large are scratch of at least end - begin entries."""
    m = end - begin
    total = 0.0
    for k in range(m):
        total += weight[begin + k]
    ns = nl = 0
    for k in range(m):
        prob[begin + k] = weight[begin + k] * m / total
        alias[begin + k] = k
        if prob[begin + k] < 1.0:
            small[ns] = k
            ns += 1
        else:
            large[nl] = k
            nl += 1
    while ns > 0 and nl > 0:
        ns -= 1
        nl -= 1
        short, tall = small[ns], large[nl]
        alias[begin + short] = tall
        prob[begin + tall] -= 1.0 - prob[begin + short]
        if prob[begin + tall] < 1.0:
            small[ns] = tall
            ns += 1
        else:
            large[nl] = tall
            nl += 1
    for k in range(ns):  # what is left is 1 up to rounding
        prob[begin + small[k]] = 1.0
    for k in range(nl):
        prob[begin + large[k]] = 1.0


@jit
def alias_scratch(indptr):
    """alias_fill's two scratch arrays, as long as the widest row."""
    widest = 0
    for v in range(len(indptr) - 1):
        widest = max(widest, indptr[v + 1] - indptr[v])
    return np.empty(widest, np.int64), np.empty(widest, np.int64)


@jit
def node_alias_tables(indptr, weights):
    """First-order alias tables, one per node over its out-edges: prob (E,), alias (E,) local."""
    n = len(indptr) - 1
    prob = np.empty(len(weights), np.float64)
    alias = np.empty(len(weights), np.int32)
    small, large = alias_scratch(indptr)
    for v in range(n):
        alias_fill(weights, indptr[v], indptr[v + 1], prob, alias, small, large)
    return prob, alias


@jit
def has_edge(indptr, indices, t, x):
    """Whether t → x is an edge (binary search in t's sorted neighbours)."""
    lo, hi = indptr[t], indptr[t + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo < indptr[t + 1] and indices[lo] == x


@jit
def bias(indptr, indices, t, x, inv_p, inv_q):
    """node2vec's α(t, x) for a step to x, having come from t."""
    if x == t:
        return inv_p
    if has_edge(indptr, indices, t, x):
        return 1.0
    return inv_q


@jit
def edge_alias_tables(indptr, indices, weights, weighted, inv_p, inv_q):
    """Second-order alias tables: for each stored edge e = (t → v), a table over v's out-edges of
    w(v, x) · α(t, x), at offsets[e]:offsets[e + 1]."""
    n, E = len(indptr) - 1, len(indices)
    offsets = np.zeros(E + 1, np.int64)
    for e in range(E):
        v = indices[e]
        offsets[e + 1] = offsets[e] + indptr[v + 1] - indptr[v]
    total = offsets[E]
    w = np.empty(total, np.float64)
    prob = np.empty(total, np.float64)
    alias = np.empty(total, np.int32)
    small, large = alias_scratch(indptr)
    for t in range(n):
        for e in range(indptr[t], indptr[t + 1]):
            v = indices[e]
            b = indptr[v]
            for k in range(indptr[v + 1] - b):
                x = indices[b + k]
                w[offsets[e] + k] = (weights[b + k] if weighted else 1.0) * bias(indptr, indices, t, x, inv_p, inv_q)
            alias_fill(w, offsets[e], offsets[e + 1], prob, alias, small, large)
    return offsets, prob, alias


@jit
def walk_job(
    indptr,
    indices,
    weighted,
    node_prob,
    node_alias,
    edge_offsets,
    edge_prob,
    edge_alias,
    mode,
    inv_p,
    inv_q,
    starts,
    walk_length,
    seed,
    out,
    bounds,
):
    """One walk of up to walk_length nodes from each node of `starts` (it stops early at a node with
    no edge out), into out / bounds: walk i is out[bounds[i]:bounds[i + 1]]. Returns the nodes written."""
    state = np.uint64(seed)
    most = max(inv_p, 1.0, inv_q)
    pos = 0
    for i in range(len(starts)):
        bounds[i] = pos
        v = starts[i]
        out[pos] = v
        pos += 1
        t = -1  # the previous node
        via = -1  # the stored edge t → v
        for _ in range(walk_length - 1):
            b = indptr[v]
            degree = indptr[v + 1] - b
            if degree == 0:
                break
            if mode == ALIAS and t >= 0:
                state, u = uniform(state)
                x = u * degree
                k = int(x)
                k = k if x - k < edge_prob[edge_offsets[via] + k] else edge_alias[edge_offsets[via] + k]
            else:
                while True:  # a first-order draw; node2vec keeps it with probability α / max α
                    state, u = uniform(state)
                    x = u * degree
                    k = int(x)
                    if weighted:
                        k = k if x - k < node_prob[b + k] else node_alias[b + k]
                    if mode == DEEPWALK or t < 0:
                        break
                    state, u = uniform(state)
                    if u * most < bias(indptr, indices, t, indices[b + k], inv_p, inv_q):
                        break
            t, via, v = v, b + k, indices[b + k]
            out[pos] = v
            pos += 1
    bounds[len(starts)] = pos
    return pos


@jit
def tally(nodes, counts):
    for v in nodes:
        counts[v] += 1


def transition_weights(graph: Graph, previous: str, current: str, p: float, q: float) -> dict[str, float]:
    """node2vec's unnormalised transition weights w(v, x) · α(t, x) from `current` (v), having come
    from `previous` (t), by neighbour name (the rule the samplers draw from, spelled out)."""
    index = {name: i for i, name in enumerate(graph.nodes)}
    t, v = index[previous], index[current]
    out = {}
    for e in range(graph.indptr[v], graph.indptr[v + 1]):
        x = int(graph.indices[e])
        w = 1.0 if graph.weights is None else float(graph.weights[e])
        out[graph.nodes[x]] = w * float(bias(graph.indptr, graph.indices, t, x, 1.0 / p, 1.0 / q))
    return out


class Walks:
    """The walks of a graph for a seed, job by job (see the module docstring).

    walks = Walks(graph, TrainOptions(graph=True, p=1, q=0.5), np.random.default_rng(1))
    nodes, bounds = walks.job(0)          # the first job's walks, node ids
    [[graph.nodes[v] for v in w] for w in walks.sentences()]   # every walk, by name
    """

    def __init__(self, graph: Graph, options: TrainOptions, rng: np.random.Generator):
        self.graph, self.walk_length = graph, options.walk_length
        node2vec = options.walk == "node2vec" and (options.p, options.q) != (1.0, 1.0)  # α ≡ 1: first-order
        self.mode = DEEPWALK if not node2vec else REJECTION if options.sampler in ("auto", "rejection") else ALIAS
        self.inv_p, self.inv_q = 1.0 / options.p, 1.0 / options.q
        weighted = graph.weights is not None
        self.weighted = weighted
        weights = graph.weights if weighted else np.ones(0, np.float64)
        self.node_prob, self.node_alias = (
            node_alias_tables(graph.indptr, weights) if weighted else (np.ones(0, np.float64), np.zeros(0, np.int32))
        )
        if self.mode == ALIAS:
            entries = int(graph.degree[graph.indices].sum())
            if entries > ALIAS_LIMIT:
                raise ValueError(
                    f"--sampler alias: the second-order tables of this graph would hold {entries:,} "
                    f"entries ({entries * 12 / 2**30:.1f} GiB); use --sampler rejection (as exact)"
                )
            self.edge_offsets, self.edge_prob, self.edge_alias = edge_alias_tables(
                graph.indptr, graph.indices, weights, weighted, self.inv_p, self.inv_q
            )
        else:
            self.edge_offsets, self.edge_prob, self.edge_alias = (
                np.zeros(1, np.int64),
                np.ones(0),
                np.zeros(0, np.int32),
            )
        walkable = np.flatnonzero(graph.degree > 0).astype(np.int32)
        self.starts = walkable[rng.permutation(len(walkable))]
        self.block = max(1, JOB_WORDS // self.walk_length)
        self.blocks = -(-len(self.starts) // self.block)
        self.rounds = options.num_walks
        self.order = (
            np.stack([rng.permutation(self.blocks) for _ in range(self.rounds)])
            if self.blocks
            else np.zeros((self.rounds, 0), np.int64)
        )
        self.seeds = rng.integers(1, 2**63, size=self.rounds * self.blocks, dtype=np.int64)

    def __len__(self) -> int:
        """Jobs."""
        return self.rounds * self.blocks

    def job(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Job j's walks: (node ids int32, bounds (walks + 1,) int64)."""
        r, c = divmod(j, self.blocks)
        b = int(self.order[r, c])
        starts = self.starts[b * self.block : (b + 1) * self.block]
        out = np.empty(len(starts) * self.walk_length, np.int32)
        bounds = np.empty(len(starts) + 1, np.int64)
        g = self.graph
        n = walk_job(
            g.indptr,
            g.indices,
            self.weighted,
            self.node_prob,
            self.node_alias,
            self.edge_offsets,
            self.edge_prob,
            self.edge_alias,
            self.mode,
            self.inv_p,
            self.inv_q,
            starts,
            self.walk_length,
            int(self.seeds[j]),
            out,
            bounds,
        )
        return out[:n], bounds

    def sentences(self):
        """Every walk, job by job, as a list of node names (for other trainers; holds one job at a time)."""
        names = self.graph.nodes
        for j in range(len(self)):
            nodes, bounds = self.job(j)
            for i in range(len(bounds) - 1):
                yield [names[v] for v in nodes[bounds[i] : bounds[i + 1]]]

    def count(self, workers: int, cache_bytes: int = CACHE_BYTES, progress=None):
        """Visits per node over all walks (n,) int64, nodes per job (jobs,) int64, and the jobs' walks
        when at most cache_bytes of them (else None). Jobs run on `workers` threads."""
        n = len(self.graph)
        bound = len(self) * self.block * self.walk_length * 4
        cache = [None] * len(self) if bound <= cache_bytes else None
        per_thread: dict[int, np.ndarray] = {}
        sizes = np.zeros(len(self), np.int64)

        def job(j: int) -> int:
            nodes, bounds = self.job(j)
            counts = per_thread.setdefault(threading.get_ident(), np.zeros(n, np.int64))
            tally(nodes, counts)
            if cache is not None:
                cache[j] = (nodes, bounds)
            return len(nodes)

        def done(j: int, size: int) -> None:
            sizes[j] = size
            if progress is not None:
                progress(size)

        run_jobs(len(self), job, workers, done)
        counts = sum(per_thread.values()) if per_thread else np.zeros(n, np.int64)
        return counts, sizes, cache


def node_vectors(
    graph: Graph, options: TrainOptions, rng: np.random.Generator, progress=None
) -> tuple[KeyedVectors, dict]:
    """Node vectors of `graph` by skip-gram over its walks: (vectors of every visited node, stats).
    A node no walk visits (no edge, or only edges into it on a directed graph that no walk takes)
    has no vector: it is listed in stats["missing"], never given a random one."""
    if len(graph) == 0 or graph.edges == 0:
        raise ValueError("the graph has no edges")
    start = time.perf_counter()
    walks = Walks(graph, options, rng)
    counts, sizes, cache = walks.count(options.workers, CACHE_BYTES)
    walk_seconds = time.perf_counter() - start

    order = np.argsort(-counts, kind="stable")
    kept = order[counts[order] >= max(options.min_count, 1)]
    rank = np.full(len(graph), -1, np.int32)
    rank[kept] = np.arange(len(kept), dtype=np.int32)
    total = int(sizes.sum())
    vocab = Vocab(
        [graph.nodes[v] for v in kept], counts[kept].astype(np.int64), total, int(walks.rounds * len(walks.starts))
    )
    base = np.concatenate([[0], np.cumsum(sizes)])

    def piece(j: int):
        nodes, bounds = cache[j] if cache is not None else walks.job(j)
        tokens = rank[nodes]
        starts = bounds
        if len(kept) < len(graph):  # nodes under --min-count leave the walks, as rare words leave sentences
            inside = tokens >= 0
            tokens = tokens[inside]
            starts = np.concatenate([[0], np.cumsum(inside)])[bounds]
        return tokens, starts, bounds + base[j], 0, len(bounds) - 1

    vectors, stats = word2vec(Jobs(len(walks), total, piece), vocab, options, rng, progress)
    missing = [graph.nodes[v] for v in np.flatnonzero(rank < 0)]
    stats.update(
        nodes=len(graph),
        edges=graph.edges,
        directed=graph.directed,
        self_loops=graph.self_loops,
        duplicates=graph.duplicates,
        walks=vocab.sentences,
        walk_nodes=total,
        walk_seconds=walk_seconds,
        walks_cached=cache is not None,
        sampler=("first-order" if walks.mode == DEEPWALK else "rejection" if walks.mode == REJECTION else "alias"),
        missing=missing,
    )
    return vectors, stats
