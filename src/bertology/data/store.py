"""Pretraining instances cut from the token store on the fly, and the deterministic global batches.

    store = build_instances(["data/wiki.txt"], tokenizer, family="bert", max_seq_length=128,
                            seed=0, cache_dir="cache/")
    batch = store.batch(step, batch_size=32)      # dict of tensors named as the models' kwargs

Pipeline (memory is bounded by the batch, not the corpus):

1. Tokenize (tokenstore.py, tokenized.py): each file once into its token store, by worker
   processes, shared by every run with the same tokenizer.
2. Hold out (`tokenized.split_documents`): whole documents set aside BEFORE any instance is made,
   so no held-out sentence ever appears in a training instance (not even as an NSP negative).
   They get their own index, `store.heldout`, from the same token store (no second pass).
3. The sample index, dupe_factor passes over the documents: for segment pairs (NSP / SOP, pairs.py)
   only how many pairs each document gives in each pass (each document of each pass draws from its
   own keyed stream, so a pair is made again at batch time from (seed, pass, document)); for packed
   sequences (RoBERTa, samples.py) one pass of spans of the token store. No padded copies.
4. Rows are cut from the token store for each batch (rows.py) and masked by the store's `Masker`
   (masker.py; static, dynamic or smoothed), the only place masks are made.

The index is built atomically (arrays.py); a later call with the same files (path, size, mtime),
tokenizer and instance recipe reuses it.

Batches are a pure function of (step, batch_size, seed), for exact resume and data parallelism:
global sample i = step * batch_size + j is instance order_e(i mod N) of epoch e = i // N, where
order_e is a bijection of [0, N) keyed by (seed, e) (shuffle.py: no permutation array, whatever N). `batch(step, B, rank=r,
world_size=w)` returns rows r, r+w, r+2w, ... of that global batch (every rank masks the global
batch and keeps its rows), identical to slicing the single-process batch.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from ..models.family import get_family
from .arrays import open_arrays
from .instances import SpecialTokens
from .masker import Masker
from .recipe import Recipe
from .rows import cut_rows, piece_table
from .pairs import PairIndex
from .samples import piece_starts
from .shuffle import EpochOrder
from .tokenized import TokenizedCorpus

# 5: pairs as a count per (pass, document), made again from keyed draws (4: pair spans as block offsets,
# labels as bits; 3: plain spans; 2: padded rows; 1: static masks)
LAYOUT = 5


class InstanceStore:
    """Pretraining instances (a sample index over a token store) and the deterministic global batches."""

    def __init__(self, directory: str | os.PathLike, masker: Masker | None = None):
        self.dir = Path(directory)
        meta_path = self.dir / "meta.json"
        if not meta_path.exists():
            raise FileNotFoundError(f"{meta_path}: no instance store here (build one with build_instances)")
        self.meta = json.loads(meta_path.read_text())
        if self.meta.get("layout") != LAYOUT:
            raise ValueError(
                f"{self.dir}: an instance store of an earlier bertology (another layout of its index); "
                "it is a cache: delete the directory and the next run builds it again"
            )
        # the masking half of the recipe is the caller's (the instances do not depend on it)
        self.recipe = masker.recipe if masker is not None else Recipe.from_dict(self.meta["recipe"])
        self.index = open_arrays(self.dir, self.meta["arrays"])
        self.corpus = TokenizedCorpus.open(self.meta["token_stores"])
        self.specials = SpecialTokens(**{k: v for k, v in self.meta["specials"].items() if k != "all_ids"},
                                      all_ids=tuple(self.meta["specials"]["all_ids"]))  # fmt: skip
        self.special_ids = torch.tensor(self.meta["special_ids"], dtype=torch.long)
        self.masker = masker or Masker(
            self.recipe, self.meta["mask_id"], self.special_ids, torch.tensor(self.meta["random_ids"], dtype=torch.long)
        )
        self.pairs = "pair_count" in self.index
        built = Recipe.from_dict(self.meta["recipe"])  # (the instances' half of the recipe: the index's own)
        self._pairs = PairIndex(self.index, self.corpus, built, int(self.meta["seed"])) if self.pairs else None
        # instances in the index (one pass for packing, whose passes repeat it: see samples.py)
        self.indexed = int(self.meta["indexed"])
        self.heldout: InstanceStore | None = None
        self._order = lru_cache(maxsize=4)(lambda seed, epoch: EpochOrder(self.num_instances, seed, epoch))

    def masked_by(self, masker: Masker) -> "InstanceStore":
        """The same instances (and held-out ones) masked by another masker (e.g. distillation's smoothed one)."""
        other = InstanceStore(self.dir, masker)
        if self.heldout is not None:
            other.heldout = InstanceStore(self.heldout.dir, masker)
        return other

    @property
    def num_instances(self) -> int:
        return int(self.meta["num_instances"])

    def __len__(self) -> int:
        return self.num_instances

    @property
    def max_seq_length(self) -> int:
        return self.recipe.max_seq_length

    def __repr__(self):
        return f"InstanceStore({self.num_instances} instances, {self.recipe}, dir={str(self.dir)!r})"

    def token_counts(self, vocab_size: int) -> torch.Tensor:
        """How often each id occurs in the text of the instances (V,), each pass once: the part's documents
        (a pair's random next segment is text of a document nearby, so pairs are counted by the text they
        are cut from; packing's sequences are exactly that text), special tokens and padding not counted.
        For the MLM output prior and smoothed masking."""
        stored = self.index.get("token_counts")  # counted when the index was built (build.py)
        if stored is None:  # counted here: a small corpus (build.py)
            if self.pairs:  # the part's documents, each pass
                passes = len(self.index["pair_count"]) // max(1, len(self._pairs.pos))
                counts = self.corpus.token_counts(vocab_size, self._pairs.doc_ids).numpy() * passes
            else:  # packing's pieces are its documents' tokens, each once a pass
                passes = self.num_instances // max(1, self.indexed)
                begins = np.asarray(self.index["piece_start"], np.int64)
                counts = self.corpus.span_counts(vocab_size, begins, begins + self.index["piece_len"]) * passes
        else:
            stored = np.asarray(stored, dtype=np.int64)
            if stored[vocab_size:].any():
                top = int(np.flatnonzero(stored)[-1])
                raise ValueError(f"{self.dir}: token id {top} outside a vocabulary of {vocab_size}")
            counts = np.zeros(vocab_size, np.int64)
            counts[: len(stored)] = stored[:vocab_size]
        counts[self.special_ids[self.special_ids < vocab_size].numpy()] = 0
        return torch.from_numpy(counts)

    def lengths(self) -> np.ndarray:
        """(N,) int64: each instance's tokens, special ones included (padding not)."""
        if self.pairs:
            p = self._pairs.all()
            return p["a_len"] + p["b_len"] + 3
        n = np.asarray(self.index["piece_len"], dtype=np.int64)
        first = np.asarray(self.index["first_piece"], dtype=np.int64)
        one = np.add.reduceat(n, first[:-1]) + np.diff(first) + 1  # the pieces, a [SEP] after each, [CLS]
        return np.tile(one, self.num_instances // self.indexed)

    def steps_per_epoch(self, batch_size: int) -> int:
        return max(1, self.num_instances // batch_size)

    def indices(self, step: int, batch_size: int, seed: int | None = None) -> np.ndarray:
        """Instance indices of the global batch at `step` (epochs follow one another seamlessly)."""
        if step < 0 or batch_size < 1:
            raise ValueError(f"need step >= 0 and batch_size >= 1, got step={step}, batch_size={batch_size}")
        seed = self.meta["seed"] if seed is None else seed
        g = step * batch_size + np.arange(batch_size, dtype=np.int64)
        epoch, pos = np.divmod(g, self.num_instances)
        out = np.empty(batch_size, dtype=np.int64)
        for e in np.unique(epoch):
            sel = epoch == e
            out[sel] = self._order(seed, int(e))(pos[sel])
        return out

    def rows(self, idx: np.ndarray) -> dict[str, torch.Tensor]:
        """Instances `idx`, unmasked: input_ids, attention_mask, token_type_ids, word_start (when
        kept, for whole-word masking) and the pair labels under the recipe's key."""
        idx = np.asarray(idx, dtype=np.int64)
        if len(idx) and (idx.min() < 0 or idx.max() >= self.num_instances):
            raise IndexError(f"{self.dir}: instance indices must be in [0, {self.num_instances})")
        if self.pairs:  # made again from their keys (pairs.py): A then B, a row each
            pairs = self._pairs.pairs(idx)
            row = np.repeat(np.arange(len(idx)), 2)
            starts = np.stack([pairs["a_start"], pairs["b_start"]], 1).ravel()
            lengths = np.stack([pairs["a_len"], pairs["b_len"]], 1).ravel()
        else:
            row, piece = piece_table(self.index["first_piece"], idx % self.indexed)
            starts, lengths = piece_starts(self.index, piece), np.asarray(self.index["piece_len"][piece])
        cut = cut_rows(self.corpus, starts, lengths, row, len(idx), self.max_seq_length, self.specials)
        ids = torch.from_numpy(cut["input_ids"])
        attention = torch.arange(ids.shape[1])[None, :] < torch.from_numpy(cut["lengths"])[:, None]
        out = {"input_ids": ids, "attention_mask": attention.long()}
        if get_family(self.recipe.family).segments:
            types = torch.from_numpy(cut["second"]) & attention if self.pairs else torch.zeros_like(attention)
            out["token_type_ids"] = types.long()
        if self.recipe.whole_word:
            out["word_start"] = torch.from_numpy(cut["word_start"])
        if self.recipe.pair_label:
            out[self.recipe.pair_label] = torch.from_numpy(pairs["label"].astype(np.int64))
        return out

    def batch(
        self, step: int, batch_size: int, seed: int | None = None, rank: int = 0, world_size: int = 1
    ) -> dict[str, torch.Tensor]:
        """Rows rank::world_size of the global batch at `step`, masked, as the model's keyword arguments."""
        if not 0 <= rank < world_size:
            raise ValueError(f"need 0 <= rank < world_size, got rank={rank}, world_size={world_size}")
        seed = self.meta["seed"] if seed is None else seed
        idx = self.indices(step, batch_size, seed)
        masked = self.masker(self.rows(idx), seed=seed, step=step, instances=idx)
        return {k: v[rank::world_size] for k, v in masked.items()}
