"""A refused `finetune --grid` writes nothing in --out (it used to leave its run marker there, so that the
corrected command was refused as "an earlier finetune --grid run"): every run's checks come first."""

import itertools
from pathlib import Path

import pytest

from bertology.cli import main
from bertology.models import BertConfig, BertForMaskedLM

WIKI = Path(__file__).resolve().parents[2] / "data" / "wiki.txt"
ROWS = ["the cat and the dog\tanimals", "market price of a share\tmoney", "a wolf near a bear\tanimals"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A tiny pretrained-like BERT directory with 32 positions."""
    from bertology.tokenizers import train

    with open(WIKI, encoding="utf-8") as f:
        tok = train(lines=list(itertools.islice(f, 400)), family="bert", vocab_size=600, show_progress=False)
    d = tmp_path_factory.mktemp("bert-32")
    config = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=32,
    )
    BertForMaskedLM(config).save(d)
    tok.save(d / "tokenizer.json")
    return d


def _grid(model_dir: Path, d: Path, *extra: str) -> list[str]:
    for name, rows in (("train", ROWS * 4), ("dev", ROWS), ("test", ROWS)):
        (d / f"{name}.tsv").write_text("text\tlabel\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return [
        "finetune", "--model", str(model_dir), "--task", "classify", "--train", str(d / "train.tsv"),
        "--dev", str(d / "dev.tsv"), "--test", str(d / "test.tsv"), "--out", str(d / "out"),
        "--grid", "1e-3", "--seeds", "0", "--epochs", "1", "--batch-size", "4", "--quiet", *extra,
    ]  # fmt: skip


REFUSALS = {
    "max-length past the positions": (["--max-length", "64"], "--max-length 64 is longer than the 32 positions"),
    "a dev label train lacks": (["--dev", "{d}/odd.tsv"], "odd.tsv"),
    "--pooling for a tagging task": (["--pooling", "mean", "--task", "tag"], "--pooling mean takes a sequence task"),
}


@pytest.mark.parametrize("extra, named", REFUSALS.values(), ids=REFUSALS.keys())
def test_a_refused_grid_leaves_out_untouched(model_dir, tmp_path, capsys, extra, named):
    (tmp_path / "odd.tsv").write_text("text\tlabel\na b\tplants\n", encoding="utf-8")
    assert main(_grid(model_dir, tmp_path, *(a.format(d=tmp_path) for a in extra))) == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.integration
def test_the_corrected_grid_runs_after_a_refusal(model_dir, tmp_path, capsys):
    assert main(_grid(model_dir, tmp_path, "--max-length", "64")) == 2
    capsys.readouterr()
    assert main(_grid(model_dir, tmp_path, "--max-length", "32")) == 0
    assert (tmp_path / "out" / "grid.json").is_file()
