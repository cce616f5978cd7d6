"""Model outputs as dataclasses, with Hugging Face's field names (never positional tuples)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

Tensor = torch.Tensor


@dataclass
class ModelOutput:
    def __getitem__(self, key: str):
        return getattr(self, key)

    def keys(self) -> list[str]:
        return [k for k, v in self.__dict__.items() if v is not None]


@dataclass
class BaseModelOutput(ModelOutput):
    last_hidden_state: Tensor  # (B, T, H)
    pooler_output: Tensor | None = None  # (B, H)
    hidden_states: tuple[Tensor, ...] | None = None  # embeddings, then each layer: (B, T, H)
    attentions: tuple[Tensor, ...] | None = None  # each layer: (B, N, T, T)


@dataclass
class PreTrainingOutput(ModelOutput):
    loss: Tensor | None = None
    prediction_logits: Tensor | None = None  # (B, T, V); (M, V) at the masked positions with sparse_prediction
    seq_relationship_logits: Tensor | None = None  # BERT's NSP: (B, 2), 0 = B follows A
    sop_logits: Tensor | None = None  # ALBERT's SOP: (B, 2), 1 = swapped
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None
    mlm_loss: Tensor | None = None
    pair_loss: Tensor | None = None


@dataclass
class MaskedLMOutput(ModelOutput):
    loss: Tensor | None = None
    logits: Tensor | None = None  # (B, T, V); (M, V) at the masked positions with sparse_prediction
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None


@dataclass
class ClassifierOutput(ModelOutput):
    """Sequence classification (B, C), token classification (B, T, C), multiple choice (B, choices), NSP (B, 2)."""

    loss: Tensor | None = None
    logits: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None


@dataclass
class QuestionAnsweringOutput(ModelOutput):
    loss: Tensor | None = None
    start_logits: Tensor | None = None  # (B, T)
    end_logits: Tensor | None = None  # (B, T)
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None


# ---- XLNet's: transformers' fields, plus the new memory ------------------------------------------------


@dataclass
class XLNetModelOutput(BaseModelOutput):
    mems: tuple[Tensor, ...] | None = None  # per layer (M', B, H), to pass as `mems` to the next segment


@dataclass
class XLNetLMHeadModelOutput(MaskedLMOutput):
    mems: tuple[Tensor, ...] | None = None


@dataclass
class XLNetClassifierOutput(ClassifierOutput):
    mems: tuple[Tensor, ...] | None = None


@dataclass
class XLNetQuestionAnsweringSimpleOutput(QuestionAnsweringOutput):
    mems: tuple[Tensor, ...] | None = None
