"""Where a model's parameters are, and what a forward pass costs per token.

Counted on the real modules (built on the meta device, so bert-large costs no memory), shared
weights once. FLOPs count a multiply-add as 2 and include the matrix products, attention
(QKᵀ and the weighted sum of V, which grow with the sequence length T) and the MLM head at every
position; LayerNorm, softmax, activations and the pooler are left out (≪ 1%).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from .auto import from_config
from .config import AlbertConfig, EncoderConfig, XLNetConfig
from .checkpoint import read_config
from .family import family_of, resolve_preset


@dataclass
class ParameterCount:
    name: str
    embeddings: dict[str, int] = field(default_factory=dict)  # word, position, token type, LayerNorm, projection
    layer_sizes: list[int] = field(default_factory=list)  # each unique layer (shared blocks once)
    applied_layers: int = 0
    pooler: int = 0
    mlm_head: int = 0  # transform + decoder bias (the decoder weight is the tied word embedding)
    flops_per_token: dict[str, int] = field(default_factory=dict)
    seq_length: int = 128

    @property
    def encoder(self) -> int:
        return sum(self.layer_sizes)

    @property
    def total(self) -> int:
        """The backbone, as transformers' AutoModel counts it."""
        return sum(self.embeddings.values()) + self.encoder + self.pooler


def resolve_config(spec: str) -> tuple[str, EncoderConfig]:
    """'albert-base', 'bert-large', … or a config.json, or a model directory holding one."""
    path = Path(spec)
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        return str(spec), read_config(path)
    family, size = resolve_preset(spec)  # neither a file nor a directory: a preset, or an error listing them
    return spec, family.preset(size)


def count(config: EncoderConfig, name: str = "", seq_length: int = 128) -> ParameterCount:
    with torch.device("meta"):
        model = from_config(config, architecture=family_of(config).backbone)
    c = ParameterCount(name or f"{config.model_type}", seq_length=seq_length)
    if isinstance(config, XLNetConfig):
        return _count_xlnet(model, config, c)
    emb = model.embeddings
    c.embeddings["word"] = emb.word.weight.numel()
    c.embeddings["position"] = emb.position.weight.numel()  # counted even when fixed (sinusoidal), as transformers does
    if emb.token_type is not None:
        c.embeddings["token type"] = emb.token_type.weight.numel()
    c.embeddings["LayerNorm"] = sum(p.numel() for p in emb.norm.parameters())
    encoder = model.encoder
    if getattr(encoder, "project", None) is not None:  # ALBERT, ELECTRA with E ≠ H
        c.embeddings["projection E→H"] = sum(p.numel() for p in encoder.project.parameters())
    if isinstance(config, AlbertConfig):
        attention = [sum(p.numel() for p in b.parameters()) for b in encoder.attention_blocks]
        ffn = [sum(p.numel() for p in b.parameters()) for b in encoder.ffn_blocks]
        c.layer_sizes = [a + f for a, f in zip(attention, ffn)] if len(attention) == len(ffn) else attention + ffn
    else:
        c.layer_sizes = [sum(p.numel() for p in layer.parameters()) for layer in encoder.layers]
    c.applied_layers = sum(1 for _ in encoder.schedule())
    c.pooler = sum(p.numel() for p in model.pooler.parameters()) if model.pooler is not None else 0
    E = emb.word.embedding_dim
    c.mlm_head = config.hidden_size * E + E + 2 * E + config.vocab_size  # dense, LayerNorm, bias
    c.flops_per_token = flops_per_token(config, E, c.applied_layers, seq_length)
    return c


def _count_xlnet(model, config: XLNetConfig, c: ParameterCount) -> ParameterCount:
    """XLNet: word embeddings and mask_emb; layers with relative-attention weights; no pooler."""
    c.embeddings["word"] = model.word.weight.numel()
    c.embeddings["mask_emb (query stream)"] = model.mask_emb.numel()
    if not config.untie_r:
        c.embeddings["attention biases (tied)"] = 3 * config.hidden_size
    c.layer_sizes = [sum(p.numel() for p in layer.parameters()) for layer in model.layers]
    c.applied_layers = len(c.layer_sizes)
    H, inter, V, T = config.hidden_size, config.intermediate_size, config.vocab_size, c.seq_length
    # per token: q, k, v, o, feed-forward, and r over the 2T relative distances of a T-token segment;
    # scores against keys and (before the shift) against 2T distances, and the weighted sum of V
    encoder = c.applied_layers * (2 * (4 * H * H + 2 * H * inter) + 2 * 2 * H * H + 2 * (T + 2 * T + T) * H)
    c.mlm_head = V  # the LM head's bias; its weight is the tied word embedding
    c.flops_per_token = {"embedding projection": 0, "encoder": encoder, "MLM head": 2 * H * V}
    c.flops_per_token["total"] = sum(c.flops_per_token.values())
    return c


def flops_per_token(config: EncoderConfig, E: int, layers: int, T: int) -> dict[str, int]:
    """Forward FLOPs per token. Sharing reuses weights, not work: every applied layer costs the same.

    >>> f = flops_per_token(EncoderConfig(hidden_size=4, intermediate_size=8, num_attention_heads=1, vocab_size=10), 4, 1, 2)
    >>> f["encoder"] == 2 * (4 * 4 * 4 + 2 * 4 * 8) + 2 * 2 * 2 * 4
    True
    """
    H, inter, V = config.hidden_size, config.intermediate_size, config.vocab_size
    projections = 2 * (4 * H * H + 2 * H * inter)  # Q, K, V, output; feed-forward up and down
    attention = 2 * 2 * T * H  # QKᵀ row and the weighted sum of V, over T keys
    out = {
        "embedding projection": 2 * E * H if E != H else 0,
        "encoder": layers * (projections + attention),
        "MLM head": 2 * H * E + 2 * E * V,
    }
    out["total"] = sum(out.values())
    return out


def _row(label: str, value: int, total: int | None = None) -> str:
    share = f"{100 * value / total:6.1f}%" if total else ""
    return f"  {label:<34}{value:>14,}  {share}"


def format_table(c: ParameterCount) -> str:
    total = c.total
    unique = len(c.layer_sizes)
    lines = [f"{c.name}", f"  {'component':<34}{'parameters':>14}  {'share':>7}"]
    lines.append(_row("embeddings", sum(c.embeddings.values()), total))
    lines += [_row(f"  {k}", v) for k, v in c.embeddings.items()]
    lines.append(_row(f"encoder ({c.applied_layers} layers, {unique} unique)", c.encoder, total))
    if unique:
        same = len(set(c.layer_sizes)) == 1
        lines.append(_row("  per unique layer" if same else "  unique blocks", c.layer_sizes[0] if same else c.encoder))
    lines.append(_row("pooler", c.pooler, total))
    lines.append(_row("total (backbone)", total))
    lines.append(_row("MLM head (decoder tied)", c.mlm_head))
    f = c.flops_per_token
    lines.append(
        f"  forward FLOPs per token at T={c.seq_length}: encoder {f['encoder'] / 1e6:,.1f} M, "
        f"MLM head {f['MLM head'] / 1e6:,.1f} M, total {f['total'] / 1e6:,.1f} M"
    )
    return "\n".join(lines)


def format_summary(counts: list[ParameterCount]) -> str:
    lines = [f"  {'model':<18}{'parameters':>14}{'FLOPs/token':>14}{'params vs first':>17}{'FLOPs vs first':>16}"]
    first = counts[0]
    for c in counts:
        lines.append(
            f"  {c.name:<18}{c.total:>14,}{c.flops_per_token['total'] / 1e6:>12,.0f} M"
            f"{c.total / first.total:>16.2f}×{c.flops_per_token['total'] / first.flops_per_token['total']:>15.2f}×"
        )
    return "\n".join(lines)
