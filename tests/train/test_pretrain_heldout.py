"""Pretraining scores held-out text without being asked: summary.json's eval was {} unless --eval-every was
given. The default slice (--heldout 0.05 of the documents, drawn by the seed) is scored every --eval-every
steps (default a tenth of --steps, at least 100) and at the last step: MLM loss and accuracy, ELECTRA's
discriminator AUC. And the stages before training say how far they are, unless --quiet."""

import json

import pytest

import bertology.progress
from bertology.cli import main
from bertology.train.pretrain import PretrainOptions, default_eval_every

from helpers import wiki_head

pytestmark = pytest.mark.integration  # whole jobs: `make test-integration`


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """5 articles of data/wiki.txt: the default --heldout 0.05 of them rounds up to 1 held out."""
    return wiki_head(tmp_path_factory.mktemp("corpus") / "corpus.txt", 200_000)


def _pretrain(corpus, out, family, *extra):
    return main(["pretrain", "--family", family, "--preset", "tiny", "--corpus", str(corpus), "--out", str(out),
                 "--vocab-size", "600", "--batch-size", "8", "--max-length", "32", "--steps", "3",
                 "--dupe-factor", "1", *extra])  # fmt: skip


def _evaluations(out) -> list[dict]:
    records = map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
    return [r for r in records if any(k.startswith("eval/") for k in r)]


@pytest.mark.parametrize(
    "family, headline",
    [
        ("roberta", {"eval/mlm_loss", "eval/mlm_accuracy", "eval/perplexity"}),
        ("electra", {"eval/disc_auc", "eval/disc_accuracy", "eval/masked_lm_loss", "eval/generator_mlm_accuracy"}),
    ],
)
def test_held_out_text_is_scored_without_being_asked(corpus, tmp_path, capsys, family, headline):
    assert PretrainOptions.__dataclass_fields__["heldout"].default == 0.05
    assert _pretrain(corpus, tmp_path, family, "--quiet") == 0
    printed = capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["options"]["heldout"] == 0.05 and summary["options"]["eval_every"] == default_eval_every(3, None)
    evaluations = _evaluations(tmp_path)
    assert [e["step"] for e in evaluations] == [3]  # the last step, whatever the cadence
    assert summary["eval"] == evaluations[-1] and headline <= summary["eval"].keys()
    scores = summary["eval"]
    if family == "electra":
        assert 0 <= scores["eval/disc_auc"] <= 1 and scores["eval/masked_lm_loss"] > 0
        assert f"AUC {scores['eval/disc_auc']:.3f}" in printed
    else:
        assert 0 <= scores["eval/mlm_accuracy"] <= 1 and scores["eval/mlm_loss"] > 0
        assert f"held-out MLM accuracy {scores['eval/mlm_accuracy']:.3f}, loss {scores['eval/mlm_loss']:.3f}" in printed


def test_the_default_cadence_and_an_explicit_one(corpus, tmp_path):
    """Left out, --eval-every is a tenth of --steps, at least 100 (a run of 1000 steps is scored ten times);
    given, it is kept."""
    assert [default_eval_every(s, None) for s in (1, 999, 1000, 1001, 20_000)] == [100, 100, 100, 101, 2000]
    assert default_eval_every(20_000, 5.0) == 100  # a time budget's step count is not known ahead
    assert _pretrain(corpus, tmp_path, "roberta", "--quiet", "--eval-every", "2", "--steps", "5") == 0
    assert [e["step"] for e in _evaluations(tmp_path)] == [2, 4, 5]


def test_the_stages_before_training_show_progress_unless_quiet(corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bertology.progress, "QUIET_FIRST_S", 0.0)  # a log hears of every stage, not only those > 5 s
    assert _pretrain(corpus, tmp_path / "shown", "roberta", "--steps", "1") == 0
    err = capsys.readouterr().err.splitlines()
    for stage in ("tokenizing", "training instances: 100%", "held-out instances: 100%", "train: 100%"):
        assert any(line.startswith(stage) for line in err), (stage, err)
    assert _pretrain(corpus, tmp_path / "quiet", "roberta", "--steps", "1", "--quiet") == 0
    err = capsys.readouterr().err
    assert not any(s in err for s in ("tokenizing", "instances:", "train:")), err
