"""RoBERTa (Liu et al., 2019) as a diff from BERT.

The model is BERT's; what changed is the recipe (dynamic masking, no NSP, full-sentence packing,
byte-level BPE: see data/ and tokenizers/). In the network itself only three things differ:
  - position ids count real tokens from padding_idx + 1 (fairseq's make_positions) and padding
    keeps position padding_idx, so the position table has 512 + 2 rows;
  - one token type, LayerNorm eps 1e-5 (in the config);
  - the classification head reads <s> through dense + tanh + out_proj instead of the pooler.
"""

from __future__ import annotations

import torch
from torch import nn

from ..nn import Dropout
from .bert import BertModel, Embeddings
from .config import RobertaConfig
from .heads import (
    ForMaskedLM,
    ForMultipleChoice,
    ForPromptClassification,
    ForQuestionAnswering,
    ForSequenceClassification,
    ForTokenClassification,
)
from .outputs import BaseModelOutput


class RobertaEmbeddings(Embeddings):
    def __init__(self, config: RobertaConfig):
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.position = nn.Embedding(config.max_position_embeddings, config.hidden_size, padding_idx=self.padding_idx)

    def default_position_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        """padding_idx + 1, + 2, … over real tokens; padding_idx at padding.

        >>> RobertaEmbeddings(RobertaConfig.preset("tiny")).default_position_ids(torch.tensor([[0, 5, 2, 1, 1]]))
        tensor([[2, 3, 4, 1, 1]])
        """
        real = input_ids.ne(self.padding_idx).long()
        return torch.cumsum(real, dim=1) * real + self.padding_idx


class RobertaModel(BertModel):
    config_class = RobertaConfig

    def make_embeddings(self, config):
        return RobertaEmbeddings(config)


class RobertaClassificationHead(nn.Module):
    """dropout → dense → tanh → dropout → out_proj on the <s> token (RoBERTa has no trained pooler)."""

    uses_pooler = False

    def __init__(self, config: RobertaConfig, num_outputs: int):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = Dropout(config.head_dropout)
        self.out_proj = nn.Linear(config.hidden_size, num_outputs)

    def forward(self, out: BaseModelOutput) -> torch.Tensor:
        x = self.dropout(out.last_hidden_state[:, 0])  # (B, H)
        return self.out_proj(self.dropout(torch.tanh(self.dense(x))))


class RobertaForMaskedLM(ForMaskedLM):
    backbone_class = RobertaModel
    mlm_act = "gelu"  # the LM head uses exact GELU whatever hidden_act says


class RobertaForPromptClassification(ForPromptClassification, RobertaForMaskedLM):
    """Its masked LM read at a prompt's mask as the classifier (heads.ForPromptClassification)."""


class RobertaForSequenceClassification(ForSequenceClassification):
    backbone_class = RobertaModel
    head_class = RobertaClassificationHead


class RobertaForTokenClassification(ForTokenClassification):
    backbone_class = RobertaModel


class RobertaForQuestionAnswering(ForQuestionAnswering):
    backbone_class = RobertaModel


class RobertaForMultipleChoice(ForMultipleChoice):
    backbone_class = RobertaModel
