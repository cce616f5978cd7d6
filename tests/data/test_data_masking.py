"""Masking: selection rate, 80/10/10, special tokens, whole words for ## / Ġ / ▁, n-gram lengths."""
import collections

import pytest
import torch

from bertology.data import (IGNORE_INDEX, mask_batch, mask_sequence, ngram_probabilities, num_to_predict,
                            seeded_generator, select_spans, word_starts, word_style, word_units)

CLS, SEP, PAD, MASK = 1, 2, 0, 3
SPECIAL = torch.tensor([PAD, CLS, SEP, MASK])
RANDOM_IDS = torch.arange(4, 1000)


def random_batch(B=800, T=128, seed=0):
    """B rows of [CLS] tokens [SEP] [PAD]... with random lengths: ~100k tokens."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, 1000, (B, T), generator=g)
    lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
    for r, n in enumerate(lengths.tolist()):
        ids[r, 0], ids[r, n - 1] = CLS, SEP
        ids[r, n:] = PAD
    return ids


def test_rates_80_10_10_and_specials_on_100k_tokens():
    ids = random_batch()
    special = torch.isin(ids, SPECIAL)
    masked, labels = mask_batch(ids, special, None, torch.Generator().manual_seed(1), mask_id=MASK,
                                random_ids=RANDOM_IDS, mlm_probability=0.15, max_predictions=None)
    selected = labels != IGNORE_INDEX
    n_candidates = int((~special).sum())
    assert n_candidates > 75_000
    # exactly round(15%) of each row's candidates; never a special position
    per_row = [num_to_predict(int((~special[r]).sum()), 0.15, None) for r in range(len(ids))]
    assert selected.sum(1).tolist() == per_row
    assert abs(selected.sum().item() / n_candidates - 0.15) < 0.002
    assert not (selected & special).any()
    assert torch.equal(masked[special], ids[special])
    assert torch.equal(labels[selected], ids[selected])
    # of the selected: 80% [MASK], 10% random, 10% unchanged
    sel_in, sel_out = ids[selected], masked[selected]
    frac_mask = (sel_out == MASK).float().mean().item()
    frac_same = (sel_out == sel_in).float().mean().item()
    frac_random = 1 - frac_mask - frac_same
    assert abs(frac_mask - 0.8) < 0.015 and abs(frac_same - 0.1) < 0.01 and abs(frac_random - 0.1) < 0.01
    replaced = sel_out[(sel_out != MASK) & (sel_out != sel_in)]
    assert not torch.isin(replaced, SPECIAL).any()  # random replacements never special
    assert (masked[~selected] == ids[~selected]).all()  # nothing else changes


def test_max_predictions_caps_and_generator_determinism():
    ids = random_batch(B=50)
    special = torch.isin(ids, SPECIAL)
    kw = dict(mask_id=MASK, random_ids=RANDOM_IDS, max_predictions=5)
    a = mask_batch(ids, special, None, torch.Generator().manual_seed(3), **kw)
    b = mask_batch(ids, special, None, torch.Generator().manual_seed(3), **kw)
    c = mask_batch(ids, special, None, torch.Generator().manual_seed(4), **kw)
    assert ((a[1] != IGNORE_INDEX).sum(1) == 5).all()
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])


def test_bad_arguments():
    ids = random_batch(B=2)
    with pytest.raises(ValueError, match="mlm_probability"):
        mask_sequence(ids[0], ids[0] < 4, None, torch.Generator(), mask_id=MASK, random_ids=RANDOM_IDS,
                      mlm_probability=1.5)
    with pytest.raises(ValueError, match="generators"):
        mask_batch(ids, ids < 4, None, [torch.Generator()], mask_id=MASK, random_ids=RANDOM_IDS)


def test_ngram_lengths_follow_inverse_n():
    # 1000 sequences of 3000 one-token words, budget 30 (1%): overlaps (which skip long spans
    # more often) are rare. Only the last span of a sequence can be cut short to fit the budget,
    # so it is left out of the count.
    units = [[i] for i in range(3000)]
    counts = collections.Counter()
    for s in range(1000):
        spans = select_spans(units, 30, 3, seeded_generator(5, s))
        assert sum(len(x) for x in spans) == 30
        counts.update(len(x) for x in spans[:-1])
    total = sum(counts.values())
    observed = [counts[n] / total for n in (1, 2, 3)]
    expected = ngram_probabilities(3)  # 6/11, 3/11, 2/11
    assert total > 10_000
    assert all(abs(o - e) < 0.015 for o, e in zip(observed, expected)), (observed, expected)


def test_ngram_spans_are_contiguous_words_and_never_overlap():
    units = [[1, 2], [3], [4, 5, 6], [7], [8, 9]]
    for s in range(200):
        spans = select_spans(units, 6, 3, seeded_generator(9, s))
        flat = [p for sp in spans for p in sp]
        assert len(flat) == len(set(flat)) and len(flat) <= 6
        for sp in spans:  # a span is a run of whole, consecutive words
            assert sp == list(range(sp[0], sp[-1] + 1))
            assert any(sp[0] == u[0] for u in units) and any(sp[-1] == u[-1] for u in units)


def _check_whole_words(tokenizer, text):
    enc = tokenizer.encode(text, add_special_tokens=False)
    style = word_style(tokenizer)
    starts = word_starts(enc.tokens, *style)
    ids = torch.tensor([CLS, *enc.ids, SEP])
    special = torch.tensor([True] + [False] * len(enc.ids) + [True])
    start_t = torch.tensor([False, *starts, False])
    units = word_units(special.tolist(), start_t.tolist())
    multi = [u for u in units if len(u) > 1]
    assert multi, f"{enc.tokens}: no multi-piece word to test"
    hits = 0
    for s in range(300):
        _, labels = mask_sequence(ids, special, start_t, seeded_generator(2, s), mask_id=MASK,
                                  random_ids=RANDOM_IDS, mlm_probability=0.3, max_predictions=None)
        sel = (labels != IGNORE_INDEX).tolist()
        for u in units:  # every word is masked entirely or not at all
            assert len({sel[p] for p in u}) == 1, [enc.tokens[p - 1] for p in u]
        hits += sum(sel[u[0]] for u in multi)
    assert hits > 0
    return enc.tokens, starts


def test_whole_word_wordpiece(wordpiece):
    tokens, starts = _check_whole_words(wordpiece, "The unaffable hyperparameters were tokenized")
    for t, s in zip(tokens, starts):
        assert s == (not t.startswith("##"))
    assert word_style(wordpiece) == ("prefix", "##")


def test_whole_word_bytelevel_bpe(bytelevel_bpe):
    tokens, starts = _check_whole_words(bytelevel_bpe, "Anarchism considers the philosophical institutions")
    assert word_style(bytelevel_bpe) == ("start", "Ġ")
    assert starts[0] and not tokens[0].startswith("Ġ")  # first token of the sentence starts a word
    for t, s in zip(tokens[1:], starts[1:]):
        assert s == t.startswith("Ġ")


def test_whole_word_unigram(unigram):
    tokens, starts = _check_whole_words(unigram, "Anarchism considers the philosophical institutions")
    assert word_style(unigram) == ("start", "▁")
    for t, s in zip(tokens, starts):
        assert s == t.startswith("▁")


def test_whole_word_rate_matches_token_rate():
    # words of 1-3 pieces: whole-word masking still masks ~15% of the tokens
    g = torch.Generator().manual_seed(0)
    ids = random_batch(B=300)
    special = torch.isin(ids, SPECIAL)
    starts = torch.rand(ids.shape, generator=g) < 0.5
    _, labels = mask_batch(ids, special, starts, g, mask_id=MASK, random_ids=RANDOM_IDS, max_predictions=None)
    rate = (labels != IGNORE_INDEX).sum().item() / (~special).sum().item()
    assert abs(rate - 0.15) < 0.005
