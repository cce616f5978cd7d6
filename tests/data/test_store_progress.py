"""Building a token store and its instances shows how far it is (it ran silent for ~20 s on the demo corpus):
tokenizing, then the training and held-out instances, as whole lines in a log (a bar on a terminal);
nothing at all without show_progress."""

import pytest

import bertology.progress
from bertology.data import build_instances


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
    lines = err.splitlines()
    assert "\r" not in err
    assert [line.split(" [")[0] for line in lines if "instances" in line] == [
        "training instances: 100% | 12/12",  # 6 documents, 2 passes (--dupe-factor)
        "held-out instances: 100% | 2/2",  # 2 documents, one pass
    ]
    assert [line.split(" [")[0] for line in lines if line.startswith("tokenizing")] == ["tokenizing: 100% | 8/8"]
