"""The `bertology tokenizer` commands, through the project's entry point and a bare harness."""

import argparse
import json
from pathlib import Path

import pytest

from bertology.tokenizers import cli

LEE = Path(__import__("gensim").__file__).parent / "test" / "test_data" / "lee_background.cor"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    p = tmp_path_factory.mktemp("cli") / "lee.txt"
    p.write_text("".join(LEE.read_text(encoding="utf-8").splitlines(keepends=True)[:60]), encoding="utf-8")
    return p


def run(argv):
    """A tiny harness: a parent parser with only our register()."""
    parser = argparse.ArgumentParser(prog="bertology")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_train_then_encode(corpus, tmp_path, capsys):
    out = tmp_path / "tok"
    assert (
        run(
            ["tokenizer", "train", "--family", "bert", "--vocab-size", "700", "--out", str(out), "--quiet", str(corpus)]
        )
        == 0
    )
    assert capsys.readouterr().out == ""
    data = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    assert data["model"]["type"] == "WordPiece" and len(data["model"]["vocab"]) == 700
    assert not [p for p in out.iterdir() if p.name != "tokenizer.json"]  # no temporary left behind

    assert run(["tokenizer", "encode", "--tokenizer", str(out), "the government", "--pair", "said"]) == 0
    printed = capsys.readouterr().out.splitlines()
    tokens = json.loads(printed[0].split(":", 1)[1])
    ids = json.loads(printed[1].split(":", 1)[1])
    offsets = json.loads(printed[2].split(":", 1)[1])
    from tokenizers import Tokenizer as HF

    hf = HF.from_file(str(out / "tokenizer.json")).encode("the government", "said")
    assert tokens == hf.tokens and ids == hf.ids and offsets == [list(o) for o in hf.offsets]
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"


def test_bytelevel_and_summary_line(corpus, tmp_path, capsys):
    out = tmp_path / "rob"
    assert (
        run(
            [
                "tokenizer",
                "train",
                "--algorithm",
                "bytelevel-bpe",
                "--vocab-size",
                "400",
                "--special-tokens",
                "<s>,<pad>,</s>,<unk>,<mask>",
                "--out",
                str(out),
                str(corpus),
            ]
        )
        == 0
    )
    assert "trained 400 tokens" in capsys.readouterr().out
    assert json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))["model"]["type"] == "BPE"


def test_errors_exit_2_with_a_message(tmp_path, capsys):
    from bertology import cli as project_cli

    assert project_cli.main(["tokenizer", "train", "--out", str(tmp_path / "x"), str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(["tokenizer", "train", "--algorithm", "bogus", "--out", "x", "f.txt"])


def test_project_entry_point_registers_the_command(corpus, tmp_path, capsys):
    from bertology import cli as project_cli

    assert "tokenizer" in project_cli.build_parser().format_help()
    out = tmp_path / "t"
    code = project_cli.main(
        [
            "tokenizer",
            "train",
            "--algorithm",
            "wordpiece",
            "--vocab-size",
            "500",
            "--quiet",
            "--out",
            str(out),
            str(corpus),
        ]
    )
    assert code == 0 and (out / "tokenizer.json").is_file()
