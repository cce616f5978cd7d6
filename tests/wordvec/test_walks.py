"""Random walks (DeepWalk, node2vec): known transition weights, and the walks' step and visit
frequencies against the exact distributions by chi-square tests with fixed seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from bertology.wordvec.graph import Graph
from bertology.wordvec.options import TrainOptions
from bertology.wordvec.walks import Walks, node_vectors, transition_weights

# a 6-node undirected graph with a triangle (so 1/p, 1 and 1/q all occur) and one weighted edge
EDGES = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "f"), ("f", "c", 3.0), ("b", "e")]
ALPHA = 1e-4  # a test fails when the draws are this unlikely under the exact distribution


def options(**kw) -> TrainOptions:
    return TrainOptions(graph=True, quiet=True, workers=1, **kw)


def all_walks(graph: Graph, opts: TrainOptions, seed: int) -> list[list[int]]:
    walks = Walks(graph, opts, np.random.default_rng(seed))
    out = []
    for j in range(len(walks)):
        nodes, bounds = walks.job(j)
        out += [nodes[bounds[i] : bounds[i + 1]].tolist() for i in range(len(bounds) - 1)]
    return out


def test_transition_weights_known_answer():
    g = Graph.from_edges(EDGES)
    # from c having come from a: back to a 1/p; b is a's neighbour (1); d and f are not (1/q), f weighs 3
    assert transition_weights(g, "a", "c", p=4.0, q=0.25) == {"a": 0.25, "b": 1.0, "d": 4.0, "f": 12.0}
    assert transition_weights(g, "d", "c", p=2.0, q=0.5) == {"a": 2.0, "b": 2.0, "d": 0.5, "f": 6.0}


@pytest.mark.parametrize("sampler", ["rejection", "alias"])
@pytest.mark.parametrize("directed", [False, True])
def test_node2vec_steps_follow_the_transition_weights(sampler, directed):
    edges = EDGES + ([("c", "b"), ("d", "c"), ("a", "c")] if directed else [])
    g = Graph.from_edges(edges, directed=directed)
    p, q = 4.0, 0.25
    walks = all_walks(g, options(p=p, q=q, sampler=sampler, walk_length=30, num_walks=300), seed=3)
    t, v = g.nodes.index("a"), g.nodes.index("c")
    nxt = [w[i + 1] for w in walks for i in range(1, len(w) - 1) if w[i - 1] == t and w[i] == v]
    weights = transition_weights(g, "a", "c", p, q)
    names = sorted(weights)
    observed = np.array([sum(1 for x in nxt if g.nodes[x] == n) for n in names])
    expected = np.array([weights[n] for n in names]) / sum(weights.values()) * len(nxt)
    assert len(nxt) > 500
    assert chisquare(observed, expected).pvalue > ALPHA


def test_deepwalk_visits_follow_the_stationary_distribution():
    """Undirected, connected, not bipartite: the last node of a long walk is drawn from the
    stationary distribution ∝ weighted degree; one node per walk keeps the draws independent."""
    g = Graph.from_edges(EDGES)
    walks = all_walks(g, options(walk="deepwalk", walk_length=40, num_walks=800), seed=5)
    last = np.bincount([w[-1] for w in walks], minlength=len(g))
    strength = np.bincount(np.repeat(np.arange(len(g)), g.degree), weights=g.weights, minlength=len(g))
    assert chisquare(last, strength / strength.sum() * last.sum()).pvalue > ALPHA
    # and the test can fail: plain degree (weights ignored) is rejected
    assert chisquare(last, g.degree / g.degree.sum() * last.sum()).pvalue < ALPHA


def test_node2vec_with_p_q_one_is_deepwalk():
    g = Graph.from_edges(EDGES)
    a = all_walks(g, options(walk="node2vec", walk_length=10, num_walks=2), seed=1)
    b = all_walks(g, options(walk="deepwalk", walk_length=10, num_walks=2), seed=1)
    assert a == b  # α ≡ 1: the same first-order draws


def test_walks_are_seeded_and_start_once_per_node_and_round():
    g = Graph.from_edges(EDGES)
    a = all_walks(g, options(q=0.5, walk_length=7, num_walks=3), seed=9)
    assert a == all_walks(g, options(q=0.5, walk_length=7, num_walks=3), seed=9)
    assert a != all_walks(g, options(q=0.5, walk_length=7, num_walks=3), seed=10)
    assert sorted(w[0] for w in a) == sorted(list(range(len(g))) * 3)
    assert all(len(w) == 7 and all(g.nodes[y] in g.neighbors(g.nodes[x]) for x, y in zip(w, w[1:])) for w in a)


def test_directed_walks_stop_at_a_sink_and_its_vector_is_trained_from_others():
    g = Graph.from_edges([("a", "b"), ("b", "c"), ("a", "c")], directed=True)
    walks = all_walks(g, options(walk_length=5, num_walks=2), seed=1)
    assert all(w[-1] == g.nodes.index("c") for w in walks)
    assert not any(w[0] == g.nodes.index("c") for w in walks)  # no walk from a node with no edge out
    vectors, stats = node_vectors(g, options(walk_length=5, num_walks=2, min_count=1), np.random.default_rng(0))
    assert sorted(vectors.index_to_key) == ["a", "b", "c"] and stats["missing"] == []


def test_nodes_no_walk_reaches_are_missing_not_random():
    g = Graph.from_edges([("a", "b"), ("b", "c"), ("z", "z")])
    vectors, stats = node_vectors(g, options(walk_length=5, num_walks=2), np.random.default_rng(0))
    assert "z" not in vectors and stats["missing"] == ["z"] and g.isolated() == ["z"]
    assert stats["self_loops"] == 1


def test_thread_count_and_streaming_change_nothing(monkeypatch):
    g = Graph.from_edges(EDGES)
    opts = options(q=0.5, walk_length=20, num_walks=4, vector_size=8, epochs=2)
    walks = Walks(g, opts, np.random.default_rng(2))
    one, sizes1, cache = walks.count(workers=1)
    three, sizes3, _ = walks.count(workers=3)
    assert (one == three).all() and (sizes1 == sizes3).all() and cache is not None
    assert walks.count(workers=2, cache_bytes=0)[2] is None
    v1, _ = node_vectors(g, opts, np.random.default_rng(2))
    import bertology.wordvec.walks as W

    monkeypatch.setattr(W, "CACHE_BYTES", 0)  # regenerate every job's walks while training: the same vectors
    v2, s2 = node_vectors(g, opts, np.random.default_rng(2))
    assert not s2["walks_cached"]
    np.testing.assert_array_equal(v1.vectors, v2.vectors)


def test_alias_sampler_refuses_a_graph_too_large_for_its_tables(monkeypatch):
    import bertology.wordvec.walks as W

    monkeypatch.setattr(W, "ALIAS_LIMIT", 10)
    with pytest.raises(ValueError, match="--sampler rejection"):
        Walks(Graph.from_edges(EDGES), options(sampler="alias", q=0.5), np.random.default_rng(0))


def test_node_vectors_separate_two_communities():
    """Two 6-cliques joined by one edge: each node's nearest neighbours are in its own clique."""
    left = [(f"l{i}", f"l{j}") for i in range(6) for j in range(i + 1, 6)]
    right = [(f"r{i}", f"r{j}") for i in range(6) for j in range(i + 1, 6)]
    g = Graph.from_edges(left + right + [("l0", "r0")])
    vectors, _ = node_vectors(
        g, options(vector_size=16, walk_length=20, num_walks=20, window=5, epochs=5, sample=0), np.random.default_rng(0)
    )
    for node in ("l3", "r4"):
        assert all(n[0] == node[0] for n, _ in vectors.most_similar(node, topn=4))
