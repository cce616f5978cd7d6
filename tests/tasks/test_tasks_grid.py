"""finetune_grid: the rate is chosen on mean dev score, the test score is that rate's mean ± std."""
import json
import statistics

import pytest

from bertology.tasks.grid import finetune_grid

from test_tasks_finetune import _options, _toy


def test_grid_chooses_on_dev_and_keeps_one_run(tmp_path):
    test = _toy(tmp_path / "test.tsv", 32, 2)
    result = finetune_grid(_options(tmp_path), str(test), lrs=(1e-7, 2e-3), seeds=(0, 1))
    assert result.lr == 2e-3  # 1e-7 cannot move a random model in a few steps
    assert len(result.runs) == 4 and {(r["lr"], r["seed"]) for r in result.runs} == {(1e-7, 0), (1e-7, 1), (2e-3, 0), (2e-3, 1)}
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
    args = ["finetune", "--model", "bert-tiny", "--tokenizer", o.tokenizer, "--task", "classify", "--train", o.train,
            "--dev", o.dev, "--test", str(test), "--out", str(tmp_path / "grid"), "--epochs", "1", "--max-length", "24",
            "--batch-size", "16", "--grid", "2e-3", "--seeds", "0", "--quiet"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "chosen lr 0.002" in printed and "| 0.002 | 0 |" in printed
    assert json.loads((tmp_path / "grid" / "grid.json").read_text())["runs"][0]["seed"] == 0
    assert main([a for a in args if a not in ("--test", str(test))]) == 2
    assert "--grid chooses the rate on --dev and reports --test" in capsys.readouterr().err
    assert main(args[:-1] + ["--seeds", "0,x", "--quiet"]) == 2
    assert "--seeds '0,x': not comma-separated numbers" in capsys.readouterr().err
