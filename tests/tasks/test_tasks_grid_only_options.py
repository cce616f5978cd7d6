"""finetune's --test, --seeds and --workers are read by --grid alone: without --grid they are refused, naming the mode
that uses them, before anything is read or written (they used to be silently ignored)."""

import pytest

from bertology.cli import main


@pytest.mark.parametrize(
    "extra, named",
    [
        (["--test", "{d}/test.tsv"], "--test without --grid: only --grid runs use it"),
        (["--seeds", "0,1"], "--seeds without --grid: only --grid runs use it"),
        (["--test", "{d}/test.tsv", "--seeds", "4"], "--test and --seeds without --grid: only --grid runs use them"),
        (["--workers", "2"], "--workers without --grid: only --grid runs use it"),
        (
            ["--test", "{d}/test.tsv", "--seeds", "4", "--workers", "2"],
            "--test, --seeds and --workers without --grid: only --grid runs use them",
        ),
    ],
)
def test_grid_options_without_grid_are_refused_before_any_write(tmp_path, capsys, extra, named):
    (tmp_path / "train.tsv").write_text("text\tlabel\na b\tx\nc d\ty\n", encoding="utf-8")
    (tmp_path / "test.tsv").write_text("text\tlabel\na b\tx\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["finetune", "--model", "bert-tiny", "--task", "classify", "--train", str(tmp_path / "train.tsv")]
    args += ["--out", str(out), *(a.format(d=tmp_path) for a in extra)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"bertology finetune: error: {named}" in err and "add --grid LR,LR,…" in err
    assert not out.exists()
