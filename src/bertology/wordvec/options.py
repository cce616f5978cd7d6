"""The options of `bertology wordvec train`, declared once for the command line and the Python API.
Defaults are gensim's Word2Vec defaults (CBOW, 100 dimensions, window 5, 5 negatives, min_count 5,
sample 1e-3, alpha 0.025 → 1e-4, 5 epochs, seed 1) and, for GloVe, those of GloVe's C tools
(window 15, x_max 100, power 0.75, eta 0.05, 25 iterations). Item and graph embeddings (--items,
--graph) train skip-gram by default; graphs take node2vec's defaults (walks of 80 nodes, 10 per
node, window 10, p = q = 1, every visited node kept)."""

from __future__ import annotations

from dataclasses import dataclass

from ..options import NON_NEGATIVE, POSITIVE, POSITIVE_NUMBER, Check, check_options, option
from ..tables import DEFAULT_TEXT_COLUMN

ALGORITHMS = ("cbow", "skipgram", "glove")
WALKS = ("node2vec", "deepwalk")
SAMPLERS = ("auto", "rejection", "alias")
SAMPLE = Check("in [0, 1)", lambda v: 0 <= v < 1)


@dataclass
class TrainOptions:
    corpus: list[str] = option(default_factory=list, help="UTF-8 text files, one sentence a line", cli=False)
    out: str | None = option(
        None,
        "write the vectors here (word2vec text format; .bin: binary); the command requires it, "
        "from Python None keeps them in memory only (train returns them)",
        metavar="FILE",
    )
    algorithm: str | None = option(
        None, "cbow, skipgram (word2vec) or glove (default cbow; skipgram with --items or --graph)", choices=ALGORITHMS
    )
    vector_size: int = option(100, "dimensions of the vectors", check=POSITIVE)
    window: int | None = option(
        None, "context words on each side (default 5; 15 for glove; 10 for --graph)", check=POSITIVE
    )
    min_count: int | None = option(None, "drop words seen fewer times (default 5; 1 for --graph)", check=POSITIVE)
    max_vocab_size: int | None = option(
        None, "prune rare words while counting when the table grows past this", check=POSITIVE
    )
    lowercase: bool = option(False, "lowercase the text before splitting it on whitespace")
    text_column: str = option(
        DEFAULT_TEXT_COLUMN,
        "the column of text of a Parquet file or a datasets directory (save_to_disk) "
        "in the corpus: each value a sentence (each of its lines, if it has several)",
        metavar="NAME",
    )
    tokenizer: str | None = option(
        None,
        "split the text into this tokenizer's pieces (tokenizer.json or its directory; "
        "no special tokens) instead of on whitespace: every vector is then keyed by a "
        "vocabulary piece, ready for `pretrain --init-embeddings`",
        metavar="TOKENIZER",
    )
    epochs: int | None = option(None, "passes over the corpus (default 5; 25 for glove)", check=POSITIVE)
    seed: int = option(1, "seed of the initial vectors, job order and sampling", check=NON_NEGATIVE)
    workers: int = option(3, "training threads", check=POSITIVE)
    # word2vec
    hs: bool = option(False, "hierarchical softmax (with --negative 0 for hierarchical softmax alone)")
    negative: int = option(5, "noise words per prediction (0: no negative sampling)", check=NON_NEGATIVE)
    ns_exponent: float = option(0.75, "noise distribution ∝ count^this")
    sample: float = option(1e-3, "subsampling threshold of frequent words (0: off)", check=SAMPLE)
    alpha: float = option(0.025, "initial learning rate (word2vec)", check=POSITIVE_NUMBER)
    min_alpha: float = option(1e-4, "final learning rate (word2vec)", check=NON_NEGATIVE)
    cbow_sum: bool = option(False, "CBOW sums the context vectors instead of averaging them")
    # GloVe
    x_max: float = option(100.0, "GloVe: co-occurrence count where the weight f(x) reaches 1", check=POSITIVE_NUMBER)
    power: float = option(0.75, "GloVe: f(x) = (x / x_max)^power below x_max", check=POSITIVE_NUMBER)
    eta: float = option(0.05, "GloVe: AdaGrad's initial learning rate", check=POSITIVE_NUMBER)
    # item and graph embeddings
    items: bool = option(
        False,
        "the files hold baskets or sessions, one a line, items separated by whitespace: "
        "item2vec (each item's context is the rest of its basket, order ignored)",
    )
    graph: bool = option(
        False,
        "the files are edge lists (source, target, optional weight; tab or space "
        "separated): random walks over the graph train node vectors (DeepWalk, node2vec)",
    )
    directed: bool = option(False, "--graph: the edges are directed (walks follow them source → target)")
    walk: str = option(
        "node2vec",
        "--graph: node2vec (second-order walks biased by --p and --q) or deepwalk "
        "(uniform first-order walks; node2vec with p = q = 1 draws the same)",
        choices=WALKS,
    )
    p: float = option(1.0, "--graph: node2vec's return parameter (weight 1/p to step back)", check=POSITIVE_NUMBER)
    q: float = option(1.0, "--graph: node2vec's in-out parameter (weight 1/q to move away)", check=POSITIVE_NUMBER)
    walk_length: int = option(80, "--graph: nodes per walk", check=Check("in [2, 10000]", lambda v: 2 <= v <= 10_000))
    num_walks: int = option(10, "--graph: walks started from each node", check=POSITIVE)
    sampler: str = option(
        "auto",
        "--graph: how node2vec draws a step: rejection (a first-order draw kept with "
        "probability bias / max bias), alias (a table per edge: Σ degree² entries) "
        "or auto (rejection, measured faster on the Debian graph)",
        choices=SAMPLERS,
    )
    binary: bool = option(False, "write the binary word2vec format (also chosen by a .bin name)")
    quiet: bool = option(False, "no progress bar, no summary")

    def __post_init__(self):
        check_options(self)
        if self.items and self.graph:
            raise ValueError("--items with --graph: the files are baskets or edge lists, not both")
        embeds = "--items" if self.items else "--graph" if self.graph else None
        if self.algorithm is None:
            self.algorithm = "skipgram" if embeds else "cbow"
        if self.min_count is None:
            self.min_count = 1 if self.graph else 5
        if embeds and self.algorithm == "glove":
            raise ValueError(f"--algorithm glove with {embeds}: item and graph embeddings train word2vec")
        if embeds and self.tokenizer is not None:
            raise ValueError(f"--tokenizer with {embeds}: items and nodes are names, not text")
        if self.items and self.window is not None:
            raise ValueError("--window with --items: an item's context is the whole of its basket")
        if self.algorithm != "glove" and self.negative == 0 and not self.hs:
            raise ValueError(
                "--negative 0 without --hs: word2vec needs negative sampling, hierarchical softmax or both"
            )
        if self.tokenizer is not None and self.lowercase:
            raise ValueError(
                "--lowercase with --tokenizer: the tokenizer's own normalizer decides the case of its pieces"
            )

    @property
    def window_size(self) -> int:
        return self.window or (15 if self.algorithm == "glove" else 10 if self.graph else 5)

    @property
    def epoch_count(self) -> int:
        return self.epochs or (25 if self.algorithm == "glove" else 5)
