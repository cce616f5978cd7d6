"""Pretraining data: corpus reading, instances (NSP, SOP, RoBERTa packing), masking, batches.

    >>> from bertology.data import build_instances                       # doctest: +SKIP
    >>> store = build_instances(["data/wiki.txt"], tok, family="bert", max_seq_length=128,
    ...                         dupe_factor=5, seed=0, cache_dir="cache")  # doctest: +SKIP
    >>> batch = store.batch(step=0, batch_size=32)                         # doctest: +SKIP
    >>> sorted(batch)                                                      # doctest: +SKIP
    ['attention_mask', 'input_ids', 'labels', 'next_sentence_label', 'token_type_ids']

API
- `build_instances(files, tokenizer, family, *, max_seq_length, objective, packing, masking,
  dupe_factor, short_seq_prob, whole_word, ngram, mlm_probability, max_predictions_per_seq, seed,
  cache_dir, format="lines"|"raw", heldout, negative_window) -> InstanceStore` (store.py).
- `InstanceStore`: `num_instances` / `len()`, `batch(step, batch_size, seed=None, rank=0,
  world_size=1)` -> dict of tensors named as the models' keyword arguments (input_ids,
  attention_mask, token_type_ids except roberta, labels, next_sentence_label (NSP, 0 = B is the
  real next) or sentence_order_label (SOP, 1 = swapped)); `indices(step, batch_size, seed)`;
  `steps_per_epoch(batch_size)`; `heldout` (a store, when built with heldout=...);
  `split_heldout(fraction_or_n) -> (train, heldout)`; `InstanceStore.open(directory)`.
  A batch is a pure function of (step, batch_size, seed): resuming at step k or running
  world_size ranks (each taking rows rank::world_size) reproduces the single-process run exactly.
- Corpus (corpus.py): `iter_documents(files, format)`, `split_sentences(text)`.
- Instances (instances.py): `create_pair_instances`, `pack_sentences`, `truncate_pair`,
  `DocumentWindow`, `special_tokens(tokenizer, family)`, `word_starts(tokens, style, marker)`.
- Masking (masking.py): `mask_rows` (a whole batch at once, vectorised; what the store uses),
  `select_spans_rows`; the per-row reference `mask_sequence`, `mask_batch`, `select_spans`;
  `replace_tokens`, `word_units`, `seeded_generator`.
"""
from .corpus import FORMATS, count_documents, iter_documents, split_sentences
from .instances import (DocumentWindow, PairInstance, Segment, SpecialTokens,
                        create_pair_instances, pack_sentences, special_tokens, tokenize_document,
                        truncate_pair, word_starts, word_style)
from .masking import (IGNORE_INDEX, mask_batch, mask_rows, mask_sequence, ngram_probabilities, num_to_predict,
                      replace_tokens, seeded_generator, select_spans, select_spans_rows, word_units)
from .store import InstanceStore, TokenizedCorpus, build_instances, tokenize_corpus

__all__ = [
    "build_instances", "InstanceStore", "TokenizedCorpus", "tokenize_corpus",
    "iter_documents", "split_sentences", "count_documents", "FORMATS",
    "create_pair_instances", "pack_sentences", "truncate_pair", "DocumentWindow", "PairInstance", "Segment",
    "SpecialTokens", "special_tokens", "word_starts", "word_style", "tokenize_document",
    "mask_rows", "select_spans_rows", "mask_sequence", "mask_batch", "select_spans", "replace_tokens",
    "word_units", "num_to_predict",
    "ngram_probabilities", "seeded_generator", "IGNORE_INDEX",
]
