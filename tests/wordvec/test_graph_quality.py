"""Node-vector quality: against the node2vec package (networkx walks + gensim) on karate club at
equal settings, and, at Debian size, the section of a package from its node vector."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from bertology.tasks.base import Example
from bertology.tasks.baseline import KeyedVectorBaseline, leave_one_out_accuracy
from bertology.readers import read_table
from bertology.wordvec.graph import Graph
from bertology.wordvec.options import TrainOptions
from bertology.wordvec.vectors import KeyedVectors
from bertology.wordvec.walks import node_vectors

ROOT = Path(__file__).resolve().parents[2]
# Enough epochs for both to converge: on a corpus this small gensim's learning rate, set once per
# 10,000-word job, stays higher than ours, which decays sentence by sentence, so a short run favours it.
SETTINGS = dict(walk_length=40, num_walks=10, window=5, vector_size=16, epochs=5, p=1.0, q=0.5)


def faction_accuracy(kv, faction: dict[str, int]) -> float:
    """Leave-one-out logistic regression on unit-length node vectors."""
    nodes = sorted(faction, key=int)
    X = torch.nn.functional.normalize(torch.from_numpy(np.stack([kv[n] for n in nodes])), dim=1)
    return leave_one_out_accuracy(X, torch.tensor([faction[n] for n in nodes]))


@pytest.mark.integration
def test_karate_faction_accuracy_equals_the_node2vec_package():
    nx = pytest.importorskip("networkx")
    node2vec = pytest.importorskip("node2vec")
    karate = nx.karate_club_graph()
    for a, b in karate.edges():
        karate[a][b].pop("weight", None)
    faction = {str(n): int(karate.nodes[n]["club"] == "Officer") for n in karate}
    graph = Graph.from_edges([(str(a), str(b)) for a, b in karate.edges()])
    ours, theirs = [], []
    for seed in range(5):
        kv, _ = node_vectors(
            graph, TrainOptions(graph=True, workers=1, seed=seed, quiet=True, **SETTINGS), np.random.default_rng(seed)
        )
        ours.append(faction_accuracy(kv, faction))
        random.seed(seed)
        model = node2vec.Node2Vec(
            karate,
            dimensions=SETTINGS["vector_size"],
            walk_length=SETTINGS["walk_length"],
            num_walks=SETTINGS["num_walks"],
            p=SETTINGS["p"],
            q=SETTINGS["q"],
            workers=1,
            quiet=True,
            seed=seed,
        ).fit(window=SETTINGS["window"], min_count=1, epochs=SETTINGS["epochs"], workers=1, seed=seed)
        theirs.append(faction_accuracy(KeyedVectors(list(model.wv.index_to_key), model.wv.vectors), faction))
    # one node of 34 is 2.9 points: the seed-averaged accuracies agree within that
    assert abs(np.mean(ours) - np.mean(theirs)) <= 1 / 34 + 1e-9, (ours, theirs)
    assert np.mean(ours) > 0.8


@pytest.mark.slow
def test_debian_node_vectors_predict_the_section_well_above_the_majority_class():
    graph = Graph.read([ROOT / "data" / "debian-graph" / "edges.tsv.xz"])
    kv, stats = node_vectors(
        graph,
        TrainOptions(graph=True, walk_length=40, num_walks=1, vector_size=64, epochs=1, workers=2, quiet=True, q=0.5),
        np.random.default_rng(0),
    )
    assert stats["missing"] == []
    data = {
        split: [
            Example(r["text"], label=r["label"], id=r["package"])
            for r in read_table(ROOT / "data" / "debian-sections" / f"{split}.tsv").rows
        ]
        for split in ("train", "test")
    }
    model = KeyedVectorBaseline(kv).fit(data["train"])
    assert len(model.missing(data["test"])) == 6
    assert model.score(data["test"])["accuracy"] > 0.3  # ten balanced sections: the majority class is 0.1
