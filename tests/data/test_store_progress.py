"""Building a token store and its instances shows how far it is (it ran silent for ~20 s on the demo corpus):
tokenizing (in bytes, with a rate and the time left), then the training and held-out instances, as whole lines in a log (a bar on a terminal);
nothing at all without show_progress."""

import re

import pytest

import bertology.progress
from bertology.data import build_instances, check_corpus_documents, iter_documents


@pytest.mark.parametrize("show", [True, False], ids=["shown", "quiet"])
def test_every_stage_of_a_store_shows_progress(small_corpus, wordpiece, tmp_path, capsys, monkeypatch, show):
    monkeypatch.setattr(bertology.progress, "QUIET_FIRST_S", 0.0)  # a log hears of every stage, not only those > 5 s
    store = build_instances(
        [small_corpus], wordpiece, "bert", max_seq_length=64, dupe_factor=2, seed=7, cache_dir=tmp_path,
        heldout=2, show_progress=show,
    )  # fmt: skip
    err = capsys.readouterr().err
    assert store.num_instances > 0 and store.heldout.num_instances > 0
    if not show:
        assert err == ""
        return
    lines = [line.split(" [")[0] for line in err.splitlines()]
    assert "\r" not in err
    # how many lines a stage writes before its end depends on the machine's speed (tqdm redraws every
    # mininterval); what is fixed is the order, counts that only grow, and the last line of each stage
    for stage, last in [
        ("training instances", "training instances: 100% | 12/12"),  # 6 documents, 2 passes (--dupe-factor)
        ("held-out instances", "held-out instances: 100% | 2/2"),  # 2 documents, one pass
    ]:
        said = [line for line in lines if line.startswith(stage)]
        counts = [int(line.rsplit(" ", 1)[1].split("/")[0]) for line in said]
        assert said and said[-1] == last and counts == sorted(set(counts)), (stage, said)
    # tokenizing counts the corpus's bytes: its last line says all of them, at a rate in B/s, with the time left
    size = small_corpus.stat().st_size
    tokenizing = [line for line in err.splitlines() if line.startswith("tokenizing")]
    assert tokenizing and tokenizing[-1].startswith(f"tokenizing: 100% | {size / 1000:.0f}k/{size / 1000:.0f}k [")
    assert re.search(r"<\d\d:\d\d, [\d.]+[kM]?B/s\]$", tokenizing[-1]), tokenizing
    order = [line.split(":")[0] for line in err.splitlines()]
    assert order.index("tokenizing") < order.index("training instances") < order.index("held-out instances")


@pytest.mark.parametrize("show", [True, False], ids=["shown", "quiet"])
def test_counting_documents_shows_progress(small_corpus, tmp_path, capsys, monkeypatch, show):
    # pretrain and distill count a corpus's documents (one pass over it) before anything is written
    monkeypatch.setattr(bertology.progress, "QUIET_FIRST_S", 0.0)
    monkeypatch.delenv("BERTOLOGY_TOKEN_CACHE", raising=False)
    documents = check_corpus_documents([small_corpus], "lines", 2, nsp=True, show_progress=show)
    err = capsys.readouterr().err
    assert documents == sum(1 for _ in iter_documents([small_corpus]))
    if not show:
        assert err == ""
        return
    size = small_corpus.stat().st_size
    said = [line for line in err.splitlines() if line.startswith("counting documents")]
    assert said and said[-1].startswith(f"counting documents: 100% | {size / 1000:.0f}k/{size / 1000:.0f}k ["), said
