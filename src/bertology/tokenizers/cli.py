"""`bertology tokenizer train|encode`: argument parsing for the tokenizer commands, nothing else.

bertology tokenizer train --family bert --vocab-size 30000 --out tok/ corpus.txt more.txt
bertology tokenizer encode --tokenizer tok/ "Hello, world!" --pair "Second segment"
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ..io import CorpusError, corpus_files, corpus_lines, stdin_lines
from ..tables import DEFAULT_TEXT_COLUMN, table_format
from .tokenizer import Tokenizer
from .training import ALGORITHMS, FAMILIES, train


def _train(args) -> int:
    specials = None
    if args.special_tokens is not None:
        specials = [t for t in args.special_tokens.split(",") if t]
    start = time.perf_counter()
    files = corpus_files(args.files, lambda note: print(note, file=sys.stderr))
    errors = "replace" if args.replace_errors else "strict"
    # a Parquet file or a datasets directory: its text column's lines, read in one stream
    source = (
        {"lines": corpus_lines(files, args.text_column, errors)}
        if any(table_format(f) for f in files)
        else {"files": files}
    )
    try:
        tok = train(
            **source,
            algorithm=args.algorithm,
            vocab_size=args.vocab_size,
            min_frequency=args.min_frequency,
            special_tokens=specials,
            family=args.family,
            show_progress=not args.quiet and sys.stderr.isatty(),
            errors=errors,
            **({"criterion": args.criterion} if args.criterion else {}),
        )
    except CorpusError as e:
        if not e.invalid_utf8:
            raise
        raise CorpusError(f"{e}, or pass --replace-errors to read such bytes as U+FFFD") from None
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    path = tok.save(out / "tokenizer.json")  # atomic: temporary file + rename
    if not args.quiet:
        print(f"trained {tok.vocab_size} tokens in {time.perf_counter() - start:.1f}s -> {path}")
    return 0


def _encode(args) -> int:
    tok = Tokenizer.load(args.tokenizer)
    tok.no_padding()  # a tokenizer.json that pads every text to a fixed length would print pads it never needed
    texts = [args.text] if args.text is not None else stdin_lines("tokenizer encode")
    for n, text in enumerate(texts):
        enc = tok.encode(text, args.pair)
        if args.json:
            fields = {"text": text, **({"pair": args.pair} if args.pair is not None else {})}
            fields.update(tokens=enc.tokens, ids=enc.ids, offsets=[list(o) for o in enc.offsets])
            print(
                json.dumps(
                    {**fields, **({"type_ids": enc.type_ids} if args.pair is not None else {})}, ensure_ascii=False
                )
            )
            continue
        if n:
            print()  # a blank line between texts
        print("tokens: ", json.dumps(enc.tokens, ensure_ascii=False))
        print("ids:    ", json.dumps(enc.ids))
        print("offsets:", json.dumps([list(o) for o in enc.offsets]))
        if args.pair is not None:
            print("type_ids:", json.dumps(enc.type_ids))
    return 0


def register(subparsers) -> None:
    """Add the `tokenizer` command (with `train` and `encode`) to a parent's subparsers."""
    p = subparsers.add_parser("tokenizer", help="train a subword tokenizer or encode text with one")
    sub = p.add_subparsers(dest="tokenizer_command", required=True)

    t = sub.add_parser("train", help="train BPE / byte-level BPE / WordPiece / Unigram on text files")
    t.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="UTF-8 text files, read line by line (.gz, .xz, .bz2 decompressed on the fly); a folder: its text, "
        "Parquet and datasets files, recursively in name order (other files skipped, and said); a Parquet file "
        "or a datasets directory (save_to_disk): the lines of --text-column",
    )
    t.add_argument("--algorithm", choices=ALGORITHMS, default=None, help="default: the family's, or wordpiece")
    t.add_argument("--family", choices=FAMILIES, default=None, help="pipeline and special tokens of a model family")
    t.add_argument("--vocab-size", type=int, default=30000)
    t.add_argument("--min-frequency", type=int, default=2)
    t.add_argument(
        "--special-tokens", default=None, metavar="TOK1,TOK2,...", help="comma-separated; default: the family's"
    )
    t.add_argument(
        "--criterion",
        choices=["likelihood", "frequency"],
        default=None,
        help="WordPiece merge rule: likelihood (the definition, default) or frequency (Hugging Face's)",
    )
    t.add_argument(
        "--text-column",
        default=DEFAULT_TEXT_COLUMN,
        metavar="NAME",
        help="the column of text in a Parquet file or a datasets directory (default: text)",
    )
    t.add_argument("--replace-errors", action="store_true", help="read undecodable bytes as U+FFFD instead of failing")
    t.add_argument("--out", required=True, metavar="DIR", help="writes DIR/tokenizer.json")
    t.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
    t.set_defaults(func=_train)

    e = sub.add_parser("encode", help="print tokens, ids and offsets of a text")
    e.add_argument(
        "--tokenizer",
        required=True,
        metavar="DIR_OR_FILE",
        help="tokenizer.json, a directory holding one, vocab.txt, ...",
    )
    e.add_argument("text", nargs="?", help="default: the lines piped to stdin, each encoded")
    e.add_argument("--pair", default=None, metavar="TEXT", help="second segment")
    e.add_argument("--json", action="store_true", help="one JSON object a text: tokens, ids, offsets (type ids)")
    e.set_defaults(func=_encode)
