"""Pretraining data: corpus reading, instances (NSP, SOP, RoBERTa packing), masking, batches.

    >>> from bertology.data import build_instances                       # doctest: +SKIP
    >>> store = build_instances(["data/wiki.txt"], tok, family="bert", max_seq_length=128,
    ...                         dupe_factor=5, seed=0, cache_dir="cache")  # doctest: +SKIP
    >>> batch = store.batch(step=0, batch_size=32)                         # doctest: +SKIP
    >>> sorted(batch)                                                      # doctest: +SKIP
    ['attention_mask', 'input_ids', 'labels', 'next_sentence_label', 'token_type_ids']

API
- `Recipe` (recipe.py): objective, packing, masking, n-gram, rates or the permutation-LM settings,
  resolved once (`Recipe.resolve(family, ...)`, `Recipe.from_options(o)`), frozen and validated.
- `build_instances(files, tokenizer, family, *, max_seq_length, objective, packing, masking,
  dupe_factor, short_seq_prob, whole_word, ngram, mlm_probability, max_predictions_per_seq, seed,
  cache_dir, format="lines"|"raw", heldout, negative_window) -> InstanceStore`, or
  `build_store(files, tokenizer, recipe, seed=..., workers=None, ...)` (build.py).
- Token store (tokenstore.py): each corpus file tokenized once by worker processes into uint16 /
  uint32 ids, word-start bits and sentence / document offsets, keyed by the tokenizer.json hash and
  the file's fingerprint (under the cache directory or $BERTOLOGY_TOKEN_CACHE, shared by every run).
- Pair index (pairs.py): a count of pairs per (pass, document); each document's pairs drawn from its
  own keyed stream (`KeyedRandom`: create_pair_instances with it makes the same pairs as the vectorised
  `document_pairs`), made again at batch time. Packing index (samples.py): sequences as spans of the
  token store (`pack_spans`, `build_index`); rows cut at batch time (rows.py).
- `InstanceStore` (store.py; built by build.py): `num_instances` / `len()`, `rows(indices)` (unmasked, with word starts and
  pair labels), `batch(step, batch_size, seed=None, rank=0, world_size=1)` -> dict of tensors
  named as the models' keyword arguments (input_ids, attention_mask, token_type_ids except
  roberta, labels, next_sentence_label (NSP, 0 = B is the real next) or sentence_order_label
  (SOP, 1 = swapped)), masked by its `Masker`; `indices(step, batch_size, seed)`;
  `steps_per_epoch(batch_size)`; `heldout` (a store, when built with heldout=...);
  `masked_by(masker)`. A batch is a pure function of (step, batch_size, seed): resuming at step k
  or running world_size ranks (each taking rows rank::world_size) reproduces the single-process run.
- `Masker` (masker.py): the one place masks are drawn (static, dynamic, smoothed; whole words, n-grams).
- Tokenized corpus (tokenized.py): `tokenize_corpus`, `TokenizedCorpus` (the files' token stores as one), `split_documents` (the
  one held-out rule), `heldout_count`, `check_corpus_documents`.
- Corpus (corpus.py): `iter_documents(files, format)`, `split_sentences(text)`.
- Instances (instances.py): `create_pair_instances`, `pack_sentences`, `truncate_pair`,
  `DocumentWindow`, `special_tokens(tokenizer, family)`, `word_starts(word_ids)`.
- Masking (masking.py): `mask_rows_vectorised` (a whole batch at once; what the Masker uses),
  `select_spans_rows`, `RowDraws`; the row-by-row reference `mask_sequence`, `mask_rows_reference`,
  `select_spans`; `replace_tokens`, `word_units`, `seeded_generator`.
"""

from .corpus import FORMATS, count_documents, iter_documents, split_sentences
from .instances import (
    DocumentWindow,
    PairInstance,
    Segment,
    SpecialTokens,
    create_pair_instances,
    pack_sentences,
    special_tokens,
    tokenize_document,
    truncate_pair,
    word_starts,
)
from .masker import Masker
from .masking import (
    IGNORE_INDEX,
    RowDraws,
    mask_rows_reference,
    mask_rows_vectorised,
    mask_sequence,
    ngram_probabilities,
    num_to_predict,
    replace_tokens,
    seeded_generator,
    select_spans,
    select_spans_rows,
    word_units,
)
from .recipe import Recipe
from .build import build_instances, build_store
from .store import InstanceStore
from .tokenized import (
    TokenizedCorpus,
    check_corpus_documents,
    heldout_count,
    heldout_value,
    split_documents,
    tokenize_corpus,
)

__all__ = [
    "Recipe",
    "build_instances",
    "build_store",
    "InstanceStore",
    "Masker",
    "TokenizedCorpus",
    "tokenize_corpus",
    "split_documents",
    "heldout_count",
    "heldout_value",
    "check_corpus_documents",
    "iter_documents",
    "split_sentences",
    "count_documents",
    "FORMATS",
    "create_pair_instances",
    "pack_sentences",
    "truncate_pair",
    "DocumentWindow",
    "PairInstance",
    "Segment",
    "SpecialTokens",
    "special_tokens",
    "word_starts",
    "tokenize_document",
    "mask_rows_vectorised",
    "select_spans_rows",
    "RowDraws",
    "mask_sequence",
    "mask_rows_reference",
    "select_spans",
    "replace_tokens",
    "word_units",
    "num_to_predict",
    "ngram_probabilities",
    "seeded_generator",
    "IGNORE_INDEX",
]
