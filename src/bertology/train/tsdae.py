"""TSDAE (Wang, Reimers & Gurevych, 2021): `pretrain --objective tsdae`, a denoising auto-encoder
whose bottleneck is the sentence vector.

    text ──► delete 60% of its tokens ──► encoder ──► mean pooling ──► s          (B, H)
    text ──► decoder (causal self-attention; cross-attention to s alone) ──► next token of the text

The encoder reads the damaged text; the decoder must rebuild the original from s, so s has to carry
what the text says. The decoder's cross-attention sees nothing but s (one source position), as the
paper's does. Its token embedding and output projection are the encoder's word embeddings (tied:
the decoder's gradient trains them too), its positions its own; its layers mirror the encoder's
(depth, width, heads) and start new. Only the encoder is saved as the model; checkpoints keep the
decoder beside it (decoder.safetensors) for --resume.

Deletion is per token (a WordPiece continuation can lose its word's start), exact per text:
round(ratio · n) of the n tokens between [CLS] and [SEP], at least one kept, drawn from (seed, step).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from ..data.masking import seeded_generator
from ..io import atomic_path
from ..models.checkpoint import load_state, read_weights
from ..nn import Dropout, FeedForwardBlock, MultiHeadCrossAttention, MultiHeadSelfAttention
from ..nn.attention import explicit_attention
from ..nn.dropout import draws_own_masks
from .sentences import Batch, encoder_inputs, sentence_vectors

DEFAULT_DELETION = 0.6  # the paper's best ratio
DECODER_FILE = "decoder.safetensors"
NOISE_STREAM = 7  # the deletion draws' key beside (seed, step); the masker's streams use other numbers


def delete_tokens(
    input_ids: torch.Tensor, attention_mask: torch.Tensor, ratio: float, generator: torch.Generator, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Delete round(ratio · n) of the n tokens between each row's first and last real token ([CLS] and
    [SEP] stay), at least one of them kept; the survivors close up in their order. Returns (ids, mask),
    cut to the longest damaged row. Shapes (B, T) in, (B, T') out.

    >>> ids = torch.tensor([[101, 5, 6, 7, 8, 102, 0], [101, 9, 102, 0, 0, 0, 0]])
    >>> out, mask = delete_tokens(ids, (ids != 0).long(), 0.5, torch.Generator().manual_seed(0), 0)
    >>> mask.sum(1).tolist()   # 2 of 4 inner tokens deleted; a single inner token is kept
    [4, 3]
    """
    B, T = input_ids.shape
    lengths = attention_mask.sum(1)  # (B,)
    pos = torch.arange(T)[None, :]  # (1, T)
    inner = (pos >= 1) & (pos < lengths[:, None] - 1)  # (B, T): between [CLS] and [SEP]
    n = inner.sum(1)  # (B,)
    drop = torch.minimum(torch.floor(ratio * n + 0.5).long(), (n - 1).clamp(min=0))  # (B,), half rounds up
    scores = torch.rand(B, T, generator=generator).masked_fill(~inner, 2.0)  # the inner positions rank first
    rank = scores.argsort(1).argsort(1)  # (B, T): each position's place in its row's random order
    keep = attention_mask.bool() & ~(inner & (rank < drop[:, None]))
    order = torch.sort((~keep).long(), dim=1, stable=True).indices  # kept positions first, in order
    ids, mask = input_ids.gather(1, order), keep.gather(1, order)
    width = int(mask.sum(1).max())
    return ids.masked_fill(~mask, pad_id)[:, :width], mask[:, :width].long()


class CausalSelfAttention(MultiHeadSelfAttention):
    """Self-attention in which position t sees positions ≤ t only (the decoder predicts t + 1), over
    padded (B, T, H) rows: a text's padding comes after its last token, so no real position sees it.
    The encoder's projections and dropout (set_dropout reaches it), another forward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, H = x.shape
        N, D = self.num_heads, self.head_size
        q, k, v = self.qkv(x).view(B, T, 3, N, D).permute(2, 0, 3, 1, 4).unbind(0)  # each (B, N, T, D)
        p = self.dropout if self.training else 0.0
        if p > 0 and draws_own_masks(x):  # the house's cheaper dropout masks, as the encoder's attention
            causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None, None]  # (1, 1, T, T)
            y = explicit_attention(q, k, v, causal, p)[0]
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
        return self.out(y.transpose(1, 2).reshape(B, T, H))


class DecoderLayer(nn.Module):
    """Post-LN, as the encoder's layers: causal self-attention, cross-attention to the source, feed-forward."""

    def __init__(self, config):
        super().__init__()
        H, N, p = config.hidden_size, config.num_attention_heads, config.hidden_dropout_prob
        self.self_attention = CausalSelfAttention(H, N, config.attention_probs_dropout_prob)
        self.self_norm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.cross = MultiHeadCrossAttention(H, N, config.attention_probs_dropout_prob)
        self.cross_norm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.dropout = Dropout(p)
        self.ffn = FeedForwardBlock(H, config.intermediate_size, config.hidden_act, p, config.layer_norm_eps)

    def forward(self, x: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        x = self.self_norm(x + self.dropout(self.self_attention(x)))
        x = self.cross_norm(x + self.dropout(self.cross(x, source)[0]))
        return self.ffn(x)


class Decoder(nn.Module):
    """The layers and what the decoder owns beside the tied word embeddings (E wide; E = H except in
    ALBERT and ELECTRA-small, where a projection goes each way): positions, a LayerNorm, the output bias."""

    def __init__(self, config, embedding_size: int):
        super().__init__()
        H, E = config.hidden_size, embedding_size
        self.position = nn.Embedding(config.max_position_embeddings, E)
        self.norm = nn.LayerNorm(E, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.project_in = nn.Linear(E, H) if E != H else nn.Identity()
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_hidden_layers))
        self.project_out = nn.Linear(H, E) if E != H else nn.Identity()
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        std = config.initializer_range
        for module in self.modules():  # BERT's initialisation, as the encoder's
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, std)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)

    def forward(self, input_ids: torch.Tensor, source: torch.Tensor, word: nn.Embedding) -> torch.Tensor:
        """Logits (B, T, V) for the token after each of input_ids (B, T), reading source (B, 1, H)."""
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.project_in(self.dropout(self.norm(word(input_ids) + self.position(positions))))  # (B, T, H)
        for layer in self.layers:
            x = layer(x, source)
        return self.project_out(x) @ word.weight.T + self.bias  # (B, T, V): the tied output projection


class DenoisingAutoEncoder(nn.Module):
    """What the Trainer trains under TSDAE: the encoder and a decoder that shares its word embeddings.
    `save` writes the encoder as a model directory and the decoder's own tensors beside it."""

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = Decoder(encoder.config, encoder.embeddings.word.embedding_dim)

    @property
    def config(self):
        return self.encoder.config

    @property
    def architecture(self) -> str:
        return self.encoder.architecture

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # the shared embeddings once

    def compile_blocks(self, inference: bool = True) -> "DenoisingAutoEncoder":
        self.encoder.compile_blocks(inference)
        return self

    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits (B, T−1, V) of the original text's tokens 1…T−1, from the damaged text's sentence vector."""
        s = sentence_vectors(self.encoder, encoder_inputs(self.encoder, batch, "noisy_"))  # (B, H)
        source = s.to(self.decoder.bias.dtype)[:, None, :]  # (B, 1, H): the decoder's whole source
        return self.decoder(batch["input_ids"][:, :-1], source, self.encoder.embeddings.word)

    def save(self, path: str | os.PathLike) -> None:
        path = Path(path)
        self.encoder.save(path)
        with atomic_path(path / DECODER_FILE) as tmp:
            state = {k: v.detach().contiguous().cpu() for k, v in self.decoder.state_dict().items()}
            save_file(
                state, str(tmp), metadata={"format": "pt", "what": "TSDAE decoder (word embeddings: the encoder's)"}
            )

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Both parts from a directory `save` wrote (the Trainer's resume)."""
        path = Path(path)
        tensors, source = read_weights(path)
        load_state(self.encoder, tensors, source, strict=True)
        if not (path / DECODER_FILE).is_file():
            raise FileNotFoundError(f"{path / DECODER_FILE}: missing, so the TSDAE run cannot be resumed from {path}")
        self.decoder.load_state_dict(load_file(str(path / DECODER_FILE)), strict=True)


class TSDAEObjective:
    """The Trainer's objective for TSDAE (module docstring): the decoder's cross-entropy over the original
    text's tokens after [CLS], a mean over the global batch's predicted tokens."""

    name = "tsdae"

    def __init__(self, deletion_ratio: float = DEFAULT_DELETION, pad_id: int = 0):
        if not 0 <= deletion_ratio < 1:
            raise ValueError(f"--deletion-ratio {deletion_ratio}: must be in [0, 1)")
        self.ratio, self.pad_id = deletion_ratio, pad_id

    @classmethod
    def from_options(cls, o) -> "TSDAEObjective":
        return cls(DEFAULT_DELETION if o.deletion_ratio is None else o.deletion_ratio)

    def check(self, o, config) -> None:
        """Any encoder can be denoised: nothing to refuse."""

    def model(self, encoder) -> DenoisingAutoEncoder:
        self.pad_id = encoder.config.pad_token_id  # the damaged rows are padded as the encoder expects
        return DenoisingAutoEncoder(encoder)

    def encoder(self, model: DenoisingAutoEncoder):
        return model.encoder

    def prepare(self, rows: Batch, seed: int, step: int) -> Batch:
        """The rows and their damaged copies (noisy_*), the deletions drawn from (seed, NOISE_STREAM, step)."""
        ids, mask = delete_tokens(
            rows["input_ids"],
            rows["attention_mask"],
            self.ratio,
            seeded_generator(seed, NOISE_STREAM, step),
            self.pad_id,
        )
        noisy = {"noisy_input_ids": ids, "noisy_attention_mask": mask}
        if "token_type_ids" in rows:
            noisy["noisy_token_type_ids"] = torch.zeros_like(ids)
        return {**rows, **noisy}

    def totals(self, batch: Batch) -> dict[str, int]:
        return {"predicted": max(1, int(batch["attention_mask"][:, 1:].sum()))}

    def __call__(self, model: DenoisingAutoEncoder, batch: Batch, totals: dict[str, int]):
        logits = model(batch)  # (B, T−1, V)
        real = batch["attention_mask"][:, 1:].bool()  # (B, T−1): a real token to predict
        targets = batch["input_ids"][:, 1:][real]  # (P,)
        picked = logits[real].float()  # (P, V)
        loss = F.cross_entropy(picked, targets, reduction="sum") / totals["predicted"]
        hits = (picked.detach().argmax(-1) == targets).sum()
        return loss, {"loss": loss.detach(), "reconstruction_accuracy": hits / totals["predicted"]}

    @torch.no_grad()
    def evaluate(self, model: DenoisingAutoEncoder, batches: list[Batch]) -> dict[str, float]:
        """Held-out reconstruction loss (and its perplexity) and accuracy of the original tokens, no dropout."""
        device = next(model.parameters()).device
        total = hits = predicted = 0.0
        for batch in batches:
            batch = {k: v.to(device) for k, v in batch.items()}
            real = batch["attention_mask"][:, 1:].bool()
            targets = batch["input_ids"][:, 1:][real]
            logits = model(batch)[real].float()
            total += float(F.cross_entropy(logits, targets, reduction="sum"))
            hits += int((logits.argmax(-1) == targets).sum())
            predicted += len(targets)
        loss = total / max(1, predicted)
        return {
            "reconstruction_loss": loss,
            "reconstruction_accuracy": hits / max(1, predicted),
            "perplexity": math.exp(min(loss, 50.0)),
        }
