"""What the sentence objectives (SimCSE: train/simcse.py, TSDAE: train/tsdae.py) share on the
pretraining pipeline: texts read from the instance store unmasked, the sentence vector, the interface.

A sentence objective trains the family's encoder alone (its backbone; no pretraining head is trained
or saved) on whole texts instead of masks. Its data are the store's rows with packing doc-sentences
by default: each row one document's sentences up to --max-length, never joined to the next document's,
so that a row is one text (a package description of the Debian corpus, say) as fine-tuning reads one.

The sentence vector is the mean of the last hidden state over a text's real tokens, not [CLS]:
it is what `finetune --pooling mean` and `--method probe` read, and what all-MiniLM-L6-v2 was
trained with, so the objective shapes the vector that is used afterwards. (The SimCSE paper trains
[CLS] through an MLP it drops at test time; its pooling ablation puts the choices, mean pooling
among them, within about two points of each other on STS-B.)

Beside the Trainer's `totals(batch)` and `objective(model, batch, totals)`, a sentence objective has
  - `model(encoder)`: what the Trainer trains (the encoder itself, or the encoder and a decoder);
  - `encoder(model)`: the encoder inside it, which the job saves;
  - `prepare(rows, seed, step)`: the global batch of a step from the store's rows (noise drawn
    here on the CPU from (seed, step), so that a batch is a pure function of the step);
  - `evaluate(model, batches)`: held-out metrics, floats;
  - `check(encoder_config)`: a ValueError naming the option when the run cannot learn anything.
"""

from __future__ import annotations

from typing import Callable

import torch

from ..models.heads import mean_pool

Batch = dict[str, torch.Tensor]
TEXT_KEYS = ("input_ids", "attention_mask", "token_type_ids")


def trim(rows: Batch) -> Batch:
    """The rows cut after the longest real row's last token (the store pads every row to --max-length).

    >>> rows = {"input_ids": torch.tensor([[1, 2, 0, 0], [3, 0, 0, 0]]), "attention_mask": torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]])}
    >>> trim(rows)["input_ids"].tolist()
    [[1, 2], [3, 0]]
    """
    width = max(1, int(rows["attention_mask"].sum(1).max()))
    return {k: v[:, :width] for k, v in rows.items()}


def text_batches(store, batch_size: int, seed: int, prepare: Callable[[Batch, int, int], Batch]):
    """batches(step): the step's rows of the store (its seeded order, as the MLM batches'), unmasked,
    trimmed, then `prepare`d by the objective: a pure function of the step, as resume and ranks need."""

    def batch(step: int) -> Batch:
        idx = store.indices(step, batch_size, seed)
        rows = store.rows(idx)
        return prepare(trim({k: rows[k] for k in TEXT_KEYS if k in rows}), seed, step)

    return batch


def encoder_inputs(encoder, batch: Batch, prefix: str = "") -> Batch:
    """The batch's tensors (under `prefix`) the encoder takes: token types only where the family has them."""
    keys = ("input_ids", "attention_mask") + (("token_type_ids",) if encoder.config.type_vocab_size > 1 else ())
    return {k: batch[prefix + k] for k in keys if prefix + k in batch}


def sentence_vectors(encoder, inputs: Batch) -> torch.Tensor:
    """(B, H) float32: the mean of the last hidden state over each text's real tokens."""
    return mean_pool(encoder(**inputs).last_hidden_state, inputs["attention_mask"])


def mean_cosine(vectors: torch.Tensor) -> float:
    """The mean cosine between the vectors of different texts: near 1 when they collapse to one direction.

    >>> mean_cosine(torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]))
    -0.3333333432674408
    """
    unit = torch.nn.functional.normalize(vectors.float(), dim=-1)
    n = len(unit)
    if n < 2:
        return float("nan")
    sims = unit @ unit.T  # (n, n)
    return float((sims.sum() - sims.diagonal().sum()) / (n * (n - 1)))


def rng_devices(model) -> list[int]:
    """The CUDA devices whose random state an evaluation that draws dropout must fork (none on the CPU)."""
    device = next(model.parameters()).device
    return [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
