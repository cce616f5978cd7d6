"""One name per idea across the commands: a test walks every command's options and fails on a second
spelling of the same idea, unless it is only a hidden, deprecated alias of the one name (said when used)."""

from __future__ import annotations

import argparse
import dataclasses
import warnings

import pytest

from bertology.cli import build_parser
from bertology.options import renamed

# each set: the spellings one idea has had; the first is the name
SAME_IDEA = [
    ("--max-length", "--seq-len", "--max-seq-length"),
    ("--keep-checkpoints", "--keep-last"),
]


def flags_by_command(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, dict[str, argparse.Action]]:
    found: dict[str, dict[str, argparse.Action]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(flags_by_command(sub, f"{prefix} {name}".strip()))
        else:
            for flag in action.option_strings:
                found.setdefault(prefix, {})[flag] = action
    return found


COMMANDS = flags_by_command(build_parser())


@pytest.mark.parametrize("spellings", SAME_IDEA, ids=lambda s: s[0])
def test_every_command_shows_one_spelling_of_an_idea(spellings):
    for command, flags in COMMANDS.items():
        shown = [f for f in spellings if f in flags and flags[f].help is not argparse.SUPPRESS]
        assert len(shown) <= 1, f"{command} shows {shown} for one idea"
        assert not shown or shown[0] == spellings[0], f"{command}: {shown[0]} is {spellings[0]} elsewhere"


def test_an_old_spelling_still_works_and_says_the_new_one():
    parser = build_parser()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        args = parser.parse_args(["pretrain", "--family", "bert", "--corpus", "a.txt", "--out", "o", "--seq-len", "64"])
    assert args.max_length == 64
    assert [str(w.message) for w in said] == ["--seq-len is now --max-length; the old name goes in the next release"]


def test_the_python_api_takes_an_old_keyword_with_a_deprecation_warning():
    from bertology.train.distill import DistillOptions

    with pytest.warns(DeprecationWarning, match=r"seq_len= is now max_length= \(the flag --max-length\)"):
        o = DistillOptions(teacher="t", corpus=["a.txt"], out_dir="o", seq_len=48)
    assert o.max_length == 48 and "seq_len" in renamed(DistillOptions)
    with pytest.raises(TypeError, match="seq_len= and max_length= are one option"):
        DistillOptions(teacher="t", corpus=["a.txt"], out_dir="o", seq_len=48, max_length=48)
    names = {f.name for f in dataclasses.fields(DistillOptions)}
    assert "seq_len" not in names and "keep_last" not in names


@pytest.mark.parametrize("command", ["pretrain", "distill", "finetune"])
def test_every_training_job_takes_precision_and_bf16_is_its_short_spelling(command):
    from bertology.cli import _options_of
    from bertology.options import OptionError

    cls = _options_of(command)
    required = {
        "pretrain": dict(family="bert", corpus=["a.txt"], out_dir="o"),
        "distill": dict(teacher="t", corpus=["a.txt"], out_dir="o"),
        "finetune": dict(model="m", task="classify", train="t.tsv", out_dir="o"),
    }[command]
    assert "--precision" in COMMANDS[command] and COMMANDS[command]["--precision"].choices == (
        "auto",
        "fp32",
        "bf16",
        "fp16",
    )
    assert (cls(**required, bf16=True).precision, cls(**required, precision="bf16").bf16) == ("bf16", True)
    assert (cls(**required).precision, cls(**required, precision="fp32").bf16) == ("auto", False)
    with pytest.raises(OptionError, match="--bf16 with --precision fp16: --bf16 is --precision bf16"):
        cls(**required, bf16=True, precision="fp16")


def test_a_precision_the_cpu_cannot_train_in_is_refused_before_the_first_write(tmp_path):
    from bertology.train.pretrain import PretrainOptions, pretrain

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("One sentence here.\nAnother one there.\n\nA second document.\nIt ends.\n")
    out = tmp_path / "out"
    options = PretrainOptions(family="bert", corpus=[str(corpus)], out_dir=str(out), precision="fp16", device="cpu")
    with pytest.raises(ValueError, match="--precision fp16: fp16 autocast with a gradient scaler is for CUDA GPUs"):
        pretrain(options)
    assert not out.exists()
