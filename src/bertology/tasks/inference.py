"""Inference that needs no fine-tuned task: sentence vectors from any encoder, masked tokens filled by
an MLM head, and a tagger's word tags turned into entities with character spans.

    >>> vectors = embed(model, tokenizer, ["a puzzle game", "an email client"], pooling="mean")  # doctest: +SKIP
    >>> fill_mask(model, tokenizer, ["a [MASK] game with falling blocks"], top_k=3)               # doctest: +SKIP
    [[[MaskFill(sequence='a puzzle game with falling blocks', score=0.41, token=8123, token_str='puzzle'), …]]]

Texts are tokenized here without truncation unless `max_length` is given: the caller decides
what happens to a text longer than the model's positions (the server refuses it or cuts it).
Both run where the model is (tasks/forward.py) and answer on the CPU.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import torch

from ..models import family_of
from .conll import chunks
from ..train.device import model_device, to_device
from .forward import model_inputs, precision

POOLINGS = ("mean", "cls")
MLM_HEADS = ("ForMaskedLM", "ForPreTraining")


def backbone_of(model):
    """The encoder under any head (a bare backbone is its own)."""
    return getattr(model, "backbone", model)


def encode(tokenizer, texts: list[str], max_length: int | None = None) -> dict[str, torch.Tensor]:
    """Padded model inputs of `texts` (cut to max_length when given)."""
    enc = tokenizer.encode_batch(
        list(texts), padding=True, truncation=max_length is not None, max_length=max_length, return_tensors="pt"
    )
    return {k: enc[k] for k in ("input_ids", "token_type_ids", "attention_mask")}


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: str = "mean") -> torch.Tensor:
    """(B, T, H) hidden states → (B, H): the mean over real tokens (sentence-transformers' pooling) or the first token.

    >>> pool(torch.tensor([[[1.0, 2.0], [3.0, 4.0], [9.0, 9.0]]]), torch.tensor([[1, 1, 0]]))
    tensor([[2., 3.]])
    """
    if pooling == "cls":
        return hidden[:, 0]
    if pooling != "mean":
        raise ValueError(f"pooling {pooling!r}: choose one of {', '.join(POOLINGS)}")
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)


def _last_hidden(model, tokenizer, texts: list[str], max_length: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The encoder's last hidden states of `texts`, (B, T, H) float32 on the model's device, and their
    attention mask (B, T)."""
    backbone = backbone_of(model)
    backbone.eval()
    device = model_device(backbone)
    inputs = to_device(encode(tokenizer, texts, max_length), device, pin=True)
    with precision(device):
        out = backbone(**model_inputs(backbone, inputs))
    return out.last_hidden_state.float(), inputs["attention_mask"]


@torch.no_grad()
def embed(
    model, tokenizer, texts: list[str], pooling: str = "mean", normalize: bool = False, max_length: int | None = None
) -> torch.Tensor:
    """One vector per text, (len(texts), H) float32, from the model's encoder (any head's backbone)."""
    hidden, attention_mask = _last_hidden(model, tokenizer, texts, max_length)
    vectors = pool(hidden, attention_mask, pooling)
    return (torch.nn.functional.normalize(vectors, dim=-1) if normalize else vectors).cpu()


@torch.no_grad()
def token_vectors(model, tokenizer, texts: list[str], max_length: int | None = None) -> list[torch.Tensor]:
    """Every token's vector from the model's encoder, special tokens included: one (T_i, H) float32
    tensor per text, padding dropped (TEI's /embed_all)."""
    hidden, attention_mask = _last_hidden(model, tokenizer, texts, max_length)
    hidden, keep = hidden.cpu(), attention_mask.bool().cpu()
    return [h[m] for h, m in zip(hidden, keep)]


class MaskFill(NamedTuple):
    sequence: str  # the input with this mask replaced by the token (other masks left as they are)
    score: float  # the token's probability at the mask
    token: int
    token_str: str


@torch.no_grad()
def fill_mask(
    model, tokenizer, texts: list[str], top_k: int = 5, mask_token: str | None = None, max_length: int | None = None
) -> list[list[list[MaskFill]]]:
    """For each text, for each mask token in it (in order), the top_k tokens of the MLM head, best first."""
    if not model.architecture.endswith(MLM_HEADS):
        raise ValueError(f"{model.architecture} has no masked-language-model head ({' or '.join(MLM_HEADS)})")
    mask_token = mask_token or mask_token_of(model)
    mask_id = tokenizer.token_to_id(mask_token)
    if mask_id is None:
        raise ValueError(f"the tokenizer has no {mask_token} token")
    encodings = tokenizer.encode_batch(
        list(texts), padding=True, truncation=max_length is not None, max_length=max_length
    )
    positions = [[t for t, i in enumerate(e.ids) if i == mask_id] for e in encodings]
    for i, p in enumerate(positions):
        if not p:
            raise ValueError(f"input {i}: no {mask_token} token to fill in {texts[i]!r:.80}")
    model.eval()
    device = model_device(model)
    ids = torch.tensor([e.ids for e in encodings])
    inputs = {
        "input_ids": ids,
        "token_type_ids": torch.tensor([e.type_ids for e in encodings]),
        "attention_mask": torch.tensor([e.attention_mask for e in encodings]),
    }
    with precision(device):
        out = model(**model_inputs(model, to_device(inputs, device, pin=True)))
    logits = out.logits if getattr(out, "logits", None) is not None else out.prediction_logits  # (B, T, V)
    at = [(b, t) for b, ts in enumerate(positions) for t in ts]  # every mask, in order
    rows = torch.tensor(at, device=logits.device).T  # (2, masks): only their logits leave the device
    top = logits[rows[0], rows[1]].float().softmax(-1).topk(min(top_k, logits.shape[-1]))
    scores, tokens = iter(top.values.tolist()), iter(top.indices.tolist())
    results = []
    for b, (text, enc) in enumerate(zip(texts, encodings)):
        per_mask = []
        for t in positions[b]:
            start, end = enc.offsets[t]
            per_mask.append([])
            for score, token in zip(next(scores), next(tokens)):
                piece = tokenizer.decode([token])  # byte-level / Metaspace pieces carry the space before a word
                if start == 0 or text[start - 1].isspace():
                    piece = piece.lstrip()
                per_mask[-1].append(MaskFill(text[:start] + piece + text[end:], score, token, piece.strip()))
        results.append(per_mask)
    return results


def mask_token_of(model) -> str:
    return family_of(model.config).specials.mask


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """The whitespace-separated words of a text with their character spans (what the tag task reads).

    >>> word_spans(" John  lives")
    [('John', 1, 5), ('lives', 7, 12)]
    """
    return [(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def tagged_entities(text: str, tags: list[str | None], scores: list[float | None]) -> list[dict]:
    """A tagger's per-word BIO tags on `text` → entities {entity_group, score (mean over its words), word,
    start, end} with character spans, as transformers' token-classification pipeline aggregates them.

    >>> tagged_entities("John Smith lives", ["B-PER", "I-PER", "O"], [0.9, 0.7, 0.8])
    [{'entity_group': 'PER', 'score': 0.8, 'word': 'John Smith', 'start': 0, 'end': 10}]
    """
    spans = word_spans(text)
    if len(spans) != len(tags):
        raise ValueError(f"{len(tags)} tags for {len(spans)} words")
    out = []
    for kind, first, last in chunks([t if t is not None else "O" for t in tags]):
        words = [s for s in scores[first : last + 1] if s is not None]
        start, end = spans[first][1], spans[last][2]
        out.append(
            {
                "entity_group": kind,
                "score": round(sum(words) / len(words), 6) if words else 0.0,
                "word": text[start:end],
                "start": start,
                "end": end,
            }
        )
    return out
