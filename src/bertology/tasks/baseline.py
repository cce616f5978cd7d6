"""A bag-of-words baseline for text classification: what a fine-tuned encoder has to beat.

Word unigrams + bigrams (lowercased \\w+ words), TF-IDF weights (smoothed idf, sublinear tf, rows
L2-normalised), and a multinomial logistic regression with an L2 penalty, trained in torch on the
sparse feature matrix (full-batch L-BFGS, or mini-batch Adam).

    model = BagOfWordsBaseline(seed=0).fit(train_examples)     # Examples with .text (and .pair), .label
    model.predict(dev_examples)                                # [Prediction(label, probability, {...})]

    bertology baseline data/debian-sections/train.tsv data/debian-sections/dev.tsv data/debian-sections/test.tsv

Deterministic: L-BFGS starts from zeros and sees the whole batch; Adam shuffles with a generator
seeded by `seed`.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

import regex
import torch

from . import metrics as M
from .base import Example
from .classification import Prediction

_WORD = regex.compile(r"\w+")


def words(text: str) -> list[str]:
    """Lowercased word tokens (letters, digits, underscore runs).

    >>> words("Real-time strategy game (data files)")
    ['real', 'time', 'strategy', 'game', 'data', 'files']
    """
    return _WORD.findall(text.lower())


def ngrams(tokens: Sequence[str], n_max: int = 2, prefix: str = "") -> list[str]:
    """All n-grams for n = 1..n_max, joined by spaces (`prefix` keeps a pair's features apart).

    >>> ngrams(["binary", "file", "editor"])
    ['binary', 'file', 'editor', 'binary file', 'file editor']
    """
    return [prefix + " ".join(tokens[i : i + n]) for n in range(1, n_max + 1) for i in range(len(tokens) - n + 1)]


def smooth_idf(df: int, n_docs: int) -> float:
    """ln((1 + N) / (1 + df)) + 1: as if one extra document held every term; never 0, so a term
    in every document still counts a little.

    >>> round(smooth_idf(1, 3), 4), smooth_idf(3, 3)
    (1.6931, 1.0)
    """
    return math.log((1 + n_docs) / (1 + df)) + 1


def _mm(X: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    return torch.sparse.mm(X, W) if X.is_sparse else X @ W


def fit_logistic_regression(
    X: torch.Tensor,
    y: torch.Tensor,
    n_classes: int,
    l2: float,
    optimizer: str = "lbfgs",
    max_iter: int = 300,
    epochs: int = 30,
    lr: float = 0.05,
    batch_size: int = 64,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Multinomial logistic regression on features X (N, F), sparse or dense, and labels y (N,):
    the weights (F, C) and bias (C,) minimising mean cross-entropy + (l2 / 2)·|W|² (the bias
    unpenalised), by full-batch L-BFGS from zeros or by mini-batch Adam shuffled by `seed`."""
    W = torch.zeros(X.shape[1], n_classes, requires_grad=True)
    b = torch.zeros(n_classes, requires_grad=True)

    def loss_of(Xb, yb):
        return torch.nn.functional.cross_entropy(_mm(Xb, W) + b, yb) + 0.5 * l2 * (W * W).sum()

    if optimizer == "lbfgs":
        opt = torch.optim.LBFGS(
            [W, b],
            lr=1,
            max_iter=max_iter,
            tolerance_grad=1e-6,
            tolerance_change=1e-9,
            history_size=20,
            line_search_fn="strong_wolfe",
        )

        def closure():
            opt.zero_grad()
            loss = loss_of(X, y)
            loss.backward()
            return loss

        opt.step(closure)
    else:
        opt = torch.optim.Adam([W, b], lr=lr)
        g = torch.Generator().manual_seed(seed)
        Xd = X if not X.is_sparse else X.to_dense() if X.shape[0] * X.shape[1] <= 50_000_000 else None
        for _ in range(epochs):
            for idx in torch.randperm(len(y), generator=g).split(batch_size):
                Xb = Xd[idx] if Xd is not None else X.index_select(0, idx)
                opt.zero_grad()
                loss_of(Xb.to_sparse() if X.is_sparse else Xb, y[idx]).backward()
                opt.step()
    return W.detach(), b.detach()


def leave_one_out_accuracy(X: torch.Tensor, y: torch.Tensor, l2: float = 1e-2) -> float:
    """Accuracy of `fit_logistic_regression` on X (N, F), y (N,), each item predicted by a model
    fitted on all the others: for sets too small to split (34 karate-club members, say).

    >>> leave_one_out_accuracy(torch.tensor([[1.0, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]]), torch.tensor([0, 0, 1, 1]))
    1.0
    """
    right = 0
    for i in range(len(y)):
        keep = torch.arange(len(y)) != i
        W, b = fit_logistic_regression(X[keep], y[keep], int(y.max()) + 1, l2)
        right += int((X[i] @ W + b).argmax() == y[i])
    return right / len(y)


class LinearBaseline:
    """Logistic regression on a fixed featurisation of the examples (`features`, given by a
    subclass): label checks, fitting, predict and score shared by the baselines."""

    def __init__(self, l2: float, optimizer: str, max_iter: int, epochs: int, lr: float, batch_size: int, seed: int):
        if optimizer not in ("lbfgs", "adam"):
            raise ValueError(f"optimizer must be 'lbfgs' or 'adam', got {optimizer!r}")
        self.l2, self.optimizer = l2, optimizer
        self.max_iter, self.epochs, self.lr, self.batch_size, self.seed = max_iter, epochs, lr, batch_size, seed
        self.labels: list[str] = []
        self.weight: torch.Tensor | None = None  # (F, C)
        self.bias: torch.Tensor | None = None  # (C,)

    def features(self, examples: Sequence[Example]) -> torch.Tensor:
        """(N, F) features, sparse or dense."""
        raise NotImplementedError

    def learn_features(self, examples: Sequence[Example]) -> None:
        """Whatever the featurisation learns from the training examples (a vocabulary, say); none by default."""

    def fit(self, examples: Sequence[Example]) -> "LinearBaseline":
        for e in examples:
            if e.label is None:
                raise ValueError(f"{e.where}: training example without a label")
        self.labels = sorted({e.label for e in examples})
        if len(self.labels) < 2:
            raise ValueError(f"need at least 2 labels to train, got {self.labels}")
        self.learn_features(examples)
        label_id = {name: i for i, name in enumerate(self.labels)}
        y = torch.tensor([label_id[e.label] for e in examples], dtype=torch.long)
        self.weight, self.bias = fit_logistic_regression(
            self.features(examples),
            y,
            len(self.labels),
            self.l2,
            self.optimizer,
            self.max_iter,
            self.epochs,
            self.lr,
            self.batch_size,
            self.seed,
        )
        return self

    def predict_proba(self, examples: Sequence[Example]) -> torch.Tensor:
        if self.weight is None:
            raise RuntimeError("call fit() before predict()")
        if not examples:
            return torch.empty(0, len(self.labels))
        return (_mm(self.features(examples), self.weight) + self.bias).softmax(-1)

    def predict(self, examples: Sequence[Example]) -> list[Prediction]:
        probs = self.predict_proba(examples)
        out = []
        for p in probs:
            best = int(p.argmax())
            out.append(Prediction(self.labels[best], float(p[best]), dict(zip(self.labels, p.tolist()))))
        return out

    def score(self, examples: Sequence[Example]) -> dict[str, float]:
        predicted = [p.label for p in self.predict(examples)]
        gold = [e.label for e in examples]
        return {"accuracy": M.accuracy(predicted, gold), "macro_f1": M.macro_f1(predicted, gold)}


class BagOfWordsBaseline(LinearBaseline):
    def __init__(
        self,
        n_max: int = 2,
        min_df: int = 1,
        l2: float = 3e-4,
        optimizer: str = "lbfgs",
        max_iter: int = 300,
        epochs: int = 30,
        lr: float = 0.05,
        batch_size: int = 64,
        seed: int = 0,
    ):
        super().__init__(l2, optimizer, max_iter, epochs, lr, batch_size, seed)
        self.n_max, self.min_df = n_max, min_df
        self.vocab: dict[str, int] = {}
        self.idf: torch.Tensor | None = None

    # -- features ---------------------------------------------------------------------------------
    def _terms(self, e: Example) -> list[str]:
        terms = ngrams(words(e.text), self.n_max)
        if e.pair is not None:
            terms += ngrams(words(e.pair), self.n_max, prefix="2:")
        return terms

    def features(self, examples: Sequence[Example]) -> torch.Tensor:
        """Sparse (N, F) TF-IDF matrix, rows L2-normalised; terms outside the vocabulary are dropped
        (an all-unknown text gets a zero row: the model falls back on the bias, the class prior)."""
        rows, cols, vals = [], [], []
        for r, e in enumerate(examples):
            counts = Counter(self.vocab[t] for t in self._terms(e) if t in self.vocab)
            weights = {j: (1 + math.log(c)) * float(self.idf[j]) for j, c in counts.items()}
            norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
            for j in sorted(weights):
                rows.append(r)
                cols.append(j)
                vals.append(weights[j] / norm)
        index = torch.tensor([rows, cols], dtype=torch.long).reshape(2, -1)
        return torch.sparse_coo_tensor(
            index, torch.tensor(vals, dtype=torch.float32), (len(examples), len(self.vocab)), check_invariants=False
        ).coalesce()

    def learn_features(self, examples: Sequence[Example]) -> None:
        """The vocabulary (terms in at least min_df examples) and their smoothed idf."""
        df = Counter(t for e in examples for t in set(self._terms(e)))
        kept = sorted(t for t, c in df.items() if c >= self.min_df)
        self.vocab = {t: i for i, t in enumerate(kept)}
        self.idf = torch.tensor([smooth_idf(df[t], len(examples)) for t in kept], dtype=torch.float32)


class WordVectorBaseline(LinearBaseline):
    """The pre-BERT baseline: a text is the mean of its tokens' word vectors (tokens without a
    vector skipped; none at all: a zero vector), scaled to unit length, and the same logistic
    regression as BagOfWordsBaseline reads the class from it. A pair's two means are concatenated.

        model = WordVectorBaseline(KeyedVectors.load("vectors.txt")).fit(train_examples)
        model = WordVectorBaseline(pieces, tokenizer=Tokenizer.load("tokenizer.json"))  # piece-keyed vectors

    Tokens are the lowercased \\w+ words of `words` by default, or, with `tokenizer`, its pieces
    (no special tokens), for vectors from `bertology wordvec train --tokenizer`. The features do
    not depend on the training set, so any subset of it (a few labels per class) trains a model.
    Unit length puts every text on the same scale whatever its length and the vectors' norms, so
    one L2 penalty suits vectors from any trainer.
    """

    def __init__(
        self,
        vectors,
        tokenizer=None,
        l2: float = 1e-3,
        optimizer: str = "lbfgs",
        max_iter: int = 300,
        epochs: int = 30,
        lr: float = 0.05,
        batch_size: int = 64,
        seed: int = 0,
    ):
        super().__init__(l2, optimizer, max_iter, epochs, lr, batch_size, seed)
        self.vectors, self.tokenizer = vectors, tokenizer
        self.pairs = False  # whether the features hold a second mean, for the pair

    def tokens(self, text: str) -> list[str]:
        if self.tokenizer is None:
            return words(text)
        return self.tokenizer.encode(text, add_special_tokens=False).tokens

    def mean(self, text: str | None) -> torch.Tensor:
        """The unit-length mean of the vectors of the text's tokens, (E,)."""
        kv = self.vectors
        rows = [kv.key_to_index[t] for t in self.tokens(text or "") if t in kv.key_to_index]
        if not rows:
            return torch.zeros(kv.vector_size)
        v = torch.from_numpy(kv.vectors[rows]).double().mean(0)
        norm = v.norm()
        return (v / norm if norm > 0 else v).float()

    def features(self, examples: Sequence[Example]) -> torch.Tensor:
        """Dense (N, E), or (N, 2E) when the training examples had pairs."""
        if not examples:
            return torch.empty(0, self.vectors.vector_size * (2 if self.pairs else 1))
        return torch.stack(
            [torch.cat([self.mean(e.text), self.mean(e.pair)]) if self.pairs else self.mean(e.text) for e in examples]
        )

    def learn_features(self, examples: Sequence[Example]) -> None:
        self.pairs = any(e.pair is not None for e in examples)


class KeyedVectorBaseline(LinearBaseline):
    """Logistic regression on a vector looked up by each example's `id` (a node of a graph, an item):
    the node vectors of `bertology wordvec train --graph`, say, with the package name as the id.
    Unit length, as WordVectorBaseline's means; an id without a vector gets a zero row (the model
    falls back on the bias, the class prior), and `missing(examples)` lists those ids.

        model = KeyedVectorBaseline(KeyedVectors.load("nodes.txt")).fit(train_examples)   # Example(id=package)
    """

    def __init__(
        self,
        vectors,
        l2: float = 1e-3,
        optimizer: str = "lbfgs",
        max_iter: int = 300,
        epochs: int = 30,
        lr: float = 0.05,
        batch_size: int = 64,
        seed: int = 0,
    ):
        super().__init__(l2, optimizer, max_iter, epochs, lr, batch_size, seed)
        self.vectors = vectors

    def missing(self, examples: Sequence[Example]) -> list[str]:
        return [e.id for e in examples if e.id not in self.vectors.key_to_index]

    def features(self, examples: Sequence[Example]) -> torch.Tensor:
        kv = self.vectors
        out = torch.zeros(len(examples), kv.vector_size)
        for i, e in enumerate(examples):
            if e.id in kv.key_to_index:
                out[i] = torch.nn.functional.normalize(torch.from_numpy(kv[e.id]).double(), dim=0).float()
        return out


class CombinedBaseline(LinearBaseline):
    """Logistic regression on the concatenated features of other baselines (node vector ⊕ text
    embedding): each part featurises the examples as it would alone (unit-length parts weigh alike).

        CombinedBaseline([KeyedVectorBaseline(nodes), EncoderBaseline(minilm, tokenizer)]).fit(train_examples)
    """

    def __init__(
        self,
        parts: Sequence[LinearBaseline],
        l2: float = 1e-3,
        optimizer: str = "lbfgs",
        max_iter: int = 300,
        epochs: int = 30,
        lr: float = 0.05,
        batch_size: int = 64,
        seed: int = 0,
    ):
        super().__init__(l2, optimizer, max_iter, epochs, lr, batch_size, seed)
        self.parts = list(parts)

    def learn_features(self, examples: Sequence[Example]) -> None:
        for part in self.parts:
            part.learn_features(examples)

    def features(self, examples: Sequence[Example]) -> torch.Tensor:
        return torch.cat([f.to_dense() if f.is_sparse else f for f in (p.features(examples) for p in self.parts)], 1)


class EncoderBaseline(LinearBaseline):
    """A frozen encoder as a sentence embedder, the way sentence-transformers models are used: a
    text is the mean of the encoder's last hidden states over its real tokens, scaled to unit length
    (all-MiniLM-L6-v2's own pooling), and the same logistic regression reads the class from it.
    Embeddings are computed once per text, so fitting many subsets costs one pass over the texts.

        model = EncoderBaseline(bertology.load("all-MiniLM-L6-v2/"), Tokenizer.load(".../tokenizer.json"))
        model.fit(train_examples).score(test_examples)
    """

    def __init__(
        self,
        encoder,
        tokenizer,
        max_length: int = 128,
        batch_size: int = 64,
        l2: float = 1e-3,
        optimizer: str = "lbfgs",
        max_iter: int = 300,
        epochs: int = 30,
        lr: float = 0.05,
        seed: int = 0,
    ):
        super().__init__(l2, optimizer, max_iter, epochs, lr, batch_size, seed)
        self.encoder = getattr(encoder, "backbone", encoder).eval()
        self.tokenizer, self.max_length = tokenizer, max_length
        self.cache: dict[str, torch.Tensor] = {}

    @torch.no_grad()
    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """Unit-length mean-pooled embeddings, (N, H)."""
        from ..models.heads import mean_pool

        todo = sorted({t for t in texts if t not in self.cache})
        for i in range(0, len(todo), self.batch_size):
            chunk = todo[i : i + self.batch_size]
            enc = self.tokenizer.encode_batch(
                chunk, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
            )
            out = self.encoder(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
            vectors = torch.nn.functional.normalize(mean_pool(out.last_hidden_state, enc["attention_mask"]), dim=-1)
            self.cache.update(zip(chunk, vectors))
        return torch.stack([self.cache[t] for t in texts]) if texts else torch.empty(0, self.encoder.config.hidden_size)

    def features(self, examples: Sequence[Example]) -> torch.Tensor:
        if any(e.pair is not None for e in examples):
            raise ValueError(f"{examples[0].where}: EncoderBaseline embeds single texts; this task has pairs")
        return self.embed([e.text for e in examples])
