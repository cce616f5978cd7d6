"""BERT (Devlin et al., 2019): the reference family every other encoder here is a diff from.

Shapes: B batch, T length, H hidden, E embedding size (= H for BERT), V vocab, M real tokens.

    input_ids ──► word + position + token-type embeddings ─► LayerNorm ─► dropout     (B, T, H)
              ──► pack to real tokens (M, H) ─► L × post-LN layer ─► unpack           (B, T, H)
              ──► pooler: tanh(W · h[CLS])                                              (B, H)
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch import nn

from ..nn import AttentionBlock, Dropout, FeedForwardBlock, Padding, TransformerLayer
from .base import EncoderModel
from .config import BertConfig, EncoderConfig
from .heads import (
    ForMaskedLM,
    ForMultipleChoice,
    ForPromptClassification,
    ForNextSentencePrediction,
    ForPreTraining,
    ForQuestionAnswering,
    ForSequenceClassification,
    ForTokenClassification,
)
from .outputs import BaseModelOutput


class Embeddings(nn.Module):
    """Sum of word, absolute position and (when the family has them) token-type embeddings."""

    def __init__(self, config: EncoderConfig, size: int | None = None):
        super().__init__()
        size = size or config.hidden_size
        self.word = nn.Embedding(config.vocab_size, size, padding_idx=config.pad_token_id)
        self.position = nn.Embedding(config.max_position_embeddings, size)
        self.token_type = nn.Embedding(config.type_vocab_size, size) if config.type_vocab_size else None
        self.norm = nn.LayerNorm(size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def default_position_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        return torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)

    def forward(self, input_ids, token_type_ids=None, position_ids=None) -> torch.Tensor:
        x = self.word(input_ids) + self.position(position_ids)  # (B, T, E)
        if self.token_type is not None:
            x = x + (self.token_type(token_type_ids) if token_type_ids is not None else self.token_type.weight[0])
        return self.dropout(self.norm(x))


class Encoder(nn.Module):
    """Post-LN layers run in the order `schedule` gives; subclasses own the blocks (ALBERT reuses them)."""

    def schedule(self) -> Iterator[tuple[AttentionBlock, FeedForwardBlock]]:
        raise NotImplementedError

    def forward(self, x: torch.Tensor, padding: Padding, output_hidden_states=False, output_attentions=False):
        hidden_states, attentions = [], []
        for attention, ffn in self.schedule():
            if output_hidden_states:
                hidden_states.append(padding.unpack(x))
            x, probs = attention(x, padding, need_weights=output_attentions)
            x = ffn(x)
            if output_attentions:
                attentions.append(probs)
        if output_hidden_states:
            hidden_states.append(padding.unpack(x))
        return (
            x,
            (tuple(hidden_states) if output_hidden_states else None),
            (tuple(attentions) if output_attentions else None),
        )


class LayerStack(Encoder):
    """BERT's encoder: one layer of its own per depth."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.layers = nn.ModuleList(make_layer(config) for _ in range(config.num_hidden_layers))

    def schedule(self) -> Iterator[tuple[AttentionBlock, FeedForwardBlock]]:
        for layer in self.layers:
            yield layer.attention, layer.ffn


def make_layer(config: EncoderConfig) -> TransformerLayer:
    return TransformerLayer(make_attention_block(config), make_ffn_block(config))


def make_attention_block(config: EncoderConfig) -> AttentionBlock:
    return AttentionBlock(
        config.hidden_size,
        config.num_attention_heads,
        config.attention_probs_dropout_prob,
        config.hidden_dropout_prob,
        config.layer_norm_eps,
    )


def make_ffn_block(config: EncoderConfig) -> FeedForwardBlock:
    return FeedForwardBlock(
        config.hidden_size,
        config.intermediate_size,
        config.hidden_act,
        config.hidden_dropout_prob,
        config.layer_norm_eps,
    )


class Pooler(nn.Module):
    """tanh(W·h + b) on the first token: the sentence vector BERT's NSP head was trained on."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)

    def forward(self, last_hidden_state: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(last_hidden_state[:, 0]))  # (B, H)


class BertModel(EncoderModel):
    config_class = BertConfig

    def __init__(self, config: EncoderConfig, add_pooler: bool = True):
        super().__init__(config)
        self.embeddings = self.make_embeddings(config)
        self.encoder = self.make_encoder(config)
        self.pooler = Pooler(config.hidden_size) if add_pooler else None
        # Linear layers and LayerNorms run on real tokens only; padded positions of the outputs
        # are then zeros. Set False to compute padded positions too, as transformers does.
        self.skip_padding = True
        # Attention over the packed rows themselves (no gather back to (B, T)): None = on CUDA.
        self.varlen_attention: bool | None = None
        self.init_weights()

    # Families override these three to change what they differ in.
    def make_embeddings(self, config: EncoderConfig) -> nn.Module:
        return Embeddings(config)

    def make_encoder(self, config: EncoderConfig) -> nn.Module:
        return LayerStack(config)

    def default_position_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.embeddings.default_position_ids(input_ids)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        output_hidden_states=False,
        output_attentions=False,
    ) -> BaseModelOutput:
        if position_ids is None and input_ids is not None:
            position_ids = self.default_position_ids(input_ids)
        self.check_inputs(input_ids, attention_mask, token_type_ids, position_ids)
        B, T = input_ids.shape
        x = self.embeddings(input_ids, token_type_ids, position_ids)  # (B, T, E)
        padding = Padding.build(attention_mask, B, T, pack=self.skip_padding, varlen=self.varlen_attention)
        x, hidden_states, attentions = self.encoder(padding.pack(x), padding, output_hidden_states, output_attentions)
        last = padding.unpack(x)  # (B, T, H)
        pooled = self.pooler(last) if self.pooler is not None else None
        return BaseModelOutput(last, pooled, hidden_states, attentions)


class BertForPreTraining(ForPreTraining):
    backbone_class = BertModel


class BertForMaskedLM(ForMaskedLM):
    backbone_class = BertModel


class BertForPromptClassification(ForPromptClassification, BertForMaskedLM):
    """Its masked LM read at a prompt's mask as the classifier (heads.ForPromptClassification)."""


class BertForNextSentencePrediction(ForNextSentencePrediction):
    backbone_class = BertModel


class BertForSequenceClassification(ForSequenceClassification):
    backbone_class = BertModel


class BertForTokenClassification(ForTokenClassification):
    backbone_class = BertModel


class BertForQuestionAnswering(ForQuestionAnswering):
    backbone_class = BertModel


class BertForMultipleChoice(ForMultipleChoice):
    backbone_class = BertModel
