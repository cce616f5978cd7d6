"""Task heads, shared across families: a family supplies its backbone (and, where its reference
differs, its head modules and the hook reading them, as XLNet does); each task's forward and every
loss are written once here.

Shapes: B batch, T length, H hidden, E embedding size, V vocab, C classes or choices, M masked tokens.
Label conventions follow transformers: -100 = ignored position; NSP 0 = B follows A; SOP 1 = swapped.
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from ..nn import Dropout, activation, round_up_rows
from ..nn.cross_entropy import IGNORE_INDEX, cross_entropy
from .base import PreTrainedModel
from .config import EncoderConfig
from .outputs import (
    BaseModelOutput,
    ClassifierOutput,
    MaskedLMOutput,
    ModelOutput,
    PreTrainingOutput,
    QuestionAnsweringOutput,
)


@torch.no_grad()
def init_bias_from_counts(bias: torch.Tensor, counts: torch.Tensor) -> None:
    """Set an output bias (V,) to the log unigram distribution of `counts` (V,), add-one smoothed and
    centred: the untrained model predicts word frequencies instead of a uniform guess."""
    if counts.shape != bias.shape:
        raise ValueError(f"token counts have shape {tuple(counts.shape)}, the output bias {tuple(bias.shape)}")
    p = (counts.double() + 1) / (counts.double().sum() + len(counts))
    bias.copy_(p.log() - p.log().mean())


class MaskedLMHead(nn.Module):
    """transform (dense + act + LayerNorm) then a decoder tied to the word embeddings, plus a bias.

    With `sparse=True` and labels, logits are computed only at the M labelled positions: the loss
    is the same as the dense one, at a fraction of the V-wide matrix product.
    """

    def __init__(self, config: EncoderConfig, word_embeddings: nn.Embedding, act: str | None = None):
        super().__init__()
        E = word_embeddings.embedding_dim
        self.dense = nn.Linear(config.hidden_size, E)
        self.act = activation(act or config.hidden_act)
        self.norm = nn.LayerNorm(E, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(E, config.vocab_size, bias=False)
        if config.extra.get("tie_word_embeddings", True):
            self.decoder.weight = word_embeddings.weight  # one parameter, two uses
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    @torch.no_grad()
    def init_bias_from_counts(self, counts: torch.Tensor) -> None:
        """Start the output bias at the log unigram distribution (add-one smoothed), so that the
        untrained model already predicts word frequencies instead of a uniform guess.

        With a zero bias the tied embeddings have to learn the frequencies themselves: they all move
        along one shared direction (mean pairwise cosine of the rows ≈ 0.46 after 600 BERT-tiny
        steps, from 0.00), and a model fine-tuned from them does worse than a random one.
        """
        init_bias_from_counts(self.bias, counts)

    def forward(self, h: torch.Tensor, labels: torch.Tensor | None = None, sparse: bool = False):
        m = None
        if sparse and labels is not None:
            selected = labels != IGNORE_INDEX  # (B, T)
            h, labels = h[selected], labels[selected]  # (M, H), (M,)
            m = len(labels)
            extra = round_up_rows(m) - m  # a few zero rows, ignored by the loss: few distinct matrix shapes
            h = torch.cat([h, h.new_zeros(extra, h.shape[1])]) if extra else h
            labels = torch.cat([labels, labels.new_full((extra,), IGNORE_INDEX)]) if extra else labels
        # The bias inside the product, as transformers has it: under bf16 autocast the logits stay bf16.
        logits = F.linear(self.norm(self.act(self.dense(h))), self.decoder.weight, self.bias)  # (B, T, V) or (M', V)
        loss = vocabulary_loss(logits, labels) if labels is not None else None
        return (logits if m is None else logits[:m]), loss  # (B, T, V) or (M, V)


class PooledHead(nn.Module):
    """dropout + linear on the pooled sentence vector (BERT / ALBERT classification, choice, NSP, SOP)."""

    uses_pooler = True

    def __init__(self, config: EncoderConfig, num_outputs: int, dropout: float | None = None):
        super().__init__()
        self.dropout = Dropout(config.head_dropout if dropout is None else dropout)
        self.classifier = nn.Linear(config.hidden_size, num_outputs)

    def forward(self, out: BaseModelOutput) -> torch.Tensor:
        return self.classifier(self.dropout(out.pooler_output))  # (B, num_outputs)


POOLINGS = ("cls", "mean")


def sentence_pooling(config: EncoderConfig) -> str:
    """How a sequence-classification head reads its sentence vector: "cls" (the family's own head on the
    first / <cls> token) or "mean" (the mean of the real tokens), as config.json's `bertology_pooling` says."""
    pooling = config.extra.get("bertology_pooling", "cls")
    if pooling not in POOLINGS:
        raise ValueError(f"config bertology_pooling {pooling!r}: choose one of {', '.join(POOLINGS)}")
    return pooling


def mean_pool(h: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """The mean of h (B, T, H) over each row's real tokens (attention_mask 1), never its padding → (B, H).

    >>> h = torch.tensor([[[1.0], [3.0], [100.0]]])
    >>> mean_pool(h, torch.tensor([[1, 1, 0]]))
    tensor([[2.]])
    """
    if attention_mask is None:
        return h.float().mean(1)
    m = attention_mask.to(torch.float32).unsqueeze(-1)  # (B, T, 1); float32 sums even under bf16 autocast
    return (h.float() * m).sum(1) / m.sum(1).clamp(min=1.0)  # (B, H)


class MeanPooledHead(nn.Module):
    """dropout + linear on the mean of the real tokens' last hidden states: a sentence vector that
    needs no pooler (which an MLM-only pretraining never trains) and no single token's view.

    The linear is called `proj` (transformers name: `mean_classifier.*`), so that no transformers
    head loads it in place of its own and silently computes something else from it.
    """

    uses_pooler = False

    def __init__(self, config: EncoderConfig, num_outputs: int):
        super().__init__()
        self.dropout = Dropout(config.head_dropout)
        self.proj = nn.Linear(config.hidden_size, num_outputs)

    def forward(self, out: BaseModelOutput, attention_mask: torch.Tensor | None) -> torch.Tensor:
        return self.proj(self.dropout(mean_pool(out.last_hidden_state, attention_mask)))  # (B, num_outputs)


class TokenHead(nn.Module):
    """dropout + linear at every position (tagging; question answering with 2 outputs). It takes the
    hidden states, as a bare nn.Linear does, so a family without the dropout puts a Linear in its place."""

    def __init__(self, hidden_size: int, num_outputs: int, dropout: float):
        super().__init__()
        self.dropout = Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, num_outputs)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.dropout(h))  # (B, T, num_outputs)


class TaskModel(PreTrainedModel):
    """A backbone plus one head. Subclasses name the backbone class of their family.

    A task's forward is written once below: backbone, head, loss, output. A family changes what it
    differs in: its head modules (`build_head`, under transformers' names) and the hook that reads
    them (`predict_tokens`, `sentence_logits`, `span_logits`); its own backbone inputs pass through
    every forward as keywords (`**inputs`, e.g. XLNet's mems and perm_mask), and `output` adds what
    its backbone returns beyond hidden states and attentions.
    """

    backbone_class: ClassVar[type] = None
    needs_pooler: ClassVar[bool] = False
    output_class: ClassVar[type[ModelOutput]] = ClassifierOutput

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.backbone_class is not None:
            cls.config_class = cls.backbone_class.config_class
        if hasattr(cls, "head_class"):  # the sentence head decides whether the backbone needs its pooler
            cls.needs_pooler = getattr(cls.head_class, "uses_pooler", False)

    def __init__(self, config: EncoderConfig):
        super().__init__(config)
        self.backbone = self.backbone_class(config, add_pooler=self.wants_pooler(config))
        self.build_head(config)
        self.init_weights()

    @classmethod
    def wants_pooler(cls, config: EncoderConfig) -> bool:
        """Whether the backbone is built with its pooler (a config may choose a head that needs none)."""
        return cls.needs_pooler

    def build_head(self, config: EncoderConfig) -> None:
        raise NotImplementedError

    def run_backbone(
        self, input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states, output_attentions, **inputs
    ) -> BaseModelOutput:
        if position_ids is not None:  # only absolute-position families take them
            inputs["position_ids"] = position_ids
        return self.backbone(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            output_hidden_states=output_hidden_states,
            output_attentions=output_attentions,
            **inputs,
        )

    def output(self, out: BaseModelOutput, **fields) -> ModelOutput:
        """The task's fields in its output class, with the backbone's hidden states and attentions."""
        return self.output_class(**fields, hidden_states=out.hidden_states, attentions=out.attentions)


class ForMaskedLM(TaskModel):
    mlm_act: ClassVar[str | None] = None  # None = config.hidden_act
    output_class = MaskedLMOutput

    def build_head(self, config):
        self.mlm = MaskedLMHead(config, self.backbone.embeddings.word, self.mlm_act)

    def predict_tokens(self, h: torch.Tensor, labels: torch.Tensor | None, sparse: bool):
        """(logits over the vocabulary, loss or None) from the last hidden states."""
        return self.mlm(h, labels, sparse)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        labels=None,
        sparse_prediction=False,
        output_hidden_states=False,
        output_attentions=False,
        **inputs,
    ) -> MaskedLMOutput:
        out = self.run_backbone(
            input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states, output_attentions, **inputs
        )
        logits, loss = self.predict_tokens(out.last_hidden_state, labels, sparse_prediction)
        return self.output(out, loss=loss, logits=logits)


def prompt_words(config: EncoderConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """The label words of config.extra["bertology_prompt"] as (C, P) piece ids, padded with 0, and
    (C, P) weights: 1 / pieces on a word's own pieces, 0 on the padding. A class is scored by the mean
    of its words' pieces (several words: their pieces pooled, each word's count as written).

    >>> c = EncoderConfig(extra={"bertology_prompt": {"label_word_ids": [[[5]], [[6, 7]]], "mask_token_id": 3}})
    >>> ids, weights = prompt_words(c)
    >>> ids.tolist(), weights.tolist()
    ([[5, 0], [6, 7]], [[1.0, 0.0], [0.5, 0.5]])
    """
    classes = [
        [piece for word in words for piece in word] for words in config.extra["bertology_prompt"]["label_word_ids"]
    ]
    width = max(len(pieces) for pieces in classes)
    ids = torch.tensor([pieces + [0] * (width - len(pieces)) for pieces in classes], dtype=torch.long)
    weights = torch.tensor([[1 / len(pieces)] * len(pieces) + [0.0] * (width - len(pieces)) for pieces in classes])
    return ids, weights


class ForPromptClassification(ForMaskedLM):
    """A classifier that is the pretrained masked-LM head read at the one mask of a prompt (PET, Schick &
    Schütze 2021; LM-BFF, Gao et al. 2021): class c's logit is the mean MLM logit of its label words'
    pieces at the mask. No new weights: the head that pretraining trained best is the classifier.

    The verbalizer (the mask token's id, each class's label-word pieces) is config.extra["bertology_prompt"],
    written by tasks/prompt.py; the weights are the family's ForMaskedLM's, so transformers'
    AutoModelForMaskedLM reads the same directory.
    """

    output_class = ClassifierOutput

    def build_head(self, config):
        super().build_head(config)
        ids, weights = prompt_words(config)
        self.register_buffer("word_ids", ids, persistent=False)  # (C, P)
        self.register_buffer("word_weights", weights, persistent=False)  # (C, P)
        self.mask_token_id = int(config.extra["bertology_prompt"]["mask_token_id"])

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        labels=None,
        output_hidden_states=False,
        output_attentions=False,
        **inputs,
    ) -> ClassifierOutput:
        out = self.run_backbone(
            input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states, output_attentions, **inputs
        )
        at_mask = input_ids == self.mask_token_id  # (B, T)
        if not bool((at_mask.sum(1) == 1).all()):
            raise ValueError(f"a prompt classifier needs exactly one mask token (id {self.mask_token_id}) per row")
        vocabulary, _ = self.predict_tokens(out.last_hidden_state[at_mask], None, False)  # (B, V)
        logits = (vocabulary.float()[:, self.word_ids] * self.word_weights).sum(-1)  # (B, C, P) → (B, C)
        loss = classification_loss(logits, labels, self.config) if labels is not None else None
        return self.output(out, loss=loss, logits=logits)


class ForPreTraining(ForMaskedLM):
    """MLM plus a sentence-pair objective on the pooled vector: BERT's NSP or ALBERT's SOP."""

    needs_pooler = True
    output_class = PreTrainingOutput
    pair_objective: ClassVar[str] = "nsp"  # "nsp" → seq_relationship_logits, "sop" → sop_logits
    pair_dropout: ClassVar[float | None] = 0.0  # BERT's NSP head has none; None = config.head_dropout

    def build_head(self, config):
        super().build_head(config)
        self.pair = PooledHead(config, 2, self.pair_dropout)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        labels=None,
        next_sentence_label=None,
        sentence_order_label=None,
        sparse_prediction=False,
        output_hidden_states=False,
        output_attentions=False,
    ) -> PreTrainingOutput:
        out = self.run_backbone(
            input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states, output_attentions
        )
        logits, mlm_loss = self.predict_tokens(out.last_hidden_state, labels, sparse_prediction)
        pair_logits = self.pair(out)  # (B, 2)
        pair_label = next_sentence_label if next_sentence_label is not None else sentence_order_label
        pair_loss = choice_loss(pair_logits, pair_label) if pair_label is not None else None
        losses = [term for term in (mlm_loss, pair_loss) if term is not None]
        field = "seq_relationship_logits" if self.pair_objective == "nsp" else "sop_logits"
        return self.output(
            out,
            loss=sum(losses) if losses else None,
            prediction_logits=logits,
            mlm_loss=mlm_loss,
            pair_loss=pair_loss,
            **{field: pair_logits},
        )


class ForNextSentencePrediction(TaskModel):
    needs_pooler = True

    def build_head(self, config):
        self.pair = PooledHead(config, 2, dropout=0.0)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        labels=None,
        next_sentence_label=None,
        output_hidden_states=False,
        output_attentions=False,
    ) -> ClassifierOutput:
        out = self.run_backbone(
            input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states, output_attentions
        )
        logits = self.pair(out)
        label = labels if labels is not None else next_sentence_label
        return self.output(out, loss=choice_loss(logits, label) if label is not None else None, logits=logits)


class ForSequenceClassification(TaskModel):
    """Classification over config.id2label; regression when there is one label (as transformers).

    The family's head reads the first token (config `bertology_pooling` "cls", the default);
    "mean" puts a MeanPooledHead on the mean of the real tokens instead, for every family.
    """

    head_class: ClassVar[type] = PooledHead

    @classmethod
    def wants_pooler(cls, config: EncoderConfig) -> bool:
        return cls.needs_pooler and sentence_pooling(config) == "cls"

    def build_head(self, config):
        self.pooling = sentence_pooling(config)
        head = MeanPooledHead if self.pooling == "mean" else self.head_class
        self.classifier = head(config, config.num_labels)

    def sentence_logits(self, out: BaseModelOutput, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """(B, num_outputs) scores of each sequence from its sentence vector."""
        return self.classifier(out, attention_mask) if self.pooling == "mean" else self.classifier(out)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        labels=None,
        output_hidden_states=False,
        output_attentions=False,
        **inputs,
    ) -> ClassifierOutput:
        out = self.run_backbone(
            input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states, output_attentions, **inputs
        )
        logits = self.sentence_logits(out, attention_mask)  # (B, C)
        loss = classification_loss(logits, labels, self.config) if labels is not None else None
        return self.output(out, loss=loss, logits=logits)


class ForTokenClassification(TaskModel):
    def build_head(self, config):
        self.classifier = TokenHead(config.hidden_size, config.num_labels, config.token_head_dropout)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        labels=None,
        output_hidden_states=False,
        output_attentions=False,
        **inputs,
    ) -> ClassifierOutput:
        out = self.run_backbone(
            input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states, output_attentions, **inputs
        )
        logits = self.classifier(out.last_hidden_state)  # (B, T, C)
        return self.output(out, loss=token_loss(logits, labels) if labels is not None else None, logits=logits)


class ForQuestionAnswering(TaskModel):
    """Start and end logits per token; the loss averages the two cross-entropies (SQuAD, BERT §4.2)."""

    output_class = QuestionAnsweringOutput

    def build_head(self, config):
        self.qa = TokenHead(config.hidden_size, 2, config.qa_head_dropout)

    def span_logits(self, h: torch.Tensor) -> torch.Tensor:
        """(B, T, 2): each token's score as the answer's start and as its end."""
        return self.qa(h)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        start_positions=None,
        end_positions=None,
        output_hidden_states=False,
        output_attentions=False,
        **inputs,
    ) -> QuestionAnsweringOutput:
        out = self.run_backbone(
            input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states, output_attentions, **inputs
        )
        start_logits, end_logits = self.span_logits(out.last_hidden_state).float().unbind(-1)  # each (B, T)
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = span_loss(start_logits, end_logits, start_positions, end_positions)
        return self.output(out, loss=loss, start_logits=start_logits, end_logits=end_logits)


class ForMultipleChoice(TaskModel):
    """Inputs (B, C, T): every choice is encoded with the context, scored, and softmaxed across choices."""

    head_class: ClassVar[type] = PooledHead

    def build_head(self, config):
        self.classifier = self.head_class(config, 1)

    def sentence_logits(self, out: BaseModelOutput, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """(B·C, 1): the score of each (context, choice) sequence."""
        return self.classifier(out)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        labels=None,
        output_hidden_states=False,
        output_attentions=False,
        **inputs,
    ) -> ClassifierOutput:
        B, C = choice_shape(input_ids)
        input_ids, attention_mask, token_type_ids, position_ids = flatten_choices(
            input_ids, attention_mask, token_type_ids, position_ids
        )
        out = self.run_backbone(
            input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states, output_attentions, **inputs
        )
        logits = self.sentence_logits(out, attention_mask).view(B, C)
        return self.output(out, loss=choice_loss(logits, labels) if labels is not None else None, logits=logits)


def choice_shape(input_ids: torch.Tensor | None) -> tuple[int, int]:
    """(batch, choices) of multiple-choice input_ids (B, C, T), or a ValueError naming the shape."""
    if input_ids is None or input_ids.dim() != 3:
        raise ValueError(
            f"multiple choice takes input_ids of shape (batch, choices, length), got "
            f"{None if input_ids is None else tuple(input_ids.shape)}"
        )
    return input_ids.shape[0], input_ids.shape[1]


def flatten_choices(*tensors: torch.Tensor | None) -> list[torch.Tensor | None]:
    """(B, C, T) → (B·C, T) for each tensor given (None stays None): every choice a sequence of its own."""
    return [t.reshape(-1, t.shape[-1]) if t is not None else None for t in tensors]


# ---- losses: every head's, written once ----------------------------------------------------------


def vocabulary_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Language modelling: (…, V) logits against (…) token ids, IGNORE_INDEX left out, a block of rows at a time."""
    return cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def token_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Tagging: (B, T, C) logits against (B, T) labels, IGNORE_INDEX (continuation pieces, padding) left out."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=IGNORE_INDEX)


def choice_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """One right answer among the (B, C) logits: multiple choice, NSP, SOP."""
    return F.cross_entropy(logits.float(), labels.view(-1))


def binary_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Independent yes / no decisions: multi-label classification, XLNet's "is the question unanswerable"."""
    return F.binary_cross_entropy_with_logits(logits.float(), labels.float())


def span_loss(
    start_logits: torch.Tensor, end_logits: torch.Tensor, start_positions: torch.Tensor, end_positions: torch.Tensor
) -> torch.Tensor:
    """Mean of the start and end cross-entropies over (B, T) logits. Positions outside the window (an
    answer cut off by truncation) are clamped to T and ignored."""
    T = start_logits.shape[1]
    start, end = start_positions.view(-1).clamp(0, T), end_positions.view(-1).clamp(0, T)
    return (F.cross_entropy(start_logits, start, ignore_index=T) + F.cross_entropy(end_logits, end, ignore_index=T)) / 2


def classification_loss(logits: torch.Tensor, labels: torch.Tensor, config: EncoderConfig) -> torch.Tensor:
    """Sequence classification as config's problem_type says, or as transformers guesses it from the
    number of labels and the labels' dtype: regression, single-label or multi-label."""
    problem = config.extra.get("problem_type")
    if problem is None:
        if config.num_labels == 1:
            problem = "regression"
        elif labels.dtype in (torch.long, torch.int):
            problem = "single_label_classification"
        else:
            problem = "multi_label_classification"
    logits = logits.float()
    if problem == "regression":
        if config.num_labels == 1:
            return F.mse_loss(logits.view(-1), labels.float().view(-1))
        return F.mse_loss(logits, labels.float())
    if problem == "single_label_classification":
        return F.cross_entropy(logits.view(-1, config.num_labels), labels.view(-1))
    if problem == "multi_label_classification":
        return binary_loss(logits, labels)
    raise ValueError(f"unknown problem_type {problem!r} in config")
