"""The pretraining job's data: one interface over the MLM instance store and XLNet's permutation streams.

    data = PretrainData.build(options, tokenizer, recipe, out)
    trainer = Trainer(model, args, data.batches(objective), objective, ...)

What the job reads of it, whatever the objective:
  - `batches(objective)`: step → the global batch of that step, a pure function of the step (exact
    resume, data parallelism); masked rows for the MLM, RTD and PLM objectives, whole texts prepared by
    the objective for the sentence objectives (train/sentences.py);
  - `heldout_batches(objective, n)`: up to n batches of the held-out documents (none held out: []);
  - `token_counts(vocab_size)`: how often each id occurs in the training documents (the unigram prior);
  - `config_fields`: config fields the data decides (XLNet's memory and reuse lengths);
  - `summary()`: what summary.json says of the data.

The corpus is read once, by rank 0 under torchrun; the other ranks wait and open what it built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from ..data import build_store
from ..data.instances import special_tokens
from ..data.permutation import PermutationData
from ..data.recipe import PLM, Recipe
from ..data.store import InstanceStore
from ..data.stored_stream import StoredStream
from ..data.tokenized import heldout_value, split_documents, tokenize_corpus
from . import distributed as dist
from .registry import is_sentence_objective
from .sentences import text_batches

Batch = dict[str, torch.Tensor]


class PretrainData:
    """The interface (see the module docstring); `build` picks the implementation the recipe needs."""

    config_fields: dict[str, Any]

    @staticmethod
    def build(o, tok, recipe: Recipe, out: Path) -> "PretrainData":
        if not dist.is_main():
            dist.barrier()  # rank 0 builds the cache, the others then open it
        data = (StreamData if recipe.objective == PLM else InstanceData).read(o, tok, recipe, out)
        if dist.is_main():
            dist.barrier()
        return data

    def batches(self, objective) -> Callable[[int], Batch]:
        raise NotImplementedError

    def heldout_batches(self, objective, n: int) -> list[Batch]:
        raise NotImplementedError

    def token_counts(self, vocab_size: int) -> torch.Tensor:
        raise NotImplementedError

    def summary(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass
class InstanceData(PretrainData):
    """Instances of the MLM family (pairs for NSP / SOP, packed sequences, a document's sentences for the
    sentence objectives), masked per batch by the store's masker (data/store.py)."""

    store: InstanceStore
    batch_size: int
    seed: int
    config_fields: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, o, tok, recipe: Recipe, out: Path) -> "InstanceData":
        store = build_store(
            o.corpus,
            tok,
            recipe,
            seed=o.seed,
            cache_dir=out / "cache",
            format=o.format,
            heldout=heldout_value(o.heldout),
            show_progress=not o.quiet and dist.is_main(),
        )
        if store.num_instances < o.batch_size:
            raise ValueError(
                f"{', '.join(o.corpus)}: {store.num_instances} instances of length {o.max_length}, fewer than one "
                f"batch of {o.batch_size}; use a larger corpus, a smaller --batch-size or --max-length, or a larger "
                "--dupe-factor"
            )
        return cls(store, o.batch_size, o.seed)

    def batches(self, objective) -> Callable[[int], Batch]:
        if is_sentence_objective(objective):  # the store's rows unmasked, as texts
            return text_batches(self.store, self.batch_size, self.seed, objective.prepare)
        return lambda step: self.store.batch(step, self.batch_size)

    def heldout_batches(self, objective, n: int) -> list[Batch]:
        held = self.store.heldout
        if held is None or not held.num_instances:
            return []
        size = min(self.batch_size, held.num_instances)
        count = max(1, min(n, -(-held.num_instances // size)))  # never more batches than the text fills
        if is_sentence_objective(objective):
            batch = text_batches(held, size, self.seed + 1, objective.prepare)
            return [batch(i) for i in range(count)]
        return [held.batch(i, size, seed=self.seed + 1) for i in range(count)]

    def token_counts(self, vocab_size: int) -> torch.Tensor:
        return self.store.token_counts(vocab_size)

    def summary(self) -> dict[str, Any]:
        return {"instances": self.store.num_instances}


@dataclass
class StreamData(PretrainData):
    """XLNet's streams: the training documents' tokens end to end, cut into rows that continue the rows of
    the step before (data/permutation.py); the held-out documents make a stream of their own."""

    data: PermutationData
    heldout: PermutationData | None
    counts: Callable[[int], torch.Tensor]
    config_fields: dict[str, Any]

    @classmethod
    def read(cls, o, tok, recipe: Recipe, out: Path) -> "StreamData":
        settings = recipe.permutation
        specials = special_tokens(tok, recipe.family)  # XLNet's examples are built with <sep>, <cls> and </s>
        corpus = tokenize_corpus(
            o.corpus, tok, out / "cache" / "tokens", o.format, show_progress=not o.quiet and dist.is_main()
        )
        train_docs, held = split_documents(
            corpus.num_documents, heldout_value(o.heldout), o.seed, ", ".join(map(str, o.corpus))
        )
        # the streams are read from the token store where a step needs them (stored_stream.py)
        data = PermutationData(StoredStream(corpus, train_docs, specials.eod), settings, specials, o.batch_size, o.seed)
        heldout = None
        if held:
            try:
                stream = StoredStream(corpus, held, specials.eod)
                heldout = PermutationData(stream, settings, specials, o.batch_size, o.seed + 1)
            except ValueError:
                heldout = None  # too little held-out text for one batch: no evaluation
        fields = dict(
            mem_len=o.mem_len if o.mem_len is not None else settings.seq_len * 3 // 4,
            reuse_len=settings.reuse_len,
            bi_data=settings.bi_data,
        )
        return cls(data, heldout, lambda vocab_size: corpus.token_counts(vocab_size, train_docs), fields)

    def batches(self, objective) -> Callable[[int], Batch]:
        return self.data.batch

    def heldout_batches(self, objective, n: int) -> list[Batch]:
        if self.heldout is None:
            return []
        return [self.heldout.batch(i) for i in range(min(n, self.heldout.steps_per_epoch))]

    def token_counts(self, vocab_size: int) -> torch.Tensor:
        return self.counts(vocab_size)

    def summary(self) -> dict[str, Any]:
        return {
            "steps_per_epoch": self.data.steps_per_epoch,
            "recipe": {**self.data.settings.__dict__, "mem_len": self.config_fields["mem_len"]},
        }
