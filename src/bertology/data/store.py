"""Pretraining instances on disk, unmasked, and the deterministic global batches.

    store = build_instances(["data/wiki.txt"], tokenizer, family="bert", max_seq_length=128,
                            seed=0, cache_dir="cache/")
    batch = store.batch(step, batch_size=32)      # dict of tensors named as the models' kwargs

Pipeline (every stage streams; memory is bounded by a document window, not the corpus):

1. Tokenize (tokenized.py): sentences encoded into flat arrays on disk, with word starts.
2. Hold out (`tokenized.split_documents`): whole documents set aside BEFORE any instance is made,
   so no held-out sentence ever appears in a training instance (not even as an NSP negative).
   They get their own store, `store.heldout`.
3. Instances, dupe_factor passes over the documents, each with its own random.Random: segment
   pairs (NSP / SOP, `instances.create_pair_instances`) or packed sequences (RoBERTa,
   `instances.pack_sentences`), padded to max_seq_length and appended to disk UNMASKED, with
   their word starts (whole-word masking) and pair labels.
4. Masks are drawn per batch by the store's `Masker` (masker.py; static, dynamic or smoothed),
   the only place masks are made.

Built atomically (arrays.py); a later call with the same files (path, size, mtime), tokenizer and
instance recipe reuses them.

Batches are a pure function of (step, batch_size, seed), for exact resume and data parallelism:
global sample i = step * batch_size + j is instance perm_e[i mod N] of epoch e = i // N, where
perm_e is a permutation drawn from a generator seeded by (seed, e). `batch(step, B, rank=r,
world_size=w)` returns rows r, r+w, r+2w, ... of that global batch (every rank masks the global
batch and keeps its rows), identical to slicing the single-process batch.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import tempfile
import weakref
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from .arrays import build_cached, digest, open_arrays
from .corpus import check_files
from .instances import special_tokens, write_instances
from .masker import Masker
from .recipe import Recipe
from .tokenized import WORD_STARTS, check_nsp_split, split_documents, tokenize_corpus

LAYOUT = 2  # 2: unmasked rows, masks drawn per batch (1 kept static masks in the store)
PART_NAMES = {"train": "training", "heldout": "held-out"}  # a part's name on its progress bar


class InstanceStore:
    """Pretraining instances on disk (memory-mapped, unmasked) and the deterministic global batches."""

    def __init__(self, directory: str | os.PathLike, masker: Masker | None = None):
        self.dir = Path(directory)
        meta_path = self.dir / "meta.json"
        if not meta_path.exists():
            raise FileNotFoundError(f"{meta_path}: no instance store here (build one with build_instances)")
        self.meta = json.loads(meta_path.read_text())
        if self.meta.get("layout") != LAYOUT:
            raise ValueError(
                f"{self.dir}: an instance store of an earlier bertology (its masks are stored in it); "
                "it is a cache: delete the directory and the next run builds it again"
            )
        # the masking half of the recipe is the caller's (the instances do not depend on it)
        self.recipe = masker.recipe if masker is not None else Recipe.from_dict(self.meta["recipe"])
        self.arrays = open_arrays(self.dir, self.meta["arrays"])
        self.special_ids = torch.tensor(self.meta["special_ids"], dtype=torch.long)
        self.masker = masker or Masker(
            self.recipe, self.meta["mask_id"], self.special_ids, torch.tensor(self.meta["random_ids"], dtype=torch.long)
        )
        self.heldout: InstanceStore | None = None
        self._permutation = lru_cache(maxsize=4)(self._make_permutation)

    def masked_by(self, masker: Masker) -> "InstanceStore":
        """The same instances (and held-out ones) masked by another masker (e.g. distillation's smoothed one)."""
        other = InstanceStore(self.dir, masker)
        if self.heldout is not None:
            other.heldout = InstanceStore(self.heldout.dir, masker)
        return other

    @property
    def num_instances(self) -> int:
        return int(self.meta["arrays"]["input_ids"]["shape"][0])

    def __len__(self) -> int:
        return self.num_instances

    @property
    def max_seq_length(self) -> int:
        return self.recipe.max_seq_length

    def __repr__(self):
        return f"InstanceStore({self.num_instances} instances, {self.recipe}, dir={str(self.dir)!r})"

    def token_counts(self, vocab_size: int, chunk: int = 8192) -> torch.Tensor:
        """How often each id occurs in the instances (V,), special tokens and padding not counted.
        For the MLM output prior and smoothed masking."""
        counts = np.zeros(vocab_size, dtype=np.int64)
        special = self.special_ids.numpy()
        for start in range(0, self.num_instances, chunk):
            ids = np.asarray(self.arrays["input_ids"][start : start + chunk], dtype=np.int64)  # (n, T)
            real = np.arange(ids.shape[1])[None, :] < np.asarray(self.arrays["lengths"][start : start + chunk])[:, None]
            ids = ids[real & ~np.isin(ids, special)]
            if len(ids) and ids.max() >= vocab_size:
                raise ValueError(f"{self.dir}: token id {int(ids.max())} outside a vocabulary of {vocab_size}")
            counts += np.bincount(ids, minlength=vocab_size)
        return torch.from_numpy(counts)

    def steps_per_epoch(self, batch_size: int) -> int:
        return max(1, self.num_instances // batch_size)

    def _make_permutation(self, seed: int, epoch: int) -> np.ndarray:
        return np.random.default_rng([seed, epoch]).permutation(self.num_instances)

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
            out[sel] = self._permutation(seed, int(e))[pos[sel]]
        return out

    def rows(self, idx: np.ndarray) -> dict[str, torch.Tensor]:
        """Instances `idx`, unmasked: input_ids, attention_mask, token_type_ids, word_start (when
        kept, for whole-word masking) and the pair labels under the recipe's key."""
        a = self.arrays

        def get(key: str, dtype=np.int64) -> torch.Tensor:
            return torch.from_numpy(np.asarray(a[key][idx], dtype=dtype))

        out = {"input_ids": get("input_ids")}
        lengths = get("lengths")
        out["attention_mask"] = (torch.arange(out["input_ids"].shape[1])[None, :] < lengths[:, None]).long()
        if "token_type_ids" in a:
            out["token_type_ids"] = get("token_type_ids")
        if "word_start" in a:
            out["word_start"] = get("word_start", bool)
        if self.recipe.pair_label:
            out[self.recipe.pair_label] = get("sentence_label")
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


def build_instances(
    files,
    tokenizer,
    family: str = "bert",
    *,
    max_seq_length: int = 128,
    objective: str | None = None,
    packing: str | None = None,
    masking: str | None = None,
    dupe_factor: int = 1,
    short_seq_prob: float = 0.1,
    whole_word: bool = False,
    ngram: int | None = None,
    mlm_probability: float = 0.15,
    max_predictions_per_seq: int | None = 20,
    seed: int = 12345,
    cache_dir: str | os.PathLike | None = None,
    format: str = "lines",
    heldout: float | int = 0,
    negative_window: int = 1000,
    errors: str = "strict",
    show_progress: bool | None = None,
) -> InstanceStore:
    """Tokenize `files` and build the pretraining instances of `family` (see the module docstring);
    the options left None take the family's paper recipe (data/recipe.py)."""
    recipe = Recipe.resolve(
        family,
        objective=objective,
        packing=packing,
        masking=masking,
        ngram=ngram,
        max_seq_length=max_seq_length,
        dupe_factor=dupe_factor,
        short_seq_prob=short_seq_prob,
        whole_word=bool(whole_word),
        mlm_probability=mlm_probability,
        max_predictions=max_predictions_per_seq,
        negative_window=negative_window,
    )
    return build_store(
        files,
        tokenizer,
        recipe,
        seed=seed,
        cache_dir=cache_dir,
        format=format,
        heldout=heldout,
        errors=errors,
        show_progress=show_progress,
    )


def build_store(
    files,
    tokenizer,
    recipe: Recipe,
    *,
    seed: int,
    cache_dir: str | os.PathLike | None = None,
    format: str = "lines",
    heldout: float | int = 0,
    errors: str = "strict",
    show_progress: bool | None = None,
) -> InstanceStore:
    """The instance store of `recipe` (train, and `.heldout` when documents are held out)."""
    files = check_files(files)
    specials = special_tokens(tokenizer, recipe.family)
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    show_progress = sys.stderr.isatty() if show_progress is None else show_progress
    cache = Path(cache_dir) if cache_dir is not None else Path(tempfile.mkdtemp(prefix="bertology-data-"))
    stamp = [(os.path.abspath(f), os.path.getsize(f), os.stat(f).st_mtime_ns) for f in files]
    tok_key = digest(
        {
            "files": stamp,
            "tokenizer": tokenizer.to_str(),
            "format": format,
            "errors": errors,
            "word_starts": WORD_STARTS,
        }
    )
    corpus = tokenize_corpus(files, tokenizer, cache / f"tokens-{tok_key}", format, errors, show_progress)
    where = ", ".join(files)
    if corpus.num_documents == 0:
        raise ValueError(f"corpus file(s) {where} hold no text (no document with a token)")
    docs_train, docs_held = split_documents(corpus.num_documents, heldout, seed, where)
    if recipe.pair_task == "nsp":
        check_nsp_split(len(docs_train), len(docs_held), corpus.num_documents, where)
    vocab_ids = sorted(set(tokenizer.get_vocab().values()) - set(specials.all_ids))
    common = {
        "layout": LAYOUT,
        "seed": seed,
        "mask_id": specials.mask,
        "special_ids": list(specials.all_ids),
        "random_ids": vocab_ids,
    }

    def make(doc_ids, r: Recipe, part: str) -> InstanceStore:
        key = digest(
            {
                "tokens": tok_key,
                "instances": r.instance_key(),
                "seed": seed,
                "heldout": heldout,
                "part": part,
                "layout": LAYOUT,
            }
        )
        d = build_cached(
            cache / f"instances-{key}",
            lambda tmp: {
                **write_instances(
                    tmp, corpus, doc_ids, r, seed, specials, where, show_progress, f"{PART_NAMES[part]} instances"
                ),
                **common,
                "part": part,
            },
        )
        store = InstanceStore(d, Masker(r, specials.mask, torch.tensor(specials.all_ids), torch.tensor(vocab_ids)))
        if cache_dir is None:  # a private temporary cache goes away with the store
            weakref.finalize(store, shutil.rmtree, cache, True)
        return store

    store = make(docs_train, recipe, "train")
    if docs_held:  # evaluation data: the same construction, one copy
        store.heldout = make(docs_held, dataclasses.replace(recipe, dupe_factor=1), "heldout")
    return store
