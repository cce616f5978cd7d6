"""No option is silently ignored: every option of every command is declared here, either as read in every mode
of its command (EVERY) or with the modes that do not read it (Only); in each of those the command refuses it,
exit status 2 and a message naming the option and the runs that do read it, before it writes anything.

The options come from the parser, so a new option (or a new choice of a mode switch such as --method) fails
`test_every_option_is_declared` until someone says here which modes read it. The refusals are made before any
job starts (options and command-line checks), so the walk takes seconds.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

import pytest
import torch

from bertology.cli import _subcommands, build_parser, main
from bertology.options import OldFlag

EVERY = "read in every mode"


@dataclass(frozen=True)
class Only:
    """The option as given (`give`), the modes of its command (keys of MODES) that do not read it, and the words
    the refusal names the runs that do read it with (`said`; alternatives separated by |, where checks made at
    different stages word it differently)."""

    give: tuple[str, ...]
    unread_in: tuple[str, ...]
    said: str
    gpu: bool = False  # the modes are a GPU's: walked where there is one


# each command's command line (the mode its options are declared against) and its modes: a mode is the words
# added to that line; {d} is the test's directory (nothing the command reads needs to exist past the refusal)
BASE = {
    "params": ["params", "bert-tiny"],
    "pretrain": ["pretrain", "--family", "bert", "--corpus", "{d}/corpus.txt", "--out", "{d}/out"],
    "distill": ["distill", "--teacher", "{d}/teacher", "--corpus", "{d}/corpus.txt", "--out", "{d}/out"],
    "finetune": [*"finetune --model bert-tiny --task classify".split(), "--train", "{d}/train.tsv", "--out", "{d}/out"],
    "evaluate": ["evaluate", "--model", "{d}/model", "--data", "{d}/train.tsv"],
    "predict": ["predict", "--model", "{d}/model"],
    "baseline": ["baseline", "{d}/train.tsv", "{d}/train.tsv"],
    "attention": ["attention", "--model", "{d}/model", "--text", "a b"],
    "demo": ["demo", "--out", "{d}/out"],
    "tokenizer train": ["tokenizer", "train", "{d}/corpus.txt", "--out", "{d}/out"],
    "tokenizer encode": ["tokenizer", "encode", "--tokenizer", "{d}/tokenizer.json"],
    "serve": ["serve", "--model", "{d}/model"],
    "export": ["export", "{d}/model", "{d}/out"],
    "wordvec train": ["wordvec", "train", "{d}/corpus.txt", "--out", "{d}/out.txt"],
    "wordvec eval": ["wordvec", "eval", "{d}/vectors.txt"],
    "wordvec similar": ["wordvec", "similar", "{d}/vectors.txt", "a"],
    "wordvec plot": ["wordvec", "plot", "{d}/vectors.txt", "--out", "{d}/out.png"],
}
GRID = ["--grid", "1e-4", "--dev", "{d}/train.tsv", "--test", "{d}/train.tsv"]
MODES = {
    "pretrain": {
        "--objective mlm+nsp": [],
        "--objective mlm+sop": ["--family", "albert"],
        "--objective mlm": ["--objective", "mlm"],
        "--objective rtd": ["--family", "electra"],
        "--objective simcse": ["--objective", "simcse"],
        "--objective tsdae": ["--objective", "tsdae"],
        "--family xlnet": ["--family", "xlnet"],  # the permutation LM, XLNet's only objective
        "steps": [],
        "--time-budget": ["--time-budget", "5"],
        "held-out text": [],
        "--heldout 0": ["--heldout", "0"],
        "text files": [],
        "--text-column": ["--text-column", "text"],
        "a tokenizer trained on the corpus": [],
        "--tokenizer": ["--tokenizer", "{d}/tokenizer.json"],
        "a preset": [],
        "--init": ["--init", "{d}/checkpoint"],
    },
    "distill": {
        "--target tokens": [],
        "--target sentence": ["--target", "sentence"],
        "steps": [],
        "--time-budget": ["--time-budget", "5"],
        "held-out text": [],
        "--heldout 0": ["--heldout", "0"],
        "text files": [],
        "--text-column": ["--text-column", "text"],
    },
    "finetune": {
        "a single run": [],
        "--grid": GRID,
        "--method head": [],
        "--method prompt": ["--method", "prompt"],
        "--method probe": ["--method", "probe", "--pooling", "mean"],
        "--method setfit": ["--method", "setfit", "--pooling", "mean"],
        "--task classify": [],
        "--task pair": ["--task", "pair"],
        "--task regress": ["--task", "regress"],
        "--task tag": ["--task", "tag"],
        "--task qa": ["--task", "qa"],
        "--task choice": ["--task", "choice"],
        "all the training file": [],
        "--labels-per-class": ["--labels-per-class", "4"],
        "checkpoints": [],
        "--no-checkpoints": ["--no-checkpoints"],
    },
    "predict": {"TEXT": ["a b"], "--data": ["--data", "{d}/train.tsv"], "stdin": []},
    "baseline": {"--optimizer lbfgs": [], "--optimizer adam": ["--optimizer", "adam"]},
    "attention": {"a PNG": ["--out", "{d}/out.png"], "an HTML page": ["--out", "{d}/out.html"]},
    "tokenizer train": {
        "--algorithm wordpiece": [],
        "--algorithm bpe": ["--algorithm", "bpe"],
        "--algorithm bytelevel-bpe": ["--algorithm", "bytelevel-bpe"],
        "--algorithm unigram": ["--algorithm", "unigram"],
        "--family roberta": ["--family", "roberta"],
    },
    "serve": {
        "loopback": [],
        "reachable": ["--host", "0.0.0.0"],
        "--api-key": ["--host", "0.0.0.0", "--api-key", "k" * 32],
        "dynamic batching": [],
        "--max-batch-requests 1": ["--max-batch-requests", "1"],
        "--device cuda": ["--device", "cuda"],
    },
    "export": {"--format onnx": [], "--format sentence-transformers": ["--format", "sentence-transformers"]},
    "wordvec train": {
        "--algorithm cbow": [],
        "--algorithm skipgram": ["--algorithm", "skipgram"],
        "--algorithm glove": ["--algorithm", "glove"],
        "--negative 0": ["--negative", "0", "--hs"],
        "text": [],
        "--items": ["--items"],
        "--graph": ["--graph", "--p", "2"],
        "--walk node2vec": ["--graph", "--p", "2"],
        "--walk deepwalk": ["--graph", "--walk", "deepwalk"],
        "node2vec at p = q = 1": ["--graph"],
    },
}
# the switches whose every choice is a mode above (a new choice fails until its mode is declared)
SWITCHES = {
    "pretrain": ["--objective"],
    "distill": ["--target"],
    "finetune": ["--method", "--task"],
    "baseline": ["--optimizer"],
    "tokenizer train": ["--algorithm"],
    "export": ["--format"],
    "wordvec train": ["--algorithm"],
}

OBJECTIVES = ("--objective mlm+nsp", "--objective mlm+sop", "--objective mlm", "--objective rtd")
SENTENCE = ("--objective simcse", "--objective tsdae")
CORPUS_JOB = {
    "--warmup": [Only(("--warmup", "7"), ("--time-budget",), "runs without --time-budget")],
    "--budget-warmup": [Only(("--budget-warmup", "0.2"), ("steps",), "--time-budget")],
    "--eval-every": [Only(("--eval-every", "5"), ("--heldout 0",), "--heldout above 0")],
    "--eval-batches": [Only(("--eval-batches", "2"), ("--heldout 0",), "--heldout above 0")],
    "--format": [Only(("--format", "raw"), ("--text-column",), "text corpora")],
}


def _trains(flag: str, value: str | None = None) -> list[Only]:
    """A finetune option that only the methods that train the encoder read (not a probe)."""
    return [Only((flag, *([value] if value else [])), ("--method probe",), "--method head, prompt, setfit")]


def _trainer(flag: str, value: str | None = None) -> list[Only]:
    """A finetune option of the Trainer's epochs (--method head and prompt), not of a probe or SetFit."""
    give = (flag, *([value] if value else []))
    return [Only(give, ("--method probe", "--method setfit"), "--method head and --method prompt")]


DECLARED: dict[str, dict[str, object]] = {
    "params": {"PRESET_OR_CONFIG": EVERY, "--seq-length": EVERY},
    "pretrain": {
        "--family": EVERY,
        "--corpus": EVERY,
        "--out": EVERY,
        "--preset": [Only(("--preset", "mini"), ("--init",), "drop --preset")],
        "--tokenizer": EVERY,
        "--vocab-size": [Only(("--vocab-size", "300"), ("--tokenizer",), "a tokenizer trained on the corpus")],
        "--schedule": EVERY,
        "--no-unigram-prior": [Only(("--no-unigram-prior",), SENTENCE, "objectives that predict tokens")],
        "--objective": [Only(("--objective", "mlm"), ("--family xlnet",), "MLM option")],
        "--masking": [Only(("--masking", "dynamic"), ("--family xlnet", *SENTENCE), "MLM option|masking options")],
        "--packing": [Only(("--packing", "full-sentences"), ("--family xlnet",), "MLM option")],
        "--whole-word": [Only(("--whole-word",), ("--family xlnet", *SENTENCE), "MLM option|masking options")],
        "--ngram": [Only(("--ngram", "2"), ("--family xlnet", *SENTENCE), "MLM option|masking options")],
        "--dupe-factor": [Only(("--dupe-factor", "2"), ("--family xlnet", *SENTENCE), "masked objectives")],
        "--max-predictions": [
            Only(("--max-predictions", "5"), ("--family xlnet", *SENTENCE), "MLM option|masking options")
        ],
        **{
            flag: [Only(give, (*OBJECTIVES, *SENTENCE), "XLNet's permutation LM")]
            for flag, give in (
                ("--mem-len", ("--mem-len", "8")),
                ("--reuse-len", ("--reuse-len", "8")),
                ("--num-predict", ("--num-predict", "4")),
                ("--perm-size", ("--perm-size", "4")),
                ("--bi-data", ("--bi-data",)),
            )
        },
        **{
            flag: [
                Only(
                    (flag, value),
                    tuple(m for m in MODES["pretrain"] if m.startswith("--objective ") and m != "--objective rtd")
                    + ("--family xlnet",),
                    "objective rtd",
                )
            ]
            for flag, value in (
                ("--generator-size", "0.5"),
                ("--discriminator-weight", "10"),
                ("--sampling-temperature", "2"),
            )
        },
        "--temperature": [Only(("--temperature", "0.1"), ("--objective mlm", "--objective tsdae"), "simcse option")],
        "--deletion-ratio": [
            Only(("--deletion-ratio", "0.3"), ("--objective mlm", "--objective simcse"), "tsdae option")
        ],
        "--heldout": EVERY,
        "--init-embeddings": [Only(("--init-embeddings", "{d}/vectors.txt"), ("--init",), "comes from the checkpoint")],
        "--init": EVERY,
        "--init-generator": [Only(("--init-generator", "{d}/generator"), ("a preset",), "needs --init DIR")],
        "--extend-vocab": [Only(("--extend-vocab", "10"), ("a preset",), "needs --init DIR")],
        **CORPUS_JOB,
        "--save-every": EVERY,
        "--keep-checkpoints": EVERY,
        "--log-every": EVERY,
        "--quiet": EVERY,
        "--stop-at": EVERY,
        "--compile": EVERY,
        "--time-budget": EVERY,
        "--device": EVERY,
        "--precision": EVERY,
        "--report-to": EVERY,
        "--text-column": EVERY,
        "--steps": EVERY,  # with --time-budget a cap
        "--batch-size": EVERY,
        "--max-length": EVERY,
        "--lr": EVERY,
        "--weight-decay": EVERY,
        "--accumulation": EVERY,
        "--max-grad-norm": EVERY,
        "--dropout": EVERY,
        "--bf16": EVERY,
        "--mlm-probability": [
            Only(("--mlm-probability", "0.2"), ("--family xlnet", *SENTENCE), "masked objectives|predict tokens")
        ],
        "--seed": EVERY,
        "--resume": EVERY,
        "--overwrite": EVERY,
    },
    "distill": {
        "--teacher": EVERY,
        "--corpus": EVERY,
        "--out": EVERY,
        "--target": EVERY,
        "--student": EVERY,
        "--preset": [Only(("--preset", "tiny"), ("--target tokens",), "--target sentence")],
        "--tokenizer": [Only(("--tokenizer", "{d}/tokenizer.json"), ("--target tokens",), "--target sentence")],
        "--text-unit": [Only(("--text-unit", "sentence"), ("--target tokens",), "--target sentence")],
        "--layers": [Only(("--layers", "0,1"), ("--target sentence",), "--target tokens")],
        "--depth": [Only(("--depth", "1"), ("--target sentence",), "--target tokens")],
        "--alpha-ce": [Only(("--alpha-ce", "1"), ("--target sentence",), "--target tokens")],
        "--alpha-mlm": EVERY,
        "--alpha-cos": EVERY,
        "--alpha-mse": EVERY,
        "--temperature": [Only(("--temperature", "3"), ("--target sentence",), "--target tokens")],
        "--ce-over": [Only(("--ce-over", "all"), ("--target sentence",), "--target tokens")],
        "--masking": [Only(("--masking", "smoothed"), ("--target sentence",), "--target tokens")],
        "--mlm-probability": [Only(("--mlm-probability", "0.2"), ("--target sentence",), "--alpha-mlm above 0")],
        "--teacher-precision": EVERY,
        "--heldout": EVERY,
        **CORPUS_JOB,
        **{
            flag: EVERY
            for flag in (
                "--save-every",
                "--keep-checkpoints",
                "--log-every",
                "--quiet",
                "--stop-at",
                "--compile",
                "--time-budget",
                "--device",
                "--precision",
                "--report-to",
                "--text-column",
                "--steps",
                "--batch-size",
                "--max-length",
                "--lr",
                "--weight-decay",
                "--accumulation",
                "--max-grad-norm",
                "--dropout",
                "--bf16",
                "--seed",
                "--resume",
                "--overwrite",
            )
        },
    },
    "finetune": {
        "--model": EVERY,
        "--task": EVERY,
        "--train": EVERY,
        "--out": EVERY,
        "--dev": EVERY,
        "--tokenizer": EVERY,
        "--from-scratch": EVERY,
        "--epochs": _trains("--epochs", "2"),
        "--patience": [
            Only(("--patience", "2", "--dev", "{d}/train.tsv"), ("--method probe", "--method setfit"), "--method head")
        ],
        "--lr": _trains("--lr", "1e-4"),
        "--batch-size": _trains("--batch-size", "8"),
        "--max-length": EVERY,
        "--stride": [
            Only(
                ("--stride", "32"),
                tuple(m for m in MODES["finetune"] if m.startswith("--task ") and m != "--task qa"),
                "--task qa",
            )
        ],
        "--warmup-ratio": _trains("--warmup-ratio", "0.2"),
        "--weight-decay": _trains("--weight-decay", "0.1"),
        "--bf16": EVERY,
        "--precision": EVERY,
        "--report-to": _trainer("--report-to", "tensorboard"),
        "--device": EVERY,
        "--seed": EVERY,
        "--quiet": EVERY,  # nothing to show is not a mode: a script may pass --quiet to every run
        "--log-every": _trains("--log-every", "5"),
        "--keep-checkpoints": [
            *_trainer("--keep-checkpoints", "2"),
            Only(("--keep-checkpoints", "2"), ("--no-checkpoints",), "runs with checkpoints"),
        ],
        "--no-checkpoints": _trainer("--no-checkpoints"),
        "--stop-at": _trainer("--stop-at", "3"),
        "--compile": _trainer("--compile"),
        "--labels-per-class": [
            Only(
                ("--labels-per-class", "4"),
                ("--task regress", "--task tag", "--task qa", "--task choice"),
                "classify, pair",
            )
        ],
        "--subset-seed": [Only(("--subset-seed", "3"), ("all the training file",), "--labels-per-class")],
        "--pooling": [
            Only(("--pooling", "mean"), ("--task tag", "--task qa", "--task choice"), "classify, pair, regress"),
            Only(("--pooling", "mean"), ("--method prompt",), "--method head"),
        ],
        "--head-lr": [
            Only(
                ("--head-lr", "1e-3"),
                ("--method probe", "--method setfit", "--method prompt"),
                "new head|head is fitted|nothing else trains",
            )
        ],
        "--reinit-layers": [
            Only(("--reinit-layers", "1"), ("--method probe", "--method prompt"), "new head|nothing else trains")
        ],
        "--layer-decay": [
            Only(("--layer-decay", "0.9"), ("--method probe", "--method setfit"), "nothing else trains|head is fitted")
        ],
        "--method": [
            Only(
                ("--method", "prompt"),
                ("--task regress", "--task tag", "--task qa", "--task choice"),
                "classification task (classify, pair)",
            )
        ],
        "--template": [
            Only(
                ("--template", "{{text}} [MASK]"),
                ("--method head", "--method probe", "--method setfit"),
                "--method prompt",
            )
        ],
        "--verbalizer": [
            Only(
                ("--verbalizer", "{d}/words.json"),
                ("--method head", "--method probe", "--method setfit"),
                "--method prompt",
            )
        ],
        "--pairs-per-example": [
            Only(
                ("--pairs-per-example", "4"), ("--method head", "--method prompt", "--method probe"), "--method setfit"
            )
        ],
        "--grid": EVERY,  # the mode itself
        "--seeds": [Only(("--seeds", "0,1"), ("a single run",), "--grid")],
        "--test": [Only(("--test", "{d}/train.tsv"), ("a single run",), "--grid")],
        "--workers": [Only(("--workers", "2"), ("a single run",), "--grid")],
        "--resume": [Only(("--resume",), ("--grid",), "--resume continues a single run")],
        "--overwrite": EVERY,
        # the task's reader reads each column or refuses it by name (qa and choice have fixed keys, tag no pair)
        "--text-column": EVERY,
        "--pair-column": EVERY,
        "--label-column": EVERY,
    },
    "evaluate": {
        k: EVERY
        for k in ("--model", "--data", "--text-column", "--pair-column", "--label-column", "--int8", "--device")
    },
    "predict": {
        "--model": EVERY,
        "TEXT": [Only(("more text",), ("--data",), "runs without --data")],
        "--pair": [Only(("--pair", "b"), ("--data",), "runs without --data")],
        "--data": EVERY,
        "--json": EVERY,
        "--text-column": [Only(("--text-column", "t"), ("TEXT", "stdin"), "--data")],
        "--pair-column": [Only(("--pair-column", "p"), ("TEXT", "stdin"), "--data")],
        "--label-column": [Only(("--label-column", "l"), ("TEXT", "stdin"), "--data")],
        "--int8": EVERY,
        "--device": EVERY,
    },
    "baseline": {
        "TRAIN": EVERY,
        "FILE": EVERY,
        "--text-column": EVERY,
        "--pair-column": EVERY,
        "--label-column": EVERY,
        "--l2": EVERY,
        "--optimizer": EVERY,
        "--seed": [Only(("--seed", "3"), ("--optimizer lbfgs",), "--optimizer adam")],
    },
    "attention": {
        "--model": EVERY,
        "--tokenizer": EVERY,
        "--text": EVERY,
        "--pair": EVERY,
        "--layer": [Only(("--layer", "0"), ("an HTML page",), "a PNG --out")],
        "--head": [Only(("--head", "0"), ("an HTML page",), "a PNG --out")],
        "--out": EVERY,
    },
    "demo": {
        k: EVERY
        for k in ("--out", "--quick", "--budget-minutes", "--resume", "--overwrite", "--fp32", "--quiet", "--device")
    },
    "tokenizer train": {
        "FILE": EVERY,
        "--algorithm": EVERY,
        "--family": EVERY,
        "--vocab-size": EVERY,
        "--min-frequency": EVERY,
        "--special-tokens": EVERY,
        "--criterion": [
            Only(
                ("--criterion", "frequency"),
                ("--algorithm bpe", "--algorithm bytelevel-bpe", "--algorithm unigram", "--family roberta"),
                "WordPiece",
            )
        ],
        "--text-column": EVERY,  # a table's column (a plain text file is read line by line)
        "--replace-errors": EVERY,
        "--out": EVERY,
        "--quiet": EVERY,
    },
    "tokenizer encode": {"--tokenizer": EVERY, "text": EVERY, "--pair": EVERY, "--json": EVERY},
    "serve": {
        **{
            k: EVERY
            for k in (
                "--model",
                "--tokenizer",
                "--host",
                "--port",
                "--pooling",  # /embed's, whatever the head (every head has an encoder)
                "--max-batch-tokens",
                "--max-batch-requests",
                "--max-client-batch-size",
                "--max-concurrent-requests",
                "--max-body-bytes",
                "--device",
                "--compile",
                "--quiet",
                "--api-key",
                "--read-timeout",
                "--write-timeout",
                "--shutdown-grace",
            )
        },
        "--bf16": [Only(("--bf16",), ("--device cuda",), "read by the CPU", gpu=True)],
        "--int8": [Only(("--int8",), ("--device cuda",), "is for the CPU", gpu=True)],
        "--max-wait-ms": [Only(("--max-wait-ms", "5"), ("--max-batch-requests 1",), "dynamic batching")],
        "--allow-anonymous": [
            Only(("--allow-anonymous",), ("loopback",), "a --host other machines can reach"),
            Only(("--allow-anonymous",), ("--api-key",), "servers without --api-key"),
        ],
    },
    "export": {
        "DIR": EVERY,
        "OUT": EVERY,
        "--format": EVERY,
        "--int8": [Only(("--int8",), ("--format sentence-transformers",), "ONNX options")],
        "--optimize": [Only(("--optimize",), ("--format sentence-transformers",), "ONNX options")],
        "--opset": [Only(("--opset", "18"), ("--format sentence-transformers",), "--format onnx")],
        "--tokenizer": EVERY,
        "--overwrite": EVERY,
        "--pooling": [Only(("--pooling", "cls"), ("--format onnx",), "--format sentence-transformers")],
        "--normalize": [Only(("--normalize",), ("--format onnx",), "--format sentence-transformers")],
        "--max-length": [Only(("--max-length", "64"), ("--format onnx",), "--format sentence-transformers")],
    },
    "wordvec train": {
        "FILE": EVERY,
        "--out": EVERY,
        "--algorithm": [Only(("--algorithm", "glove"), ("--items", "--graph"), "train word2vec")],
        "--vector-size": EVERY,
        "--window": [Only(("--window", "3"), ("--items",), "whole of its basket")],
        "--min-count": EVERY,
        "--max-vocab-size": [Only(("--max-vocab-size", "1000"), ("--graph",), "text and --items corpora")],
        "--lowercase": [Only(("--lowercase",), ("--items", "--graph"), "text")],
        "--text-column": [Only(("--text-column", "body"), ("--graph",), "text and --items corpora")],
        "--tokenizer": [Only(("--tokenizer", "{d}/tokenizer.json"), ("--items", "--graph"), "not text")],
        "--epochs": EVERY,
        "--seed": EVERY,
        "--workers": EVERY,
        **{
            flag: [Only(give, ("--algorithm glove",), "word2vec (--algorithm cbow or skipgram)")]
            for flag, give in (
                ("--hs", ("--hs",)),
                ("--negative", ("--negative", "3")),
                ("--sample", ("--sample", "0.01")),
                ("--alpha", ("--alpha", "0.05")),
                ("--min-alpha", ("--min-alpha", "0.001")),
            )
        },
        "--ns-exponent": [
            Only(("--ns-exponent", "0.5"), ("--algorithm glove",), "word2vec (--algorithm cbow or skipgram)"),
            Only(("--ns-exponent", "0.5"), ("--negative 0",), "--negative above 0"),
        ],
        "--cbow-sum": [Only(("--cbow-sum",), ("--algorithm skipgram", "--algorithm glove"), "--algorithm cbow")],
        **{
            flag: [Only((flag, value), ("--algorithm cbow", "--algorithm skipgram"), "--algorithm glove")]
            for flag, value in (("--x-max", "50"), ("--power", "0.5"), ("--eta", "0.1"))
        },
        "--items": EVERY,
        "--graph": EVERY,
        **{
            flag: [Only(give, ("text", "--items"), "--graph")]
            for flag, give in (
                ("--directed", ("--directed",)),
                ("--walk", ("--walk", "deepwalk")),
                ("--walk-length", ("--walk-length", "20")),
                ("--num-walks", ("--num-walks", "2")),
            )
        },
        "--p": [
            Only(("--p", "2"), ("text", "--items"), "--graph"),
            Only(("--p", "2"), ("--walk deepwalk",), "--walk node2vec"),
        ],
        "--q": [
            Only(("--q", "2"), ("text", "--items"), "--graph"),
            Only(("--q", "2"), ("--walk deepwalk",), "--walk node2vec"),
        ],
        "--sampler": [
            Only(("--sampler", "alias"), ("text", "--items"), "--graph"),
            Only(("--sampler", "alias"), ("--walk deepwalk",), "--walk node2vec"),
            Only(("--sampler", "alias"), ("node2vec at p = q = 1",), "--p or --q away from 1"),
        ],
        "--binary": EVERY,
        "--quiet": EVERY,
    },
    "wordvec eval": {k: EVERY for k in ("VECTORS", "--analogies", "--pairs", "--restrict-vocab")},
    "wordvec similar": {k: EVERY for k in ("VECTORS", "WORD", "--negative", "--topn")},
    "wordvec plot": {k: EVERY for k in ("VECTORS", "--out", "--pairs")},
}


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """(command words, its parser) of every command that takes options, `tokenizer train` as such."""
    subcommands = _subcommands(parser)
    if not subcommands:
        yield " ".join(prefix), parser
    for name, _, sub in subcommands:
        yield from _commands(sub, (*prefix, name))


def _key(action: argparse.Action) -> str:
    return action.option_strings[0] if action.option_strings else action.metavar or action.dest


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The options a user gives (an old name is its new one's: OldFlag stores into the same field)."""
    return {
        _key(a): a
        for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._VersionAction, OldFlag))
    }


PARSERS = dict(_commands(build_parser()))


def test_every_option_is_declared():
    assert set(DECLARED) == set(PARSERS)
    for command, parser in PARSERS.items():
        options = set(_options(parser))
        assert set(DECLARED[command]) == options, (
            f"bertology {command}: say which modes read "
            f"{sorted(options - set(DECLARED[command]))} (or drop {sorted(set(DECLARED[command]) - options)})"
        )


def test_every_choice_of_a_mode_switch_is_a_declared_mode():
    for command, switches in SWITCHES.items():
        options = _options(PARSERS[command])
        for switch in switches:
            named = {mode.split(" ", 1)[1] for mode in MODES[command] if mode.startswith(switch + " ")}
            assert set(options[switch].choices) <= named, f"{command} {switch}: a mode without a declaration"
            assert named <= set(options[switch].choices), f"{command} {switch}: a declared mode the parser lacks"


def _cases():
    for command, options in DECLARED.items():
        for flag, declared in options.items():
            if declared is EVERY:
                continue
            for only in declared:
                for mode in only.unread_in:
                    assert mode in MODES[command], f"{command} {flag}: no mode {mode!r}"
                    gpu = pytest.mark.skipif(only.gpu and not torch.cuda.is_available(), reason="a GPU's mode")
                    yield pytest.param(
                        command, flag, mode, only, id=f"{command} {' '.join(only.give)} [{mode}]", marks=gpu
                    )


def _line(command: str, mode: str, give: tuple[str, ...], d) -> list[str]:
    return [w.format(d=d) for w in (*BASE[command], *MODES[command][mode], *give)]


@pytest.fixture
def inputs(tmp_path):
    """The few files a refused command line names (read, at most, to find its mode)."""
    (tmp_path / "corpus.txt").write_text("a b c\nd e f\n\ng h i\n", encoding="utf-8")
    (tmp_path / "train.tsv").write_text("text\tlabel\na b\tx\nc d\ty\n", encoding="utf-8")
    (tmp_path / "checkpoint").mkdir()
    from bertology.models import get_family

    get_family("bert").preset("tiny", vocab_size=99).save(tmp_path / "checkpoint" / "config.json")
    (tmp_path / "words.json").write_text(json.dumps({"x": ["x"], "y": ["y"]}), encoding="utf-8")
    return tmp_path


def _tree(d) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


@pytest.mark.parametrize("command, flag, mode, only", list(_cases()))
def test_an_option_its_mode_does_not_read_is_refused_before_any_write(
    inputs, capsys, monkeypatch, command, flag, mode, only
):
    monkeypatch.chdir(inputs)
    monkeypatch.delenv("BERTOLOGY_API_KEY", raising=False)
    before = _tree(inputs)
    line = _line(command, mode, only.give, inputs)
    status = main(line)
    err = capsys.readouterr().err
    assert status == 2, f"bertology {' '.join(line)}: exit {status}, {err[-400:]!r}"
    assert flag in err and any(said in err for said in only.said.split("|")), err
    assert _tree(inputs) == before, "written before the refusal"
