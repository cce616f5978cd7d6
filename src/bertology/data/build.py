"""Building an instance store: the corpus tokenized (or its token stores found), documents held
out, and the sample index of each part written once (store.py says what a store is).

    store = build_instances(files, tokenizer, "bert", max_seq_length=128, seed=0, cache_dir="cache/")
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
import weakref
from pathlib import Path

import numpy as np
import torch

from .arrays import build_cached, digest
from .corpus import check_files
from .instances import special_tokens
from .masker import Masker
from .recipe import Recipe
from .pairs import pair_index
from .samples import build_index
from .store import LAYOUT, InstanceStore
from .tokenized import check_nsp_split, split_documents, tokenize_corpus
from .tokenstore import default_workers, token_cache_root

PART_NAMES = {"train": "training", "heldout": "held-out"}  # a part's name on its progress bar
KEEP_COUNTS_TOKENS_PER_ID = 256  # the index keeps its token counts from this many corpus tokens an id


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
    workers: int | None = None,
) -> InstanceStore:
    """Tokenize `files` and index the pretraining instances of `family` (see store.py);
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
        workers=workers,
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
    workers: int | None = None,
) -> InstanceStore:
    """The instance store of `recipe` (train, and `.heldout` when documents are held out). Token
    stores and sample indices go to `cache_dir`, or to $BERTOLOGY_TOKEN_CACHE when set (tokenstore.py);
    `workers`: tokenizing and pair-index processes (None: every core)."""
    files = check_files(files)
    specials = special_tokens(tokenizer, recipe.family)
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    show_progress = sys.stderr.isatty() if show_progress is None else show_progress
    cache = Path(cache_dir) if cache_dir is not None else Path(tempfile.mkdtemp(prefix="bertology-data-"))
    corpus = tokenize_corpus(files, tokenizer, cache, format, errors, show_progress, workers)
    where = ", ".join(files)
    if corpus.num_documents == 0:
        raise ValueError(f"corpus file(s) {where} hold no text (no document with a token)")
    docs_train, docs_held = split_documents(corpus.num_documents, heldout, seed, where)
    if recipe.pair_task == "nsp":
        check_nsp_split(len(docs_train), len(docs_held), corpus.num_documents, where)
    vocab_ids = sorted(set(tokenizer.get_vocab().values()) - set(specials.all_ids))
    stores = [os.path.abspath(d) for d in corpus.dirs]
    common = {
        "layout": LAYOUT,
        "seed": seed,
        "token_stores": stores,
        "specials": dataclasses.asdict(specials),
        "mask_id": specials.mask,
        "special_ids": list(specials.all_ids),
        "random_ids": vocab_ids,
    }

    def make(doc_ids, r: Recipe, part: str) -> InstanceStore:
        key = digest(
            {"tokens": stores, "instances": r.instance_key(), "seed": seed, "heldout": heldout, "part": part,
             "specials": common["specials"], "layout": LAYOUT}
        )  # fmt: skip

        def build(tmp: Path) -> dict:
            desc = f"{PART_NAMES[part]} instances"
            if r.pair_task:  # a count of pairs per (pass, document): pairs are made again at batch time
                index = pair_index(corpus, doc_ids, r, seed, show_progress, desc, workers or default_workers())
                indexed = total = int(np.asarray(index["pair_count"], np.int64).sum())
            else:  # packing: one pass of spans, repeated
                index = build_index(corpus, doc_ids, r, show_progress, desc)
                indexed = len(index["first_piece"]) - 1
                total = indexed * r.dupe_factor
            if indexed == 0:
                raise ValueError(
                    f"corpus file(s) {where} are too small: {len(doc_ids)} document(s), "
                    f"{corpus.num_tokens} tokens make no {r.packing} instance of max_seq_length={r.max_seq_length}"
                )
            # the unigram prior's counts (the part's documents, each pass), here once instead of in every run,
            # where the corpus is large beside the vocabulary (on a small one counting is quick, and a count
            # per id would outweigh the index)
            n_ids = max(tokenizer.get_vocab().values()) + 1
            if corpus.num_tokens >= KEEP_COUNTS_TOKENS_PER_ID * n_ids:
                counts = corpus.token_counts(n_ids, doc_ids).numpy() * r.dupe_factor
                index["token_counts"] = counts.astype(np.uint32) if counts.max() < 1 << 32 else counts
            arrays = {}
            for name, a in index.items():
                a.tofile(tmp / f"{name}.bin")
                arrays[name] = {"dtype": a.dtype.name, "shape": list(a.shape)}
            return {
                **common,
                "arrays": arrays,
                "indexed": indexed,
                "num_instances": total,
                "recipe": r.to_dict(),
                "part": part,
            }

        # beside the token stores: with $BERTOLOGY_TOKEN_CACHE a later run of the same recipe and seed
        # (another --out) finds its index too, keyed by everything it depends on
        d = build_cached(token_cache_root(cache) / f"instances-{key}", build)
        store = InstanceStore(d, Masker(r, specials.mask, torch.tensor(specials.all_ids), torch.tensor(vocab_ids)))
        if cache_dir is None:  # a private temporary cache goes away with the store
            weakref.finalize(store, shutil.rmtree, cache, True)
        return store

    store = make(docs_train, recipe, "train")
    if docs_held:  # evaluation data: the same construction, one copy
        store.heldout = make(docs_held, dataclasses.replace(recipe, dupe_factor=1), "heldout")
    return store
