"""DistilBERT (Sanh et al., 2019) as a diff from BERT: half the layers, no token types, no pooler.

The student is trained from a BERT teacher with a triple loss (see train/); the network differs
only in what it leaves out, optional fixed sinusoidal positions, and its classification head
(pre_classifier + ReLU on [CLS], since there is no pooler).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..nn import Dropout
from .bert import BertModel, Embeddings
from .config import DistilBertConfig
from .heads import (
    ForMaskedLM,
    ForMultipleChoice,
    ForPromptClassification,
    ForQuestionAnswering,
    ForSequenceClassification,
    ForTokenClassification,
)
from .outputs import BaseModelOutput


def sinusoidal_table(n_positions: int, dim: int) -> torch.Tensor:
    """Vaswani et al.'s fixed positions: sin on even dimensions, cos on odd, wavelengths up to 10,000·2π.

    >>> sinusoidal_table(2, 4)[1]
    tensor([0.8415, 0.5403, 0.0100, 0.9999])
    """
    angle = np.arange(n_positions)[:, None] / np.power(10000, 2 * (np.arange(dim) // 2) / dim)  # (P, dim)
    table = np.where(np.arange(dim) % 2 == 0, np.sin(angle), np.cos(angle))
    return torch.tensor(table, dtype=torch.float32)


class FixedEmbedding(nn.Embedding):
    """An embedding table that is not learned (and that weight initialisation leaves alone)."""

    fixed = True

    def __init__(self, table: torch.Tensor):
        super().__init__(*table.shape)
        self.weight.requires_grad_(False)
        with torch.no_grad():
            self.weight.copy_(table)


class DistilBertEmbeddings(Embeddings):
    def __init__(self, config: DistilBertConfig):
        super().__init__(config)  # type_vocab_size = 0: no token-type table
        if config.sinusoidal_pos_embds:
            self.position = FixedEmbedding(sinusoidal_table(config.max_position_embeddings, config.hidden_size))


class DistilBertModel(BertModel):
    config_class = DistilBertConfig

    def __init__(self, config: DistilBertConfig, add_pooler: bool = False):
        if add_pooler:
            raise ValueError("DistilBERT has no pooler: its sentence heads read the [CLS] vector directly")
        super().__init__(config, add_pooler=False)

    def make_embeddings(self, config):
        return DistilBertEmbeddings(config)


class DistilBertClassificationHead(nn.Module):
    uses_pooler = False

    def __init__(self, config: DistilBertConfig, num_outputs: int):
        super().__init__()
        self.pre_classifier = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = Dropout(config.seq_classif_dropout)
        self.classifier = nn.Linear(config.hidden_size, num_outputs)

    def forward(self, out: BaseModelOutput) -> torch.Tensor:
        x = torch.relu(self.pre_classifier(out.last_hidden_state[:, 0]))  # (B, H)
        return self.classifier(self.dropout(x))


class DistilBertForMaskedLM(ForMaskedLM):
    backbone_class = DistilBertModel


class DistilBertForPromptClassification(ForPromptClassification, DistilBertForMaskedLM):
    """Its masked LM read at a prompt's mask as the classifier (heads.ForPromptClassification)."""


class DistilBertForSequenceClassification(ForSequenceClassification):
    backbone_class = DistilBertModel
    head_class = DistilBertClassificationHead


class DistilBertForTokenClassification(ForTokenClassification):
    backbone_class = DistilBertModel


class DistilBertForQuestionAnswering(ForQuestionAnswering):
    backbone_class = DistilBertModel


class DistilBertForMultipleChoice(ForMultipleChoice):
    backbone_class = DistilBertModel
    head_class = DistilBertClassificationHead
