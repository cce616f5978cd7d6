"""Edge lists, baskets and the options of item and graph embeddings: the stated rules and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from bertology.io import CorpusError
from bertology.options import OptionError
from bertology.wordvec import kernels
from bertology.wordvec.graph import Graph
from bertology.wordvec.items import Baskets, basket_window
from bertology.wordvec.options import TrainOptions
from bertology.wordvec.train import train


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_edge_list_rules(tmp_path):
    path = write(tmp_path, "e.tsv", "# comment\na\tb\nb c 2.5\n\nc\tc\nb\ta\t4\nnode one\tnode two\n")
    g = Graph.read([path])
    assert g.nodes == ["a", "b", "c", "node one", "node two"]
    assert g.self_loops == 1 and g.duplicates == 1 and g.edges == 3
    assert g.neighbors("a") == ["b"] and g.neighbors("b") == ["a", "c"]
    ab = g.indptr[0]  # the duplicate a–b: the last weight read wins, both ways
    assert g.weights[ab] == 4.0 and g.weights[g.indptr[1]] == 4.0
    d = Graph.read([path], directed=True)
    assert d.duplicates == 0 and d.edges == 4 and d.neighbors("b") == ["a", "c"] and d.neighbors("c") == []


@pytest.mark.parametrize(
    "text, message",
    [
        ("a\tb\nc\n", "line 2: 'c' is not"),
        ("a b c d\n", "line 1: 'a b c d' is not"),
        ("a\tb\t0\n", "line 1: weight '0' is not a finite number > 0"),
        ("a\tb\tx\n", "line 1: weight 'x'"),
        ("a\tb\tnan\n", "line 1: weight 'nan'"),
        ("# nothing\n", "the graph has no edges"),
        ("a\ta\n", r"no edges \(1 self-loops"),
    ],
)
def test_bad_edge_lists_name_the_line(tmp_path, text, message):
    with pytest.raises(CorpusError, match=message):
        Graph.read([write(tmp_path, "e.tsv", text)])


def test_bad_graph_options_fail_before_anything_is_written(tmp_path):
    path = write(tmp_path, "e.tsv", "a\tb\n")
    for bad in (dict(p=0.0), dict(q=-1.0), dict(walk_length=1)):
        with pytest.raises(OptionError):
            TrainOptions(corpus=[path], graph=True, **bad)
    with pytest.raises(ValueError, match="--items with --graph"):
        TrainOptions(corpus=[path], graph=True, items=True)
    with pytest.raises(ValueError, match="glove"):
        TrainOptions(corpus=[path], graph=True, algorithm="glove")
    with pytest.raises(ValueError, match="whole of its basket"):
        TrainOptions(corpus=[path], items=True, window=3)
    out = tmp_path / "v.txt"
    with pytest.raises(CorpusError):
        train(TrainOptions(corpus=[write(tmp_path, "bad.tsv", "a b c d\n")], graph=True, out=str(out), quiet=True))
    assert not out.exists()


def test_defaults_of_item_and_graph_embeddings():
    assert TrainOptions().algorithm == "cbow" and TrainOptions().min_count == 5
    g = TrainOptions(graph=True)
    assert (g.algorithm, g.min_count, g.window_size, g.walk_length, g.num_walks) == ("skipgram", 1, 10, 80, 10)
    assert TrainOptions(items=True).algorithm == "skipgram"


def test_item2vec_context_is_the_basket_minus_the_item():
    baskets = [["milk", "bread", "eggs", "milk"], ["tea"], ["a", "b", "c", "d", "e", "f"]]
    sets = list(Baskets.of(baskets))
    assert sets[0] == ["milk", "bread", "eggs"]
    from bertology.wordvec.corpus import Corpus
    from bertology.wordvec.vocab import Vocab

    corpus = Corpus.encode(sets, Vocab.build(sets, min_count=1))
    window = basket_window(corpus)
    assert window == 6
    state = np.uint64(7)
    for s, basket in enumerate(sets):
        n = len(basket)
        for i in range(n):  # the trainer's own rule: every other position of the basket, whatever the draw
            lo, hi, state = kernels.context_span(i, n, window, False, state)
            assert [basket[j] for j in range(lo, hi) if j != i] == basket[:i] + basket[i + 1 :]
    # word2vec's dynamic window, for contrast, sometimes leaves part of a long basket out
    spans = set()
    for _ in range(50):
        lo, hi, state = kernels.context_span(0, 6, 6, True, state)
        spans.add(hi - lo)
    assert len(spans) > 1


def test_item2vec_learns_which_items_go_together(tmp_path):
    rng = np.random.default_rng(0)
    groups = [[f"fruit{i}" for i in range(6)], [f"tool{i}" for i in range(6)]]
    lines = [" ".join(rng.choice(groups[k % 2], size=3, replace=False)) for k in range(400)]
    path = write(tmp_path, "baskets.txt", "\n".join(lines) + "\n")
    vectors, stats = train(
        TrainOptions(corpus=[path], items=True, vector_size=16, min_count=1, epochs=10, sample=0, quiet=True, workers=1)
    )
    assert stats["items"] and len(vectors) == 12
    for item in ("fruit2", "tool5"):
        assert all(n[:4] == item[:4] for n, _ in vectors.most_similar(item, topn=5))


def test_graph_cli_trains_answers_and_reports_missing_nodes(tmp_path, capsys):
    from bertology.cli import main

    edges = [(f"l{i}", f"l{j}") for i in range(5) for j in range(i + 1, 5)]
    edges += [(f"r{i}", f"r{j}") for i in range(5) for j in range(i + 1, 5)] + [("l0", "r0"), ("lonely", "lonely")]
    path = write(tmp_path, "edges.tsv", "".join(f"{a}\t{b}\n" for a, b in edges))
    out = tmp_path / "nodes.txt"
    assert (
        main(
            [
                "wordvec",
                "train",
                "--graph",
                "--q",
                "0.5",
                "--walk-length",
                "20",
                "--num-walks",
                "10",
                "--vector-size",
                "16",
                "--sample",
                "0",
                "--workers",
                "1",
                "--out",
                str(out),
                path,
            ]
        )
        == 0
    )
    said = capsys.readouterr().out
    assert "11 nodes, 21 edges (undirected; 1 self-loops dropped" in said and "have no vector: lonely" in said
    assert main(["wordvec", "similar", str(out), "l3", "--topn", "3"]) == 0
    assert all(line.split("\t")[1].startswith("l") for line in capsys.readouterr().out.splitlines())


@pytest.mark.parametrize(
    "text, argv, culprit",
    [
        ("a\tb\nb\n", [], "line 2"),
        ("a\tb\n", ["--q", "0"], "--q 0.0"),
        ("a\ta\n", [], "no edges"),
    ],
)
def test_graph_cli_bad_input_is_one_message_and_nothing_written(tmp_path, capsys, text, argv, culprit):
    from bertology.cli import main

    path = write(tmp_path, "edges.tsv", text)
    out = tmp_path / "nodes.txt"
    try:
        status = main(["wordvec", "train", "--graph", *argv, "--out", str(out), path])
    except SystemExit as e:
        status = e.code
    assert status == 2 and culprit in capsys.readouterr().err and not out.exists()
