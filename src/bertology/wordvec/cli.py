"""`bertology wordvec train|eval|similar|plot`: argument parsing for the word-vector commands.

    bertology wordvec train --algorithm skipgram --lowercase --out vectors.txt corpus.txt more.txt.xz
    bertology wordvec train --tokenizer tokenizer.json --out pieces.txt corpus.txt   # keyed by vocabulary pieces
    bertology wordvec eval vectors.txt                        # gensim's analogy and similarity sets
    bertology wordvec similar vectors.txt paris --topn 5
    bertology wordvec similar vectors.txt king woman --negative man   # king − man + woman
    bertology wordvec plot vectors.txt --out capitals.png
    bertology wordvec train --items --out items.txt baskets.txt          # item2vec: one basket a line
    bertology wordvec train --graph --p 1 --q 0.5 --out nodes.txt edges.tsv   # node2vec on an edge list
    bertology wordvec similar nodes.txt libc6 --topn 5                   # node vectors answer as word vectors do

Nothing heavy is imported here: numba, matplotlib and the trainers load inside the commands.
"""

from __future__ import annotations

import importlib.util
import os

from ..options import add_arguments, from_args
from .options import TrainOptions


def _train(args) -> int:
    from .train import train

    options = from_args(TrainOptions, args, corpus=args.corpus)
    _, s = train(options, args.sentence_ids)
    if not options.quiet:
        speed = (
            f"{s['words_per_s']:,.0f} words/s"
            if "words_per_s" in s
            else f"{s['cooccurrences']:,} co-occurrences counted at {s['count_words_per_s']:,.0f} words/s, "
            f"final cost {s['cost'][-1]:.4f}"
        )
        unit = "pieces" if s["tokenizer"] else "items" if s["items"] else "nodes" if s["graph"] else "words"
        if s["graph"]:
            print(
                f"{s['walk']}: {s['nodes']:,} nodes, {s['edges']:,} edges ({'directed' if s['directed'] else 'undirected'}; "
                f"{s['self_loops']:,} self-loops dropped, {s['duplicates']:,} duplicate edges merged); {s['walks']:,} walks, "
                f"{s['walk_nodes']:,} steps in {s['walk_seconds']:.1f} s ({s['sampler']} sampling)"
                + (
                    f"; {len(s['missing']):,} nodes no walk visits have no vector: {', '.join(s['missing'][:5])}"
                    + (" …" if len(s["missing"]) > 5 else "")
                    if s["missing"]
                    else ""
                )
            )
        print(
            f"{s['algorithm']}: {s['vocabulary']:,} {unit} in the vocabulary, {s['corpus_words']:,} in the corpus; "
            f"trained in {s['seconds']:.1f} s ({speed})" + (f"; vectors written to {s['out']}" if s["out"] else "")
        )
    return 0


def gensim_test_data() -> str | None:
    """gensim's test_data folder (questions-words.txt, wordsim353.tsv, simlex999.txt), if gensim is installed."""
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = os.path.join(list(spec.submodule_search_locations)[0], "test", "test_data")
    return folder if os.path.isdir(folder) else None


def _eval(args) -> int:
    from .evaluate import evaluate_analogies, evaluate_pairs
    from .vectors import KeyedVectors

    analogies, pairs = args.analogies, args.pairs
    if analogies is None and pairs is None:
        data = gensim_test_data()
        if data is None:
            raise ValueError(
                "give --analogies FILE and/or --pairs FILE… (gensim's test data, the default, is not installed)"
            )
        analogies = os.path.join(data, "questions-words.txt")
        pairs = [os.path.join(data, "wordsim353.tsv"), os.path.join(data, "simlex999.txt")]
    kv = KeyedVectors.load(args.vectors)
    print(f"{args.vectors}: {len(kv):,} words × {kv.vector_size}")
    if analogies:
        r = evaluate_analogies(kv, analogies, args.restrict_vocab)
        sem, syn = r.part(semantic=True), r.part(semantic=False)
        print(
            f"analogies {os.path.basename(analogies)}: {r.accuracy:.4f} ({r.correct}/{r.asked}); semantic "
            f"{sem[0] / max(sem[1], 1):.4f} ({sem[0]}/{sem[1]}), syntactic {syn[0] / max(syn[1], 1):.4f} ({syn[0]}/{syn[1]}); "
            f"out of vocabulary {r.oov_ratio:.1%}"
            + (f"; {r.skipped_lines} malformed lines skipped" if r.skipped_lines else "")
        )
    for path in pairs or []:
        p = evaluate_pairs(kv, path, args.restrict_vocab)
        print(
            f"pairs {os.path.basename(path)}: Spearman {p.spearman:.4f}, Pearson {p.pearson:.4f} over {p.pairs} pairs; "
            f"out of vocabulary {p.oov_ratio:.1%}"
            + (f"; {p.skipped_lines} malformed lines skipped" if p.skipped_lines else "")
        )
    return 0


def _similar(args) -> int:
    from .vectors import KeyedVectors

    kv = KeyedVectors.load(args.vectors)
    for w in [*args.words, *args.negative]:
        if w not in kv:
            raise ValueError(f"{args.vectors}: word {w!r} is not in the vocabulary ({len(kv):,} words)")
    for word, score in kv.most_similar(args.words, args.negative, topn=args.topn):
        print(f"{score:.4f}\t{word}")
    return 0


def _plot(args) -> int:
    from .plot import COUNTRIES_CAPITALS, plot_pairs
    from .vectors import KeyedVectors

    pairs = COUNTRIES_CAPITALS
    if args.pairs:
        pairs = []
        for item in args.pairs.split(","):
            a, sep, b = item.partition(":")
            if not (sep and a and b):
                raise ValueError(f"--pairs {args.pairs!r}: {item!r} is not WORD:WORD")
            pairs.append((a, b))
    kv = KeyedVectors.load(args.vectors)
    drawn = plot_pairs(kv, args.out, pairs)
    print(
        f"{args.out}: {len(drawn)} pairs drawn"
        + (f" ({len(pairs) - len(drawn)} not in the vocabulary)" if len(drawn) < len(pairs) else "")
    )
    return 0


def register(subparsers, sentence_ids=None) -> None:
    """Add the `wordvec` command (train, eval, similar, plot) to a parent's subparsers; `sentence_ids` reads a
    text file's pieces for `train --tokenizer` (train.train's)."""
    p = subparsers.add_parser("wordvec", help="train word2vec / GloVe vectors, evaluate them, query neighbours")
    sub = p.add_subparsers(dest="wordvec_command", required=True)

    t = sub.add_parser(
        "train",
        help="skip-gram / CBOW (negative sampling, hierarchical softmax) or GloVe on text files; "
        "item2vec on baskets (--items); DeepWalk / node2vec on edge lists (--graph)",
    )
    t.add_argument(
        "corpus",
        nargs="+",
        metavar="FILE",
        help="UTF-8 text, one sentence a line (.gz, .xz, .bz2 read as "
        "such; Parquet or a datasets directory: --text-column's "
        "values); "
        "with --items one basket a line; with --graph an edge list",
    )
    # --out is required here (the Python API may keep the vectors in memory): minutes of training
    # with nowhere to write the result would be lost
    t.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="write the vectors here (word2vec text format; .bin: binary); required",
    )
    add_arguments(t, TrainOptions, skip=("out",))
    t.set_defaults(func=_train, sentence_ids=sentence_ids)

    e = sub.add_parser("eval", help="analogy accuracy and word-pair Spearman with gensim's protocol")
    e.add_argument("vectors", metavar="VECTORS", help="word2vec text file (.bin: binary)")
    e.add_argument("--analogies", metavar="FILE", help="questions-words format (default: gensim's questions-words.txt)")
    e.add_argument(
        "--pairs", nargs="+", metavar="FILE", help="word-pair files (default: gensim's wordsim353.tsv, simlex999.txt)"
    )
    e.add_argument(
        "--restrict-vocab",
        type=int,
        default=300_000,
        metavar="N",
        help="only the N most frequent words answer or are asked about (default 300000, as gensim)",
    )
    e.set_defaults(func=_eval)

    s = sub.add_parser("similar", help="nearest words by cosine (several words: their mean; --negative: subtracted)")
    s.add_argument("vectors", metavar="VECTORS")
    s.add_argument("words", nargs="+", metavar="WORD")
    s.add_argument("--negative", nargs="+", default=[], metavar="WORD")
    s.add_argument("--topn", type=int, default=10, metavar="N")
    s.set_defaults(func=_similar)

    g = sub.add_parser("plot", help="PNG of a 2-D PCA projection of word pairs (default: countries and capitals)")
    g.add_argument("vectors", metavar="VECTORS")
    g.add_argument("--out", required=True, metavar="FILE.png")
    g.add_argument("--pairs", metavar="A:B,C:D,…", help="word pairs to draw (default: 16 countries and their capitals)")
    g.set_defaults(func=_plot)
