"""Mistaken invocations, as a new user makes them: each exits with status 2 and one message naming
the culprit, never a traceback, and leaves every file of the user's as it was."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from bertology.cli import main

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "data" / "debian-sections" / "train.tsv"


def snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` with a digest of its content (directories as "dir")."""
    return {
        str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A user's directory: a corpus, a finished pretraining run (64 positions), a fine-tuned model,
    task files, and folders of their own."""
    w = tmp_path_factory.mktemp("world")
    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    (w / "corpus.txt").write_text(text[: text.index("\n\n", 300_000) + 1], encoding="utf-8")
    assert (
        main(
            [
                "pretrain",
                "--family",
                "bert",
                "--preset",
                "tiny",
                "--corpus",
                str(w / "corpus.txt"),
                "--out",
                str(w / "run"),
                "--vocab-size",
                "1000",
                "--steps",
                "2",
                "--batch-size",
                "8",
                "--max-length",
                "32",
                "--heldout",
                "2",
                "--dupe-factor",
                "1",
                "--quiet",
            ]
        )
        == 0
    )
    rows = TRAIN.read_text(encoding="utf-8").splitlines()
    (w / "train.tsv").write_text("\n".join([rows[0]] + rows[1::25]) + "\n", encoding="utf-8")
    (w / "dev.tsv").write_text("\n".join([rows[0]] + rows[2::50]) + "\n", encoding="utf-8")
    (w / "dev-new-label.tsv").write_text(
        rows[0] + "\n" + rows[1] + "\nstellarium\ta planetarium\tastronomy\n", encoding="utf-8"
    )
    (w / "latin1.tsv").write_bytes("text\tlabel\ncaf\xe9 au lait\tfood\n".encode("latin-1"))
    (w / "broken.jsonl").write_text('{"text": "fine", "label": "a"}\n{"text": "oops",\n', encoding="utf-8")
    assert (
        main(
            [
                "finetune",
                "--model",
                str(w / "run"),
                "--task",
                "classify",
                "--train",
                str(w / "train.tsv"),
                "--out",
                str(w / "classifier"),
                "--epochs",
                "1",
                "--max-length",
                "32",
                "--quiet",
            ]
        )
        == 0
    )
    (w / "truncated").mkdir()
    for f in ("config.json", "tokenizer.json"):
        shutil.copy(w / "classifier" / f, w / "truncated" / f)
    weights = (w / "classifier" / "model.safetensors").read_bytes()
    (w / "truncated" / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    (w / "flipped").mkdir()
    for f in ("config.json", "tokenizer.json"):
        shutil.copy(w / "classifier" / f, w / "flipped" / f)
    flipped = bytearray(weights)
    flipped[12] ^= 0x5B  # inside the JSON header: '"' becomes 'y'
    (w / "flipped" / "model.safetensors").write_bytes(bytes(flipped))
    (w / "mismatched").mkdir()  # the classifier with a tokenizer of 700 more pieces than its embedding table
    for f in ("config.json", "model.safetensors"):
        shutil.copy(w / "classifier" / f, w / "mismatched" / f)
    from bertology.tokenizers import Tokenizer

    bigger = Tokenizer.load(w / "classifier" / "tokenizer.json")
    bigger.add_tokens([f"piece{i}" for i in range(700)])
    bigger.save(w / "mismatched" / "tokenizer.json")
    (w / "empty-folder" / ".hidden").mkdir(parents=True)
    (w / "empty-folder" / ".hidden" / "notes.txt").write_text("hidden\n")
    (w / "latin1-corpus.txt").write_bytes("Il fait beau.\nCaf\xe9 cr\xe8me.\n".encode("latin-1"))
    (w / "empty.txt").write_text("")
    (w / "binary.txt").write_bytes(bytes(range(256)) * 64)
    config = json.loads((w / "run" / "config.json").read_text())
    (w / "string-size.json").write_text(json.dumps({**config, "hidden_size": "128"}))
    (w / "zero-heads.json").write_text(json.dumps({**config, "num_attention_heads": 0}))
    (w / "mine" / "tokenizers").mkdir(parents=True)
    (w / "mine" / "tokenizers" / "my_tokenizer.py").write_text("print('my own code')\n")
    (w / "mine" / "finetune").mkdir()
    (w / "mine" / "finetune" / "results.csv").write_text("model,score\nmine,0.9\n")
    (w / "a-file").write_text("not a directory\n")
    return w


def pretrain(w, *extra):
    return [
        "pretrain",
        "--family",
        "bert",
        "--preset",
        "tiny",
        "--corpus",
        str(w / "corpus.txt"),
        "--steps",
        "2",
        "--batch-size",
        "8",
        "--max-length",
        "32",
        "--heldout",
        "2",
        "--quiet",
        *extra,
    ]


def finetune(w, *extra):
    return [
        "finetune",
        "--model",
        str(w / "run"),
        "--task",
        "classify",
        "--train",
        str(w / "train.tsv"),
        "--epochs",
        "1",
        "--max-length",
        "32",
        "--quiet",
        *extra,
    ]


CASES = {  # name: (arguments, text the message must contain)
    "pretrain over a finished run": (
        lambda w: pretrain(w, "--vocab-size", "600", "--out", str(w / "run")),
        "holds an earlier pretrain run",
    ),
    "demo into the user's folder": (
        lambda w: ["demo", "--quick", "--out", str(w / "mine")],
        "not written by bertology",
    ),
    "attention on truncated weights": (
        lambda w: ["attention", "--model", str(w / "truncated"), "--text", "hi", "--out", str(w / "a.png")],
        "truncated/model.safetensors: not a readable safetensors file",
    ),
    "predict on truncated weights": (
        lambda w: ["predict", "--model", str(w / "truncated"), "some text"],
        "truncated/model.safetensors",
    ),
    "finetune --batch-size 0": (lambda w: finetune(w, "--batch-size", "0", "--out", str(w / "o")), "--batch-size 0"),
    "pretrain --batch-size 0": (lambda w: pretrain(w, "--batch-size", "0", "--out", str(w / "o")), "--batch-size 0"),
    "params of a config with 0 heads": (
        lambda w: ["params", str(w / "zero-heads.json")],
        "num_attention_heads must be a positive integer, got 0",
    ),
    "--out under a file": (lambda w: finetune(w, "--out", str(w / "a-file" / "out")), "a-file is a file"),
    "pretrain --max-length beyond the positions": (
        lambda w: pretrain(w, "--max-length", "4096", "--out", str(w / "o")),
        "--max-length 4096 is longer than the 512",
    ),
    "finetune --epochs 0": (lambda w: finetune(w, "--epochs", "0", "--out", str(w / "o")), "--epochs 0.0: must be > 0"),
    "tag task on a TSV": (
        lambda w: [
            "finetune",
            "--model",
            str(w / "run"),
            "--task",
            "tag",
            "--train",
            str(TRAIN),
            "--out",
            str(w / "o"),
        ],
        "the whole file is one sentence",
    ),
    "params --seq-length -5": (lambda w: ["params", "bert-base", "--seq-length", "-5"], "--seq-length -5"),
    "a model path typo": (
        lambda w: [
            "finetune",
            "--model",
            str(w / "rnu"),
            "--task",
            "classify",
            "--train",
            str(w / "train.tsv"),
            "--out",
            str(w / "o"),
        ],
        "rnu': no such model directory",
    ),
    "a latin-1 training file": (
        lambda w: finetune(w, "--out", str(w / "o")) + ["--train", str(w / "latin1.tsv")],
        "latin1.tsv: not UTF-8",
    ),
    "invalid JSON lines": (
        lambda w: finetune(w, "--out", str(w / "o")) + ["--train", str(w / "broken.jsonl")],
        "broken.jsonl:2",
    ),
    "an unknown dev label": (
        lambda w: finetune(w, "--dev", str(w / "dev-new-label.tsv"), "--out", str(w / "o")),
        "'astronomy' never occur",
    ),
    "--max-length beyond the positions": (
        lambda w: finetune(w, "--out", str(w / "o")) + ["--max-length", "512"],
        "--max-length 512 is longer than the 64",
    ),
    "resume with nothing there": (lambda w: finetune(w, "--resume", "--out", str(w / "o")), "nothing to resume"),
    "a bit flip in the weights' header": (
        lambda w: ["attention", "--model", str(w / "flipped"), "--text", "hi", "--out", str(w / "a.png")],
        "flipped/model.safetensors: not a readable safetensors file",
    ),
    "a config with a size given as text": (
        lambda w: ["params", str(w / "string-size.json")],
        "hidden_size must be a positive integer, got '128'",
    ),
    "an empty corpus": (lambda w: pretrain(w, "--out", str(w / "o")) + ["--corpus", str(w / "empty.txt")], "empty.txt"),
    "a binary corpus": (
        lambda w: pretrain(w, "--out", str(w / "o")) + ["--corpus", str(w / "binary.txt")],
        "binary.txt",
    ),
    **{
        f"{command} with a tokenizer bigger than the model": (
            arguments,
            "mismatched/tokenizer.json: 1,700 tokens with ids up to 1,699 ('piece699'), past the 1,000 rows",
        )
        for command, arguments in {
            "finetune": lambda w: [
                "finetune",
                "--model",
                str(w / "mismatched"),
                "--task",
                "classify",
                "--train",
                str(w / "train.tsv"),
                "--out",
                str(w / "o"),
                "--quiet",
            ],
            "evaluate": lambda w: ["evaluate", "--model", str(w / "mismatched"), "--data", str(w / "train.tsv")],
            "predict": lambda w: ["predict", "--model", str(w / "mismatched"), "some text"],
            "serve": lambda w: ["serve", "--model", str(w / "mismatched"), "--port", "0"],
            "distill": lambda w: [
                "distill",
                "--teacher",
                str(w / "mismatched"),
                "--corpus",
                str(w / "corpus.txt"),
                "--out",
                str(w / "o"),
                "--quiet",
            ],
            "attention": lambda w: [
                "attention",
                "--model",
                str(w / "mismatched"),
                "--text",
                "hi",
                "--out",
                str(w / "a.png"),
            ],
        }.items()
    },
    "a folder with no files as corpus": (
        lambda w: pretrain(w, "--out", str(w / "o")) + ["--corpus", str(w / "empty-folder")],
        "empty-folder: a directory with no files in it",
    ),
    "a latin-1 corpus": (
        lambda w: pretrain(w, "--out", str(w / "o")) + ["--corpus", str(w / "latin1-corpus.txt")],
        "latin1-corpus.txt: byte offset 17: invalid UTF-8 byte(s) b'\\xe9' (invalid continuation byte); convert the "
        "file to UTF-8 (e.g. iconv -f latin1 -t utf-8)\n",
    ),
    "a latin-1 corpus for a tokenizer": (
        lambda w: ["tokenizer", "train", "--out", str(w / "o"), str(w / "latin1-corpus.txt")],
        "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8), or pass --replace-errors",
    ),
    "an unknown family": (lambda w: ["pretrain", "--family", "gpt2", "--corpus", "x", "--out", "o"], "invalid choice"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_mistake_is_one_clear_message_and_changes_nothing(world, name, capsys):
    arguments, culprit = CASES[name]
    before = snapshot(world)
    with pytest.raises(SystemExit) if name == "an unknown family" else _no_exit():
        status = main(arguments(world))
        assert status == 2
    err = capsys.readouterr().err
    assert culprit in err and "Traceback" not in err and "errors=" not in err, err
    after = snapshot(world)
    assert {k: v for k, v in after.items() if k not in before} == {}, "files were created"
    assert after == before, "files changed: " + ", ".join(k for k in before if after.get(k) != before[k])


class _no_exit:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_bug_keeps_its_traceback(monkeypatch):
    """A ValueError raised outside bertology's own checks is not dressed up as bad input."""
    import bertology.models.params as params

    def broken(*a, **k):
        return int("not a number")  # raised inside the standard library: a bug, not the user's mistake

    monkeypatch.setattr(params, "count", broken)
    with pytest.raises(ValueError, match="invalid literal"):
        main(["params", "bert-tiny"])
