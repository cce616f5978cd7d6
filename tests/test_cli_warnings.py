"""Warnings at the command line: bertology's own are one line each, `bertology COMMAND: warning: MESSAGE`,
where Python printed `/path/finetune.py:447: UserWarning: MESSAGE` and the source line after it; other
libraries' warnings (onnxruntime's during export, torch's internals) stay out of the user's output unless
Python is asked for warnings (-W, PYTHONWARNINGS). The display is the command's only: it is restored after."""

import json
import logging
import re
import sys
import warnings
from pathlib import Path

import pytest

import bertology.cli
from bertology.cli import main

ROOT = Path(__file__).resolve().parents[1]
THEIRS = "/usr/lib/python3/site-packages/onnxruntime/quantization/quant_utils.py"  # a third-party file


def test_our_warning_is_one_line_naming_the_command(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat.\nThe dog sat on the cat.\n", encoding="utf-8")
    before = warnings.showwarning
    args = ["tokenizer", "train", "--family", "bert", "--vocab-size", "5000", "--quiet"]
    assert main(args + ["--out", str(tmp_path / "tok"), str(corpus)]) == 0
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert re.fullmatch(
        r"bertology tokenizer: warning: vocab size 5,000: the corpus yields only \d+ wordpiece tokens \(special "
        r"tokens included\), so the vocabulary is that size; ask for at most \d+ or give more text\n",
        err,
    ), err
    assert warnings.showwarning is before  # the command's display went with it


def _noisy(args) -> int:
    """A command that meets a third-party warning and raises one of ours."""
    warnings.warn_explicit("Please consider to run pre-processing before quantization", UserWarning, THEIRS, 12)
    warnings.warn_explicit("3 of 10 examples were truncated to 8 tokens", UserWarning, bertology.cli.__file__, 1)
    return 0


def _pythons_display(monkeypatch) -> list[tuple[str, str]]:
    """Python's warning display, recording (message, file) of what reaches it."""
    seen = []
    monkeypatch.setattr(
        warnings, "showwarning", lambda message, category, filename, *rest: seen.append((str(message), filename))
    )
    return seen


def test_other_libraries_warnings_stay_out(monkeypatch, capsys):
    monkeypatch.setattr(bertology.cli, "_params", _noisy)  # build_parser binds the module's _params
    monkeypatch.setattr(sys, "warnoptions", [])
    seen = _pythons_display(monkeypatch)
    assert main(["params", "bert-base"]) == 0
    assert capsys.readouterr().err == "bertology params: warning: 3 of 10 examples were truncated to 8 tokens\n"
    assert seen == []


def test_python_asked_for_warnings_shows_theirs_as_python_does(monkeypatch, capsys):
    monkeypatch.setattr(bertology.cli, "_params", _noisy)
    monkeypatch.setattr(sys, "warnoptions", ["default"])  # as `python -W default -m bertology` sets it
    seen = _pythons_display(monkeypatch)
    assert main(["params", "bert-base"]) == 0
    assert seen == [("Please consider to run pre-processing before quantization", THEIRS)]
    assert capsys.readouterr().err == "bertology params: warning: 3 of 10 examples were truncated to 8 tokens\n"


def _logs(args) -> int:
    """A command during which a library logs advice through the root logger, as onnxruntime's quantizer does,
    one of ours logs an error and another library a real failure."""
    logging.warning("Please consider to run pre-processing before quantization.")
    logging.getLogger("bertology.serve").error("embed failed")
    logging.getLogger("somelib").error("a real failure")
    return 0


def test_other_libraries_log_advice_stays_out(monkeypatch, capsys):
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # as in a `bertology` process: nothing has set logging up
    monkeypatch.setattr(bertology.cli, "_params", _logs)
    assert main(["params", "bert-base"]) == 0
    assert capsys.readouterr().err == "bertology params: error: embed failed\na real failure\n"
    assert root.handlers == []  # the command's handler went with it, and logging was not set up behind it


def test_export_int8_says_nothing_of_onnxruntime_on_stderr(tmp_path, monkeypatch, capsys):
    """It printed `WARNING:root:Please consider to run pre-processing before quantization. Refer to example: …`."""
    pytest.importorskip("onnxruntime")
    from bertology.models import BertConfig, BertModel

    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # here, not in a fixture: pytest adds its own per phase
    BertModel(BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64)).save(tmp_path / "model")  # fmt: skip
    assert main(["export", str(tmp_path / "model"), str(tmp_path / "out"), "--int8"]) == 0
    said = capsys.readouterr()
    assert said.err == "" and "(opset 17, int8)" in said.out


def test_code_that_imports_bertology_keeps_pythons_display():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with bertology.cli.plain_warnings("bertology x"):
            pass
        warnings.warn("after the command", UserWarning)
    assert [str(w.message) for w in caught] == ["after the command"]


@pytest.mark.integration
def test_finetune_truncation_and_pooler_warnings_are_plain_lines(tmp_path, capsys):
    """The two the issue saw: examples truncated to --max-length (tasks/finetune.py) and a backbone without a
    pooler (models/checkpoint.py: BERT pretrained by MLM alone has none, its classifier reads one)."""
    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    (tmp_path / "corpus.txt").write_text(text[: text.index("\n\n", 200_000) + 1], encoding="utf-8")
    rows = (ROOT / "data" / "debian-sections" / "train.tsv").read_text(encoding="utf-8").splitlines()
    (tmp_path / "train.tsv").write_text("\n".join([rows[0]] + rows[1::40]) + "\n", encoding="utf-8")
    assert main(["pretrain", "--family", "bert", "--objective", "mlm", "--preset", "tiny", "--corpus", str(tmp_path / "corpus.txt"),
                 "--out", str(tmp_path / "pretrained"), "--vocab-size", "600", "--batch-size", "8",
                 "--max-length", "32", "--steps", "1", "--heldout", "1", "--dupe-factor", "1", "--quiet"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["finetune", "--model", str(tmp_path / "pretrained"), "--task", "classify",
                 "--train", str(tmp_path / "train.tsv"), "--out", str(tmp_path / "finetuned"), "--epochs", "1",
                 "--batch-size", "8", "--max-length", "8", "--quiet"]) == 0  # fmt: skip
    said = [line for line in capsys.readouterr().err.splitlines() if "warning" in line.lower()]
    n = len(rows[1::40])
    assert any(
        re.fullmatch(rf"bertology finetune: warning: {re.escape(str(tmp_path / 'train.tsv'))}: \d+ of {n} examples "
                     r"were truncated to 8 tokens", line)
        for line in said
    ), said  # fmt: skip
    assert any(re.match(r"bertology finetune: warning: .*the checkpoint has no pooler", line) for line in said), said
    assert all(line.startswith("bertology finetune: warning: ") for line in said), said
    assert json.loads((tmp_path / "finetuned" / "summary.json").read_text())["train_examples"] == n
