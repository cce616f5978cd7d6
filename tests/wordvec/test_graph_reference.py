"""Walks against the `node2vec` package (networkx graph, probabilities precomputed per edge, walks by
random.choices) on Zachary's karate club: the same second-order transition statistics.

The package pins numpy < 2 in its metadata but runs beside numpy 2: install it with
`pip install --no-deps node2vec==0.5.0` (it needs only gensim, networkx, joblib and tqdm, present)."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from scipy.stats import chi2_contingency

from bertology.wordvec.graph import Graph
from bertology.wordvec.options import TrainOptions
from bertology.wordvec.walks import Walks

nx = pytest.importorskip("networkx")
node2vec = pytest.importorskip("node2vec")


def transitions(walks) -> Counter:
    """(previous, current, next) counts over every second-order step of the walks."""
    return Counter((w[i - 1], w[i], w[i + 1]) for w in walks for i in range(1, len(w) - 1))


@pytest.mark.parametrize("p, q", [(0.25, 4.0), (4.0, 0.25)])
def test_transition_statistics_equal_the_node2vec_package_on_karate_club(p, q):
    karate = nx.karate_club_graph()
    for a, b in karate.edges():
        karate[a][b].pop("weight", None)  # networkx ships co-occurrence weights; both sides walk unweighted here
    random.seed(0)
    reference = node2vec.Node2Vec(
        karate, dimensions=8, walk_length=20, num_walks=40, p=p, q=q, workers=1, quiet=True, seed=0
    ).walks
    graph = Graph.from_edges([(str(a), str(b)) for a, b in karate.edges()])
    options = TrainOptions(graph=True, p=p, q=q, walk_length=20, num_walks=40, workers=1, quiet=True)
    walks = Walks(graph, options, np.random.default_rng(0))
    ours = list(walks.sentences())
    theirs, mine = transitions(reference), transitions(ours)
    # the (previous, current) pairs both saw often enough: a 2 × neighbours contingency table each
    tested = 0
    for (t, v), _ in Counter({k[:2]: c for k, c in mine.items()}).most_common(40):
        neighbours = sorted(str(x) for x in karate.neighbors(int(v)))
        table = np.array([[mine[(t, v, x)] for x in neighbours], [theirs[(t, v, x)] for x in neighbours]])
        table = table[:, table.sum(0) > 0]
        if table.shape[1] < 2 or table.sum() < 200:
            continue
        assert chi2_contingency(table).pvalue > 1e-4, (t, v, table)
        tested += 1
    assert tested >= 5
    # and a changed rule is caught: q and p swapped on our side
    swapped = Walks(
        graph,
        TrainOptions(graph=True, p=q, q=p, walk_length=20, num_walks=40, workers=1, quiet=True),
        np.random.default_rng(0),
    )
    other = transitions(swapped.sentences())
    (t, v), _ = Counter({k[:2]: c for k, c in mine.items()}).most_common(1)[0]
    neighbours = sorted(str(x) for x in karate.neighbors(int(v)))
    table = np.array([[other[(t, v, x)] for x in neighbours], [theirs[(t, v, x)] for x in neighbours]])
    assert chi2_contingency(table[:, table.sum(0) > 0]).pvalue < 1e-4
