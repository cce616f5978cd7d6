"""`bertology <command>`: parse arguments, call the library, print. Nothing else lives here."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from . import __version__
from .io import corpus_files, stdin_lines
from .options import DeviceOptions, OldFlag, OptionError, add_arguments, from_args, refuse_given
from .export import cli as export_cli
from .serve import cli as serve_cli
from .tokenizers import cli as tokenizer_cli
from .wordvec import cli as wordvec_cli

_PACKAGE = Path(__file__).resolve().parent
GRID_SEEDS = "0,1,2"  # finetune --grid's seeds when --seeds is not given


def _params(args) -> int:
    from .models.params import count, format_summary, format_table, resolve_config

    if args.seq_length < 1:
        raise OptionError(f"--seq-length {args.seq_length}: must be ≥ 1 (the sequence length for the attention FLOPs)")
    counts = []
    for spec in args.models:
        name, config = resolve_config(spec)
        counts.append(count(config, name, args.seq_length))
        print(format_table(counts[-1]), end="\n\n")
    if len(counts) > 1:
        print(format_summary(counts))
    return 0


def _pretrain(args) -> int:
    from .train.pretrain import PretrainOptions, pretrain

    options = from_args(PretrainOptions, args, corpus=corpus_files(args.corpus, _to_stderr))
    summary = pretrain(options, resume=args.resume, overwrite=args.overwrite, started=getattr(args, "started", None))
    if summary.get("already_complete"):  # said, and nothing changed: no "written to" line
        return 0
    final, evaluation = summary["final"], summary["eval"]
    print(
        f"{summary['architecture']} ({summary['parameters']:,} parameters, objective {summary['objective']}): "
        f"step {summary['steps']}, loss {final.get('loss', float('nan')):.4f}, "
        f"{final.get('tokens_per_s', 0):,.0f} tokens/s ({final.get('outside_forward_backward', 0):.0%} of the time "
        f"outside forward/backward)"
        + (
            f"; held-out MLM accuracy {evaluation['eval/mlm_accuracy']:.3f}, loss {evaluation['eval/mlm_loss']:.3f}, "
            f"perplexity {evaluation['eval/perplexity']:.1f}"
            if "eval/mlm_accuracy" in evaluation
            else ""
        )
        + (
            f"; held-out PLM accuracy {evaluation['eval/plm_accuracy']:.3f}, perplexity {evaluation['eval/perplexity']:.1f}"
            if "eval/plm_accuracy" in evaluation
            else ""
        )
        + (f", pair accuracy {evaluation['eval/pair_accuracy']:.3f}" if "eval/pair_accuracy" in evaluation else "")
        + (
            f"; held-out generator MLM accuracy {evaluation['eval/generator_mlm_accuracy']:.3f}, discriminator "
            f"accuracy {evaluation['eval/discriminator_accuracy']:.3f}, AUC {evaluation['eval/disc_auc']:.3f} "
            f"({evaluation['eval/replaced_share']:.1%} of the tokens replaced)"
            if "eval/discriminator_accuracy" in evaluation
            else ""
        )
    )
    if summary["interrupted"]:
        print(f"interrupted: checkpoint written; continue with --resume --out {options.out_dir}")
        return 130
    print(f"model and tokenizer written to {options.out_dir}")
    return 0


def _baseline(args) -> int:
    from .tasks.baseline import BagOfWordsBaseline
    from .tasks.classification import ClassifyTask

    if not args.l2 >= 0:
        raise OptionError(f"--l2 {args.l2}: must be ≥ 0")
    task, columns = ClassifyTask(), _columns(args)
    model = BagOfWordsBaseline(l2=args.l2, optimizer=args.optimizer, seed=args.seed)
    evaluated = [(path, task.read(path, **columns)) for path in args.eval]  # every file read before the fit
    model.fit(task.read(args.train, **columns))
    print(f"{args.train}: {len(model.labels)} labels, {len(model.vocab):,} features")
    for path, examples in evaluated:
        print(f"{path}: " + "  ".join(f"{k} {v:.4f}" for k, v in model.score(examples).items()))
    return 0


def _columns(args) -> dict[str, str]:
    names = ("text_column", "pair_column", "label_column")
    return {n: getattr(args, n) for n in names if getattr(args, n, None)}


def _numbers(text: str, kind, flag: str) -> list:
    try:
        return [kind(x) for x in text.split(",")]
    except ValueError:
        raise OptionError(f"{flag} {text!r}: not comma-separated numbers") from None


def _check_grid_only(args) -> None:
    """--test, --seeds and --workers are read by --grid alone: without it they would be silently ignored."""
    flags = (("--test", args.test), ("--seeds", args.seeds), ("--workers", args.workers))
    given = [flag for flag, value in flags if value is not None]
    if given and not args.grid:
        named = given[0] if len(given) == 1 else f"{', '.join(given[:-1])} and {given[-1]}"
        raise OptionError(
            f"{named} without --grid: only --grid runs use {'them' if len(given) > 1 else 'it'} "
            "(a single finetune chooses its best step on --dev and scores no test file); add --grid LR,LR,… "
            "or leave them out (then score a file with `bertology evaluate`)"
        )


# finetune's options that a probe or SetFit does not read: refused here, for the command line, and not in
# tasks.finetune.check_task_options, because code that builds FinetuneOptions for several methods at once
# (the demo's label curves) leaves them at values of its own
TRAINED = ("epochs", "lr", "batch_size", "warmup_ratio", "weight_decay", "log_every")
TRAINER_RUN = ("keep_checkpoints", "checkpoints", "stop_at", "compile", "report_to")


def _unread(args) -> list[tuple[tuple[str, ...], str]]:
    """(options, the runs that read them) for each group of options this command line's mode leaves unread.

    The command-line half of "no option is silently ignored" (tests/test_option_modes.py walks every option of
    every command): what an options dataclass refuses itself (finetune's --stride outside --task qa, pretrain's
    XLNet options outside the permutation LM, export's ONNX options …) is checked where the Python API checks
    it; these are the modes that only a command line has, or whose options a library caller may pass for
    every mode at once (the demo gives pretrain --warmup beside --time-budget)."""
    command = args.command
    groups: list[tuple[tuple[str, ...], str]] = []
    if command == "finetune":
        _check_grid_only(args)  # its own message: what a single run does instead
        if args.method == "probe":
            groups.append((TRAINED, "the methods that train the encoder (--method head, prompt, setfit)"))
        if args.method in ("probe", "setfit"):
            groups.append((TRAINER_RUN, "--method head and --method prompt (epochs of the Trainer, checkpointed)"))
    if command in ("pretrain", "distill"):
        if args.time_budget is None:
            groups.append((("budget_warmup",), "--time-budget"))
        else:
            groups.append((("warmup",), "runs without --time-budget (its warmup is --budget-warmup's share)"))
        if args.heldout == 0:
            groups.append((("eval_every", "eval_batches"), "runs with held-out text (--heldout above 0)"))
        if args.text_column is not None:  # a table's rows are staged as documents in the lines format
            groups.append((("format",), "text corpora (without --text-column: a table's rows are its documents)"))
    if command == "distill" and args.target == "sentence" and not args.alpha_mlm:  # no student MLM, no masks
        groups.append((("mlm_probability",), "--target tokens and a sentence student's MLM (--alpha-mlm above 0)"))
    if command == "pretrain" and args.tokenizer and not args.init:  # --init's checkpoint refuses it itself
        groups.append((("vocab_size",), "a tokenizer trained on the corpus (without --tokenizer)"))
    if command == "predict":
        if args.data:
            groups.append((("text", "pair"), "runs without --data (TEXT arguments or stdin)"))
        else:
            groups.append((("text_column", "pair_column", "label_column"), "--data"))
    if command == "baseline" and args.optimizer != "adam":
        groups.append((("seed",), "--optimizer adam (L-BFGS is deterministic)"))
    if command == "attention" and Path(args.out).suffix == ".html":  # as viz.write_attention tells them apart
        groups.append((("layer", "head"), "a PNG --out (the HTML page shows every layer and head)"))
    if command == "serve":
        if args.max_batch_requests == 1:
            groups.append((("max_wait_ms",), "dynamic batching (--max-batch-requests above 1)"))
        from .serve.guard import ENV_KEY, is_loopback

        if args.api_key is not None or os.environ.get(ENV_KEY):
            groups.append((("allow_anonymous",), f"servers without --api-key (or ${ENV_KEY})"))
        elif is_loopback(args.host):
            groups.append((("allow_anonymous",), "a --host other machines can reach"))
    if command == "export":
        if args.format == "onnx":
            groups.append((("pooling", "normalize", "max_length"), "--format sentence-transformers"))
        else:
            groups.append((("opset",), "--format onnx"))
    if command == "tokenizer" and args.tokenizer_command == "train":
        from .tokenizers.training import resolve

        if resolve(args.algorithm, args.family)[0] != "wordpiece":
            groups.append((("criterion",), "WordPiece (--algorithm wordpiece, or --family bert)"))
    if command == "wordvec" and args.wordvec_command == "train":
        groups += _wordvec_unread(args)
    return groups


def _wordvec_unread(args) -> list[tuple[tuple[str, ...], str]]:
    """`wordvec train`: the options of the algorithm, the input and the walk that this run does not use."""
    graph, items = args.graph, args.items
    algorithm = args.algorithm or ("skipgram" if graph or items else "cbow")
    groups: list[tuple[tuple[str, ...], str]] = []
    if algorithm == "glove":
        groups.append(
            (
                ("hs", "negative", "ns_exponent", "sample", "alpha", "min_alpha"),
                "word2vec (--algorithm cbow or skipgram)",
            )
        )
    else:
        groups.append((("x_max", "power", "eta"), "--algorithm glove"))
        if args.negative == 0:
            groups.append((("ns_exponent",), "negative sampling (--negative above 0)"))
    if algorithm != "cbow":
        groups.append((("cbow_sum",), "--algorithm cbow"))
    if not graph:
        walk = ("directed", "walk", "p", "q", "walk_length", "num_walks", "sampler")
        groups.append((walk, "--graph (random walks over an edge list)"))
    else:
        groups.append((("text_column", "max_vocab_size"), "text and --items corpora (not an edge list)"))
        if args.walk == "deepwalk":
            groups.append((("p", "q", "sampler"), "--walk node2vec"))
        elif (args.p, args.q) == (1.0, 1.0):
            groups.append((("sampler",), "node2vec with --p or --q away from 1 (at 1 the walk is first-order)"))
    if items or graph:
        groups.append((("lowercase",), "text corpora (items and nodes are names, taken as they are)"))
    return groups


def _command_parser(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The (sub)parser of the command `args` were parsed for: `tokenizer train`'s, not `tokenizer`'s."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None:
            return parser
        parser = sub.choices[getattr(args, sub.dest)]


def check_modes(parser: argparse.ArgumentParser, args) -> None:
    """An OptionError naming every option given on this command line that its mode does not read, and the
    runs that do read it, before the command reads or writes anything."""
    actions = {a.dest: a for a in _command_parser(parser, args)._actions if not isinstance(a, OldFlag)}
    for dests, read_by in _unread(args):
        given = []
        for dest in dests:
            action, value = actions[dest], getattr(args, dest)
            if value != action.default and not (value == [] and action.default is None):  # TEXT…: [] when none
                given.append(action.option_strings[0] if action.option_strings else action.metavar or dest.upper())
        refuse_given(given, read_by)


def _finetune_grid(options, args) -> int:
    from .tasks.grid import finetune_grid

    if not (args.dev and args.test):
        raise OptionError("--grid chooses the rate on --dev and reports --test: give both")
    if args.resume:
        raise OptionError("--grid runs from its beginning; --resume continues a single run")
    seeds = _numbers(args.seeds or GRID_SEEDS, int, "--seeds")
    grid = _numbers(args.grid, float, "--grid")
    result = finetune_grid(options, args.test, grid, seeds, overwrite=args.overwrite, workers=args.workers or 1)
    print("| lr | seed | dev | test |\n|---|---|---|---|")
    for r in result.runs:
        print(f"| {r['lr']:g} | {r['seed']} | {r['dev']:.4f} | {r['test']:.4f} |")
    print(
        f"chosen lr {result.lr:g} (mean dev {result.metric} {result.dev_mean:.4f}): test {result.metric} "
        f"{result.test_mean:.4f} ± {result.test_std:.4f} over {len(seeds)} seeds; best run kept in {result.best_dir}"
    )
    if result.ensemble_test is not None:
        print(
            f"ensemble of its seeds (probabilities averaged): test {result.metric} {result.ensemble_test:.4f}; "
            f"per-item test predictions in grid.json"
        )
    return 0


def _finetune(args) -> int:
    from .tasks.finetune import FinetuneOptions

    options = from_args(FinetuneOptions, args, columns=_columns(args))
    if args.grid:
        return _finetune_grid(options, args)
    from .tasks.finetune import finetune

    summary = finetune(options, resume=args.resume, overwrite=args.overwrite)
    if summary["interrupted"]:
        print(
            f"interrupted at step {summary['steps']}: "
            + (
                f"checkpoint written; continue with --resume --out {options.out_dir}"
                if options.checkpoints
                else "nothing written (--no-checkpoints); run it again"
            )
        )
        return 130
    dev = summary["dev"]
    if summary.get("method") == "probe":
        print(
            f"{summary['architecture']}: a logistic regression (l2 {summary['probe']['l2']:g}) on the frozen encoder's "
            f"vectors of {summary['train_examples']:,} examples"
            + ("; dev: " + ", ".join(f"{k} {v:.4f}" for k, v in dev.items()) if dev else "")
        )
        print(f"model written to {options.out_dir}")
        return 0
    print(
        f"{summary['architecture']} fine-tuned on {summary['train_examples']:,} examples for {summary['steps']} steps"
        + (
            f"; best dev (step {summary['best_step']}): " + ", ".join(f"{k} {v:.4f}" for k, v in dev.items())
            if dev
            else ""
        )
    )
    print(f"model written to {options.out_dir}")
    return 0


def _distill(args) -> int:
    from .train.distill import DistillOptions, distill

    summary = distill(
        from_args(DistillOptions, args, corpus=corpus_files(args.corpus, _to_stderr)),
        resume=args.resume,
        overwrite=args.overwrite,
        started=getattr(args, "started", None),  # --time-budget counts from the command's start
    )
    for note in summary["notes"]:
        print(f"note: {note}")
    final, evaluation = summary["final"], summary["eval"]
    print(
        f"{summary['architecture']} ({summary['parameters']:,} parameters, from {summary['teacher_architecture']}'s "
        f"{summary['teacher_parameters']:,}): step {summary['steps']}, loss {final.get('loss', float('nan')):.4f}"
        + (
            f"; held-out MLM accuracy {evaluation['eval/mlm_accuracy']:.3f}"
            if "eval/mlm_accuracy" in evaluation
            else ""
        )
        + (f"; held-out cosine to the teacher {evaluation['eval/cosine']:.3f}" if "eval/cosine" in evaluation else "")
        + (
            f", agreement with the teacher {evaluation['eval/teacher_agreement']:.3f}"
            if "eval/teacher_agreement" in evaluation
            else ""
        )
    )
    if summary["interrupted"]:
        print(f"interrupted: checkpoint written; continue with --resume --out {args.out_dir}")
        return 130
    print(f"student and tokenizer written to {args.out_dir}")
    return 0


def _device(args, say):
    """The device of --device, resolved (a GPU asked for and absent fails here, before any work)."""
    from .hardware import resolve_device

    return resolve_device(from_args(DeviceOptions, args).device, say)


def _to_stderr(message: str) -> None:  # notes beside predictions and scores, which go to stdout
    print(message, file=sys.stderr, flush=True)


def _evaluate(args) -> int:
    from .tasks.pipeline import Pipeline

    pipe = Pipeline.load(args.model, _device(args, _to_stderr), _to_stderr, quantize="int8" if args.int8 else None)
    scores = pipe.evaluate(pipe.read(args.data, **_columns(args)))
    for k, v in scores.items():
        print(f"{k:<24}{v:.4f}")
    return 0


def _predict(args) -> int:
    from .tasks.pipeline import Pipeline

    pipe = Pipeline.load(args.model, _device(args, _to_stderr), _to_stderr, quantize="int8" if args.int8 else None)
    from .tasks.pipeline import to_example

    task = pipe.task.name
    gold = bool(args.data and args.label_column)  # the file's labels, shown beside the predictions when asked for
    if args.data:
        # predicting reads no labels: a table without them is read, unless --label-column asks to show them
        unlabelled = {} if gold or task not in TABLE_TASKS else {"label_column": None}
        examples = pipe.read(args.data, **{**unlabelled, **_columns(args)})
    elif args.text:
        if task in ("pair", "qa", "choice") or args.pair:
            if task == "choice":
                items = [(args.text[0], args.text[1:])]
            else:
                items = [(t, args.pair) for t in args.text] if args.pair else [tuple(args.text[:2])]
        else:
            items = args.text
        examples = [to_example(task, x, i) for i, x in enumerate(items)]
    else:  # a line a text; a pair's (qa's) two texts and a choice's context and choices separated by tabs
        examples = [
            to_example(task, _stdin_item(task, line, args.pair, i), i) for i, line in enumerate(stdin_lines("predict"))
        ]
    for example, prediction in zip(examples, pipe.predict_examples(examples)):
        shown = example.text if isinstance(example.text, str) else " ".join(example.text)
        if args.json:
            fields = _plain(prediction)
            record = {"text": example.text, **({"pair": example.pair} if example.pair is not None else {})}
            record |= {"gold": example.label} if gold else {}
            print(
                json.dumps(
                    {**record, **(fields if isinstance(fields, dict) else {"prediction": fields})}, ensure_ascii=False
                )
            )
        else:
            label = f"{example.label}\t" if gold else ""
            print(f"{pipe.task.format_prediction(prediction)}\t{label}{shown[:80]}")
    return 0


TABLE_TASKS = ("classify", "pair", "regress")  # read from a table whose label column may be left out


def _stdin_item(task: str, line: str, pair: str | None, i: int):
    """One piped line as `predict` takes its TEXT arguments."""
    fields = line.split("\t")
    if task == "choice":
        if len(fields) < 3:
            raise ValueError(
                f"stdin line {i + 1}: a choice task reads CONTEXT<TAB>CHOICE<TAB>CHOICE…, got {line[:60]!r}"
            )
        return fields[0], fields[1:]
    if task in ("pair", "qa") and pair is None:
        if len(fields) != 2:
            raise ValueError(f"stdin line {i + 1}: a {task} task reads two texts separated by a tab, got {line[:60]!r}")
        return tuple(fields)
    return (line, pair) if pair is not None else line


def _plain(value):
    """A prediction as JSON takes it: dataclasses and named tuples as objects, tensors and numpy numbers as numbers."""
    if dataclasses.is_dataclass(value):
        return _plain(dataclasses.asdict(value))
    if hasattr(value, "_asdict"):  # a NamedTuple (classification's Prediction)
        return _plain(value._asdict())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if hasattr(value, "item") else value


def _add_run_control(p) -> None:
    p.add_argument(
        "--resume", action="store_true", help="continue the interrupted run in --out from its last checkpoint"
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="start afresh in a non-empty --out (an earlier run's checkpoints go; files of the user's stay, "
        "except those of the same names)",
    )


def _add_columns(p) -> None:
    p.add_argument("--text-column", help="column with the text (default: text)")
    p.add_argument("--pair-column", help="column with the second text, for pairs")
    p.add_argument("--label-column", help="column with the label (default: label)")


def _attention(args) -> int:
    from . import load
    from .models import check_tokenizer
    from .tasks.finetune import load_tokenizer
    from .viz import write_attention

    model = load(args.model)
    tokenizer = load_tokenizer(args.model, args.tokenizer)
    check_tokenizer(model.config, tokenizer, args.tokenizer or Path(args.model) / "tokenizer.json")
    aw = write_attention(args.out, model, tokenizer, args.text, args.pair, args.layer, args.head)
    print(
        f"{args.out}: {aw.num_layers} layers × {aw.num_heads} heads over {len(aw.tokens)} tokens: {' '.join(aw.tokens)}"
    )
    return 0


def _positive_minutes(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 minutes, got {text}")
    return value


def _stored_sentence_ids(path, tokenizer):
    """`wordvec train --tokenizer` reads a text file's pieces from the pretraining token store (every core;
    wordvec sits below data in the layers, so the CLI hands it the reader)."""
    from .data.tokenstore import sentence_ids

    return sentence_ids(path, tokenizer)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _demo(args) -> int:
    from .demo import run

    return run(args)


def _options_of(command: str) -> type:
    if command == "pretrain":
        from .train.pretrain import PretrainOptions

        return PretrainOptions
    if command == "distill":
        from .train.distill import DistillOptions

        return DistillOptions
    from .tasks.finetune import FinetuneOptions

    return FinetuneOptions


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command; the options of pretrain / finetune (whose dataclasses import torch) are added
    for `only` that command, or for all when `only` is None, so the others start fast."""

    def add_options(p, command: str) -> None:
        if only in (None, command):
            add_arguments(p, _options_of(command))

    parser = argparse.ArgumentParser(
        prog="bertology",
        description="BERT, RoBERTa, ALBERT, DistilBERT, XLNet, ELECTRA, their tokenizers and word vectors: pretrain, distil, "
        "fine-tune, inspect, serve, and move checkpoints to and from Hugging Face layout.",
    )
    parser.add_argument("--version", action="version", version=f"bertology {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("params", help="parameter table and forward FLOPs per token of presets or configs")
    p.add_argument(
        "models",
        nargs="+",
        metavar="PRESET_OR_CONFIG",
        help="e.g. bert-base, albert-large, roberta-large, distilbert-base, or a config.json / model dir",
    )
    p.add_argument("--seq-length", type=int, default=128, help="sequence length for the attention FLOPs (default 128)")
    p.set_defaults(func=_params)

    p = sub.add_parser(
        "pretrain",
        help="pretrain BERT (MLM+NSP), RoBERTa (MLM, dynamic), ALBERT (MLM+SOP), XLNet "
        "(permutation LM) or ELECTRA (replaced-token detection) on text files; "
        "DistilBERT comes from `distill`",
    )
    add_options(p, "pretrain")
    _add_run_control(p)
    p.set_defaults(func=_pretrain)

    p = sub.add_parser("distill", help="distil a teacher into a shallower student (DistilBERT's triple loss)")
    add_options(p, "distill")
    _add_run_control(p)
    p.set_defaults(func=_distill)

    p = sub.add_parser(
        "finetune", help="fine-tune a pretrained directory (or a preset, from scratch) on a labelled task"
    )
    add_options(p, "finetune")
    p.add_argument(
        "--grid",
        metavar="LR,LR,…",
        help="fine-tune at each learning rate × --seeds, choose the rate on mean "
        "dev score, report its test mean ± std (needs --dev and --test); --out gets grid.json and the chosen "
        "rate's best run",
    )
    p.add_argument("--seeds", metavar="S,S,…", help=f"seeds for --grid (default {GRID_SEEDS}; --grid only)")
    p.add_argument("--test", metavar="FILE", help="scored for every --grid run (--grid only)")
    p.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        help="--grid runs fine-tuned at once, in processes that split the CPU's cores (default 1; small models "
        "finish a grid sooner side by side; --grid only)",
    )
    _add_run_control(p)
    _add_columns(p)
    p.set_defaults(func=_finetune)

    p = sub.add_parser("evaluate", help="metrics of a fine-tuned model on a labelled file")
    p.add_argument("--model", required=True, metavar="DIR")
    p.add_argument("--data", required=True, metavar="FILE")
    _add_columns(p)
    p.add_argument(
        "--int8",
        action="store_true",
        help="the model's linear layers as dynamic int8 layers (CPU only: "
        "int8 weights per output channel, activations quantized per call; see docs/export.md)",
    )
    add_arguments(p, DeviceOptions)
    p.set_defaults(func=_evaluate)

    p = sub.add_parser("predict", help="predictions of a fine-tuned model on texts or a file")
    p.add_argument("--model", required=True, metavar="DIR")
    p.add_argument("text", nargs="*", metavar="TEXT", help="texts (qa: QUESTION CONTEXT; choice: CONTEXT CHOICE…)")
    p.add_argument("--pair", help="second text for every TEXT (pair tasks)")
    p.add_argument(
        "--data", metavar="FILE", help="a labelled-file layout to predict on; with neither TEXT nor --data: stdin"
    )
    p.add_argument("--json", action="store_true", help="one JSON object a line: the text and the prediction's fields")
    _add_columns(p)
    p.add_argument(
        "--int8",
        action="store_true",
        help="the model's linear layers as dynamic int8 layers (CPU only: "
        "int8 weights per output channel, activations quantized per call; see docs/export.md)",
    )
    add_arguments(p, DeviceOptions)
    p.set_defaults(func=_predict)

    p = sub.add_parser(
        "baseline",
        help="the bag-of-words baseline of a classify task (TF-IDF unigrams and bigrams, logistic regression): "
        "what a fine-tuned model has to beat",
    )
    p.add_argument("train", metavar="TRAIN", help="the labelled file it is fitted on")
    p.add_argument("eval", nargs="+", metavar="FILE", help="labelled files it is scored on (dev, test)")
    _add_columns(p)
    p.add_argument("--l2", type=float, default=3e-4, help="the logistic regression's L2 penalty (default 3e-4)")
    p.add_argument("--optimizer", choices=("lbfgs", "adam"), default="lbfgs", help="full-batch L-BFGS or Adam")
    p.add_argument("--seed", type=int, default=0, help="Adam's shuffling (L-BFGS is deterministic)")
    p.set_defaults(func=_baseline)

    p = sub.add_parser("attention", help="draw attention weights over a text's tokens (PNG grid or interactive HTML)")
    p.add_argument(
        "--model", required=True, metavar="DIR", help="any directory bertology.load reads, with tokenizer.json"
    )
    p.add_argument("--tokenizer", help="default: the model directory's tokenizer.json")
    p.add_argument("--text", required=True)
    p.add_argument("--pair")
    p.add_argument("--layer", type=int, help="default: the last layer (PNG)")
    p.add_argument("--head", type=int, help="one head instead of the grid of all heads (PNG)")
    p.add_argument("--out", required=True, metavar="FILE.png|FILE.html")
    p.set_defaults(func=_attention)

    p = sub.add_parser(
        "demo",
        help="does pretraining pay with few labels? BERT, RoBERTa, ALBERT, XLNet and ELECTRA pretrained, "
        "the real MiniLM distilled into a tiny student, each fine-tuned on 10 to 175 labels per class "
        "against its random-init twin, within a time budget",
    )
    p.add_argument("--out", default="runs/demo", metavar="DIR")
    p.add_argument("--quick", action="store_true", help="a smoke test (budget 1.5 minutes unless given)")
    p.add_argument(
        "--budget-minutes",
        type=_positive_minutes,
        default=None,
        metavar="MINUTES",
        help="wall time for the whole demo on this machine (default 20): pretraining and fine-tuning are "
        "planned to fit it",
    )
    p.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a non-empty --out that is not an earlier demo's (nothing there is deleted)",
    )
    p.add_argument("--fp32", action="store_true", help="no bf16 autocast even where the CPU has fast bf16")
    p.add_argument("--quiet", action="store_true")
    add_arguments(p, DeviceOptions)
    p.set_defaults(func=_demo)

    tokenizer_cli.register(sub)
    serve_cli.register(sub)
    export_cli.register(sub)
    wordvec_cli.register(sub, sentence_ids=_stored_sentence_ids)
    return parser


REFERENCE_HEADER = """# Command-line reference

Every `bertology` command and every option, with its default, as `bertology COMMAND --help` gives them.
This page is generated from the parser (`bertology.cli.reference_markdown`): `make docs` rewrites it, and a
test fails when it differs from the parser, so it cannot go stale. Edit the options' help in the code, not here.
A switch takes no value; `bertology --version` prints the installed version.
"""


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each command under `parser`, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def _option_line(action: argparse.Action) -> str:
    """One option as a list item: its flags and value, whether it is required or its default, its help."""
    value = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
    if action.choices is not None and action.metavar is None:
        value = "{" + ",".join(map(str, action.choices)) + "}"
    takes_value = action.nargs != 0
    if takes_value and action.nargs in ("+", "*"):
        value = f"{value} …"
    if action.option_strings:
        name = ", ".join(action.option_strings) + (f" {value}" if takes_value else "")
    else:
        name = value
    if action.nargs == 0:  # --flag / --no-flag: nothing when left out
        default = "switch"
    elif action.required:
        default = "required"
    elif action.default is None or action.default == argparse.SUPPRESS:
        default = "none"
    else:
        shown = " ".join(map(str, action.default)) if isinstance(action.default, (list, tuple)) else action.default
        default = f"default `{shown}`"
    text = (action.help or "").replace("%%", "%")
    # markdown would read "label<TAB>word" as an HTML tag and drop it; inside `code` a < is shown as it is
    text = "`".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(text.split("`")))
    if action.default is not None and action.nargs != 0:  # options.add_arguments ends the help with the default
        text = text.removesuffix(f" (default {action.default})")
    return f"- `{name}` ({default})" + (f": {text}" if text else "")


def _reference_sections(prog: str, help: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    commands = _subcommands(parser)
    lines = [f"{'#' * level} `{prog}`", ""]
    if help:
        lines += [help[0].upper() + help[1:] + ("" if help.endswith(".") else "."), ""]
    shown = [
        a
        for a in parser._actions
        if a.help != argparse.SUPPRESS and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]
    old = [a for a in parser._actions if isinstance(a, OldFlag)]  # hidden from --help, listed here
    lines += [_option_line(a) for a in shown]
    lines += [
        f"- `{a.option_strings[0]}` (deprecated): the old name of `{a.new}`, accepted until the next release"
        for a in old
    ]
    lines += [""] if shown or old else []
    for name, sub_help, sub in commands:
        lines += _reference_sections(f"{prog} {name}", sub_help, sub, min(level + 1, 3))
    return lines


def reference_markdown() -> str:
    """docs/cli.md: a section per command (and per subcommand), each option with its default and help."""
    parser = build_parser()
    lines = [REFERENCE_HEADER]
    for name, help, sub in _subcommands(parser):
        lines += _reference_sections(f"bertology {name}", help, sub, 2)
    return "\n".join(lines).rstrip("\n") + "\n"


def _raised_by_us(error: BaseException) -> bool:
    """Whether the innermost frame of the error's traceback is bertology's own code (a check that
    failed on bad input) rather than a library's (which, for a ValueError, may be a bug of ours)."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(_PACKAGE)


def _ours(filename: str) -> bool:
    """Whether a warning was raised at a line of bertology's own code (its `filename`, as warnings report it)."""
    try:
        return Path(filename).resolve().is_relative_to(_PACKAGE)
    except (OSError, ValueError):  # "<string>" and the like: not a file of ours
        return False


class _CommandLog(logging.Handler):
    """The root logger's handler while a command runs, where nothing else has set logging up: bertology's
    own records (loggers "bertology.…") as `PREFIX: level: message` (a traceback kept), other libraries'
    from ERROR up as their message. Below that they are advice the user cannot act on: onnxruntime's
    quantizer logs "Please consider to run pre-processing before quantization" through the root logger,
    whose first use would otherwise set up logging and print `WARNING:root:…` on every `export --int8`."""

    def __init__(self, prefix: str):
        super().__init__(logging.WARNING)
        self.prefix = prefix
        self.setFormatter(logging.Formatter("%(message)s"))  # the message, and a record's traceback after it

    def emit(self, record: logging.LogRecord) -> None:
        ours = record.name == "bertology" or record.name.startswith("bertology.")
        if not (ours or record.levelno >= logging.ERROR):
            return
        try:
            text = self.format(record)
            print(f"{self.prefix}: {record.levelname.lower()}: {text}" if ours else text, file=sys.stderr, flush=True)
        except Exception:
            self.handleError(record)


@contextmanager
def plain_warnings(prefix: str) -> Iterator[None]:
    """Inside a command: a warning bertology's own code raises (a truncated example, a pooler started
    randomly) is one line on stderr, `PREFIX: warning: MESSAGE`, instead of Python's
    `/path/file.py:447: UserWarning: MESSAGE` and the source line after it; other libraries' warnings
    (torch's internals and the like, which the user cannot act on) are not shown unless Python is asked
    for warnings (`python -W …`, PYTHONWARNINGS), and their log records below ERROR not at all unless
    logging was set up before (_CommandLog). Set and restored here, for the command only: code that
    imports bertology keeps Python's own warning display and logging."""
    root = logging.getLogger()
    handler = None if root.handlers else _CommandLog(prefix)
    with warnings.catch_warnings():
        show_theirs = warnings.showwarning if sys.warnoptions else None

        def show(message, category, filename, lineno, file=None, line=None):
            if _ours(filename):
                print(f"{prefix}: warning: {message}", file=file or sys.stderr, flush=True)
            elif show_theirs is not None:
                show_theirs(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        if handler is not None:
            root.addHandler(handler)
        try:
            yield
        finally:
            if handler is not None:
                root.removeHandler(handler)


def wait_passively() -> None:
    """Idle OpenMP threads sleep rather than spin, in this command and the workers it starts.

    torch's intra-op threads (GNU OpenMP) busy-wait for the next parallel region by default. On a
    machine whose cores other programs keep busy, a spinning thread burns the time slice its partner
    needs to finish its half, and every operator then waits on the scheduler: that, not the sharing
    of the cores, made a busy laptop's demo many times slower (docs/demo.md, "On a busy machine").
    On a quiet machine a tiny model's step pays for waking the sleeping thread (it runs about as fast
    as on one thread): a bounded loss against an unbounded one. OpenMP reads the policy once, when
    torch loads, so it is set before a command imports torch; a policy the user set is kept (ACTIVE
    for a dedicated machine)."""
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def process_start() -> float:
    """When this process began, on time.perf_counter's clock: the interpreter's start and bertology's imports
    are the command's time too (Linux's /proc/self/stat; elsewhere, now)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime: clock ticks after boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.perf_counter()
    return time.perf_counter() - max(0.0, age)


def main(argv: list[str] | None = None) -> int:
    """The one error boundary: an expected failure (a bad option or input, a file that cannot be
    read or written) is one line naming the culprit and exit status 2; anything else keeps its
    traceback, because it is a bug."""
    # a job's time budget counts from the command's start: torch's import is seconds on a busy machine
    started = time.perf_counter() if argv is not None else process_start()
    wait_passively()
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(only=next((w for w in words if not w.startswith("-")), None))
    args = parser.parse_args(argv)
    args.started = started
    try:
        with plain_warnings(f"bertology {args.command}"):
            check_modes(parser, args)
            return int(args.func(args) or 0)
    except OSError as e:  # missing, unreadable or unwritable files, a full disk: the message names the file
        print(f"bertology {args.command}: error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        if not _raised_by_us(e):
            raise
        print(f"bertology {args.command}: error: {e}", file=sys.stderr)
        return 2
