"""The one place masks are drawn: `Masker` turns unmasked rows into model inputs and MLM labels.

The instance store keeps text only (ids, word starts, pair labels); every batch goes through
`Masker.__call__` with the global batch's rows, the step and the rows' instance numbers:

* static: each instance's mask is drawn from its own generator, keyed (seed, 2, instance), so it
  is the same every epoch and in every batch (BERT's masks fixed at data creation; the
  dupe_factor copies of a text are different instances, with different masks);
* dynamic: the whole global batch is masked with one generator keyed (seed, 3, step), a fresh
  mask each time a sequence is fed (RoBERTa);
* smoothed: positions drawn over the whole batch ∝ count^-0.7 of their token, keyed (seed, 4, step)
  (DistilBERT), from the corpus's token counts.

Replaced-token detection (ELECTRA, objective "rtd") masks as google-research/electra does: 85% of
the selected tokens become [MASK], 15% keep their own, none a random token (the generator supplies
the replacements); and the batch carries `replacement_draws` (B, T), one uniform number per
position keyed (seed, 5, step), from which the objective samples the generator's replacements, so
that the sample too is a function of the global batch and the step (exact resume, data parallel).

Static and dynamic share `masking.mask_rows_vectorised` (whole words and n-grams included): given
the same draws they mask alike. A rank masks the global batch and keeps its rows, so data
parallelism reproduces the single-process batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .masking import BERT_SHARES, ELECTRA_SHARES, RowDraws, mask_by_weight, mask_rows_vectorised, seeded_generator
from .recipe import RTD, Recipe


@dataclass(frozen=True)
class Masker:
    recipe: Recipe
    mask_id: int
    special_ids: torch.Tensor  # never masked, never a replacement
    random_ids: torch.Tensor  # the replacements of the 10% random tokens
    weights: torch.Tensor | None = None  # smoothed masking: a weight per token id (masking.token_weights)

    def __post_init__(self):
        if self.recipe.masking == "smoothed" and self.weights is None:
            raise ValueError("smoothed masking needs token weights (masking.token_weights of the corpus's counts)")

    def __call__(
        self, rows: dict[str, torch.Tensor], *, seed: int, step: int, instances: np.ndarray
    ) -> dict[str, torch.Tensor]:
        """`rows` (global batch, unmasked) with input_ids masked and labels added."""
        r = self.recipe
        ids = rows["input_ids"]
        special = torch.isin(ids, self.special_ids) | ~rows["attention_mask"].bool()
        out = {k: v for k, v in rows.items() if k != "word_start"}
        if r.masking == "smoothed":
            out["input_ids"], out["labels"] = mask_by_weight(
                ids,
                ~special,
                self.weights,
                seeded_generator(seed, 4, step),
                mask_id=self.mask_id,
                random_ids=self.random_ids,
                mlm_probability=r.mlm_probability,
            )
            return out
        draws = (
            RowDraws([(seed, 2, int(i)) for i in instances])
            if r.masking == "static"
            else seeded_generator(seed, 3, step)
        )
        out["input_ids"], out["labels"] = mask_rows_vectorised(
            ids,
            special,
            rows.get("word_start") if r.whole_word else None,
            draws,
            mask_id=self.mask_id,
            random_ids=self.random_ids,
            mlm_probability=r.mlm_probability,
            max_predictions=r.max_predictions,
            ngram=r.ngram,
            shares=ELECTRA_SHARES if r.objective == RTD else BERT_SHARES,
        )
        if r.objective == RTD:
            out["replacement_draws"] = torch.rand(
                ids.shape, generator=seeded_generator(seed, 5, step), dtype=torch.float64
            )
        return out
