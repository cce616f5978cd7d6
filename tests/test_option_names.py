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


PRETRAIN = dict(corpus=["a.txt"], out_dir="o")


@pytest.mark.parametrize(
    "make, named",
    [
        (lambda: _pretrain_checked(family="bert", mem_len=16), "--mem-len: read by XLNet's permutation LM alone"),
        (lambda: _pretrain_checked(family="roberta", bi_data=True), "--bi-data: read by XLNet's permutation LM alone"),
        (lambda: _pretrain_checked(family="xlnet", dupe_factor=3), "--dupe-factor: read by the masked objectives"),
        (
            lambda: _pretrain_checked(family="bert", objective="simcse", unigram_prior=False),
            "--no-unigram-prior: read by the objectives that predict tokens",
        ),
        (lambda: _distill(target="sentence", temperature=4.0), "--temperature: read by --target tokens"),
        (lambda: _distill(text_unit="sentence"), "--text-unit: read by --target sentence alone"),
        (lambda: _finetune_checked(pairs_per_example=8), "--pairs-per-example: read by --method setfit alone"),
        (lambda: _finetune_checked(stride=32), "--stride: read by --task qa"),
    ],
)
def test_an_option_the_run_would_ignore_is_refused(make, named):
    from bertology.options import OptionError

    with pytest.raises(OptionError, match=named.replace("(", r"\(")):
        make()


def _pretrain_checked(**kw):
    from bertology.data.recipe import Recipe
    from bertology.train.pretrain_options import PretrainOptions, check_objective_options

    o = PretrainOptions(**PRETRAIN, **kw)
    check_objective_options(o, Recipe.from_options(o), None)


def _distill(**kw):
    from bertology.train.distill import DistillOptions

    DistillOptions(teacher="t", corpus=["a.txt"], out_dir="o", **kw)


def _finetune_checked(**kw):
    from bertology.tasks import TASKS
    from bertology.tasks.finetune import FinetuneOptions, check_task_options

    o = FinetuneOptions(model="m", task="classify", train="t.tsv", out_dir="o", **kw)
    check_task_options(o, TASKS[o.task]())


def test_the_same_options_at_their_defaults_pass():
    _pretrain_checked(family="bert")
    _pretrain_checked(family="xlnet")
    _distill(target="sentence")
    _finetune_checked()
