"""Relative multi-head attention (Transformer-XL, Dai et al., 2019; XLNet's two streams): scores from
content, relative distance and segment, over keys that reach back into a memory of earlier segments.

Shapes: B batch, T length of this segment, M memory length, K = M + T keys, R = K + T relative
distances (K … -T+1), P queries of the query stream, Q queries of either stream (T or P), H hidden,
N heads, D head size.

Score of query i and key j (i and j positions in [mem; segment]):
    ((q_i + r_w)·k_j + (q_i + r_r)·r_{i-j} + (q_i + r_s)·s_{seg_i ≠ seg_j}) / √D

What does not change from layer to layer (the distances' encodings, the masks, the segments) is
built once per forward into a `Relative` record, as `attention.Padding` is for BERT.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .dropout import Dropout

Tensor = torch.Tensor
NEG = -1e30  # what transformers subtracts from hidden scores (a fully hidden row becomes uniform, not NaN)


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


def at_rows(x: Tensor | None, rows: Tensor) -> Tensor | None:
    """The rows (B, P) of x (B, T, K): what the content stream has at the query stream's positions."""
    return None if x is None else x.gather(1, rows[..., None].expand(-1, -1, x.shape[-1]))


# ---- what every layer reads besides the states ---------------------------------------------------


@dataclass
class Stream:
    """One stream's queries: where they are, which keys they may not see, which lie in another segment."""

    rows: Tensor | None  # (B, P) positions in the segment; None: all T in order (the content stream)
    hidden: Tensor | None  # (B, Q, K) True where the key is hidden from the query; None: nothing hidden
    other_segment: Tensor | None  # (B, Q, K) True where query and key differ in segment; None: no token types


@dataclass
class Relative:
    """The inputs of relative attention that do not change from layer to layer, built once per forward
    (as `Padding` is for BERT): the distances' encodings, with one dropout mask for all layers; the two
    streams' masks and segments; the attention biases when the layers share one set."""

    length: int  # T, the segment's length (queries); keys are [memory; segment]
    pos: Tensor  # (1|B, R, H) sinusoids of the distances K … -T+1
    content: Stream  # the tokens themselves, each seeing its own
    query: Stream | None  # the targets of a target_mapping, never seeing their own token; None without one
    biases: tuple[Tensor, Tensor, Tensor] | None  # (r_w, r_r, r_s) when all layers share one set; None: each its own
    need_weights: bool = False


# ---- the attention -------------------------------------------------------------------------------


class RelativeAttention(nn.Module):
    """Relative multi-head attention; both streams use the same q / k / v / r / o projections.

    Weights keep transformers' (H, N, D) layout; `biases=False` when the model ties r_w / r_r / r_s
    across layers (untie_r=False) and passes its own set in the `Relative` inputs.
    """

    def __init__(
        self, hidden_size: int, num_heads: int, head_size: int, dropout: float, eps: float, biases: bool = True
    ):
        super().__init__()
        H, N, D = hidden_size, num_heads, head_size
        self.n_head, self.d_head, self.scale = N, D, 1 / math.sqrt(D)
        for name in ("q", "k", "v", "o", "r"):
            setattr(self, name, nn.Parameter(torch.empty(H, N, D)))
        if biases:
            self.r_w_bias, self.r_r_bias, self.r_s_bias = (nn.Parameter(torch.empty(N, D)) for _ in range(3))
        self.seg_embed = nn.Parameter(torch.empty(2, N, D))  # [same segment, different segment]
        self.norm = nn.LayerNorm(H, eps=eps)
        self.dropout = Dropout(dropout)

    @staticmethod
    def project(x: Tensor, weight: Tensor) -> Tensor:
        return (x @ weight.flatten(1)).unflatten(-1, weight.shape[1:])  # (…, H) → (…, N, D)

    def forward(self, h: Tensor, g: Tensor | None, mem: Tensor | None, rel: Relative):
        """h (B, T, H), g (B, P, H) or None, mem (B, M, H) or None → new h, new g, attention probabilities."""
        cat = torch.cat([mem, h], dim=1) if mem is not None else h  # (B, K, H)
        k, v = self.project(cat, self.k), self.project(cat, self.v)  # (B, K, N, D)
        k_r = self.project(rel.pos, self.r)  # (1|B, R, N, D)
        biases = rel.biases if rel.biases is not None else (self.r_w_bias, self.r_r_bias, self.r_s_bias)
        h, probs = self.attend(h, rel.content, k, v, k_r, biases, rel.length)
        if g is not None:
            g, probs_g = self.attend(g, rel.query, k, v, k_r, biases, rel.length)
            probs = (probs, probs_g)
        return h, g, (probs if rel.need_weights else None)

    def attend(self, x: Tensor, stream: Stream, k, v, k_r, biases, T: int) -> tuple[Tensor, Tensor]:
        """One stream's queries x (B, Q, H) over the keys: the post-LN output (B, Q, H) and the
        probabilities (B, N, Q, K)."""
        r_w, r_r, r_s = (b[:, None] for b in biases)  # (N, 1, D)
        q = self.project(x, self.q).transpose(1, 2)  # (B, N, Q, D)
        K = k.shape[1]
        score = (q + r_w) @ k.permute(0, 2, 3, 1)  # content: (B, N, Q, K)
        bd = (q + r_r) @ k_r.permute(0, 2, 3, 1)  # position: (B, N, Q, R)
        score = score + (rel_shift(bd, K) if stream.rows is None else shift_rows(bd, stream.rows, T, K))
        if stream.other_segment is not None:
            ef = (q + r_s) @ self.seg_embed.permute(1, 2, 0)  # segment: (B, N, Q, 2)
            score = score + torch.where(stream.other_segment[:, None], ef[..., 1:], ef[..., :1])
        score = score * self.scale
        if stream.hidden is not None:
            score = score.masked_fill(stream.hidden[:, None], NEG)
        probs = self.dropout(F.softmax(score, dim=-1))  # (B, N, Q, K)
        out = (probs @ v.transpose(1, 2)).transpose(1, 2).flatten(2)  # (B, Q, N·D)
        return self.norm(x + self.dropout(out @ self.o.flatten(1).T)), probs  # (B, Q, H)
