"""finetune_grid: the rate is chosen on mean dev score, the test score is that rate's mean ± std;
finetune_grids: several grids' runs from one pool, each grid's result as if run alone."""

import json
import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bertology.tasks.grid import Grid, finetune_grid, finetune_grids

from test_tasks_finetune import _options, _toy


@pytest.mark.integration
def test_grid_chooses_on_dev_and_keeps_one_run(tmp_path):
    test = _toy(tmp_path / "test.tsv", 32, 2)
    result = finetune_grid(_options(tmp_path), str(test), lrs=(1e-7, 2e-3), seeds=(0, 1))
    assert result.lr == 2e-3  # 1e-7 cannot move a random model in a few steps
    assert len(result.runs) == 4 and {(r["lr"], r["seed"]) for r in result.runs} == {
        (1e-7, 0),
        (1e-7, 1),
        (2e-3, 0),
        (2e-3, 1),
    }
    chosen = [r for r in result.runs if r["lr"] == 2e-3]
    assert result.test_mean == pytest.approx(statistics.fmean(r["test"] for r in chosen))
    assert result.test_std == pytest.approx(statistics.stdev(r["test"] for r in chosen))
    assert result.dev_mean == pytest.approx(statistics.fmean(r["dev"] for r in chosen))
    assert result.test_mean > 0.9
    kept = [p.name for p in (tmp_path / "out").iterdir() if p.is_dir()]
    assert kept == [result.best_dir.split("/")[-1]] and result.best_dir.endswith(("seed-0", "seed-1"))
    assert json.loads((tmp_path / "out" / "grid.json").read_text())["lr"] == 2e-3


def test_grid_needs_dev_and_a_grid(tmp_path):
    with pytest.raises(ValueError, match="dev"):
        finetune_grid(_options(tmp_path, dev=None), "t.tsv")
    with pytest.raises(ValueError, match="positive"):
        finetune_grid(_options(tmp_path), "t.tsv", lrs=(0.0,))


def test_grid_from_the_command_line(tmp_path, capsys):
    from bertology.cli import main

    o = _options(tmp_path)
    test = _toy(tmp_path / "test.tsv", 16, 3)
    args = [
        "finetune",
        "--model",
        "bert-tiny",
        "--tokenizer",
        o.tokenizer,
        "--task",
        "classify",
        "--train",
        o.train,
        "--dev",
        o.dev,
        "--test",
        str(test),
        "--out",
        str(tmp_path / "grid"),
        "--epochs",
        "1",
        "--max-length",
        "24",
        "--batch-size",
        "16",
        "--grid",
        "2e-3",
        "--seeds",
        "0",
        "--quiet",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "chosen lr 0.002" in printed and "| 0.002 | 0 |" in printed
    assert json.loads((tmp_path / "grid" / "grid.json").read_text())["runs"][0]["seed"] == 0
    assert main([a for a in args if a not in ("--test", str(test))]) == 2
    assert "--grid chooses the rate on --dev and reports --test" in capsys.readouterr().err
    assert main(args[:-1] + ["--seeds", "0,x", "--quiet"]) == 2
    assert "--seeds '0,x': not comma-separated numbers" in capsys.readouterr().err


@pytest.mark.integration
def test_grid_keeps_per_item_predictions_and_the_ensemble(tmp_path):

    from bertology.tasks.bootstrap import paired_bootstrap
    from bertology.tasks.finetune import load_finetuned, predict_examples
    from bertology.tasks.grid import GridResult

    test = _toy(tmp_path / "test.tsv", 24, 2)
    o = _options(tmp_path, epochs=2, labels_per_class=8, pooling="mean", head_lr=5e-3)
    result = finetune_grid(o, str(test), lrs=(2e-3,), seeds=(0, 1))
    assert result.labels == ["animals", "money"] and result.test_gold == [0, 1] * 12
    for run in result.runs:
        assert len(run["test_predictions"]) == 24
        correct = [p == g for p, g in zip(run["test_predictions"], result.test_gold)]
        assert run["test"] == pytest.approx(sum(correct) / 24)
    kept = result.best_dir  # its predictions, recomputed, are the ones recorded
    model, task, tokenizer, _ = load_finetuned(kept)
    examples = task.read(str(test))
    predictions = predict_examples(model, task, tokenizer, examples, o.max_length, o.stride)
    kept_run = next(i for i, r in enumerate(result.runs) if r["dir"] == kept)
    assert [result.labels.index(p.label) for p in predictions] == result.runs[kept_run]["test_predictions"]
    assert result.ensemble_test == pytest.approx(sum(result.correct()) / 24)
    assert len(result.ensemble_predictions) == 24

    again = GridResult.load(tmp_path / "out")
    assert again == result
    summary = json.loads((tmp_path / "out" / kept.split("/")[-1] / "summary.json").read_text())
    assert summary["train_examples"] == 16 and summary["train_subset"]["labels_per_class"] == 8
    r = paired_bootstrap(again.correct(), again.correct(0))
    assert r["low"] <= r["diff"] <= r["high"]


def test_ensemble_averages_probabilities_then_takes_the_argmax():
    from bertology.tasks.grid import _ensemble

    runs = [
        [[0.6, 0.4, 0.0], [0.1, 0.2, 0.7]],  # run 0 says a, c
        [[0.0, 0.9, 0.1], [0.1, 0.5, 0.4]],
    ]  # run 1 says b, b
    # means: item 0 (0.3, 0.65, 0.05) → b (no run's majority vote: a probability average); item 1 (0.1, 0.35, 0.55) → c
    predicted, accuracy = _ensemble(runs, gold=[0, 1])
    assert predicted == [1, 2] and accuracy == 0.0
    assert _ensemble(runs, gold=[1, 2]) == ([1, 2], 1.0)


@pytest.mark.integration
def test_workers_give_the_runs_of_one_at_a_time_and_seeds_extend_a_grid(tmp_path):
    """Two runs at once in worker processes: the same grid as one after another (each run seeded on its
    own); and a grid chosen on seed 0, extended by seed 1 at its rate, is the grid of both seeds."""
    from bertology.tasks.grid import GridResult

    test = _toy(tmp_path / "test.tsv", 24, 2)
    o = _options(tmp_path, epochs=2, labels_per_class=8, pooling="mean", head_lr=5e-3)
    both = finetune_grid(replace(o, out_dir=str(tmp_path / "both")), str(test), lrs=(2e-3,), seeds=(0, 1), workers=2)
    one = finetune_grid(replace(o, out_dir=str(tmp_path / "one")), str(test), lrs=(2e-3,), seeds=(0,))
    more = finetune_grid(replace(o, out_dir=str(tmp_path / "more")), str(test), lrs=(2e-3,), seeds=(1,))
    for a, b in zip(both.runs, one.runs + more.runs):
        assert (a["seed"], a["test_predictions"]) == (b["seed"], b["test_predictions"])
        # one thread or two: the sums are taken in another order, to within rounding
        assert np.allclose(a["test_probabilities"], b["test_probabilities"], atol=1e-4)
    # the two one-seed grids from one pool of two workers: each as if run alone
    pooled = finetune_grids(
        [
            Grid(replace(o, out_dir=str(tmp_path / "pooled-one")), str(test), (2e-3,), (0,)),
            Grid(replace(o, out_dir=str(tmp_path / "pooled-more")), str(test), (2e-3,), (1,)),
        ],
        workers=2,
    )
    for grid, alone in zip(pooled, (one, more)):
        assert [r["test_predictions"] for r in grid.runs] == [r["test_predictions"] for r in alone.runs]
        assert Path(grid.best_dir).parent == tmp_path / f"pooled-{Path(alone.best_dir).parent.name}"
    extended = one.extended(more)
    assert extended.ensemble_predictions == both.ensemble_predictions
    assert extended.test_mean == pytest.approx(both.test_mean) and extended.dev_mean == pytest.approx(both.dev_mean)
    assert Path(extended.best_dir).is_dir() and GridResult.load(tmp_path / "more").runs == more.runs
    with pytest.raises(ValueError, match="seeds run twice"):
        one.extended(one)
    with pytest.raises(ValueError, match="workers must be at least 1"):
        finetune_grid(o, str(test), lrs=(2e-3,), workers=0)


def test_a_refused_grid_stops_every_grid_before_the_first_write(tmp_path):
    test = _toy(tmp_path / "test.tsv", 8, 2)
    o = _options(tmp_path, epochs=1, labels_per_class=4)
    good = Grid(replace(o, out_dir=str(tmp_path / "good")), str(test), (1e-3,), (0,))
    bad = Grid(replace(o, out_dir=str(tmp_path / "bad")), str(tmp_path / "missing.tsv"), (1e-3,), (0,))
    with pytest.raises((FileNotFoundError, ValueError), match="missing.tsv"):
        finetune_grids([good, bad])
    assert not (tmp_path / "good").exists() and not (tmp_path / "bad").exists()
