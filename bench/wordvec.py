"""word2vec speed and quality, bertology against gensim in the same run, on the same tokens.

    python bench/wordvec.py                      # every shipped corpus (~4.5 M words), cbow + skipgram + glove
    python bench/wordvec.py --max-words 1000000 --models skipgram

Corpus: the text corpora in gensim's test_data (lee_background.cor, lee.cor, crime-and-punishment.txt,
pang_lee_polarity.cor, head500.noblanks.cor), data/wiki.txt and data/debian-descriptions, lowercased
and cut into words by one regex; every line is a sentence. Both implementations get the same list of
sentences, the same hyperparameters (gensim's defaults: 100 dimensions, window 5, 5 negatives,
min_count 5, sample 1e-3, alpha 0.025 → 1e-4, 5 epochs) and the same number of worker threads.
words/s = corpus words × epochs / seconds of training (vocabulary building excluded for both).
Quality: questions-words analogies (semantic / syntactic), wordsim353 and simlex999 Spearman, all
with gensim's protocol (bertology.wordvec.evaluate, equal to gensim's own functions: tested).
"""

from __future__ import annotations

import argparse
import lzma
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bertology.hardware import cpu_summary  # noqa: E402
from bertology.wordvec.corpus import Corpus  # noqa: E402
from bertology.wordvec.evaluate import evaluate_analogies, evaluate_pairs  # noqa: E402
from bertology.wordvec.glove import glove  # noqa: E402
from bertology.wordvec.options import TrainOptions  # noqa: E402
from bertology.wordvec.vectors import KeyedVectors  # noqa: E402
from bertology.wordvec.vocab import Vocab  # noqa: E402
from bertology.wordvec.word2vec import word2vec  # noqa: E402

WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def test_data() -> Path:
    import gensim

    return Path(gensim.__file__).parent / "test" / "test_data"


def corpus_files() -> list[Path]:
    t = test_data()
    return [
        t / "lee_background.cor",
        t / "lee.cor",
        t / "crime-and-punishment.txt",
        t / "pang_lee_polarity.cor",
        t / "head500.noblanks.cor",
        ROOT / "data" / "wiki.txt",
        ROOT / "data" / "debian-descriptions" / "descriptions.txt.xz",
    ]


def read_sentences(max_words: int | None) -> list[list[str]]:
    sentences, words = [], 0
    for path in corpus_files():
        opener = lzma.open if path.suffix == ".xz" else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                tokens = WORD.findall(line.lower())
                if tokens:
                    sentences.append(tokens)
                    words += len(tokens)
                    if max_words and words >= max_words:
                        return sentences
    return sentences


def quality(kv: KeyedVectors) -> dict:
    t = test_data()
    a = evaluate_analogies(kv, t / "questions-words.txt")
    sem, syn = a.part(semantic=True), a.part(semantic=False)
    return {
        "analogy": a.accuracy,
        "semantic": sem[0] / max(sem[1], 1),
        "syntactic": syn[0] / max(syn[1], 1),
        "asked": a.asked,
        "ws353": evaluate_pairs(kv, t / "wordsim353.tsv").spearman,
        "simlex": evaluate_pairs(kv, t / "simlex999.txt").spearman,
    }


def run_gensim(sentences, words: int, model: str, args) -> tuple[float, KeyedVectors]:
    from gensim.models import Word2Vec

    w2v = Word2Vec(
        vector_size=args.size,
        window=5,
        min_count=5,
        sample=1e-3,
        negative=5,
        hs=0,
        sg=int(model == "skipgram"),
        workers=args.workers,
        epochs=args.epochs,
        seed=args.seed,
    )
    w2v.build_vocab(sentences)
    start = time.perf_counter()
    w2v.train(sentences, total_examples=len(sentences), epochs=args.epochs)
    seconds = time.perf_counter() - start
    kv = KeyedVectors(list(w2v.wv.index_to_key), w2v.wv.vectors)
    return words * args.epochs / seconds, kv


def run_ours(sentences, words: int, model: str, args) -> tuple[float, KeyedVectors]:
    vocab = Vocab.build(sentences, min_count=5)
    corpus = Corpus.encode(sentences, vocab)
    options = TrainOptions(
        algorithm=model, vector_size=args.size, workers=args.workers, epochs=args.epochs, seed=args.seed
    )
    kv, stats = word2vec(corpus, vocab, options, np.random.default_rng(args.seed))
    return stats["words_per_s"], kv


def warm_up(args) -> None:
    """Load (or compile) numba's kernels and gensim's extension once, outside the timings."""
    tiny = [["a", "b", "c", "d"] * 5] * 20
    for model in ("cbow", "skipgram"):
        run_ours(tiny, 400, model, argparse.Namespace(**{**vars(args), "epochs": 1}))
    vocab = Vocab.build(tiny, min_count=1)
    glove(
        Corpus.encode(tiny, vocab),
        vocab,
        TrainOptions(algorithm="glove", epochs=1, workers=1),
        np.random.default_rng(0),
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", default=["cbow", "skipgram", "glove"], choices=["cbow", "skipgram", "glove"])
    p.add_argument("--max-words", type=int, default=None, help="use only the first N words of the corpus")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--glove-epochs", type=int, default=15, help="GloVe iterations (its demo's 15)")
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeats", type=int, default=1, help="time each word2vec model this many times, alternating")
    args = p.parse_args()

    print(f"CPU: {cpu_summary()}")
    start = time.perf_counter()
    sentences = read_sentences(args.max_words)
    words = sum(map(len, sentences))
    print(
        f"corpus: {words:,} words in {len(sentences):,} lines, read and tokenised in {time.perf_counter() - start:.1f} s; "
        f"{args.workers} workers, {args.epochs} epochs, {args.size} dimensions",
        flush=True,
    )
    warm_up(args)
    rows = []
    for model in [m for m in args.models if m != "glove"]:
        speeds = {"gensim": [], "bertology": []}
        kvs = {}
        for _ in range(args.repeats):
            for name, fn in (("gensim", run_gensim), ("bertology", run_ours)):
                speed, kvs[name] = fn(sentences, words, model, args)
                speeds[name].append(speed)
                print(f"  {model} {name}: {speed:,.0f} words/s", flush=True)
        for name in ("gensim", "bertology"):
            best = max(speeds[name])
            rows.append((f"{model} (negative 5)", name, best, best / max(speeds["gensim"]), quality(kvs[name])))
    if "glove" in args.models:
        vocab = Vocab.build(sentences, min_count=5)
        corpus = Corpus.encode(sentences, vocab)
        options = TrainOptions(
            algorithm="glove", vector_size=args.size, workers=args.workers, epochs=args.glove_epochs, seed=args.seed
        )
        kv, stats = glove(corpus, vocab, options, np.random.default_rng(args.seed))
        print(
            f"  glove: {stats['cooccurrences']:,} co-occurrences (window 15) counted in {stats['count_seconds']:.1f} s "
            f"({stats['count_words_per_s']:,.0f} words/s); {args.glove_epochs} AdaGrad epochs in {stats['seconds']:.1f} s "
            f"({stats['seconds'] / args.glove_epochs:.2f} s each), final cost {stats['cost'][-1]:.4f}",
            flush=True,
        )
        rows.append((f"glove ({args.glove_epochs} epochs)", "bertology", None, None, quality(kv)))

    print("\n| model | implementation | words/s | × gensim | analogy (sem / syn) | wordsim353 ρ | simlex999 ρ |")
    print("|---|---|---|---|---|---|---|")
    for model, name, speed, ratio, q in rows:
        print(
            f"| {model} | {name} | {f'{speed:,.0f}' if speed else '–'} | {f'{ratio:.2f}' if ratio else '–'} | "
            f"{q['analogy']:.3f} ({q['semantic']:.3f} / {q['syntactic']:.3f}) | {q['ws353']:.3f} | {q['simlex']:.3f} |"
        )
    print(
        "\nanalogy questions asked (all four words in the vocabulary): "
        + ", ".join(f"{m} {n} {q['asked']}" for m, n, _, _, q in rows)
    )


if __name__ == "__main__":
    main()
