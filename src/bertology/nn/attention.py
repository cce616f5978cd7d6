"""Multi-head scaled dot-product attention: self-attention over padded or packed batches, and
cross-attention, where queries come from one sequence and keys and values from another (a source).

Shapes: B batch, T length, H hidden, N heads, D head size (H = N·D), M real (non-padding) tokens;
cross-attention: S source length, K source hidden size.

Two paths compute the same thing: the fast path calls `F.scaled_dot_product_attention`; the
explicit path writes softmax(QKᵀ/√D + mask)·V out, so the probabilities can be returned (for
`output_attentions` and for drawing attention maps) and, in training on CPU, dropped out with
`dropout.dropout` (SDPA would fall back to the same product written out, but draw its mask with
`bernoulli_`, at three times the cost).

Over packed activations on CUDA and in CPU inference, attention skips padding too (`varlen_attention`):
each sequence's rows attend among themselves, with no gather back to (B, T).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from . import fused
from .dropout import draws_own_masks, dropout as drop


ROW_MULTIPLE = 64


def round_up_rows(n: int, multiple: int = ROW_MULTIPLE) -> int:
    """n rounded up to a multiple of `multiple`.

    Packed batches have a different number of rows every step; rounding it keeps the matrix
    shapes to a few, so that oneDNN reuses its kernels instead of building new ones (bf16 linear
    layers ran 2.5x slower with a new row count each call than with a fixed one).

    >>> round_up_rows(1900), round_up_rows(1920), round_up_rows(0)
    (1920, 1920, 0)
    """
    return -(-n // multiple) * multiple


@dataclass
class Padding:
    """Where a batch's real tokens are, and whether activations are packed to those tokens only.

    Packed activations are (M', H): every real token once, no padding rows, so the linear layers
    (most of the compute) do no work on padding, plus as many copies of the first real tokens as
    round M' up to a multiple of ROW_MULTIPLE (their results are never read back, so they change
    nothing but the matrix shapes). Attention gathers the projections back to (B, T) around SDPA
    (`spread`), with a copy of a real token's row at each padding position: finite, masked out as
    a key and dropped as a query, so it changes nothing, and one gather costs less than zeroing
    (B·T, 3H) and scattering the real rows into it (bench/encoder.py measures the packed path).

    With `varlen` (by default on CUDA) the packed rows also carry `offsets`, where each sequence
    starts, and attention runs over the rows as they are (`varlen_attention`); the rounding copies
    form one more sequence of their own, so that their rows stay finite without reading a real one.
    """

    batch: int
    length: int
    key_mask: torch.Tensor | None  # (B, 1, 1, T) bool, True = may attend; None when nothing is padded
    indices: torch.Tensor | None  # (M',) flat positions in B·T: the M real tokens, then copies; None when not packed
    real: int = 0  # M, the number of real tokens (the first M of `indices`)
    rows: torch.Tensor | None = None  # (B·T,) each position's row in the packed activations (0 at padding)
    offsets: torch.Tensor | None = None  # (B+1,) or (B+2,) int32: where each sequence starts in the packed rows
    longest: int = 0  # a bound on the longest sequence of `offsets` (the kernels' grid), known without a sync
    bounds: list[int] | None = (
        None  # `offsets` as Python numbers, on the CPU (where attention loops over the sequences)
    )

    @classmethod
    def build(
        cls, attention_mask: torch.Tensor | None, batch: int, length: int, pack: bool, varlen: bool | None = None
    ) -> "Padding":
        """`varlen` None: attention over the packed rows on CUDA, and on the CPU where no autograd graph
        is recorded (inference): there a call per sequence over its rows measured as fast as the one
        padded call with the key mask or faster, in every mix of lengths tried (bench/ort.py --ablate);
        training keeps the padded call, whose backward is one kernel rather than one per sequence."""
        if attention_mask is None or bool(attention_mask.all()):
            return cls(batch, length, None, None)
        keep = attention_mask.bool()
        if not pack:
            return cls(batch, length, keep[:, None, None, :], None)
        indices = keep.flatten().nonzero().squeeze(1)  # (M,)
        real = len(indices)
        extra = round_up_rows(real) - real
        if extra:  # copies of real tokens, not padding positions: those may be rows with no token to attend to
            indices = torch.cat([indices, indices[:extra].repeat(-(-extra // max(1, real)))[:extra]])
        flat = keep.flatten()
        rows = torch.where(flat, flat.cumsum(0) - 1, 0)
        if not ((attention_mask.is_cuda or not torch.is_grad_enabled()) if varlen is None else varlen):
            return cls(batch, length, keep[:, None, None, :], indices, real, rows)
        ends = keep.sum(1, dtype=torch.int32).cumsum(0, dtype=torch.int32)  # (B,)
        bounds = [torch.zeros(1, dtype=torch.int32, device=ends.device), ends]
        if extra:  # the copies: a sequence of their own after the real ones
            bounds.append(torch.full((1,), real + extra, dtype=torch.int32, device=ends.device))
        offsets = torch.cat(bounds)
        return cls(
            batch,
            length,
            keep[:, None, None, :],
            indices,
            real,
            rows,
            offsets,
            max(length, extra),
            None if offsets.is_cuda else offsets.tolist(),
        )

    @property
    def packed(self) -> bool:
        return self.indices is not None

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, ...) → (M, ...) when packed, else unchanged."""
        if not self.packed:
            return x
        return x.flatten(0, 1).index_select(0, self.indices)

    def spread(self, x: torch.Tensor) -> torch.Tensor:
        """(M', ...) → (B, T, ...) with some real token's row at padding when packed, else unchanged."""
        if not self.packed:
            return x
        return x.index_select(0, self.rows).view(self.batch, self.length, *x.shape[1:])

    def unpack(self, x: torch.Tensor) -> torch.Tensor:
        """(M', ...) → (B, T, ...) with zeros at padding when packed (the copies dropped), else unchanged."""
        if not self.packed:
            return x
        full = x.new_zeros((self.batch * self.length,) + x.shape[1:])
        full.index_copy_(0, self.indices[: self.real], x[: self.real])
        return full.view(self.batch, self.length, *x.shape[1:])


class MultiHeadSelfAttention(nn.Module):
    """Q, K, V from one fused projection (one matrix product instead of three), then an output projection."""

    def __init__(self, hidden_size: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size {hidden_size} is not a multiple of num_attention_heads {num_heads}")
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.out = nn.Linear(hidden_size, hidden_size)
        self.dropout = dropout

    def forward(
        self, x: torch.Tensor, padding: Padding, need_weights: bool = False, residual: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`residual`: added to the output (in the output product's epilogue on the CPU's fused path)."""
        B, T, N, D = padding.batch, padding.length, self.num_heads, self.head_size
        p = self.dropout if self.training else 0.0
        if padding.offsets is not None and not need_weights:  # packed rows in, packed rows out
            q, k, v = fused.linear(self.qkv, x).view(-1, 3, N, D).unbind(1)  # each (M', N, D)
            attend = _compiled_skips or varlen_attention
            y = attend(q, k, v, padding.offsets, padding.longest, p, padding.bounds)  # (M', N, D)
            return fused.linear(self.out, y.reshape(-1, N * D), residual=residual), None
        qkv = padding.spread(fused.linear(self.qkv, x))  # (B, T, 3H)
        q, k, v = qkv.view(B, T, 3, N, D).permute(2, 0, 3, 1, 4).unbind(0)  # each (B, N, T, D)
        if need_weights or (p > 0 and draws_own_masks(x)):
            y, probs = explicit_attention(q, k, v, padding.key_mask, p)
        else:
            y, probs = F.scaled_dot_product_attention(q, k, v, attn_mask=padding.key_mask, dropout_p=p), None
        y = y.transpose(1, 2).reshape(B, T, N * D)  # (B, T, H)
        return fused.linear(self.out, padding.pack(y), residual=residual), (probs if need_weights else None)


class MultiHeadCrossAttention(nn.Module):
    """Attention as a query over a source: Attention(query, source) = Σᵢ similarity(query, keyᵢ) · valueᵢ,
    the similarity softmax(q·kᵢ/√D) over the source's real positions. Queries are projected from x,
    keys and values (one fused projection) from the source, which has its own length S, hidden
    size K and padding mask; then an output projection. The same two paths as self-attention: SDPA,
    and the explicit product that returns the (B, N, T, S) weights.

    A toy source of three keys and values, and a query most like the second key (one head, no
    projections: `explicit_attention` is the formula itself):

    >>> keys = torch.tensor([[1., 0.], [0., 1.], [-1., 0.]])             # (S, D)
    >>> values = torch.tensor([[10., 0.], [0., 10.], [-10., 0.]])
    >>> query = torch.tensor([[0., 2.]])                                  # (T, D)
    >>> out, weights = explicit_attention(query[None, None], keys[None, None], values[None, None], None)
    >>> weights[0, 0].round(decimals=2)                                   # similarity(query, keyᵢ), summing to 1
    tensor([[0.1600, 0.6700, 0.1600]])
    >>> bool(torch.allclose(out[0, 0], weights[0, 0] @ values))           # Σᵢ similarityᵢ · valueᵢ
    True

    `plot_attention(cross_attention_weights(...))` (viz/attention.py) draws such weights, the
    queries as rows and the source as columns.
    """

    def __init__(self, hidden_size: int, num_heads: int, dropout: float = 0.0, source_size: int | None = None):
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size {hidden_size} is not a multiple of num_attention_heads {num_heads}")
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.q = nn.Linear(hidden_size, hidden_size)
        self.kv = nn.Linear(source_size or hidden_size, 2 * hidden_size)
        self.out = nn.Linear(hidden_size, hidden_size)
        self.dropout = dropout

    def forward(
        self, x: torch.Tensor, source: torch.Tensor, source_mask: torch.Tensor | None = None, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x (B, T, H) attends to source (B, S, K); source_mask (B, S), true or 1 at real positions
        (None: all real). Returns (B, T, H) and, with need_weights, the (B, N, T, S) probabilities.
        A source with no real position gives no weights to average: that is an error, not NaNs."""
        (B, T, _), S, N, D = x.shape, source.shape[1], self.num_heads, self.head_size
        if source.shape[0] != B:
            raise ValueError(f"cross-attention: {B} query sequences but {source.shape[0]} sources")
        key_mask = None
        if source_mask is not None:
            if source_mask.shape != (B, S):
                raise ValueError(f"source_mask has shape {tuple(source_mask.shape)}, expected {(B, S)}")
            keep = source_mask.bool()
            if not bool(keep.any(1).all()):
                raise ValueError("source_mask: a source has no real position to attend to")
            key_mask = None if bool(keep.all()) else keep[:, None, None, :]  # (B, 1, 1, S)
        p = self.dropout if self.training else 0.0
        q = self.q(x).view(B, T, N, D).transpose(1, 2)  # (B, N, T, D)
        k, v = self.kv(source).view(B, S, 2, N, D).permute(2, 0, 3, 1, 4).unbind(0)  # each (B, N, S, D)
        if need_weights or (p > 0 and draws_own_masks(x)):
            y, probs = explicit_attention(q, k, v, key_mask, p)
        else:
            y, probs = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask, dropout_p=p), None
        return self.out(y.transpose(1, 2).reshape(B, T, N * D)), (probs if need_weights else None)


_compiled_skips = None  # varlen_attention as a compiled block calls it: set by `skip_varlen_under_compile`


def skip_varlen_under_compile() -> None:
    """Make compiled blocks run `varlen_attention` eagerly (its jagged shapes change every batch). Called by
    PreTrainedModel.compile_blocks rather than decorating the function: torch.compiler.disable imports
    torch._dynamo, seconds at every command's start that only compiling needs."""
    global _compiled_skips
    if _compiled_skips is None:
        _compiled_skips = torch.compiler.disable(varlen_attention)


def varlen_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    offsets: torch.Tensor,
    longest: int,
    dropout: float = 0.0,
    bounds: list[int] | None = None,
) -> torch.Tensor:
    """Attention within each sequence of packed rows: q, k, v (M, N, D), sequence i the rows
    offsets[i]:offsets[i + 1]; returns (M, N, D).

    In half precision on CUDA without dropout, flash attention's variable-length kernel reads the
    rows as they are (`varlen_attn`); otherwise on CUDA SDPA over jagged nested tensors viewed on the
    same rows (flash, memory-efficient or cuDNN kernels, which also draw dropout); on the CPU SDPA
    on each sequence's rows in turn (`bounds`, the offsets as Python numbers, saves reading them).

    >>> q = k = v = torch.eye(3)[:, None, :]            # 3 rows, 1 head, D = 3
    >>> varlen_attention(q, k, v, torch.tensor([0, 1, 3], dtype=torch.int32), 2)[0]
    tensor([[1., 0., 0.]])
    """
    if q.is_cuda and dropout == 0.0 and q.dtype in (torch.float16, torch.bfloat16):
        from torch.nn.attention.varlen import varlen_attn  # on first use: its import registers custom ops, slowly

        return varlen_attn(q, k, v, offsets, offsets, longest, longest)
    if not q.is_cuda:  # SDPA on each sequence's rows: views of q, k, v, no copy (the jagged SDPA is such a loop too)
        bounds = offsets.tolist() if bounds is None else bounds
        ys = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            one = [t[a:b].transpose(0, 1)[None] for t in (q, k, v)]  # each (1, N, L, D)
            ys.append(F.scaled_dot_product_attention(*one, dropout_p=dropout)[0].transpose(0, 1))  # (L, N, D)
        return torch.cat(ys)

    def jagged(x: torch.Tensor) -> torch.Tensor:  # (M, N, D) → (S, N, j, D), a view of the same rows
        return torch.nested.nested_tensor_from_jagged(x, offsets, min_seqlen=1, max_seqlen=longest).transpose(1, 2)

    y = F.scaled_dot_product_attention(jagged(q), jagged(k), jagged(v), dropout_p=dropout)
    return y.transpose(1, 2).values()


def explicit_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_mask: torch.Tensor | None, dropout: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q·kᵀ/√D, masked) · v, returning the output and the (B, N, T, S) probabilities
    (S = T in self-attention; key_mask (B, 1, 1, S) true where a key may be attended to).

    >>> q = k = v = torch.ones(1, 1, 2, 4)
    >>> explicit_attention(q, k, v, None)[1]
    tensor([[[[0.5000, 0.5000],
              [0.5000, 0.5000]]]])
    """
    scores = (q / math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)  # (B, N, T, S); scaling q is the smaller pass
    if key_mask is not None:
        scores = scores.masked_fill_(~key_mask, torch.finfo(scores.dtype).min)
    probs = scores.softmax(dim=-1)
    return drop(probs, dropout) @ v, probs
