"""Masked-LM masking: pure functions on torch tensors, randomness from an explicit torch.Generator.

For one sequence (`mask_sequence`):

1. Candidates: every non-special position. Special tokens ([CLS], [SEP], <s>, </s>, padding,
   [UNK], ...) are never selected.
2. Units: with whole_word=False every candidate token is a unit; with whole_word=True a unit is
   a word, i.e. a run of candidates that starts at a word-start token (or right after a special
   token) - so all pieces of a word are masked together. Word starts come from the token
   strings (`instances.word_starts`): WordPiece "##" pieces continue a word, byte-level BPE "Ġ"
   and SentencePiece "▁" pieces start one.
3. Budget: num_to_predict = min(max_predictions, max(1, round(mlm_probability * #candidates))).
4. Spans (ALBERT's n-gram masking; ngram=1 is BERT's): visit the units in a random order; at
   each, draw a span length n in 1..ngram with p(n) ∝ 1/n (truncated to the units left in the
   sequence), take the n units starting there; if that would pass the budget try shorter
   spans; skip spans that pass the budget anyway or overlap a span already taken; stop when the
   budget is met.
5. Replacement, per selected token: 80% -> [MASK], 10% -> a random token (never a special id),
   10% -> left unchanged (so the model cannot learn that only [MASK] positions matter).
6. Labels: the original id at selected positions, -100 (ignored by the loss) elsewhere.

`mask_batch` applies it row by row; give one generator per row (as `InstanceStore.batch` does,
seeded by (seed, step, row)) to make every row's mask independent of the others.

    >>> g = torch.Generator().manual_seed(0)
    >>> ids = torch.tensor([101, 7, 8, 9, 10, 11, 12, 13, 102])
    >>> special = ids >= 101
    >>> masked, labels = mask_sequence(ids, special, None, g, mask_id=103, random_ids=torch.arange(20),
    ...                                mlm_probability=0.3)
    >>> int((labels != -100).sum()), bool((labels[special] == -100).all())
    (2, True)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

IGNORE_INDEX = -100


def seeded_generator(*keys: int) -> torch.Generator:
    """A torch.Generator seeded from a tuple of non-negative ints, e.g. (seed, step, row).

    Mixing the keys with numpy's SeedSequence (not by adding them) keeps streams of nearby
    tuples independent.

    >>> a = torch.rand(2, generator=seeded_generator(1, 2)); b = torch.rand(2, generator=seeded_generator(1, 2))
    >>> bool((a == b).all()), bool((a == torch.rand(2, generator=seeded_generator(2, 1))).any())
    (True, False)
    """
    state = np.random.SeedSequence([int(k) for k in keys]).generate_state(2, dtype=np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 31 ^ int(state[1]))


def num_to_predict(n_candidates: int, mlm_probability: float, max_predictions: int | None) -> int:
    """How many tokens to mask in a sequence with `n_candidates` maskable tokens.

    >>> num_to_predict(125, 0.15, 20), num_to_predict(3, 0.15, 20), num_to_predict(0, 0.15, 20)
    (19, 1, 0)
    """
    if n_candidates == 0:
        return 0
    n = max(1, int(round(n_candidates * mlm_probability)))
    return n if max_predictions is None else min(n, max_predictions)


def word_units(special: Sequence[bool], word_start: Sequence[bool] | None) -> list[list[int]]:
    """Group the non-special positions into units (lists of positions).

    >>> word_units([True, False, False, False, True], [False, True, False, True, False])
    [[1, 2], [3]]
    >>> word_units([True, False, False, True], None)   # no word starts: every token is a unit
    [[1], [2]]
    """
    units: list[list[int]] = []
    prev_special = True
    for i, sp in enumerate(special):
        if sp:
            prev_special = True
            continue
        if word_start is None or word_start[i] or prev_special or not units:
            units.append([i])
        else:
            units[-1].append(i)
        prev_special = False
    return units


def ngram_probabilities(ngram: int) -> list[float]:
    """p(n) ∝ 1/n for n = 1..ngram (ALBERT: 6/11, 3/11, 2/11 for ngram=3).

    >>> [round(p, 4) for p in ngram_probabilities(3)]
    [0.5455, 0.2727, 0.1818]
    """
    weights = [1.0 / n for n in range(1, ngram + 1)]
    return [w / sum(weights) for w in weights]


def select_spans(units: list[list[int]], budget: int, ngram: int, generator: torch.Generator) -> list[list[int]]:
    """Step 4 of the module docstring: the spans (lists of positions) chosen for masking.

    >>> g = torch.Generator().manual_seed(0)
    >>> spans = select_spans([[1], [2, 3], [4], [5]], 3, 1, g)
    >>> sum(len(s) for s in spans) <= 3, all(s in ([1], [2, 3], [4], [5]) for s in spans)
    (True, True)
    """
    if budget <= 0 or not units:
        return []
    weights = [1.0 / n for n in range(1, ngram + 1)]
    order = torch.randperm(len(units), generator=generator).tolist()
    draws = torch.rand(len(units), generator=generator).tolist()
    covered: set[int] = set()
    spans: list[list[int]] = []
    taken = 0
    for start, u in zip(order, draws):
        if taken >= budget:
            break
        if units[start][0] in covered:
            continue
        # span length n ~ p(n) ∝ 1/n over the lengths that fit before the sequence ends
        w = weights[:min(ngram, len(units) - start)]
        acc, n, target = 0.0, len(w), u * sum(w)
        for k, wk in enumerate(w, 1):
            acc += wk
            if target < acc:
                n = k
                break
        # too long for what is left of the budget: fall back to shorter spans
        while n > 1 and taken + sum(len(x) for x in units[start:start + n]) > budget:
            n -= 1
        positions = [p for x in units[start:start + n] for p in x]
        if taken + len(positions) > budget or any(p in covered for p in positions):
            continue
        covered.update(positions)
        spans.append(positions)
        taken += len(positions)
    return spans


def replace_tokens(input_ids: torch.Tensor, selected: torch.Tensor, generator: torch.Generator, mask_id: int,
                   random_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Steps 5-6: (masked input ids, labels) given a boolean `selected` of the same shape."""
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    r = torch.rand(input_ids.shape, generator=generator)
    # 80% of the selected tokens -> [MASK]
    to_mask = selected & (r < 0.8)
    # 10% -> a random token from random_ids (which holds no special token)
    to_random = selected & (r >= 0.8) & (r < 0.9)
    # the remaining 10% keep their original token
    pick = torch.randint(len(random_ids), input_ids.shape, generator=generator)
    out = torch.where(to_mask, torch.full_like(input_ids, mask_id), input_ids)
    out = torch.where(to_random, random_ids.to(input_ids.dtype)[pick], out)
    return out, labels


def mask_sequence(input_ids: torch.Tensor, special_mask: torch.Tensor, word_start: torch.Tensor | None,
                  generator: torch.Generator, *, mask_id: int, random_ids: torch.Tensor,
                  mlm_probability: float = 0.15, max_predictions: int | None = 20, ngram: int = 1
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask one sequence (T,): returns (masked input ids, labels). word_start=None masks single
    tokens; a (T,) bool tensor of word starts masks whole words (and n-grams of words)."""
    if not 0.0 <= mlm_probability <= 1.0:
        raise ValueError(f"mlm_probability must be in [0, 1], got {mlm_probability}")
    if ngram < 1:
        raise ValueError(f"ngram must be >= 1, got {ngram}")
    special = special_mask.tolist()
    units = word_units(special, None if word_start is None else word_start.tolist())
    n_candidates = len(special) - sum(special)
    budget = num_to_predict(n_candidates, mlm_probability, max_predictions)
    selected = torch.zeros(input_ids.shape, dtype=torch.bool)
    for span in select_spans(units, budget, ngram, generator):
        selected[span] = True
    return replace_tokens(input_ids, selected, generator, mask_id, random_ids)


def mask_batch(input_ids: torch.Tensor, special_mask: torch.Tensor, word_start: torch.Tensor | None,
               generator: torch.Generator | Sequence[torch.Generator], **kw) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask a batch (B, T) row by row. `generator`: one for all rows, or one per row."""
    gens = [generator] * len(input_ids) if isinstance(generator, torch.Generator) else list(generator)
    if len(gens) != len(input_ids):
        raise ValueError(f"got {len(gens)} generators for {len(input_ids)} rows")
    out, labels = torch.empty_like(input_ids), torch.empty_like(input_ids)
    for r, g in enumerate(gens):
        out[r], labels[r] = mask_sequence(input_ids[r], special_mask[r], None if word_start is None else word_start[r],
                                          g, **kw)
    return out, labels
