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
        stop_at=args.stop_at, schedule=args.schedule, dropout=args.dropout, mlm_probability=args.mlm_probability,
        max_predictions=args.max_predictions, unigram_prior=args.unigram_prior,
    )
    summary = pretrain(options, resume=args.resume)
    final, evaluation = summary["final"], summary["eval"]
    print(f"{summary['architecture']} ({summary['parameters']:,} parameters, objective {summary['objective']}): "
          f"step {summary['steps']}, loss {final.get('loss', float('nan')):.4f}, "
          f"{final.get('tokens_per_s', 0):,.0f} tokens/s ({final.get('outside_forward_backward', 0):.0%} of the time "
          f"outside forward/backward)"
          + (f"; held-out MLM accuracy {evaluation['eval/mlm_accuracy']:.3f}, perplexity {evaluation['eval/perplexity']:.1f}"
             if evaluation else "")
          + (f", pair accuracy {evaluation['eval/pair_accuracy']:.3f}" if "eval/pair_accuracy" in evaluation else ""))
    if summary["interrupted"]:
        print(f"interrupted: checkpoint written; continue with --resume --out {args.out}")
        return 130
    print(f"model and tokenizer written to {args.out}")
    return 0


def _columns(args) -> dict[str, str]:
    names = ("text_column", "pair_column", "label_column")
    return {n: getattr(args, n) for n in names if getattr(args, n, None)}


def _numbers(text: str, kind, flag: str) -> list:
    try:
        return [kind(x) for x in text.split(",")]
    except ValueError:
        raise SystemExit(f"bertology: error: {flag} takes comma-separated numbers, got {text!r}") from None


def _finetune_grid(options, args) -> int:
    from .tasks.grid import finetune_grid

    if not (args.dev and args.test):
        raise SystemExit("bertology: error: --grid chooses on --dev and reports --test: give both")
    result = finetune_grid(options, args.test, _numbers(args.grid, float, "--grid"), _numbers(args.seeds, int, "--seeds"))
    print("| lr | seed | dev | test |\n|---|---|---|---|")
    for r in result.runs:
        print(f"| {r['lr']:g} | {r['seed']} | {r['dev']:.4f} | {r['test']:.4f} |")
    print(f"chosen lr {result.lr:g} (mean dev {result.metric} {result.dev_mean:.4f}): test {result.metric} "
          f"{result.test_mean:.4f} ± {result.test_std:.4f} over {len(args.seeds.split(','))} seeds; best run kept in {result.best_dir}")
    return 0


def _finetune(args) -> int:
    from .tasks.finetune import FinetuneOptions, finetune

    options = FinetuneOptions(
        model=args.model, task=args.task, train=args.train, dev=args.dev, out_dir=args.out, tokenizer=args.tokenizer,
        epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, max_length=args.max_length, stride=args.stride,
        warmup_ratio=args.warmup_ratio, bf16=args.bf16, seed=args.seed, columns=_columns(args), quiet=args.quiet,
        from_scratch=args.from_scratch, stop_at=args.stop_at,
    )
    if args.grid:
        return _finetune_grid(options, args)
    summary = finetune(options, resume=args.resume)
    if summary["interrupted"]:
        print(f"interrupted at step {summary['steps']}: checkpoint written; continue with --resume --out {args.out}")
        return 130
    dev = summary["dev"]
    print(f"{summary['architecture']} fine-tuned on {summary['train_examples']:,} examples for {summary['steps']} steps"
          + (f"; best dev (step {summary['best_step']}): " + ", ".join(f"{k} {v:.4f}" for k, v in dev.items()) if dev else ""))
    print(f"model written to {args.out}")
    return 0


def _evaluate(args) -> int:
    from .tasks.pipeline import Pipeline

    pipe = Pipeline.load(args.model)
    scores = pipe.evaluate(pipe.read(args.data, **_columns(args)))
    for k, v in scores.items():
        print(f"{k:<24}{v:.4f}")
    return 0


def _predict(args) -> int:
    from .tasks.pipeline import Pipeline

    pipe = Pipeline.load(args.model)
    if args.data:
        examples = pipe.read(args.data, **_columns(args))
    elif args.text:
        from .tasks.pipeline import to_example

        if pipe.task.name in ("pair", "qa", "choice") or args.pair:
            if pipe.task.name == "choice":
                items = [(args.text[0], args.text[1:])]
            else:
                items = [(t, args.pair) for t in args.text] if args.pair else [tuple(args.text[:2])]
        else:
            items = args.text
        examples = [to_example(pipe.task.name, x, i) for i, x in enumerate(items)]
    else:
        raise ValueError("give TEXT arguments or --data FILE")
    for example, prediction in zip(examples, pipe.predict_examples(examples)):
        shown = example.text if isinstance(example.text, str) else " ".join(example.text)
        print(f"{pipe.task.format_prediction(prediction)}\t{shown[:80]}")
    return 0


def _add_columns(p) -> None:
    p.add_argument("--text-column", help="column with the text (default: text)")
    p.add_argument("--pair-column", help="column with the second text, for pairs")
    p.add_argument("--label-column", help="column with the label (default: label)")


def _attention(args) -> int:
    from . import load
    from .tasks.finetune import load_tokenizer
    from .viz import write_attention

    model = load(args.model)
    tokenizer = load_tokenizer(args.model, args.tokenizer)
    aw = write_attention(args.out, model, tokenizer, args.text, args.pair, args.layer, args.head)
    print(f"{args.out}: {aw.num_layers} layers × {aw.num_heads} heads over {len(aw.tokens)} tokens: {' '.join(aw.tokens)}")
    return 0


def _demo(args) -> int:
    from .demo import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bertology",
        description="BERT, RoBERTa, ALBERT, DistilBERT and their tokenizers: pretrain, fine-tune, inspect, "
                    "and move checkpoints to and from Hugging Face layout.")
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
                   help="text: one sentence per line, a blank line between documents (or --format raw); .gz, .xz, .bz2 read as they are")
    p.add_argument("--tokenizer", help="tokenizer.json or directory; default: train the family's tokenizer on the corpus")
    p.add_argument("--train-tokenizer", action="store_true", help="train the family's tokenizer (the default without --tokenizer)")
    p.add_argument("--vocab-size", type=int, default=8000, help="for a trained tokenizer (default 8000)")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=32, help="global batch (over accumulation and ranks)")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--warmup", type=int, default=100, help="warmup steps, then linear decay to 0 (--schedule linear)")
    p.add_argument("--schedule", choices=["linear", "triangle"], default="linear",
                   help="linear: warmup then decay (BERT); triangle: from 25%% of --lr to the peak at 75%% of the steps, then to 0")
    p.add_argument("--dropout", type=float, help="dropout while pretraining (default: the config's 0.1; the saved config keeps it)")
    p.add_argument("--mlm-probability", type=float, default=0.15, help="share of tokens masked (default 0.15)")
    p.add_argument("--max-predictions", type=int, help="cap on masked tokens per sequence (default: seq-len × mlm-probability)")
    p.add_argument("--no-unigram-prior", dest="unigram_prior", action="store_false",
                   help="start the MLM output bias at zero instead of the corpus's log unigram distribution")
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

    p = sub.add_parser("finetune", help="fine-tune a pretrained directory (or a preset, from scratch) on a labelled task")
    p.add_argument("--model", required=True, metavar="DIR_OR_PRESET", help="a model directory, or e.g. bert-mini for random init")
    p.add_argument("--task", required=True, choices=["classify", "pair", "regress", "tag", "qa", "choice"])
    p.add_argument("--train", required=True, metavar="FILE", help="CSV / TSV / JSON lines, CoNLL (tag), SQuAD JSON (qa)")
    p.add_argument("--dev", metavar="FILE", help="evaluated each epoch; the best epoch is kept")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--tokenizer", help="default: the model directory's tokenizer.json")
    p.add_argument("--epochs", type=float, default=3.0)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--stride", type=int, default=64, help="overlap of QA context windows")
    p.add_argument("--warmup-ratio", type=float, default=0.1)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--from-scratch", action="store_true",
                   help="the model directory's architecture and tokenizer, randomly initialised (its random-init twin)")
    p.add_argument("--grid", metavar="LR,LR,…", help="fine-tune at each learning rate × --seeds, choose the rate on mean "
                   "dev score, report its test mean ± std (needs --dev and --test); --out gets grid.json and the chosen "
                   "rate's best run")
    p.add_argument("--seeds", default="0,1,2", metavar="S,S,…", help="seeds for --grid (default 0,1,2)")
    p.add_argument("--test", metavar="FILE", help="scored for every --grid run")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run in --out from its last checkpoint")
    p.add_argument("--stop-at", type=int, metavar="STEP", help="checkpoint and stop at STEP, as if interrupted")
    p.add_argument("--quiet", action="store_true")
    _add_columns(p)
    p.set_defaults(func=_finetune)

    p = sub.add_parser("evaluate", help="metrics of a fine-tuned model on a labelled file")
    p.add_argument("--model", required=True, metavar="DIR")
    p.add_argument("--data", required=True, metavar="FILE")
    _add_columns(p)
    p.set_defaults(func=_evaluate)

    p = sub.add_parser("predict", help="predictions of a fine-tuned model on texts or a file")
    p.add_argument("--model", required=True, metavar="DIR")
    p.add_argument("text", nargs="*", metavar="TEXT", help="texts (qa: QUESTION CONTEXT; choice: CONTEXT CHOICE…)")
    p.add_argument("--pair", help="second text for every TEXT (pair tasks)")
    p.add_argument("--data", metavar="FILE")
    _add_columns(p)
    p.set_defaults(func=_predict)

    p = sub.add_parser("attention", help="draw attention weights over a text's tokens (PNG grid or interactive HTML)")
    p.add_argument("--model", required=True, metavar="DIR", help="any directory bertology.load reads, with tokenizer.json")
    p.add_argument("--tokenizer", help="default: the model directory's tokenizer.json")
    p.add_argument("--text", required=True)
    p.add_argument("--pair")
    p.add_argument("--layer", type=int, help="default: the last layer (PNG)")
    p.add_argument("--head", type=int, help="one head instead of the grid of all heads (PNG)")
    p.add_argument("--out", required=True, metavar="FILE.png|FILE.html")
    p.set_defaults(func=_attention)

    p = sub.add_parser("demo", help="pretrain BERT, RoBERTa and ALBERT side by side, fine-tune each, report")
    p.add_argument("--out", default="runs/demo", metavar="DIR")
    p.add_argument("--quick", action="store_true", help="a smoke test in under 2 minutes")
    p.add_argument("--budget-minutes", type=float, default=10.0, help="scales the pretraining steps (default 10)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")
    p.add_argument("--fp32", action="store_true", help="no bf16 autocast even where the CPU has fast bf16")
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
    except (ValueError, FileNotFoundError, FileExistsError, KeyError) as e:
        print(f"bertology {args.command}: error: {e}", file=sys.stderr)
        return 2
