"""XLNet (Yang et al., 2019): relative positions, two-stream attention, segment recurrence.

It shares little with BERT: no position table and no token-type embedding (positions are
sinusoidal *relative* encodings, segments a same / different bias), keys reach back into a memory
of the previous segment's states, and pretraining predicts targets in a permuted order through a
second "query" stream that knows a target's position but not its token.

Shapes: B batch, T length of this segment, M memory length, K = M + T keys, R = K + T relative
distances (K … -T+1), P predictions (rows of target_mapping), H d_model, N heads, D head size,
V vocab. Memories are time-major, (M, B, H) per layer, as in transformers and the original code.

    input_ids ─► word embeddings ───────────────► content stream h          (B, T, H)
    mask_emb (one learned vector per target) ───► query stream g            (B, P, H)
    distances, masks, segments ─────────────────► `Relative`, built once    (R, H), (B, T|P, K)
    L × [ relative attention of both streams over keys [mem; h], shared q/k/v/r/o weights
          ─► feed-forward ]        h sees itself, g sees what perm_mask allows (not its own token)
    last_hidden_state = g with a target_mapping, else h

Score of query i and key j (i and j positions in [mem; h]):
    ((q_i + r_w)·k_j + (q_i + r_r)·r_{i-j} + (q_i + r_s)·s_{seg_i ≠ seg_j}) / √D

The attention itself is nn/relative_attention.py; the task heads are heads.py's, with XLNet's modules
under transformers' names; the beam QA head is xlnet_qa.py.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from ..nn import Dropout, activation
from ..nn.relative_attention import (  # noqa: F401 (rel_shift: the step the parity tests check on its own)
    Relative,
    RelativeAttention,
    Stream,
    at_rows,
    causal_mask,
    rel_shift,
    relative_distances,
    sinusoid,
)
from .base import EncoderModel, PreTrainedModel
from .config import XLNetConfig
from .heads import (
    ForMaskedLM,
    ForMultipleChoice,
    ForQuestionAnswering,
    ForSequenceClassification,
    ForTokenClassification,
    TaskModel,
    vocabulary_loss,
)
from .outputs import (
    BaseModelOutput,
    XLNetClassifierOutput,
    XLNetLMHeadModelOutput,
    XLNetModelOutput,
    XLNetQuestionAnsweringSimpleOutput,
)

Tensor = torch.Tensor


def target_rows(target_mapping: Tensor, T: int) -> Tensor:
    """The position each prediction is at, (B, P, T) one-hot rows → (B, P); a ValueError otherwise."""
    if target_mapping.dim() != 3 or target_mapping.shape[2] != T:
        raise ValueError(f"target_mapping must have shape (batch, num_predict, {T}), got {tuple(target_mapping.shape)}")
    ones, zeros = (target_mapping == 1).sum(-1), (target_mapping == 0).sum(-1)
    bad = ((ones != 1) | (zeros != T - 1)).nonzero()
    if len(bad):
        b, p = bad[0].tolist()
        raise ValueError(
            f"target_mapping row [{b}, {p}] is not one-hot (a single 1 among 0s): {target_mapping[b, p].tolist()[:12]}"
        )
    rows = target_mapping.argmax(-1)  # (B, P)
    if (rows.sort(-1).values.diff(dim=-1) == 0).any():
        raise ValueError("target_mapping predicts one position twice in a sequence; each row must pick its own token")
    return rows


# ---- the layer -----------------------------------------------------------------------------------


class FeedForward(nn.Module):
    """Post-LN feed-forward; unlike BERT's, with dropout after the activation too."""

    def __init__(self, config: XLNetConfig):
        super().__init__()
        self.up = nn.Linear(config.hidden_size, config.intermediate_size)
        self.down = nn.Linear(config.intermediate_size, config.hidden_size)
        self.act = activation(config.hidden_act)
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(x + self.dropout(self.down(self.dropout(self.act(self.up(x))))))


class XLNetLayer(nn.Module):
    compile_unit = True  # `PreTrainedModel.compile_blocks` compiles each layer on its own

    def __init__(self, config: XLNetConfig):
        super().__init__()
        self.attention = RelativeAttention(
            config.hidden_size,
            config.num_attention_heads,
            config.d_head,
            config.hidden_dropout_prob,
            config.layer_norm_eps,
            biases=config.untie_r,
        )
        self.ffn = FeedForward(config)

    def forward(self, h: Tensor, g: Tensor | None, mem: Tensor | None, rel: Relative):
        h, g, probs = self.attention(h, g, mem, rel)
        return self.ffn(h), (self.ffn(g) if g is not None else None), probs


# ---- the backbone --------------------------------------------------------------------------------


class XLNetModel(EncoderModel):
    config_class = XLNetConfig

    def __init__(self, config: XLNetConfig, add_pooler: bool = False):  # add_pooler: XLNet has no pooler
        super().__init__(config)
        self.word = nn.Embedding(config.vocab_size, config.hidden_size)
        self.mask_emb = nn.Parameter(torch.empty(1, 1, config.hidden_size))  # the query stream's start
        if not config.untie_r:  # one set of attention biases for all layers, the original's default
            N, D = config.num_attention_heads, config.d_head
            self.r_w_bias, self.r_r_bias, self.r_s_bias = (nn.Parameter(torch.empty(N, D)) for _ in range(3))
        self.layers = nn.ModuleList(XLNetLayer(config) for _ in range(config.num_hidden_layers))
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.init_weights()

    @torch.no_grad()
    def init_weights(self) -> None:
        super().init_weights()
        init_relative_parameters(self, self.config.initializer_range)

    def check_xlnet_inputs(self, input_ids, attention_mask, token_type_ids, perm_mask, mems) -> int:
        """Raise a ValueError naming the argument at fault; return the memory length M."""
        self.check_inputs(input_ids, attention_mask, None, None)
        B, T = input_ids.shape
        if token_type_ids is not None and token_type_ids.shape != input_ids.shape:
            raise ValueError(f"token_type_ids shape {tuple(token_type_ids.shape)} does not match input_ids {(B, T)}")
        if perm_mask is not None and tuple(perm_mask.shape) != (B, T, T):
            raise ValueError(
                f"perm_mask must have shape (batch, length, length) = {(B, T, T)}, got {tuple(perm_mask.shape)}"
            )
        if self.config.bi_data and B % 2:
            raise ValueError(
                f"bi_data runs the second half of the batch backwards: the batch size must be even, got {B}"
            )
        if mems is None:
            return 0
        c = self.config
        if len(mems) != c.num_hidden_layers:
            raise ValueError(
                f"mems holds {len(mems)} tensors; this model has {c.num_hidden_layers} layers (mems from another config?)"
            )
        M = mems[0].shape[0] if mems[0].dim() == 3 else -1
        for i, m in enumerate(mems):
            if m.dim() != 3 or tuple(m.shape) != (M, B, c.hidden_size):
                raise ValueError(
                    f"mems[{i}] has shape {tuple(m.shape)}; expected (memory length, {B}, {c.hidden_size}) "
                    "for this batch and d_model (mems from another config or batch?)"
                )
        return M

    def relative_inputs(
        self, attention_mask, token_type_ids, perm_mask, rows, M: int, h: Tensor, need_weights: bool
    ) -> Relative:
        """What every layer's attention reads besides the states; h (B, T, H) gives sizes, device and dtype."""
        c, (B, T, _) = self.config, h.shape
        hidden = hidden_keys(attention_mask, perm_mask, B, T, M, c, h.device)  # (B, T, K) or None
        differ = other_segments(token_type_ids, M)  # (B, T, K) or None
        pos = self.dropout(self.relative_encoding(T, M + T, B).to(h.device, h.dtype))  # one mask for all layers
        return Relative(
            length=T,
            pos=pos,
            content=Stream(None, sees_itself(hidden, M), differ),
            query=Stream(rows, at_rows(hidden, rows), at_rows(differ, rows)) if rows is not None else None,
            biases=None if c.untie_r else (self.r_w_bias, self.r_r_bias, self.r_s_bias),
            need_weights=need_weights,
        )

    def relative_encoding(self, T: int, K: int, B: int) -> Tensor:
        """(1, R, H) sinusoids of the distances; with bi_data (B, R, H), the batch's second half backwards."""
        c = self.config
        forward = relative_distances(T, K, c.attn_type, c.clamp_len)
        if not c.bi_data:
            return sinusoid(forward, c.hidden_size)[None]
        return torch.cat([sinusoid(d, c.hidden_size)[None].expand(B // 2, -1, -1) for d in (forward, -forward)])

    def cache(self, h: Tensor, previous: Tensor | None) -> Tensor:
        """The next segment's memory: the first reuse_len states appended, the last mem_len kept, no gradient."""
        c = self.config
        new = h.transpose(0, 1)  # (T, B, H)
        if c.reuse_len:
            new = new[: c.reuse_len]
        if previous is not None:
            new = torch.cat([previous, new], dim=0)
        return (new[-c.mem_len :] if c.mem_len else new).detach()

    def forward(
        self,
        input_ids,
        attention_mask=None,
        mems: Sequence[Tensor] | None = None,
        perm_mask=None,
        target_mapping=None,
        token_type_ids=None,
        use_mems: bool | None = None,
        output_hidden_states=False,
        output_attentions=False,
    ) -> XLNetModelOutput:
        M = self.check_xlnet_inputs(input_ids, attention_mask, token_type_ids, perm_mask, mems)
        B, T = input_ids.shape
        if use_mems is None:
            use_mems = self.config.use_mems_train if self.training else self.config.use_mems_eval
        rows = target_rows(target_mapping, T) if target_mapping is not None else None
        h = self.dropout(self.word(input_ids))  # (B, T, H)
        g = self.dropout(self.mask_emb.expand(B, rows.shape[1], -1)) if rows is not None else None  # (B, P, H)
        rel = self.relative_inputs(attention_mask, token_type_ids, perm_mask, rows, M, h, output_attentions)
        new_mems, hidden_states, attentions = [], [], []
        for i, layer in enumerate(self.layers):
            previous = mems[i] if mems is not None else None
            if use_mems:
                new_mems.append(self.cache(h, previous))
            if output_hidden_states:
                hidden_states += [h] if g is None else [h, g]
            mem = previous.transpose(0, 1).to(h.dtype) if previous is not None else None  # (B, M, H)
            h, g, probs = layer(h, g, mem, rel)
            if output_attentions:
                attentions.append(probs)
        if output_hidden_states:
            hidden_states += [h] if g is None else [h, g]
        return XLNetModelOutput(
            last_hidden_state=self.dropout(g if g is not None else h),
            hidden_states=tuple(hidden_states) if output_hidden_states else None,
            attentions=tuple(attentions) if output_attentions else None,
            mems=tuple(new_mems) if use_mems else None,
        )


def hidden_keys(attention_mask, perm_mask, B: int, T: int, M: int, c: XLNetConfig, device) -> Tensor | None:
    """(B, T, K) True where query i may not see key j, None where nothing is hidden. Padding is hidden
    from every query, the memory never; perm_mask[b, i, j] = 1 hides j from i; with attn_type "uni"
    each token sees the memory and what comes before it. The query stream reads it as it is; the
    content stream sees its own token besides (`sees_itself`)."""
    hidden = None
    if attention_mask is not None and not bool(attention_mask.bool().all()):
        hidden = (attention_mask == 0)[:, None, :]  # (B, 1, T)
    if perm_mask is not None:
        hidden = perm_mask > 0 if hidden is None else hidden | (perm_mask > 0)  # (B, T, T)
    if hidden is not None and M:
        hidden = torch.cat([hidden.new_zeros(*hidden.shape[:2], M), hidden], dim=2)  # (B, 1|T, K)
    if c.attn_type == "uni":
        causal = causal_mask(T, M, c.same_length, device)[None]  # (1, T, K)
        hidden = causal if hidden is None else hidden | causal
    return None if hidden is None else hidden.expand(B, T, M + T)


def sees_itself(hidden: Tensor | None, M: int) -> Tensor | None:
    """The content stream's mask: `hidden` (B, T, K) with each token's own key visible."""
    if hidden is None:
        return None
    T = hidden.shape[1]
    own = torch.zeros(T, M + T, dtype=torch.bool, device=hidden.device)
    own[:, M:] = torch.eye(T, dtype=torch.bool, device=hidden.device)
    return hidden & ~own


def other_segments(token_type_ids: Tensor | None, M: int) -> Tensor | None:
    """(B, T, K) True where query and key lie in different segments; the memory counts as segment 0,
    as transformers has it. None without token types."""
    if token_type_ids is None:
        return None
    keys = torch.cat([token_type_ids.new_zeros(token_type_ids.shape[0], M), token_type_ids], dim=1)  # (B, K)
    return token_type_ids[:, :, None] != keys[:, None, :]


@torch.no_grad()
def init_relative_parameters(model: nn.Module, std: float) -> None:
    """N(0, std) for the raw parameters of XLNet's attention (what nn.Linear init does not reach)."""
    for module in model.modules():
        if isinstance(module, (RelativeAttention, XLNetModel)):
            for name, p in module.named_parameters(recurse=False):
                p.normal_(0.0, std)


# ---- heads: the shared ones of heads.py, under transformers' module names ------------------------


class XLNetTaskModel(TaskModel):
    """XLNet's heads run the shared forwards of heads.py: XLNet's own inputs (mems, perm_mask,
    target_mapping, use_mems) pass through them to the backbone as keywords, and every output
    carries the new memory in `mems`."""

    backbone_class = XLNetModel
    output_class = XLNetClassifierOutput

    @torch.no_grad()
    def init_weights(self) -> None:
        PreTrainedModel.init_weights(self)
        init_relative_parameters(self, self.config.initializer_range)

    def output(self, out: XLNetModelOutput, **fields):
        return super().output(out, mems=out.mems, **fields)


class XLNetLMHeadModel(XLNetTaskModel, ForMaskedLM):
    """Next-token logits at every position, or at each target_mapping row (labels then (B, P)):
    the target_mapping already limits the vocabulary-wide product to the targets, so
    sparse_prediction changes nothing here."""

    output_class = XLNetLMHeadModelOutput

    def build_head(self, config):
        self.lm_loss = nn.Linear(config.hidden_size, config.vocab_size)  # transformers' name for the output layer
        if config.extra.get("tie_word_embeddings", True):
            self.lm_loss.weight = self.backbone.word.weight

    def predict_tokens(self, h: Tensor, labels: Tensor | None, sparse: bool):
        logits = self.lm_loss(h)  # (B, P or T, V)
        if labels is None:
            return logits, None
        if labels.shape != logits.shape[:2]:
            raise ValueError(
                f"labels have shape {tuple(labels.shape)}; the model predicts {tuple(logits.shape[:2])} "
                "(batch, num_predict with a target_mapping, else length)"
            )
        return logits, vocabulary_loss(logits, labels)


class SequenceSummary(nn.Module):
    """XLNet's sentence vector: the last token (<cls>, XLNet puts it at the end), projected, tanh."""

    def __init__(self, config: XLNetConfig):
        super().__init__()
        self.kind = config.summary_type
        extra = config.extra
        width = (
            config.num_labels if extra.get("summary_proj_to_labels") and config.num_labels > 0 else config.hidden_size
        )
        self.summary = nn.Linear(config.hidden_size, width) if config.summary_use_proj else nn.Identity()
        self.activation = activation(config.summary_activation) if config.summary_activation else nn.Identity()
        self.first_dropout = Dropout(extra.get("summary_first_dropout", 0.0))
        self.last_dropout = Dropout(config.summary_last_dropout)
        self.width = width if config.summary_use_proj else config.hidden_size

    def forward(self, h: Tensor) -> Tensor:
        x = h[:, -1] if self.kind == "last" else h[:, 0] if self.kind == "first" else h.mean(dim=1)  # (B, H)
        return self.last_dropout(self.activation(self.summary(self.first_dropout(x))))


class SummaryScores:
    """Sequence classification and multiple choice read <cls>'s summary through `logits_proj`."""

    head_class = SequenceSummary  # the sentence head: it reads no pooler, so the backbone builds none

    def sentence_logits(self, out: BaseModelOutput, attention_mask: Tensor | None) -> Tensor:
        return self.logits_proj(self.sequence_summary(out.last_hidden_state))  # (B, C), or (B·C, 1) per choice


class XLNetForSequenceClassification(SummaryScores, XLNetTaskModel, ForSequenceClassification):
    def build_head(self, config):
        self.sequence_summary = SequenceSummary(config)
        self.logits_proj = nn.Linear(self.sequence_summary.width, config.num_labels)


class XLNetForMultipleChoice(SummaryScores, XLNetTaskModel, ForMultipleChoice):
    def build_head(self, config):
        self.sequence_summary = SequenceSummary(config)
        self.logits_proj = nn.Linear(config.hidden_size, 1)


class XLNetForTokenClassification(XLNetTaskModel, ForTokenClassification):
    def build_head(self, config):
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)  # no dropout, as transformers


class XLNetForQuestionAnsweringSimple(XLNetTaskModel, ForQuestionAnswering):
    """Start and end logits per token, as BERT's SQuAD head (what the fine-tuning tasks use)."""

    output_class = XLNetQuestionAnsweringSimpleOutput

    def build_head(self, config):
        self.qa_outputs = nn.Linear(config.hidden_size, 2)

    def span_logits(self, h: Tensor) -> Tensor:
        return self.qa_outputs(h)
