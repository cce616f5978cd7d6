"""Unsupervised SimCSE (Gao, Yao & Chen, 2021): `pretrain --objective simcse`.

Each text goes through the encoder twice with dropout on; the two dropout masks make two views of
it. The view pair of a text is the positive, every other text of the batch a negative:

    loss_i = −log  exp(cos(a_i, b_i) / τ) / Σ_j exp(cos(a_i, b_j) / τ),    τ = 0.05 (the paper's)

the cross-entropy of row i of the (B, B) similarity matrix with target i, a mean over the global
batch's texts. Dropout is the only noise, so `--dropout 0` is refused. The negatives are the texts
of one forward pass: with --accumulation or several ranks each micro-batch contrasts its own rows
(the gradient is then that of a smaller batch, not of the global one, as for any in-batch loss).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .sentences import Batch, encoder_inputs, mean_cosine, rng_devices, sentence_vectors

DEFAULT_TEMPERATURE = 0.05
EVAL_SEED = 0  # the held-out views' dropout masks: the same at every evaluation


def simcse_loss(a: torch.Tensor, b: torch.Tensor, temperature: float) -> torch.Tensor:
    """(B,): for each row of `a` (B, H), the cross-entropy of its cosine similarities to every row of
    `b` (B, H), divided by `temperature`, with its own row of `b` as the target.

    >>> simcse_loss(torch.eye(2), torch.eye(2), 1.0)   # log(1 + e⁻¹): cos 1 to itself, 0 to the other
    tensor([0.3133, 0.3133])
    >>> simcse_loss(torch.ones(4, 3), torch.ones(4, 3), 0.05)  # all alike: log B
    tensor([1.3863, 1.3863, 1.3863, 1.3863])
    """
    sims = F.normalize(a.float(), dim=-1) @ F.normalize(b.float(), dim=-1).T / temperature  # (B, B)
    return F.cross_entropy(sims, torch.arange(len(a), device=a.device), reduction="none")


def two_views(encoder, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Two (B, H) sentence vectors of the batch's texts: one forward pass over the batch stacked on
    itself (2B rows), so each copy draws its own dropout masks and the encoder runs once."""
    inputs = {k: torch.cat([v, v]) for k, v in encoder_inputs(encoder, batch).items()}  # (2B, T)
    return sentence_vectors(encoder, inputs).chunk(2)


class SimCSEObjective:
    """The Trainer's objective for SimCSE (module docstring); the model is the encoder itself."""

    name = "simcse"

    def __init__(self, temperature: float = DEFAULT_TEMPERATURE):
        if not temperature > 0:
            raise ValueError(f"--temperature {temperature}: must be > 0")
        self.temperature = temperature

    @classmethod
    def from_options(cls, o) -> "SimCSEObjective":
        return cls(DEFAULT_TEMPERATURE if o.temperature is None else o.temperature)

    def check(self, o, config) -> None:
        """Dropout makes the two views: without it they are the same vector and nothing is learnt."""
        p = config.hidden_dropout_prob if o.dropout is None else o.dropout
        if p == 0:
            where = "--dropout 0" if o.dropout is not None else "the model's config (hidden_dropout_prob 0)"
            raise ValueError(f"{where}: SimCSE's two views of a text differ only by dropout; give --dropout 0.1")

    def model(self, encoder):
        return encoder

    def encoder(self, model):
        return model

    def prepare(self, rows: Batch, seed: int, step: int) -> Batch:
        return rows  # the texts as they are: dropout is the noise

    def totals(self, batch: Batch) -> dict[str, int]:
        return {"sequences": batch["input_ids"].shape[0]}

    def __call__(self, model, batch: Batch, totals: dict[str, int]):
        a, b = two_views(model, batch)
        losses = simcse_loss(a, b, self.temperature)  # (B,)
        loss = losses.sum() / totals["sequences"]
        with torch.no_grad():
            sims = F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T  # (B, B)
            hits = (sims.argmax(-1) == torch.arange(len(a), device=a.device)).sum()
        metrics = {"loss": loss.detach(), "simcse_accuracy": hits / totals["sequences"]}
        return loss, metrics

    @torch.no_grad()
    def evaluate(self, model, batches: list[Batch]) -> dict[str, float]:
        """Held-out: the loss and the share of texts whose other view is their nearest (dropout on, its
        masks drawn from EVAL_SEED without touching the training's random stream), and the mean cosine
        between different texts' vectors without dropout (near 1: the vectors have collapsed)."""
        device = next(model.parameters()).device
        loss = hits = n = 0.0
        vectors = []
        with torch.random.fork_rng(devices=rng_devices(model)):
            torch.manual_seed(EVAL_SEED)
            model.train()
            for batch in batches:
                batch = {k: v.to(device) for k, v in batch.items()}
                a, b = two_views(model, batch)
                loss += float(simcse_loss(a, b, self.temperature).sum())
                sims = F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T
                hits += int((sims.argmax(-1) == torch.arange(len(a), device=device)).sum())
                n += len(a)
        model.eval()
        for batch in batches:
            batch = {k: v.to(device) for k, v in batch.items()}
            vectors.append(sentence_vectors(model, encoder_inputs(model, batch)).cpu())
        return {"simcse_loss": loss / n, "simcse_accuracy": hits / n, "mean_cosine": mean_cosine(torch.cat(vectors))}
