"""`bertology <command>`: parse arguments, call the library, print. Nothing else lives here."""
from __future__ import annotations

import argparse
import sys


def _params(args) -> int:
    from .models.params import count, format_summary, format_table, resolve_config

    counts = []
    for spec in args.models:
        name, config = resolve_config(spec)
        counts.append(count(config, name, args.seq_length))
        print(format_table(counts[-1]), end="\n\n")
    if len(counts) > 1:
        print(format_summary(counts))
    return 0


def _demo(args) -> int:
    from .demo import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bertology", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("params", help="parameter table and forward FLOPs per token of presets or configs")
    p.add_argument("models", nargs="+", metavar="PRESET_OR_CONFIG",
                   help="e.g. bert-base, albert-large, roberta-large, distilbert-base, or a config.json / model dir")
    p.add_argument("--seq-length", type=int, default=128, help="sequence length for the attention FLOPs (default 128)")
    p.set_defaults(func=_params)

    p = sub.add_parser("demo", help="the main job on the data that ships with bertology")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_demo)

    try:
        from .tokenizers import cli as tokenizer_cli
    except ImportError:  # the tokenizer package is built in parallel; its command appears once it lands
        tokenizer_cli = None
    if tokenizer_cli is not None and hasattr(tokenizer_cli, "register"):
        tokenizer_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as e:
        print(f"bertology {args.command}: error: {e}", file=sys.stderr)
        return 2
