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


def _pretrain(args) -> int:
    from .train.pretrain import PretrainOptions, pretrain

    options = PretrainOptions(
        family=args.family, corpus=args.corpus, out_dir=args.out, preset=args.preset, tokenizer=args.tokenizer,
        vocab_size=args.vocab_size, steps=args.steps, batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr,
        warmup=args.warmup, accumulation=args.accumulation, bf16=args.bf16, seed=args.seed, objective=args.objective,
        masking=args.masking, packing=args.packing, whole_word=args.whole_word, ngram=args.ngram,
        dupe_factor=args.dupe_factor, format=args.format, heldout=args.heldout, eval_every=args.eval_every,
        save_every=args.save_every, keep_last=args.keep_last, log_every=args.log_every, quiet=args.quiet,
        stop_at=args.stop_at,
    )
    summary = pretrain(options, resume=args.resume)
    final, evaluation = summary["final"], summary["eval"]
    print(f"{summary['architecture']} ({summary['parameters']:,} parameters, objective {summary['objective']}): "
          f"step {summary['steps']}, loss {final.get('loss', float('nan')):.4f}, "
          f"{final.get('tokens_per_s', 0):,.0f} tokens/s"
          + (f"; held-out MLM accuracy {evaluation['eval/mlm_accuracy']:.3f}, perplexity {evaluation['eval/perplexity']:.1f}"
             if evaluation else "")
          + (f", pair accuracy {evaluation['eval/pair_accuracy']:.3f}" if "eval/pair_accuracy" in evaluation else ""))
    if summary["interrupted"]:
        print(f"interrupted: checkpoint written; continue with --resume --out {args.out}")
        return 130
    print(f"model and tokenizer written to {args.out}")
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

    p = sub.add_parser("pretrain", help="pretrain BERT (MLM+NSP), RoBERTa (MLM, dynamic) or ALBERT (MLM+SOP) on text files")
    p.add_argument("--family", required=True, choices=["bert", "roberta", "albert"])
    p.add_argument("--preset", default="mini", help="tiny, mini, small, medium, base, large (default mini)")
    p.add_argument("--corpus", nargs="+", required=True, metavar="FILE",
                   help="text: one sentence per line, a blank line between documents (or --format raw)")
    p.add_argument("--tokenizer", help="tokenizer.json or directory; default: train the family's tokenizer on the corpus")
    p.add_argument("--train-tokenizer", action="store_true", help="train the family's tokenizer (the default without --tokenizer)")
    p.add_argument("--vocab-size", type=int, default=8000, help="for a trained tokenizer (default 8000)")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=32, help="global batch (over accumulation and ranks)")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--warmup", type=int, default=100, help="warmup steps, then linear decay to 0")
    p.add_argument("--accumulation", type=int, default=1)
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (AMX on recent Intel CPUs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--objective", choices=["mlm", "mlm+nsp", "mlm+sop"], help="default: the family's")
    p.add_argument("--masking", choices=["static", "dynamic"], help="default: static (BERT, ALBERT), dynamic (RoBERTa)")
    p.add_argument("--packing", choices=["pairs", "full-sentences", "doc-sentences"])
    p.add_argument("--whole-word", action="store_true", help="mask whole words (WordPiece ##, byte-level Ġ, Unigram ▁)")
    p.add_argument("--ngram", type=int, help="mask spans of up to N words, p(n) ∝ 1/n (ALBERT default 3)")
    p.add_argument("--dupe-factor", type=int, default=5, help="copies with different static masks")
    p.add_argument("--format", choices=["lines", "raw"], default="lines")
    p.add_argument("--heldout", type=float, default=0.05, help="fraction (or count ≥ 1) of documents held out for evaluation")
    p.add_argument("--eval-every", type=int)
    p.add_argument("--save-every", type=int)
    p.add_argument("--keep-last", type=int, default=2)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --out")
    p.add_argument("--stop-at", type=int, metavar="STEP", help="checkpoint and stop at STEP, as if interrupted")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_pretrain)

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
