"""ALBERT (Lan et al., 2020) as a diff from BERT: fewer parameters, the same compute.

- Factorized embedding: tokens live in a small space E and are projected to H once
  (V·E + E·H parameters instead of V·H: for V = 30,000, H = 1,024, E = 128, 3,971,072 not 30,720,000).
- Cross-layer sharing: the L layers reuse blocks. Hugging Face's layout has `num_hidden_groups`
  groups of `inner_group_num` layers, layer i running group i·G/L; the paper's ablations also
  share only the attention blocks or only the feed-forward blocks (`sharing` in the config).
- Pretraining pairs are sentence-order prediction (SOP) instead of NSP: see heads, data/.
"""

from __future__ import annotations

from typing import Iterator

from torch import nn

from ..nn import AttentionBlock, FeedForwardBlock
from .bert import BertModel, Embeddings, Encoder, make_attention_block, make_ffn_block
from .config import AlbertConfig
from .heads import (
    ForMaskedLM,
    ForMultipleChoice,
    ForPromptClassification,
    ForPreTraining,
    ForQuestionAnswering,
    ForSequenceClassification,
    ForTokenClassification,
)


class AlbertEncoder(Encoder):
    """The stack over shared blocks: fewer blocks than layers, run in the order `schedule` gives."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.config = config
        layers, blocks = config.num_hidden_layers, config.num_hidden_groups * config.inner_group_num
        n_attention, n_ffn = {"attention": (1, layers), "ffn": (layers, 1)}.get(config.sharing, (blocks, blocks))
        self.project = nn.Linear(config.embedding_size, config.hidden_size)  # E → H, once
        self.attention_blocks = nn.ModuleList(make_attention_block(config) for _ in range(n_attention))
        self.ffn_blocks = nn.ModuleList(make_ffn_block(config) for _ in range(n_ffn))

    def schedule(self) -> Iterator[tuple[AttentionBlock, FeedForwardBlock]]:
        c = self.config
        layers, groups, inner = c.num_hidden_layers, c.num_hidden_groups, c.inner_group_num
        for i in range(layers):
            if c.sharing == "attention":
                yield self.attention_blocks[0], self.ffn_blocks[i]
            elif c.sharing == "ffn":
                yield self.attention_blocks[i], self.ffn_blocks[0]
            else:  # layer i runs group i·groups/layers, which is inner_group_num layers deep
                group = i * groups // layers
                for j in range(inner):
                    yield self.attention_blocks[group * inner + j], self.ffn_blocks[group * inner + j]

    def forward(self, x, padding, output_hidden_states=False, output_attentions=False):
        return super().forward(self.project(x), padding, output_hidden_states, output_attentions)


class AlbertModel(BertModel):
    config_class = AlbertConfig

    def make_embeddings(self, config):
        return Embeddings(config, size=config.embedding_size)

    def make_encoder(self, config):
        return AlbertEncoder(config)


class AlbertForPreTraining(ForPreTraining):
    backbone_class = AlbertModel
    pair_objective = "sop"
    pair_dropout = None  # classifier_dropout_prob


class AlbertForMaskedLM(ForMaskedLM):
    backbone_class = AlbertModel


class AlbertForPromptClassification(ForPromptClassification, AlbertForMaskedLM):
    """Its masked LM read at a prompt's mask as the classifier (heads.ForPromptClassification)."""


class AlbertForSequenceClassification(ForSequenceClassification):
    backbone_class = AlbertModel


class AlbertForTokenClassification(ForTokenClassification):
    backbone_class = AlbertModel


class AlbertForQuestionAnswering(ForQuestionAnswering):
    backbone_class = AlbertModel


class AlbertForMultipleChoice(ForMultipleChoice):
    backbone_class = AlbertModel
