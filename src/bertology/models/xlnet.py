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
    L × [ relative attention of both streams over keys [mem; h], shared q/k/v/r/o weights
          ─► feed-forward ]        h sees itself, g sees what perm_mask allows (not its own token)
    last_hidden_state = g with a target_mapping, else h

Score of query i and key j (i and j positions in [mem; h]):
    ((q_i + r_w)·k_j + (q_i + r_r)·r_{i-j} + (q_i + r_s)·s_{seg_i ≠ seg_j}) / √D
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..nn import Dropout, activation
from ..nn.cross_entropy import cross_entropy
from .base import EncoderModel, PreTrainedModel
from .config import XLNetConfig
from .heads import IGNORE, TaskModel, choice_shape, classification_loss, flatten_choices
from .outputs import BaseModelOutput, ClassifierOutput, MaskedLMOutput, ModelOutput, QuestionAnsweringOutput

Tensor = torch.Tensor
NEG = -1e30  # what transformers subtracts from hidden scores (a fully hidden row becomes uniform, not NaN)


# ---- outputs: transformers' fields, plus the new memory -------------------------------------------

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


@dataclass
class XLNetQuestionAnsweringOutput(ModelOutput):
    """The beam over answer starts and ends. The "log_probs" are probabilities (transformers' names)."""
    loss: Tensor | None = None
    start_top_log_probs: Tensor | None = None  # (B, start_n_top)
    start_top_index: Tensor | None = None  # (B, start_n_top)
    end_top_log_probs: Tensor | None = None  # (B, start_n_top · end_n_top)
    end_top_index: Tensor | None = None  # (B, start_n_top · end_n_top)
    cls_logits: Tensor | None = None  # (B,) is the question unanswerable
    mems: tuple[Tensor, ...] | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None


# ---- relative positions --------------------------------------------------------------------------

def relative_distances(qlen: int, klen: int, attn_type: str = "bi", clamp_len: int = -1) -> Tensor:
    """The distances i - j that relative encodings are made for, from klen down (R of them).

    >>> relative_distances(2, 3).tolist()          # keys 0..2, queries at 1..2: distances 3 … -1
    [3.0, 2.0, 1.0, 0.0, -1.0]
    >>> relative_distances(2, 3, clamp_len=1).tolist()
    [1.0, 1.0, 1.0, 0.0, -1.0]
    """
    end = -qlen if attn_type == "bi" else -1
    pos = torch.arange(klen, end, -1, dtype=torch.int64).float()
    return pos.clamp(-clamp_len, clamp_len) if clamp_len > 0 else pos


def sinusoid(distances: Tensor, d_model: int) -> Tensor:
    """Transformer sinusoids of (possibly negative) distances: (R,) → (R, H), sines then cosines."""
    inv_freq = 1 / torch.pow(10000, torch.arange(0, d_model, 2, dtype=torch.int64).float() / d_model)
    angles = distances[:, None] * inv_freq  # (R, H/2)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def rel_shift(x: Tensor, klen: int) -> Tensor:
    """Scores against relative distances → scores against keys: out[i, j] = x[i, T - i + j].

    Row i of x holds the R = K + T distances klen … -T+1; the key j lies at distance (M + i) - j,
    i.e. at index T - i + j. Dropping one row of the (R, T) view shifts every row by one more.

    >>> rel_shift(torch.arange(10).view(1, 1, 2, 5), 3)[0, 0].tolist()   # T 2, K 3
    [[2, 3, 4], [6, 7, 8]]
    """
    B, N, T, R = x.shape
    x = x.reshape(B, N, R, T)[:, :, 1:, :]  # (B, N, R-1, T)
    return x.reshape(B, N, T, R - 1)[..., :klen]  # (B, N, T, K)


def shift_rows(x: Tensor, rows: Tensor, qlen: int, klen: int) -> Tensor:
    """rel_shift for queries at chosen positions `rows` (B, P) of the segment: out[p, j] = x[p, T - rows[p] + j].

    >>> x = torch.arange(10).view(1, 1, 2, 5)
    >>> shift_rows(x, torch.tensor([[0, 1]]), 2, 3)[0, 0].tolist() == rel_shift(x, 3)[0, 0].tolist()
    True
    """
    index = qlen - rows[:, None, :, None] + torch.arange(klen, device=x.device)  # (B, 1, P, K)
    index = index.clamp(max=x.shape[-1] - 1)  # "uni" attention: the hidden future runs past R; masked anyway
    return x.gather(-1, index.expand(x.shape[0], x.shape[1], -1, -1))


# ---- the layer -----------------------------------------------------------------------------------

class RelativeAttention(nn.Module):
    """Relative multi-head attention; both streams use the same q / k / v / r / o projections.

    Weights keep transformers' (H, N, D) layout; `biases=False` when the model ties r_w / r_r / r_s
    across layers (untie_r=False) and passes its own set in.
    """

    def __init__(self, config: XLNetConfig, biases: bool = True):
        super().__init__()
        H, N, D = config.hidden_size, config.num_attention_heads, config.d_head
        self.n_head, self.d_head, self.scale = N, D, 1 / math.sqrt(D)
        for name in ("q", "k", "v", "o", "r"):
            setattr(self, name, nn.Parameter(torch.empty(H, N, D)))
        if biases:
            self.r_w_bias, self.r_r_bias, self.r_s_bias = (nn.Parameter(torch.empty(N, D)) for _ in range(3))
        self.seg_embed = nn.Parameter(torch.empty(2, N, D))  # [same segment, different segment]
        self.norm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def own_biases(self) -> tuple[Tensor, Tensor, Tensor]:
        return self.r_w_bias, self.r_r_bias, self.r_s_bias

    @staticmethod
    def project(x: Tensor, weight: Tensor) -> Tensor:
        return (x @ weight.flatten(1)).unflatten(-1, weight.shape[1:])  # (…, H) → (…, N, D)

    def attend(self, q, k, v, k_r, rows, seg, mask, biases, T: int):
        """q (B, Q, N, D) at positions `rows` (None: all T in order); k, v (B, K, N, D); k_r (1|B, R, N, D);
        seg (B, Q, K) True where segments differ; mask (B|1, Q, K) True where hidden."""
        r_w, r_r, r_s = (b[:, None] for b in biases)  # (N, 1, D)
        q = q.transpose(1, 2)  # (B, N, Q, D)
        K = k.shape[1]
        score = (q + r_w) @ k.permute(0, 2, 3, 1)  # content: (B, N, Q, K)
        bd = (q + r_r) @ k_r.permute(0, 2, 3, 1)  # position: (B, N, Q, R)
        score = score + (rel_shift(bd, K) if rows is None else shift_rows(bd, rows, T, K))
        if seg is not None:
            ef = (q + r_s) @ self.seg_embed.permute(1, 2, 0)  # segment: (B, N, Q, 2)
            score = score + torch.where(seg[:, None], ef[..., 1:], ef[..., :1])
        score = score * self.scale
        if mask is not None:
            score = score.masked_fill(mask[:, None], NEG)
        probs = self.dropout(F.softmax(score, dim=-1))  # (B, N, Q, K)
        out = (probs @ v.transpose(1, 2)).transpose(1, 2).flatten(2)  # (B, Q, N·D)
        return out, probs

    def post(self, x: Tensor, attended: Tensor) -> Tensor:
        return self.norm(x + self.dropout(attended @ self.o.flatten(1).T))  # (B, Q, H)

    def forward(self, h, g, mem, pos, rows, masks, segs, biases, need_weights=False):
        T = h.shape[1]
        cat = torch.cat([mem, h], dim=1) if mem is not None else h  # (B, K, H)
        k, v = self.project(cat, self.k), self.project(cat, self.v)  # (B, K, N, D)
        k_r = self.project(pos, self.r)  # (1|B, R, N, D)
        out, probs_h = self.attend(self.project(h, self.q), k, v, k_r, None, segs[0], masks[0], biases, T)
        h_out = self.post(h, out)
        if g is None:
            return h_out, None, (probs_h if need_weights else None)
        out, probs_g = self.attend(self.project(g, self.q), k, v, k_r, rows, segs[1], masks[1], biases, T)
        return h_out, self.post(g, out), ((probs_h, probs_g) if need_weights else None)


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
        self.attention = RelativeAttention(config, biases=config.untie_r)
        self.ffn = FeedForward(config)

    def forward(self, h, g, mem, pos, rows, masks, segs, biases, need_weights=False):
        h, g, probs = self.attention(h, g, mem, pos, rows, masks, segs, biases, need_weights)
        return self.ffn(h), (self.ffn(g) if g is not None else None), probs


# ---- the backbone --------------------------------------------------------------------------------

def target_rows(target_mapping: Tensor, T: int) -> Tensor:
    """The position each prediction is at, (B, P, T) one-hot rows → (B, P); a ValueError otherwise."""
    if target_mapping.dim() != 3 or target_mapping.shape[2] != T:
        raise ValueError(f"target_mapping must have shape (batch, num_predict, {T}), got {tuple(target_mapping.shape)}")
    ones, zeros = (target_mapping == 1).sum(-1), (target_mapping == 0).sum(-1)
    bad = ((ones != 1) | (zeros != T - 1)).nonzero()
    if len(bad):
        b, p = bad[0].tolist()
        raise ValueError(f"target_mapping row [{b}, {p}] is not one-hot (a single 1 among 0s): "
                         f"{target_mapping[b, p].tolist()[:12]}")
    rows = target_mapping.argmax(-1)  # (B, P)
    if (rows.sort(-1).values.diff(dim=-1) == 0).any():
        raise ValueError("target_mapping predicts one position twice in a sequence; each row must pick its own token")
    return rows


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

    # ---- inputs ------------------------------------------------------------------------------
    def check_xlnet_inputs(self, input_ids, attention_mask, token_type_ids, perm_mask, mems) -> int:
        """Raise a ValueError naming the argument at fault; return the memory length M."""
        self.check_inputs(input_ids, attention_mask, None, None)
        B, T = input_ids.shape
        if token_type_ids is not None and token_type_ids.shape != input_ids.shape:
            raise ValueError(f"token_type_ids shape {tuple(token_type_ids.shape)} does not match input_ids {(B, T)}")
        if perm_mask is not None and tuple(perm_mask.shape) != (B, T, T):
            raise ValueError(f"perm_mask must have shape (batch, length, length) = {(B, T, T)}, got {tuple(perm_mask.shape)}")
        if self.config.bi_data and B % 2:
            raise ValueError(f"bi_data runs the second half of the batch backwards: the batch size must be even, got {B}")
        if mems is None:
            return 0
        c = self.config
        if len(mems) != c.num_hidden_layers:
            raise ValueError(f"mems holds {len(mems)} tensors; this model has {c.num_hidden_layers} layers (mems from another config?)")
        M = mems[0].shape[0] if mems[0].dim() == 3 else -1
        for i, m in enumerate(mems):
            if m.dim() != 3 or tuple(m.shape) != (M, B, c.hidden_size):
                raise ValueError(f"mems[{i}] has shape {tuple(m.shape)}; expected (memory length, {B}, {c.hidden_size}) "
                                 "for this batch and d_model (mems from another config or batch?)")
        return M

    def attention_masks(self, attention_mask, perm_mask, rows, B: int, T: int, M: int, device):
        """(content, query) masks, (B|1, T|P, K) bool, True = hidden; None where nothing is hidden.

        Padded keys are hidden from every query, memory never; perm_mask[b, i, j] = 1 hides j from i.
        The content stream always sees its own token, the query stream only what the mask allows."""
        hidden = None
        if attention_mask is not None and not bool(attention_mask.bool().all()):
            hidden = (attention_mask == 0)[:, None, :]  # (B, 1, T)
        if perm_mask is not None:
            hidden = perm_mask > 0 if hidden is None else hidden | (perm_mask > 0)  # (B, T, T)
        if hidden is not None and M:
            hidden = torch.cat([hidden.new_zeros(*hidden.shape[:2], M), hidden], dim=2)  # memory: always visible
        if self.config.attn_type == "uni":  # each token sees the memory and what comes before it
            causal = causal_mask(T, M, self.config.same_length, device)[None]
            hidden = causal if hidden is None else hidden | causal
        if hidden is None:
            return None, None
        hidden = hidden.expand(B, T, M + T)
        own = torch.zeros(T, M + T, dtype=torch.bool, device=hidden.device)
        own[:, M:] = torch.eye(T, dtype=torch.bool, device=hidden.device)
        content = hidden & ~own
        query = None if rows is None else hidden.gather(1, rows[..., None].expand(-1, -1, M + T))  # (B, P, K)
        return content, query

    def relative_encoding(self, T: int, K: int, B: int, device, dtype) -> Tensor:
        """(1, R, H) sinusoids of the distances; with bi_data (B, R, H), the batch's second half backwards."""
        c = self.config
        forward = relative_distances(T, K, c.attn_type, c.clamp_len)
        enc = [sinusoid(d, c.hidden_size) for d in ([forward, -forward] if c.bi_data else [forward])]
        if c.bi_data:  # forward for the first B/2 rows, backward (negated distances) for the rest
            return torch.cat([e[None].expand(B // 2, -1, -1) for e in enc]).to(device, dtype)
        return enc[0][None].to(device, dtype)

    def cache(self, h: Tensor, previous: Tensor | None) -> Tensor:
        """The next segment's memory: the first reuse_len states appended, the last mem_len kept, no gradient."""
        c = self.config
        new = h.transpose(0, 1)  # (T, B, H)
        if c.reuse_len:
            new = new[:c.reuse_len]
        if previous is not None:
            new = torch.cat([previous, new], dim=0)
        return (new[-c.mem_len:] if c.mem_len else new).detach()

    def biases(self, layer: XLNetLayer) -> tuple[Tensor, Tensor, Tensor]:
        if self.config.untie_r:
            return layer.attention.own_biases()
        return self.r_w_bias, self.r_r_bias, self.r_s_bias

    def forward(self, input_ids, attention_mask=None, mems: Sequence[Tensor] | None = None, perm_mask=None,
                target_mapping=None, token_type_ids=None, use_mems: bool | None = None,
                output_hidden_states=False, output_attentions=False) -> XLNetModelOutput:
        M = self.check_xlnet_inputs(input_ids, attention_mask, token_type_ids, perm_mask, mems)
        B, T = input_ids.shape
        K = M + T
        if use_mems is None:
            use_mems = self.config.use_mems_train if self.training else self.config.use_mems_eval
        rows = target_rows(target_mapping, T) if target_mapping is not None else None
        masks = self.attention_masks(attention_mask, perm_mask, rows, B, T, M, input_ids.device)
        segs = (None, None)
        if token_type_ids is not None:  # memory counts as segment 0, as transformers has it
            keys = torch.cat([token_type_ids.new_zeros(B, M), token_type_ids], dim=1) if M else token_type_ids
            seg = token_type_ids[:, :, None] != keys[:, None, :]  # (B, T, K)
            segs = (seg, None if rows is None else seg.gather(1, rows[..., None].expand(-1, -1, K)))

        h = self.dropout(self.word(input_ids))  # (B, T, H)
        g = self.dropout(self.mask_emb.expand(B, rows.shape[1], -1)) if rows is not None else None  # (B, P, H)
        pos = self.dropout(self.relative_encoding(T, K, B, h.device, h.dtype))  # (1|B, R, H)
        new_mems, hidden_states, attentions = [], [], []
        for i, layer in enumerate(self.layers):
            previous = mems[i] if mems is not None else None
            if use_mems:
                new_mems.append(self.cache(h, previous))
            if output_hidden_states:
                hidden_states += [h] if g is None else [h, g]
            mem = previous.transpose(0, 1).to(h.dtype) if previous is not None else None  # (B, M, H)
            h, g, probs = layer(h, g, mem, pos, rows, masks, segs, self.biases(layer), output_attentions)
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


def causal_mask(T: int, M: int, same_length: bool, device) -> Tensor:
    """attn_type "uni": query i hides keys after M + i; same_length also hides keys more than K back.

    >>> causal_mask(2, 1, False, "cpu").int().tolist()
    [[0, 0, 1], [0, 0, 0]]
    """
    ones = torch.ones(T, M + T, device=device)
    hidden = ones.triu(M + 1)
    if same_length:
        hidden[:, :T] += ones[:, :T].tril(-1)
    return hidden.bool()


@torch.no_grad()
def init_relative_parameters(model: nn.Module, std: float) -> None:
    """N(0, std) for the raw parameters of XLNet's attention (what nn.Linear init does not reach)."""
    for module in model.modules():
        if isinstance(module, (RelativeAttention, XLNetModel)):
            for name, p in module.named_parameters(recurse=False):
                p.normal_(0.0, std)


# ---- heads ---------------------------------------------------------------------------------------

class XLNetTaskModel(TaskModel):
    backbone_class = XLNetModel

    @torch.no_grad()
    def init_weights(self) -> None:
        PreTrainedModel.init_weights(self)
        init_relative_parameters(self, self.config.initializer_range)

    def run(self, input_ids, attention_mask, mems, perm_mask, target_mapping, token_type_ids, use_mems,
            output_hidden_states, output_attentions) -> XLNetModelOutput:
        return self.backbone(input_ids, attention_mask, mems, perm_mask, target_mapping, token_type_ids, use_mems,
                             output_hidden_states, output_attentions)


class XLNetLMHeadModel(XLNetTaskModel):
    """Next-token logits at every position, or at each target_mapping row (labels then (B, P))."""

    def build_head(self, config):
        self.lm_loss = nn.Linear(config.hidden_size, config.vocab_size)
        if config.extra.get("tie_word_embeddings", True):
            self.lm_loss.weight = self.backbone.word.weight

    def forward(self, input_ids, attention_mask=None, mems=None, perm_mask=None, target_mapping=None,
                token_type_ids=None, labels=None, use_mems=None, output_hidden_states=False,
                output_attentions=False) -> XLNetLMHeadModelOutput:
        out = self.run(input_ids, attention_mask, mems, perm_mask, target_mapping, token_type_ids, use_mems,
                       output_hidden_states, output_attentions)
        logits = self.lm_loss(out.last_hidden_state)  # (B, P or T, V)
        loss = None
        if labels is not None:
            if labels.shape != logits.shape[:2]:
                raise ValueError(f"labels have shape {tuple(labels.shape)}; the model predicts {tuple(logits.shape[:2])} "
                                 "(batch, num_predict with a target_mapping, else length)")
            loss = cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        return XLNetLMHeadModelOutput(loss, logits, out.hidden_states, out.attentions, mems=out.mems)


class SequenceSummary(nn.Module):
    """XLNet's sentence vector: the last token (<cls>, XLNet puts it at the end), projected, tanh."""

    def __init__(self, config: XLNetConfig, num_outputs: int | None = None):
        super().__init__()
        self.kind = config.summary_type
        extra = config.extra
        width = config.num_labels if extra.get("summary_proj_to_labels") and config.num_labels > 0 else config.hidden_size
        self.summary = nn.Linear(config.hidden_size, width) if config.summary_use_proj else nn.Identity()
        self.activation = activation(config.summary_activation) if config.summary_activation else nn.Identity()
        self.first_dropout = Dropout(extra.get("summary_first_dropout", 0.0))
        self.last_dropout = Dropout(config.summary_last_dropout)

    def forward(self, h: Tensor) -> Tensor:
        x = h[:, -1] if self.kind == "last" else h[:, 0] if self.kind == "first" else h.mean(dim=1)  # (B, H)
        return self.last_dropout(self.activation(self.summary(self.first_dropout(x))))


class XLNetForSequenceClassification(XLNetTaskModel):
    def build_head(self, config):
        self.sequence_summary = SequenceSummary(config)
        self.logits_proj = nn.Linear(self.sequence_summary.summary.out_features if config.summary_use_proj
                                     else config.hidden_size, config.num_labels)

    def forward(self, input_ids, attention_mask=None, mems=None, perm_mask=None, target_mapping=None,
                token_type_ids=None, labels=None, use_mems=None, output_hidden_states=False,
                output_attentions=False) -> XLNetClassifierOutput:
        out = self.run(input_ids, attention_mask, mems, perm_mask, target_mapping, token_type_ids, use_mems,
                       output_hidden_states, output_attentions)
        logits = self.logits_proj(self.sequence_summary(out.last_hidden_state))  # (B, C)
        loss = classification_loss(logits, labels, self.config) if labels is not None else None
        return XLNetClassifierOutput(loss, logits, out.hidden_states, out.attentions, mems=out.mems)


class XLNetForMultipleChoice(XLNetTaskModel):
    """Inputs (B, C, T); each choice's summary is scored, the scores softmaxed across choices."""

    def build_head(self, config):
        self.sequence_summary = SequenceSummary(config)
        self.logits_proj = nn.Linear(config.hidden_size, 1)

    def forward(self, input_ids, attention_mask=None, mems=None, perm_mask=None, target_mapping=None,
                token_type_ids=None, labels=None, use_mems=None, output_hidden_states=False,
                output_attentions=False) -> XLNetClassifierOutput:
        B, C = choice_shape(input_ids)
        input_ids, attention_mask, token_type_ids = flatten_choices(input_ids, attention_mask, token_type_ids)
        out = self.run(input_ids, attention_mask, mems, perm_mask, target_mapping, token_type_ids,
                       use_mems, output_hidden_states, output_attentions)
        logits = self.logits_proj(self.sequence_summary(out.last_hidden_state)).view(B, C)
        loss = F.cross_entropy(logits.float(), labels.view(-1)) if labels is not None else None
        return XLNetClassifierOutput(loss, logits, out.hidden_states, out.attentions, mems=out.mems)


class XLNetForTokenClassification(XLNetTaskModel):
    def build_head(self, config):
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)  # no dropout, as transformers

    def forward(self, input_ids, attention_mask=None, mems=None, perm_mask=None, target_mapping=None,
                token_type_ids=None, labels=None, use_mems=None, output_hidden_states=False,
                output_attentions=False) -> XLNetClassifierOutput:
        out = self.run(input_ids, attention_mask, mems, perm_mask, target_mapping, token_type_ids, use_mems,
                       output_hidden_states, output_attentions)
        logits = self.classifier(out.last_hidden_state)  # (B, T, C)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=IGNORE)
        return XLNetClassifierOutput(loss, logits, out.hidden_states, out.attentions, mems=out.mems)


def span_loss(start_logits: Tensor, end_logits: Tensor, start_positions: Tensor, end_positions: Tensor) -> Tensor:
    """Mean of the start and end cross-entropies; positions outside the window (clamped to T) are ignored."""
    T = start_logits.shape[1]
    start, end = start_positions.view(-1).clamp(0, T), end_positions.view(-1).clamp(0, T)
    return (F.cross_entropy(start_logits, start, ignore_index=T) + F.cross_entropy(end_logits, end, ignore_index=T)) / 2


class XLNetForQuestionAnsweringSimple(XLNetTaskModel):
    """Start and end logits per token, as BERT's SQuAD head (what the fine-tuning tasks use)."""

    def build_head(self, config):
        self.qa_outputs = nn.Linear(config.hidden_size, 2)

    def forward(self, input_ids, attention_mask=None, mems=None, perm_mask=None, target_mapping=None,
                token_type_ids=None, start_positions=None, end_positions=None, use_mems=None,
                output_hidden_states=False, output_attentions=False) -> XLNetQuestionAnsweringSimpleOutput:
        out = self.run(input_ids, attention_mask, mems, perm_mask, target_mapping, token_type_ids, use_mems,
                       output_hidden_states, output_attentions)
        start_logits, end_logits = self.qa_outputs(out.last_hidden_state).float().unbind(-1)  # each (B, T)
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = span_loss(start_logits, end_logits, start_positions, end_positions)
        return XLNetQuestionAnsweringSimpleOutput(loss, start_logits, end_logits, out.hidden_states, out.attentions,
                                                  mems=out.mems)


def hide(logits: Tensor, p_mask: Tensor | None) -> Tensor:
    """Positions with p_mask 1 (question, specials, padding) cannot be an answer's start or end."""
    return logits if p_mask is None else logits * (1 - p_mask) + NEG * p_mask


class StartLogits(nn.Module):
    def __init__(self, config: XLNetConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, 1)

    def forward(self, h: Tensor, p_mask: Tensor | None = None) -> Tensor:
        return hide(self.dense(h).squeeze(-1), p_mask)  # (B, T)


class EndLogits(nn.Module):
    """The end scored given the start's state: dense(tanh(dense([h_end; h_start]))) with a LayerNorm between."""

    def __init__(self, config: XLNetConfig):
        super().__init__()
        H = config.hidden_size
        self.dense_0 = nn.Linear(2 * H, H)
        self.LayerNorm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.dense_1 = nn.Linear(H, 1)

    def forward(self, h: Tensor, start_states: Tensor, p_mask: Tensor | None = None) -> Tensor:
        x = self.LayerNorm(torch.tanh(self.dense_0(torch.cat([h, start_states], dim=-1))))
        return hide(self.dense_1(x).squeeze(-1), p_mask)


class AnswerClass(nn.Module):
    """Whether the question has no answer (SQuAD 2.0), from the start state and <cls>."""

    def __init__(self, config: XLNetConfig):
        super().__init__()
        H = config.hidden_size
        self.dense_0 = nn.Linear(2 * H, H)
        self.dense_1 = nn.Linear(H, 1, bias=False)

    def forward(self, h: Tensor, start_states: Tensor, cls_index: Tensor | None = None) -> Tensor:
        cls = h[:, -1] if cls_index is None else h.gather(1, cls_index[:, None, None].expand(-1, 1, h.shape[-1]))[:, 0]
        return self.dense_1(torch.tanh(self.dense_0(torch.cat([start_states, cls], dim=-1)))).squeeze(-1)  # (B,)


class XLNetForQuestionAnswering(XLNetTaskModel):
    """XLNet's SQuAD head: the end conditioned on the start. Training takes gold spans; inference
    returns a beam of start_n_top starts × end_n_top ends and a no-answer score."""

    def build_head(self, config):
        self.start_logits = StartLogits(config)
        self.end_logits = EndLogits(config)
        self.answer_class = AnswerClass(config)

    def forward(self, input_ids, attention_mask=None, mems=None, perm_mask=None, target_mapping=None,
                token_type_ids=None, start_positions=None, end_positions=None, is_impossible=None, cls_index=None,
                p_mask=None, use_mems=None, output_hidden_states=False,
                output_attentions=False) -> XLNetQuestionAnsweringOutput:
        out = self.run(input_ids, attention_mask, mems, perm_mask, target_mapping, token_type_ids, use_mems,
                       output_hidden_states, output_attentions)
        h = out.last_hidden_state  # (B, T, H)
        B, T, H = h.shape
        start_logits = self.start_logits(h, p_mask)  # (B, T)
        rest = dict(mems=out.mems, hidden_states=out.hidden_states, attentions=out.attentions)
        if start_positions is not None and end_positions is not None:  # training: teacher-forced start
            start_positions, end_positions = start_positions.view(-1), end_positions.view(-1)
            start_states = h.gather(1, start_positions[:, None, None].expand(-1, 1, H)).expand(-1, T, -1)
            end_logits = self.end_logits(h, start_states, p_mask)
            loss = (F.cross_entropy(start_logits, start_positions) + F.cross_entropy(end_logits, end_positions)) / 2
            if cls_index is not None and is_impossible is not None:
                cls_logits = self.answer_class(h, start_states[:, 0], cls_index.view(-1))
                loss = loss + 0.5 * F.binary_cross_entropy_with_logits(cls_logits, is_impossible.view(-1).to(cls_logits))
            return XLNetQuestionAnsweringOutput(loss=loss, **rest)

        n_start, n_end = self.config.start_n_top, self.config.end_n_top
        start_probs = F.softmax(start_logits, dim=-1)  # (B, T)
        top_start_probs, top_start = start_probs.topk(n_start, dim=-1)  # (B, S)
        start_states = h.gather(1, top_start[..., None].expand(-1, -1, H))  # (B, S, H)
        start_states = start_states[:, None].expand(-1, T, -1, -1)  # (B, T, S, H)
        end_logits = self.end_logits(h[:, :, None].expand_as(start_states), start_states,
                                     p_mask[..., None] if p_mask is not None else None)  # (B, T, S)
        top_end_probs, top_end = F.softmax(end_logits, dim=1).topk(n_end, dim=1)  # (B, E, S)
        expected_start = torch.einsum("blh,bl->bh", h, start_probs)  # the start as a probability-weighted state
        return XLNetQuestionAnsweringOutput(
            start_top_log_probs=top_start_probs, start_top_index=top_start,
            end_top_log_probs=top_end_probs.reshape(B, n_start * n_end), end_top_index=top_end.reshape(B, n_start * n_end),
            cls_logits=self.answer_class(h, expected_start, cls_index), **rest,
        )
