"""ELECTRA (Clark et al., 2020) as a diff from BERT: the same encoder, trained by replaced-token detection.

Shapes: B batch, T length, H hidden, E embedding size, V vocab.

  - Embeddings of size E, projected to H once when E ≠ H (`embeddings_project`: the generator is
    narrower than the embeddings it shares with the discriminator); no pooler.
  - ElectraForPreTraining is the discriminator: dense → hidden_act → one logit per token, "was this
    token replaced?"; ElectraForMaskedLM is the generator: dense to E → GELU → LayerNorm → the tied
    word embeddings.
  - The classification head reads the first token through dense → GELU (BERT's pooler has tanh);
    multiple choice reads it through transformers' sequence summary (dense → GELU → dropout).
  - `ElectraPair` is the pretraining model: a generator and a discriminator sharing their token,
    position and token-type embeddings; train/rtd.py has the loss.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..nn import Dropout, activation
from .bert import BertModel, Embeddings, LayerStack
from .checkpoint import CheckpointError, load_state, read_config, read_weights
from .config import ElectraConfig
from .heads import (
    ForMaskedLM,
    ForMultipleChoice,
    ForQuestionAnswering,
    ForSequenceClassification,
    ForTokenClassification,
    TaskModel,
    choice_loss,
    choice_shape,
    flatten_choices,
)
from .outputs import BaseModelOutput, ClassifierOutput


class ElectraEncoder(LayerStack):
    """BERT's stack, entered through a projection E → H when the embeddings are narrower or wider."""

    def __init__(self, config: ElectraConfig):
        super().__init__(config)
        self.project = (
            nn.Linear(config.embedding_size, config.hidden_size)
            if config.embedding_size != config.hidden_size
            else None
        )

    def forward(self, x, padding, output_hidden_states=False, output_attentions=False):
        x = self.project(x) if self.project is not None else x  # (M, E) → (M, H)
        return super().forward(x, padding, output_hidden_states, output_attentions)


class ElectraModel(BertModel):
    config_class = ElectraConfig

    def __init__(self, config: ElectraConfig, add_pooler: bool = False):
        if add_pooler:
            raise ValueError("ELECTRA has no pooler: its sentence heads read the first token directly")
        super().__init__(config, add_pooler=False)

    def make_embeddings(self, config):
        return Embeddings(config, size=config.embedding_size)

    def make_encoder(self, config):
        return ElectraEncoder(config)


class DiscriminatorHead(nn.Module):
    """dense → hidden_act → one logit per token: positive = replaced."""

    def __init__(self, config: ElectraConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = activation(config.hidden_act)
        self.dense_prediction = nn.Linear(config.hidden_size, 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.dense_prediction(self.act(self.dense(h))).squeeze(-1)  # (B, T)


def replaced_token_loss(
    logits: torch.Tensor, labels: torch.Tensor, attention_mask: torch.Tensor | None
) -> torch.Tensor:
    """Mean binary cross-entropy of (B, T) logits against 0 / 1 labels over the real tokens."""
    if attention_mask is not None:
        real = attention_mask.bool()
        logits, labels = logits[real], labels[real]
    return F.binary_cross_entropy_with_logits(logits.float(), labels.float())


class ElectraForPreTraining(TaskModel):
    """The discriminator. With `labels` (1 = replaced) the loss is the mean BCE over real tokens."""

    backbone_class = ElectraModel

    def build_head(self, config):
        self.discriminator = DiscriminatorHead(config)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        labels=None,
        output_hidden_states=False,
        output_attentions=False,
    ) -> ClassifierOutput:
        out = self.run_backbone(
            input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states, output_attentions
        )
        logits = self.discriminator(out.last_hidden_state)  # (B, T)
        loss = replaced_token_loss(logits, labels, attention_mask) if labels is not None else None
        return self.output(out, loss=loss, logits=logits)


class ElectraForPromptClassification(ElectraForPreTraining):
    """The discriminator as a prompt classifier (Xia et al. 2022, "Prompting ELECTRA"): each class's label
    word is written in the prompt's blank, one copy of the prompt per class, and the class whose word
    the discriminator finds least "replaced" wins. Inputs are (B, C, T), as multiple choice's;
    `candidate_mask` (B, C, T) marks the label word's pieces. The weights are the discriminator's.
    """

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        labels=None,
        candidate_mask=None,
        output_hidden_states=False,
        output_attentions=False,
    ) -> ClassifierOutput:
        if candidate_mask is None:
            raise ValueError("ElectraForPromptClassification needs candidate_mask (B, C, T): the label words' pieces")
        B, C = choice_shape(input_ids)
        input_ids, attention_mask, token_type_ids, position_ids = flatten_choices(
            input_ids, attention_mask, token_type_ids, position_ids
        )
        out = self.run_backbone(
            input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states, output_attentions
        )
        replaced = self.discriminator(out.last_hidden_state).float().view(B, C, -1)  # (B, C, T)
        words = candidate_mask.to(replaced.dtype)
        logits = -(replaced * words).sum(-1) / words.sum(-1).clamp(min=1.0)  # (B, C): minus the mean "replaced"
        loss = choice_loss(logits, labels) if labels is not None else None
        return self.output(out, loss=loss, logits=logits)


class ElectraForMaskedLM(ForMaskedLM):
    """The generator (its head uses exact GELU whatever hidden_act says, as transformers')."""

    backbone_class = ElectraModel
    mlm_act = "gelu"

    @staticmethod
    def check_checkpoint(tensors: dict[str, torch.Tensor], source: str) -> None:
        check_generator_checkpoint(tensors, source)


class ElectraClassificationHead(nn.Module):
    """dropout → dense → GELU → dropout → out_proj on the first token."""

    uses_pooler = False

    def __init__(self, config: ElectraConfig, num_outputs: int):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = activation("gelu")
        self.dropout = Dropout(config.head_dropout)
        self.out_proj = nn.Linear(config.hidden_size, num_outputs)

    def forward(self, out: BaseModelOutput) -> torch.Tensor:
        x = self.dropout(out.last_hidden_state[:, 0])  # (B, H)
        return self.out_proj(self.dropout(self.act(self.dense(x))))


class ElectraSummaryHead(nn.Module):
    """Multiple choice: the first token → dense → summary_activation → dropout → one score (transformers'
    sequence summary, as ELECTRA's config sets it)."""

    uses_pooler = False

    def __init__(self, config: ElectraConfig, num_outputs: int):
        super().__init__()
        self.summary = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = activation(config.summary_activation) if config.summary_activation else nn.Identity()
        self.dropout = Dropout(config.summary_last_dropout)
        self.first_dropout = Dropout(config.extra.get("summary_first_dropout", 0.0))
        self.classifier = nn.Linear(config.hidden_size, num_outputs)

    def forward(self, out: BaseModelOutput) -> torch.Tensor:
        x = self.first_dropout(out.last_hidden_state[:, 0])  # (B·C, H)
        return self.classifier(self.dropout(self.act(self.summary(x))))


class ElectraForSequenceClassification(ForSequenceClassification):
    backbone_class = ElectraModel
    head_class = ElectraClassificationHead


class ElectraForTokenClassification(ForTokenClassification):
    backbone_class = ElectraModel


class ElectraForQuestionAnswering(ForQuestionAnswering):
    backbone_class = ElectraModel


class ElectraForMultipleChoice(ForMultipleChoice):
    backbone_class = ElectraModel
    head_class = ElectraSummaryHead


# ---- pretraining: generator and discriminator ---------------------------------------------------


def generator_config(config: ElectraConfig, size: float) -> ElectraConfig:
    """The generator of a discriminator `config` at `size` × its hidden width, scaled as
    google-research/electra scales it: 4× feed-forward, one head per 64 dimensions (at least one),
    the same depth and embedding size (the embeddings are shared).

    >>> g = generator_config(ElectraConfig.preset("base"), 0.25)
    >>> g.hidden_size, g.num_attention_heads, g.intermediate_size, g.embedding_size
    (192, 3, 768, 768)
    """
    if isinstance(size, bool) or not isinstance(size, (int, float)) or not 0 < size <= 1:
        raise ValueError(
            f"--generator-size {size!r}: the generator's width as a fraction of the discriminator's, "
            "in (0, 1] (the paper's best is 0.25); a generator wider than the discriminator is refused"
        )
    hidden = max(1, round(config.hidden_size * size))
    heads = max(1, hidden // 64)
    if hidden % heads:
        raise ValueError(
            f"--generator-size {size}: a generator of hidden size {hidden} cannot be split into "
            f"{heads} heads of 64; choose a size giving a multiple of 64 or less than 128"
        )
    return dataclasses.replace(
        config,
        hidden_size=hidden,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        architectures=["ElectraForMaskedLM"],
        extra=dict(config.extra),
    )


GENERATOR_DIR = "generator"


class ElectraPair(nn.Module):
    """A generator (ElectraForMaskedLM) and a discriminator (ElectraForPreTraining) that share one
    embeddings module (token, position, token type and their LayerNorm), as in the paper: the
    generator's MLM gradient trains the embeddings the discriminator reads.

    `save(dir)` writes the discriminator as the model directory (it loads in transformers'
    ElectraForPreTraining / AutoModel) and the generator in dir/generator/ (ElectraForMaskedLM).
    `gen_config` gives the generator's shape when it is not `generator_size`'s (a checkpoint's own
    generator, continued by `pretrain --init`); its embedding fields must be the discriminator's.
    """

    def __init__(
        self, config: ElectraConfig, generator_size: float | None = 0.25, gen_config: ElectraConfig | None = None
    ):
        super().__init__()
        if not isinstance(config, ElectraConfig):
            raise TypeError(f"ElectraPair takes an ElectraConfig, got {type(config).__name__}")
        self.config, self.generator_size = config, None if gen_config is not None else generator_size
        if gen_config is None:
            gen_config = generator_config(config, generator_size)
        else:
            check_shared_embeddings(gen_config, config, "the generator's config")
            gen_config = dataclasses.replace(
                gen_config, architectures=["ElectraForMaskedLM"], extra=dict(gen_config.extra)
            )
        self.discriminator = ElectraForPreTraining(dataclasses.replace(config, architectures=["ElectraForPreTraining"]))
        self.generator = ElectraForMaskedLM(gen_config)
        shared = self.discriminator.backbone.embeddings
        self.generator.backbone.embeddings = shared
        self.generator.mlm.decoder.weight = shared.word.weight  # the generator's output stays tied to them

    @property
    def backbone(self) -> ElectraModel:
        """The discriminator's backbone (its embeddings are the generator's too: --init-embeddings fills both)."""
        return self.discriminator.backbone

    @property
    def mlm(self):
        """The generator's MLM head (its output bias takes the unigram prior)."""
        return self.generator.mlm

    @property
    def architecture(self) -> str:
        return self.discriminator.architecture

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # the shared embeddings once

    def compile_blocks(self, inference: bool = True) -> "ElectraPair":
        self.discriminator.compile_blocks(inference)
        self.generator.compile_blocks(inference)
        return self

    def save(self, path: str | os.PathLike) -> None:
        path = Path(path)
        self.discriminator.save(path)
        self.generator.save(path / GENERATOR_DIR)

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Both models from a directory `save` wrote; a missing or mismatched generator is named."""
        path = Path(path)
        gen_dir = check_pair_checkpoint(path)
        theirs = read_config(gen_dir)
        ours = self.generator.config
        if (theirs.hidden_size, theirs.num_attention_heads, theirs.intermediate_size) != (
            ours.hidden_size,
            ours.num_attention_heads,
            ours.intermediate_size,
        ):
            made = (
                f"--generator-size {self.generator_size} makes" if self.generator_size is not None else "generator has"
            )
            raise ValueError(
                f"{gen_dir}: the generator has hidden size {theirs.hidden_size}, this run's {made} {ours.hidden_size}"
            )
        for model, directory in ((self.discriminator, path), (self.generator, gen_dir)):
            tensors, source = read_weights(directory)
            load_state(model, tensors, source, strict=True)


# what the generator and discriminator share (ElectraPair's one embeddings module) must have one shape
SHARED_EMBEDDING_FIELDS = ("vocab_size", "embedding_size", "max_position_embeddings", "type_vocab_size")


def check_shared_embeddings(
    gen: ElectraConfig, disc: ElectraConfig, what: str, disc_what: str = "the discriminator's"
) -> None:
    """A generator config `gen` that can share `disc`'s embeddings, or a ValueError naming both values."""
    for key in SHARED_EMBEDDING_FIELDS:
        if getattr(gen, key) != getattr(disc, key):
            raise ValueError(
                f"{what}: {key} {getattr(gen, key)}, but {disc_what} is {getattr(disc, key)}; the "
                "generator and discriminator share one embeddings module, so they must be equal"
            )
    if gen.hidden_size > disc.hidden_size:
        raise ValueError(f"{what}: hidden size {gen.hidden_size}, wider than the discriminator's {disc.hidden_size}")


def check_pair_checkpoint(path: str | os.PathLike) -> Path:
    """The generator directory of a pretraining checkpoint, or a FileNotFoundError naming it."""
    gen_dir = Path(path) / GENERATOR_DIR
    if not (gen_dir / "config.json").is_file():
        raise FileNotFoundError(
            f"{gen_dir}: missing; an ELECTRA checkpoint holds its generator there "
            "(the discriminator alone cannot continue pretraining)"
        )
    return gen_dir


def check_generator_checkpoint(tensors: dict[str, torch.Tensor], source: str) -> None:
    """A discriminator's weights given to ElectraForMaskedLM: say what they are, not only which keys are missing."""
    if any(k.startswith("discriminator_predictions.") for k in tensors) and not any(
        k.startswith("generator_predictions.") for k in tensors
    ):
        raise CheckpointError(
            f"{source}: an ELECTRA discriminator (ElectraForPreTraining), which has no masked-LM "
            f"head; load its {GENERATOR_DIR}/ directory as the masked LM, or this one as "
            "ElectraForPreTraining / a task head"
        )
