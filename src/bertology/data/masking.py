"""Masked-LM masking: pure functions on torch tensors, randomness from an explicit torch.Generator.

For one sequence (`mask_sequence`):

1. Candidates: every non-special position. Special tokens ([CLS], [SEP], <s>, </s>, padding,
   [UNK], ...) are never selected.
2. Units: with whole_word=False every candidate token is a unit; with whole_word=True a unit is
   a word, i.e. a run of candidates that starts at a word-start token (or right after a special
   token) - so all pieces of a word are masked together. Word starts come from the encodings'
   word_ids (`instances.word_starts`): the pieces of one pre-tokenized word form one word.
3. Budget: num_to_predict = min(max_predictions, max(1, round(mlm_probability * #candidates))).
4. Spans (ALBERT's n-gram masking; ngram=1 is BERT's): visit the units in a random order; at
   each, draw a span length n in 1..ngram with p(n) ∝ 1/n (truncated to the units left in the
   sequence), take the n units starting there; if that would pass the budget try shorter
   spans; skip spans that pass the budget anyway or overlap a span already taken; stop when the
   budget is met.
5. Replacement, per selected token: 80% -> [MASK], 10% -> a random token (never a special id),
   10% -> left unchanged (so the model cannot learn that only [MASK] positions matter).
6. Labels: the original id at selected positions, -100 (ignored by the loss) elsewhere.

`mask_sequence` / `mask_rows_reference` (row by row) are the readable reference.
`mask_rows_vectorised` is the same procedure for a whole (N, T) batch at once, with torch ops over
all rows (what `masker.Masker` uses): the units' random visiting order is an argsort of random
keys, and `select_spans_rows` takes exactly the spans `select_spans` takes in that order. Its
randomness comes from one generator for the batch (a row's draws then depend on its place in the
batch, so a data-parallel rank masks the global batch and keeps its rows) or from `RowDraws`, a
generator per row keyed by the row alone (static masks: an instance's mask wherever it appears).

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

import math

import numpy as np
import torch

from ..nn.cross_entropy import IGNORE_INDEX  # the one label value a loss skips (transformers' -100)


def seeded_generator(*keys: int) -> torch.Generator:
    """A torch.Generator seeded from a tuple of non-negative ints, e.g. (seed, 3, step).

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
        w = weights[: min(ngram, len(units) - start)]
        acc, n, target = 0.0, len(w), u * sum(w)
        for k, wk in enumerate(w, 1):
            acc += wk
            if target < acc:
                n = k
                break
        # too long for what is left of the budget: fall back to shorter spans
        while n > 1 and taken + sum(len(x) for x in units[start : start + n]) > budget:
            n -= 1
        positions = [p for x in units[start : start + n] for p in x]
        if taken + len(positions) > budget or any(p in covered for p in positions):
            continue
        covered.update(positions)
        spans.append(positions)
        taken += len(positions)
    return spans


def _budgets(n_candidates: torch.Tensor, mlm_probability: float, max_predictions: int | None) -> torch.Tensor:
    """`num_to_predict` of every row at once: (N,) int64 from (N,) candidate counts.
    torch.round, like Python's round, sends halves to the even neighbour."""
    n = torch.round(n_candidates.double() * mlm_probability).long().clamp(min=1)
    if max_predictions is not None:
        n = n.clamp(max=max_predictions)
    return torch.where(n_candidates > 0, n, torch.zeros_like(n))


def select_spans_rows(
    unit_sizes: torch.Tensor, order: torch.Tensor, draws: torch.Tensor, budget: torch.Tensor, ngram: int
) -> torch.Tensor:
    """`select_spans` for N rows at once, with the randomness given: which units are chosen.

    unit_sizes (N, U): tokens per unit, units in sequence order, 0 past a row's last unit;
    order (N, U): the visiting order (row n visits units order[n, :#units] in turn; later
    entries are ignored); draws (N, U): the uniform [0, 1) draw for the k-th visit's span length;
    budget (N,). Returns (N, U) bool: the units inside the chosen spans. Given select_spans'
    own order (randperm) and draws (rand) of a row, it chooses the same spans.

    ngram=1 keeps select_spans' greedy rule (take a unit if it fits the budget left, else skip
    it) without a loop over visits: units bigger than the budget left can never be taken later,
    so each round drops them and takes the rest, in visiting order, while their total fits;
    the budget left then falls below the first unit that did not fit, and each later round
    lowers it further, so there are no more rounds than 2 + the largest unit size. ngram > 1
    loops over the visits (at most U steps, each one set of torch ops over all rows), because
    whether a span overlaps depends on every earlier one.

    >>> sizes = torch.tensor([[1, 2, 1, 1], [3, 1, 0, 0]])
    >>> order = torch.tensor([[1, 0, 3, 2], [0, 1, 2, 3]])
    >>> select_spans_rows(sizes, order, torch.zeros(2, 4), torch.tensor([3, 2]), 1)  # greedy, skipping [3]
    tensor([[ True,  True, False, False],
            [False,  True, False, False]])
    """
    N, U = unit_sizes.shape
    n_units = (unit_sizes > 0).sum(1)
    if ngram == 1:
        sizes = unit_sizes.gather(1, order)  # (N, U) in visiting order; 0 = no unit
        taken = torch.zeros(N, U, dtype=torch.bool)
        left = budget.clone()
        live = torch.arange(N)  # rows that may still take a unit
        while len(live):
            s, budget_left = sizes[live], left[live, None]
            fits = ~taken[live] & (s > 0) & (s <= budget_left)
            run = fits & (torch.where(fits, s, 0).cumsum(1) <= budget_left)  # the first fitting units, up to the budget
            taken[live] |= run
            left[live] -= torch.where(run, s, 0).sum(1)
            live = live[(fits & ~run).any(1)]  # a fitting unit was passed over: smaller ones may fit still
        return torch.zeros_like(taken).scatter_(1, order, taken)
    # span_size[n, u, m-1]: tokens in units u..u+m-1 of row n; a span past the last unit never fits
    csum = torch.cat(
        [torch.zeros(N, 1, dtype=torch.long), unit_sizes.long().cumsum(1), torch.zeros(N, ngram, dtype=torch.long)], 1
    )  # (N, U + 1 + ngram)
    u_idx = torch.arange(U)[:, None] + torch.arange(1, ngram + 1)  # (U, ngram): end of each span
    span_size = csum[:, u_idx] - csum[:, :U, None]
    span_size = torch.where(u_idx[None] <= n_units[:, None, None], span_size, torch.iinfo(torch.long).max // 2)
    # cumulative weights 1, 1 + 1/2, ... summed as select_spans sums them (so the same draw gives the same m)
    cumw = torch.tensor([sum(1.0 / n for n in range(1, m + 1)) for m in range(1, ngram + 1)], dtype=torch.float64)
    steps, rows = torch.arange(ngram), torch.arange(N)
    covered = torch.zeros(N, U + ngram, dtype=torch.bool)  # by unit, padded for spans past the end
    taken = torch.zeros(N, dtype=torch.long)
    for k in range(int(n_units.max()) if N else 0):
        active = (k < n_units) & (taken < budget)
        if not active.any():
            break
        start = order[:, k]
        # span length m ~ p(m) ∝ 1/m over the lengths that fit before the sequence ends
        avail = (n_units - start).clamp(1, ngram)
        target = draws[:, k].double() * cumw[avail - 1]
        m = torch.minimum(1 + (cumw[None, :] <= target[:, None]).sum(1), avail)
        # too long for what is left of the budget: fall back to shorter spans (sizes grow with m)
        sizes = span_size[rows, start]  # (N, ngram)
        m = torch.minimum(m, (taken[:, None] + sizes <= budget[:, None]).sum(1)).clamp(min=1)
        size = sizes.gather(1, (m - 1)[:, None])[:, 0]
        units = start[:, None] + steps  # (N, ngram)
        in_span = steps < m[:, None]
        was = covered.gather(1, units)
        ok = active & (taken + size <= budget) & ~(was & in_span).any(1)
        covered.scatter_(1, units, was | (in_span & ok[:, None]))
        taken += torch.where(ok, size, 0)
    return covered[:, :U]


class RowDraws:
    """The random numbers of `mask_rows_vectorised` drawn row by row, each row from a numpy
    generator seeded by that row's key: a row's mask is then a function of its key alone, whatever
    batch it is in (static masking keys a row by (seed, 2, instance)). Same calls as a
    torch.Generator's (`rand`, `randint`), through `_draws`."""

    def __init__(self, keys):
        self.rngs = [np.random.default_rng([int(k) for k in key]) for key in keys]

    def rand(self, shape, dtype=torch.float32) -> torch.Tensor:
        if not self.rngs:
            return torch.zeros(shape, dtype=dtype)
        return torch.from_numpy(np.stack([g.random(shape[1]) for g in self.rngs])).to(dtype)

    def randint(self, high: int, shape) -> torch.Tensor:
        if not self.rngs:
            return torch.zeros(shape, dtype=torch.long)
        return torch.from_numpy(np.stack([g.integers(high, size=shape[1]) for g in self.rngs]))


class _TorchDraws:
    def __init__(self, generator: torch.Generator):
        self.g = generator

    def rand(self, shape, dtype=torch.float32) -> torch.Tensor:
        return torch.rand(shape, generator=self.g, dtype=dtype)

    def randint(self, high: int, shape) -> torch.Tensor:
        return torch.randint(high, shape, generator=self.g)


def _draws(source: "torch.Generator | RowDraws"):
    return _TorchDraws(source) if isinstance(source, torch.Generator) else source


BERT_SHARES = (0.8, 0.1)  # of the selected tokens: [MASK], a random token; the rest keep their own
ELECTRA_SHARES = (0.85, 0.0)  # google-research/electra: no random tokens (the generator supplies replacements)


def replace_tokens(
    input_ids: torch.Tensor,
    selected: torch.Tensor,
    generator: "torch.Generator | RowDraws",
    mask_id: int,
    random_ids: torch.Tensor,
    shares: tuple[float, float] = BERT_SHARES,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Steps 5-6: (masked input ids, labels) given a boolean `selected` of the same shape."""
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    draw = _draws(generator)
    r = draw.rand(input_ids.shape)
    masked, randomised = shares
    # 80% of the selected tokens -> [MASK]
    to_mask = selected & (r < masked)
    # 10% -> a random token from random_ids (which holds no special token)
    to_random = selected & (r >= masked) & (r < masked + randomised)
    # the remaining 10% keep their original token
    pick = draw.randint(len(random_ids), input_ids.shape)
    out = torch.where(to_mask, torch.full_like(input_ids, mask_id), input_ids)
    out = torch.where(to_random, random_ids.to(input_ids.dtype)[pick], out)
    return out, labels


def mask_sequence(
    input_ids: torch.Tensor,
    special_mask: torch.Tensor,
    word_start: torch.Tensor | None,
    generator: torch.Generator,
    *,
    mask_id: int,
    random_ids: torch.Tensor,
    mlm_probability: float = 0.15,
    max_predictions: int | None = 20,
    ngram: int = 1,
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


def mask_rows_reference(
    input_ids: torch.Tensor,
    special_mask: torch.Tensor,
    word_start: torch.Tensor | None,
    generator: torch.Generator | Sequence[torch.Generator],
    **kw,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference: mask a batch (B, T) row by row with `mask_sequence`. `generator`: one for all
    rows, or one per row."""
    gens = [generator] * len(input_ids) if isinstance(generator, torch.Generator) else list(generator)
    if len(gens) != len(input_ids):
        raise ValueError(f"got {len(gens)} generators for {len(input_ids)} rows")
    out, labels = torch.empty_like(input_ids), torch.empty_like(input_ids)
    for r, g in enumerate(gens):
        out[r], labels[r] = mask_sequence(
            input_ids[r], special_mask[r], None if word_start is None else word_start[r], g, **kw
        )
    return out, labels


def mask_rows_vectorised(
    input_ids: torch.Tensor,
    special_mask: torch.Tensor,
    word_start: torch.Tensor | None,
    generator: "torch.Generator | RowDraws",
    *,
    mask_id: int,
    random_ids: torch.Tensor,
    mlm_probability: float = 0.15,
    max_predictions: int | None = 20,
    ngram: int = 1,
    shares: tuple[float, float] = BERT_SHARES,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask a batch (N, T) all at once: the module docstring's steps for every row, as
    `mask_sequence` does them, with torch ops over the whole batch and one generator.

    Units are numbered by a cumulative sum of unit starts; each row visits its units in the
    order of random keys (non-units sorted last), so every order is equally likely, as with
    select_spans' randperm; `select_spans_rows` then takes the spans. Same generator state,
    same result; the draws of a row depend on the shape of the batch, not only on the row.

    >>> ids = torch.tensor([[101, 7, 8, 9, 10, 102, 0], [101, 11, 12, 102, 13, 14, 102]])
    >>> special = (ids >= 101) | (ids == 0)
    >>> masked, labels = mask_rows_vectorised(ids, special, None, torch.Generator().manual_seed(0), mask_id=103,
    ...                                       random_ids=torch.arange(1, 100), mlm_probability=0.5)
    >>> (labels != -100).sum(1).tolist(), bool((labels[special] == -100).all())
    ([2, 2], True)
    """
    if not 0.0 <= mlm_probability <= 1.0:
        raise ValueError(f"mlm_probability must be in [0, 1], got {mlm_probability}")
    if ngram < 1:
        raise ValueError(f"ngram must be >= 1, got {ngram}")
    if input_ids.dim() != 2 or special_mask.shape != input_ids.shape:
        raise ValueError(
            f"need input_ids (N, T) and special_mask of the same shape, got {tuple(input_ids.shape)} "
            f"and {tuple(special_mask.shape)}"
        )
    if word_start is not None and word_start.shape != input_ids.shape:
        raise ValueError(f"word_start has shape {tuple(word_start.shape)}, input_ids {tuple(input_ids.shape)}")
    N, T = input_ids.shape
    candidate = ~special_mask.bool()
    # a unit starts at a candidate that starts a word or follows a special token (word_units)
    after_special = torch.cat([torch.ones(N, 1, dtype=torch.bool), ~candidate[:, :-1]], 1)
    unit_start = candidate if word_start is None else candidate & (word_start.bool() | after_special)
    unit = (unit_start.cumsum(1) - 1).clamp(min=0)  # (N, T): the unit of each candidate position
    unit_sizes = torch.zeros(N, T, dtype=torch.long).scatter_add_(1, unit, candidate.long())  # (N, U=T)
    n_units = unit_start.sum(1)
    draw = _draws(generator)
    keys = draw.rand((N, T), torch.float64)
    keys = torch.where(torch.arange(T) < n_units[:, None], keys, 2.0)
    order = torch.argsort(keys, dim=1, stable=True)
    draws = draw.rand((N, T), torch.float64) if ngram > 1 else torch.zeros(N, T)
    budget = _budgets(candidate.sum(1), mlm_probability, max_predictions)
    chosen = select_spans_rows(unit_sizes, order, draws, budget, ngram)  # (N, U)
    selected = candidate & chosen.gather(1, unit)
    return replace_tokens(input_ids, selected, draw, mask_id, random_ids, shares)


def token_weights(counts: torch.Tensor, smoothing: float = 0.7) -> torch.Tensor:
    """DistilBERT's masking weights: count^-smoothing per token id, so rare tokens are masked more
    often than their frequency alone would have them (a token never seen weighs as one seen once).

    >>> token_weights(torch.tensor([1, 100, 0]), 0.5).tolist()
    [1.0, 0.10000000149011612, 1.0]
    """
    return counts.double().clamp(min=1).pow(-smoothing).float()


def mask_by_weight(
    input_ids: torch.Tensor,
    candidates: torch.Tensor,
    weights: torch.Tensor,
    generator: torch.Generator,
    *,
    mask_id: int,
    random_ids: torch.Tensor,
    mlm_probability: float = 0.15,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask ⌈mlm_probability · #candidates⌉ positions of the whole batch (N, T), drawn without
    replacement with probability ∝ weights[id] (DistilBERT's smoothed masking), then the 80/10/10
    replacement of step 5. Special tokens and padding are never candidates.

    >>> ids = torch.tensor([[101, 5, 6, 7, 102]])
    >>> _, labels = mask_by_weight(ids, ids < 100, torch.ones(200), torch.Generator().manual_seed(0),
    ...                            mask_id=103, random_ids=torch.arange(1, 100), mlm_probability=0.5)
    >>> int((labels != -100).sum()), bool((labels[:, [0, 4]] == -100).all())
    (2, True)
    """
    if not 0.0 < mlm_probability <= 1.0:
        raise ValueError(f"mlm_probability must be in (0, 1], got {mlm_probability}")
    flat = (weights[input_ids] * candidates).flatten().double()  # (N·T,)
    n = min(int(candidates.sum()), math.ceil(mlm_probability * int(candidates.sum())))
    selected = torch.zeros(flat.shape, dtype=torch.bool)
    if n:
        selected[torch.multinomial(flat, n, replacement=False, generator=generator)] = True
    return replace_tokens(input_ids, selected.view(input_ids.shape), generator, mask_id, random_ids)
