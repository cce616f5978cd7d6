"""What a pretraining checkpoint has learnt, beyond its loss: the measures that tell a model that
predicts word frequencies, or maps every text to the same vector, from one that reads.

- `unigram_accuracy`: the masked-LM accuracy of always predicting the corpus's most frequent
  token; a held-out MLM accuracy near it is the unigram plateau (the model ignores context).
- `unigram_loss`: the masked-LM loss of the corpus's unigram distribution, the plateau's height.
- `mean_pairwise_cosine`: mean cosine similarity over all pairs of vectors; ≈ 1.0 is collapse
  (every text gets nearly the same vector, so a classifier has only tiny differences to work on).
- `sentence_vectors`: mean-pooled and first-token ([CLS] / <s>) vectors of texts.

    >>> mean_pairwise_cosine(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    0.4714
    >>> unigram_accuracy(torch.tensor([0, 0, 0, 0, 0, 4, 0, 2]), torch.tensor([[5, -100], [7, 7]]))
    0.3333
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..models.heads import IGNORE_INDEX


def unigram_accuracy(counts: torch.Tensor, eval_labels: torch.Tensor) -> float:
    """Share of `eval_labels` (ignoring -100) equal to the most frequent token of `counts` (V,)."""
    held = eval_labels[eval_labels != IGNORE_INDEX]
    if not len(held) or not int(counts.sum()):
        raise ValueError("unigram_accuracy needs token counts and masked evaluation labels")
    return round(float((held == counts.argmax()).float().mean()), 4)


def unigram_loss(counts: torch.Tensor, eval_labels: torch.Tensor) -> float:
    """Cross-entropy (nats) of `eval_labels` under the add-one smoothed unigram distribution of
    `counts`: the masked-LM loss of a model that ignores context, the plateau's height.

    >>> unigram_loss(torch.tensor([1, 1, 0, 0]), torch.tensor([0, 1, -100]))  # p = 2/6 each
    1.0986
    """
    held = eval_labels[eval_labels != IGNORE_INDEX]
    if not len(held):
        raise ValueError("unigram_loss needs masked evaluation labels")
    p = (counts.double() + 1) / (counts.double().sum() + len(counts))
    return round(float(-p[held].log().mean()), 4)


def mean_pairwise_cosine(x: torch.Tensor) -> float:
    """Mean cosine similarity over the N·(N-1) ordered pairs of distinct rows of x (N, H)."""
    n = len(x)
    if n < 2:
        raise ValueError(f"need at least two vectors, got {n}")
    unit = F.normalize(x.float(), dim=-1)
    sims = unit @ unit.T  # (N, N)
    return round(float((sims.sum() - sims.diagonal().sum()) / (n * (n - 1))), 4)


@torch.no_grad()
def sentence_vectors(
    model, tokenizer, texts: list[str], max_length: int = 64, batch_size: int = 64
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean-pooled over real tokens, first token) last-layer vectors of `texts`, each (N, H)."""
    backbone = getattr(model, "backbone", model)
    backbone.eval()
    means, firsts = [], []
    for start in range(0, len(texts), batch_size):
        enc = tokenizer.encode_batch(
            texts[start : start + batch_size], padding=True, truncation=True, max_length=max_length, return_tensors="pt"
        )
        inputs = {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        if backbone.config.type_vocab_size <= 1:
            inputs.pop("token_type_ids", None)
        h = backbone(**inputs).last_hidden_state  # (B, T, H)
        mask = inputs["attention_mask"].unsqueeze(-1).to(h.dtype)  # (B, T, 1)
        means.append((h * mask).sum(1) / mask.sum(1))
        firsts.append(h[:, 0])
    return torch.cat(means), torch.cat(firsts)
