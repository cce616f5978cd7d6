"""Masking: selection rate, 80/10/10, special tokens, whole words from the encodings' word_ids, n-gram lengths;
the vectorised mask_rows_vectorised against the per-row reference (same spans given the same draws, same
statistics)."""

import collections

import pytest
import torch

from bertology.data import (
    IGNORE_INDEX,
    mask_rows_reference,
    mask_rows_vectorised,
    mask_sequence,
    ngram_probabilities,
    num_to_predict,
    seeded_generator,
    select_spans,
    select_spans_rows,
    word_starts,
    word_units,
)

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


MASKERS = {"reference": mask_rows_reference, "vectorised": mask_rows_vectorised}  # row by row / all rows at once


@pytest.mark.parametrize("masker", MASKERS)
def test_rates_80_10_10_and_specials_on_100k_tokens(masker):
    ids = random_batch()
    special = torch.isin(ids, SPECIAL)
    masked, labels = MASKERS[masker](
        ids,
        special,
        None,
        torch.Generator().manual_seed(1),
        mask_id=MASK,
        random_ids=RANDOM_IDS,
        mlm_probability=0.15,
        max_predictions=None,
    )
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


@pytest.mark.parametrize("masker", MASKERS)
@pytest.mark.parametrize("whole_word, ngram", [(False, 1), (True, 1), (True, 3)])
def test_max_predictions_caps_and_generator_determinism(masker, whole_word, ngram):
    ids = random_batch(B=50)
    special = torch.isin(ids, SPECIAL)
    starts = torch.rand(ids.shape, generator=torch.Generator().manual_seed(0)) < 0.8 if whole_word else None
    kw = dict(mask_id=MASK, random_ids=RANDOM_IDS, max_predictions=5, ngram=ngram)
    a = MASKERS[masker](ids, special, starts, torch.Generator().manual_seed(3), **kw)
    b = MASKERS[masker](ids, special, starts, torch.Generator().manual_seed(3), **kw)
    c = MASKERS[masker](ids, special, starts, torch.Generator().manual_seed(4), **kw)
    assert ((a[1] != IGNORE_INDEX).sum(1) <= 5).all()
    if not whole_word:
        assert ((a[1] != IGNORE_INDEX).sum(1) == 5).all()
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])


def test_bad_arguments():
    ids = random_batch(B=2)
    with pytest.raises(ValueError, match="mlm_probability"):
        mask_sequence(
            ids[0], ids[0] < 4, None, torch.Generator(), mask_id=MASK, random_ids=RANDOM_IDS, mlm_probability=1.5
        )
    with pytest.raises(ValueError, match="generators"):
        mask_rows_reference(ids, ids < 4, None, [torch.Generator()], mask_id=MASK, random_ids=RANDOM_IDS)
    kw = dict(mask_id=MASK, random_ids=RANDOM_IDS)
    with pytest.raises(ValueError, match="mlm_probability"):
        mask_rows_vectorised(ids, ids < 4, None, torch.Generator(), mlm_probability=-0.1, **kw)
    with pytest.raises(ValueError, match="ngram"):
        mask_rows_vectorised(ids, ids < 4, None, torch.Generator(), ngram=0, **kw)
    with pytest.raises(ValueError, match=r"special_mask of the same shape.*\(2, 128\) and \(2, 127\)"):
        mask_rows_vectorised(ids, ids[:, 1:] < 4, None, torch.Generator(), **kw)
    with pytest.raises(ValueError, match=r"word_start has shape \(128,\)"):
        mask_rows_vectorised(ids, ids < 4, ids[0] > 4, torch.Generator(), **kw)


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
    starts = word_starts(enc.word_ids)
    ids = torch.tensor([CLS, *enc.ids, SEP])
    special = torch.tensor([True] + [False] * len(enc.ids) + [True])
    start_t = torch.tensor([False, *starts, False])
    units = word_units(special.tolist(), start_t.tolist())
    multi = [u for u in units if len(u) > 1]
    assert multi, f"{enc.tokens}: no multi-piece word to test"
    kw = dict(mask_id=MASK, random_ids=RANDOM_IDS, mlm_probability=0.3, max_predictions=None)
    rows = [mask_sequence(ids, special, start_t, seeded_generator(2, s), **kw)[1] for s in range(300)]
    _, vectorised = mask_rows_vectorised(
        ids.repeat(300, 1), special.repeat(300, 1), start_t.repeat(300, 1), seeded_generator(2), **kw
    )
    for labels in (torch.stack(rows), vectorised):
        hits = 0
        for sel in (labels != IGNORE_INDEX).tolist():
            for u in units:  # every word is masked entirely or not at all
                assert len({sel[p] for p in u}) == 1, [enc.tokens[p - 1] for p in u]
            hits += sum(sel[u[0]] for u in multi)
        assert hits > 0
    return enc.tokens, starts


def test_whole_word_wordpiece(wordpiece):
    tokens, starts = _check_whole_words(wordpiece, "The unaffable hyperparameters were tokenized")
    for t, s in zip(tokens, starts):
        assert s == (not t.startswith("##"))


def test_whole_word_bytelevel_bpe(bytelevel_bpe):
    tokens, starts = _check_whole_words(bytelevel_bpe, "Anarchism considers the philosophical institutions")
    assert starts[0] and not tokens[0].startswith("Ġ")  # first token of the sentence starts a word
    for t, s in zip(tokens[1:], starts[1:]):
        assert s == t.startswith("Ġ")


def test_whole_word_unigram(unigram):
    tokens, starts = _check_whole_words(unigram, "Anarchism considers the philosophical institutions")
    for t, s in zip(tokens, starts):
        assert s == t.startswith("▁")


@pytest.mark.parametrize("masker", MASKERS)
def test_whole_word_rate_matches_token_rate(masker):
    # words of 1-3 pieces: whole-word masking still masks ~15% of the tokens
    g = torch.Generator().manual_seed(0)
    ids = random_batch(B=300)
    special = torch.isin(ids, SPECIAL)
    starts = torch.rand(ids.shape, generator=g) < 0.5
    _, labels = MASKERS[masker](ids, special, starts, g, mask_id=MASK, random_ids=RANDOM_IDS, max_predictions=None)
    rate = (labels != IGNORE_INDEX).sum().item() / (~special).sum().item()
    assert abs(rate - 0.15) < 0.005


def _units_batch(B, T, seed):
    """B rows of [CLS] words [SEP] words [SEP] [PAD]... with random word starts, and their units."""
    g = torch.Generator().manual_seed(seed)
    ids = random_batch(B, T, seed)
    for r in range(B):
        n = int((ids[r] != PAD).sum())
        ids[r, int(torch.randint(2, n - 1, (1,), generator=g))] = SEP  # two segments
    special = torch.isin(ids, SPECIAL)
    starts = torch.rand(ids.shape, generator=g) < 0.6
    return ids, special, starts


@pytest.mark.parametrize("ngram", [1, 2, 3])
@pytest.mark.parametrize("whole_word", [False, True])
def test_select_spans_rows_takes_the_reference_spans_given_the_same_draws(ngram, whole_word):
    # select_spans draws randperm(#units) then rand(#units); fed those same draws, the batched
    # selection must choose exactly the same positions, row by row (budgets of all sizes,
    # including 0 and more than the row holds)
    B, T = 200, 40
    ids, special, starts = _units_batch(B, T, seed=ngram)
    sizes = torch.zeros(B, T, dtype=torch.long)
    order = torch.arange(T).repeat(B, 1)
    draws = torch.zeros(B, T)
    budget = torch.randint(0, 16, (B,), generator=torch.Generator().manual_seed(1))
    budget[0], budget[1] = 0, T
    units, expected = [], []
    for r in range(B):
        units.append(word_units(special[r].tolist(), starts[r].tolist() if whole_word else None))
        n = len(units[r])
        sizes[r, :n] = torch.tensor([len(u) for u in units[r]])
        g = seeded_generator(4, r)
        order[r, :n], draws[r, :n] = torch.randperm(n, generator=g), torch.rand(n, generator=g)
        spans = select_spans(units[r], int(budget[r]), ngram, seeded_generator(4, r))
        expected.append(sorted(p for sp in spans for p in sp))
    chosen = select_spans_rows(sizes, order, draws, budget, ngram)
    for r in range(B):
        got = sorted(p for i in chosen[r].nonzero().flatten().tolist() for p in units[r][i])
        assert got == expected[r], r
    assert sum(map(len, expected)) > 4 * B and expected[0] == []
    assert ngram > 1 or len(expected[1]) == int((~special[1]).sum())  # a budget past the row: all of it


@pytest.mark.parametrize("mlm_probability, max_predictions", [(0.15, None), (0.5, None), (0.15, 20), (1.0, 7)])
def test_mask_rows_budgets_are_num_to_predict(mlm_probability, max_predictions):
    # rows with 0..126 candidates: exactly the reference's count in every row (round half to even)
    T = 128
    ids = torch.randint(4, 1000, (T, T), generator=torch.Generator().manual_seed(0))
    ids[:, 0] = CLS
    for r in range(T):
        ids[r, r + 1 :] = PAD
        ids[r, r] = SEP if r > 0 else CLS
    special = torch.isin(ids, SPECIAL)
    kw = dict(mask_id=MASK, random_ids=RANDOM_IDS, mlm_probability=mlm_probability, max_predictions=max_predictions)
    _, labels = mask_rows_vectorised(ids, special, None, seeded_generator(0), **kw)
    _, ref = mask_rows_reference(ids, special, None, seeded_generator(0), **kw)
    expected = [num_to_predict(int((~special[r]).sum()), mlm_probability, max_predictions) for r in range(T)]
    assert (labels != IGNORE_INDEX).sum(1).tolist() == expected == (ref != IGNORE_INDEX).sum(1).tolist()
    assert 63 in expected or mlm_probability != 0.5  # a half (e.g. 125 * 0.5) was rounded


def test_mask_rows_chooses_candidates_uniformly():
    # 4000 copies of one row: every candidate position is chosen with probability budget/#candidates
    B = 4000
    ids = torch.cat([torch.tensor([CLS]), torch.arange(10, 40), torch.tensor([SEP]), torch.full((6,), PAD)])
    special = torch.isin(ids, SPECIAL)
    _, labels = mask_rows_vectorised(
        ids.repeat(B, 1),
        special.repeat(B, 1),
        None,
        seeded_generator(6),
        mask_id=MASK,
        random_ids=RANDOM_IDS,
        mlm_probability=0.2,
        max_predictions=None,
    )
    selected = labels != IGNORE_INDEX
    assert (selected.sum(1) == 6).all()
    freq = selected.float().mean(0)
    assert (freq[special] == 0).all()
    assert (freq[~special] - 0.2).abs().max() < 0.03, freq  # sd 0.0063
    # and the B rows are not all alike
    assert len({tuple(row) for row in selected.tolist()}) > 3000


@pytest.mark.parametrize("ngram", [1, 3])
def test_mask_rows_whole_word_statistics_match_the_reference(ngram):
    # one row of words of 1-4 pieces in two segments, masked 3000 times by each: per-position
    # frequencies (which favour small words when the budget is nearly spent) and the count
    # distribution agree; words and n-grams of words are whole
    B = 3000
    ids, special, starts = _units_batch(1, 64, seed=11)
    starts[0, 1:] = torch.tensor([i % 3 == 0 or i % 7 == 0 for i in range(1, 64)])
    kw = dict(mask_id=MASK, random_ids=RANDOM_IDS, mlm_probability=0.2, max_predictions=None, ngram=ngram)
    _, vec = mask_rows_vectorised(
        ids.repeat(B, 1), special.repeat(B, 1), starts.repeat(B, 1), seeded_generator(7), **kw
    )
    ref = torch.stack([mask_sequence(ids[0], special[0], starts[0], seeded_generator(8, s), **kw)[1] for s in range(B)])
    units = word_units(special[0].tolist(), starts[0].tolist())
    assert max(map(len, units)) >= 3
    budget = num_to_predict(int((~special).sum()), 0.2, None)
    for labels in (vec, ref):
        sel = labels != IGNORE_INDEX
        assert (sel.sum(1) <= budget).all() and not sel[:, special[0]].any()
        for u in units:
            assert (sel[:, u] == sel[:, u[:1]]).all()  # whole words
    fv, fr = (vec != IGNORE_INDEX).float().mean(0), (ref != IGNORE_INDEX).float().mean(0)
    assert (fv - fr).abs().max() < 0.05, (fv, fr)  # sd of a difference <= 0.013
    cv, cr = (vec != IGNORE_INDEX).sum(1).float(), (ref != IGNORE_INDEX).sum(1).float()
    assert abs(cv.mean() - cr.mean()) < 0.1 and (cv == budget).float().mean() > 0.5


def test_mask_rows_ngram_lengths_follow_inverse_n():
    # as test_ngram_lengths_follow_inverse_n, through mask_rows_vectorised: rows of 1000 one-token words,
    # budget 10; a masked run of length n is a span of n (runs of adjacent spans are rare)
    B, T = 300, 1002
    ids = torch.randint(10, 1000, (B, T), generator=torch.Generator().manual_seed(0))
    ids[:, 0], ids[:, -1] = CLS, SEP
    special = torch.isin(ids, SPECIAL)
    _, labels = mask_rows_vectorised(
        ids,
        special,
        torch.ones_like(special),
        seeded_generator(3),
        mask_id=MASK,
        random_ids=RANDOM_IDS,
        mlm_probability=0.01,
        max_predictions=None,
        ngram=3,
    )
    sel = (labels != IGNORE_INDEX).int()
    assert (sel.sum(1) == 10).all()
    edges = torch.diff(torch.nn.functional.pad(sel, (1, 1)), dim=1)
    starts, ends = (edges == 1).nonzero(), (edges == -1).nonzero()
    lengths = (ends[:, 1] - starts[:, 1]).tolist()
    counts = collections.Counter(lengths)
    observed = [counts[n] / len(lengths) for n in (1, 2, 3)]
    # the last span of a row may be cut short to fit the budget: a slight excess of short runs
    assert all(abs(o - e) < 0.04 for o, e in zip(observed, ngram_probabilities(3))), observed
