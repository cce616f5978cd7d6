"""The options of `bertology wordvec train`, declared once for the command line and the Python API.
Defaults are gensim's Word2Vec defaults (CBOW, 100 dimensions, window 5, 5 negatives, min_count 5,
sample 1e-3, alpha 0.025 → 1e-4, 5 epochs, seed 1) and, for GloVe, those of GloVe's C tools
(window 15, x_max 100, power 0.75, eta 0.05, 25 iterations)."""
from __future__ import annotations

from dataclasses import dataclass

from ..options import NON_NEGATIVE, POSITIVE, POSITIVE_NUMBER, Check, check_options, option

ALGORITHMS = ("cbow", "skipgram", "glove")
SAMPLE = Check("in [0, 1)", lambda v: 0 <= v < 1)


@dataclass
class TrainOptions:
    corpus: list[str] = option(default_factory=list, help="UTF-8 text files, one sentence a line", cli=False)
    out: str | None = option(None, "write the vectors here (word2vec text format; .bin: binary)", metavar="FILE")
    algorithm: str = option("cbow", "cbow, skipgram (word2vec) or glove", choices=ALGORITHMS)
    vector_size: int = option(100, "dimensions of the vectors", check=POSITIVE)
    window: int | None = option(None, "context words on each side (default 5; 15 for glove)", check=POSITIVE)
    min_count: int = option(5, "drop words seen fewer times", check=POSITIVE)
    max_vocab_size: int | None = option(None, "prune rare words while counting when the table grows past this",
                                        check=POSITIVE)
    lowercase: bool = option(False, "lowercase the text before splitting it on whitespace")
    tokenizer: str | None = option(None, "split the text into this tokenizer's pieces (tokenizer.json or its directory; "
                                         "no special tokens) instead of on whitespace: every vector is then keyed by a "
                                         "vocabulary piece, ready for `pretrain --init-embeddings`", metavar="TOKENIZER")
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
    binary: bool = option(False, "write the binary word2vec format (also chosen by a .bin name)")
    quiet: bool = option(False, "no progress bar, no summary")

    def __post_init__(self):
        check_options(self)
        if self.algorithm != "glove" and self.negative == 0 and not self.hs:
            raise ValueError("--negative 0 without --hs: word2vec needs negative sampling, hierarchical softmax or both")
        if self.tokenizer is not None and self.lowercase:
            raise ValueError("--lowercase with --tokenizer: the tokenizer's own normalizer decides the case of its pieces")

    @property
    def window_size(self) -> int:
        return self.window or (15 if self.algorithm == "glove" else 5)

    @property
    def epoch_count(self) -> int:
        return self.epochs or (25 if self.algorithm == "glove" else 5)
