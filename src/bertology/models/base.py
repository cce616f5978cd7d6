"""What every bertology model shares: its config, weight initialisation, input checks, saving."""

from __future__ import annotations

import os
import warnings
from typing import ClassVar

import torch
from torch import nn

from ..nn.attention import skip_varlen_under_compile
from ..nn.int8 import is_int8, quantize_linear_int8
from .checkpoint import save
from .config import EncoderConfig


class PreTrainedModel(nn.Module):
    config_class: ClassVar[type[EncoderConfig]] = EncoderConfig

    def __init__(self, config: EncoderConfig):
        super().__init__()
        if not isinstance(config, self.config_class):
            raise TypeError(f"{type(self).__name__} takes a {self.config_class.__name__}, got {type(config).__name__}")
        self.config = config

    @property
    def architecture(self) -> str:
        """The class name transformers uses for the same model (ours are named alike)."""
        return type(self).__name__

    @torch.no_grad()
    def init_weights(self) -> None:
        """BERT's initialisation: N(0, initializer_range) weights, zero biases, unit LayerNorms."""
        std = self.config.initializer_range
        for module in self.modules():
            if isinstance(module, nn.Linear):
                module.weight.normal_(0.0, std)
                if module.bias is not None:
                    module.bias.zero_()
            elif isinstance(module, nn.Embedding):
                if getattr(module, "fixed", False):  # e.g. DistilBERT's sinusoidal positions
                    continue
                module.weight.normal_(0.0, std)
                if module.padding_idx is not None:
                    module.weight[module.padding_idx].zero_()
            elif isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
                module.bias.zero_()

    def save(self, path: str | os.PathLike) -> None:
        """Write `config.json` + `model.safetensors` in Hugging Face layout (atomically)."""
        save(self, path)

    def compile_blocks(self, inference: bool = True) -> "PreTrainedModel":
        """torch.compile (inductor) every block of the model in place, each on its own: bias + GELU,
        residual + LayerNorm and the head split fused into few kernels; the input checks, the packing
        of real tokens and the heads stay eager, so a block sees few distinct shapes.

        `inference=True` also freezes the weights into the compiled code (oneDNN's packed layouts):
        the fastest for serving, but weights changed afterwards are not seen: compile after loading,
        and not for training. The first call of each new shape compiles (tens of seconds on 2 cores).
        """
        blocks = [m for m in self.modules() if getattr(type(m), "compile_unit", False)]
        if not blocks:
            raise ValueError(f"{type(self).__name__} has no blocks to compile")
        skip_varlen_under_compile()
        for block in blocks:
            block.compile(dynamic=None, options={"freezing": inference})
        return self

    def store_linear_weights(self, dtype: torch.dtype = torch.bfloat16) -> "PreTrainedModel":
        """Keep every linear layer's weight and bias in `dtype`: what bf16 autocast casts them to on
        every call. For inference under autocast only: the outputs are bit-identical, the per-call casts
        and half the linear layers' memory are gone. Weights a linear
        layer shares with an embedding (the tied MLM decoder) and LayerNorms stay as they are.
        """
        kept = {id(p) for m in self.modules() if not isinstance(m, nn.Linear) for p in m.parameters(recurse=False)}
        for module in self.modules():
            if isinstance(module, nn.Linear) and not any(id(p) in kept for p in module.parameters(recurse=False)):
                module.to(dtype)
        return self

    def quantize_int8(self, as_loaded: bool = False):
        """The linear layers of every block (attention and feed-forward, where nearly all the compute
        is) as dynamic int8 layers (`nn.int8`), in place, for inference on the CPU. Embeddings,
        LayerNorms, the pooler and the heads stay fp32 (the MLM decoder shares its weight with the
        embeddings). Returns what was done, in words; a block weight that is not a linear layer (XLNet's
        relative attention) stays fp32 and is named, with a warning.

        `as_loaded=True` (for `load`, on a model whose weights are still to be copied in) quantizes
        nothing now: it returns the notes and a `load_state(copied_one=…)` callback that quantizes each
        block once the last of its tensors is in, so the fp32 blocks never all exist at once (called
        with None after loading, it quantizes any block not done yet).
        """
        if any(p.device.type != "cpu" for p in self.parameters()):
            raise ValueError(
                f"{self.architecture}: int8 quantization is for the CPU; the model is on "
                f"{next(self.parameters()).device}"
            )
        if is_int8(self):
            raise ValueError(f"{self.architecture} is already quantized to int8")
        named = {
            id(m): (n, m)
            for n, m in reversed(list(self.named_modules(remove_duplicate=False)))
            if getattr(type(m), "compile_unit", False)
        }  # each block once, under its first name
        blocks = [m for _, m in named.values()]
        if any(getattr(b, "_compiled_call_impl", None) is not None for b in blocks):  # set by nn.Module.compile
            raise ValueError(
                f"{self.architecture}: quantize before compiling, not after (int8 and compile_blocks do not combine)"
            )
        linear_weights = {id(m.weight) for b in blocks for m in b.modules() if isinstance(m, nn.Linear)}
        unquantized = sorted(
            {
                name.rsplit(".", 1)[-1]
                for b in blocks
                for name, p in b.named_parameters()
                if p.dim() >= 2 and id(p) not in linear_weights
            }
        )
        self.eval()
        count = sum(isinstance(m, nn.Linear) for b in blocks for m in b.modules())
        notes = [
            f"int8: {count} linear layers in {len(blocks)} blocks quantized (weights per output "
            "channel, activations per call); embeddings, LayerNorms, pooler and head stay fp32"
        ]
        if unquantized:
            note = (
                f"{self.architecture}: the block weights {', '.join(unquantized)} are not linear layers and stay "
                "fp32 (only the linear layers are quantized)"
            )
            warnings.warn(note, RuntimeWarning, stacklevel=2)
            notes.append(note)
        if not as_loaded:
            for b in blocks:
                quantize_linear_int8(b)
            return notes
        waiting = {}  # a block's tensor names in state_dict (under its first name) → the block, while some are not in
        for prefix, b in named.values():
            names = {f"{prefix}.{k}" for k in b.state_dict()}
            waiting.update((n, (b, names)) for n in names)

        def copied_one(name: str | None) -> None:
            """None: loading is over; a block some of whose tensors came in under another name (tied) now."""
            if name is None:
                for block in {id(b): b for b, _ in waiting.values()}.values():
                    quantize_linear_int8(block)
                return waiting.clear()
            if name not in waiting:
                return
            block, names = waiting.pop(name)
            names.discard(name)
            if not names:
                quantize_linear_int8(block)

        return notes, copied_one

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # shared (tied) parameters count once


class EncoderModel(PreTrainedModel):
    """A backbone: token ids in, contextual vectors out."""

    def check_inputs(self, input_ids, attention_mask, token_type_ids, position_ids) -> None:
        """Raise a clear ValueError before any computation, instead of an index error deep inside."""
        c = self.config
        if input_ids is None or input_ids.dim() != 2:
            raise ValueError(
                f"input_ids must be a (batch, length) tensor, got {None if input_ids is None else tuple(input_ids.shape)}"
            )
        if input_ids.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"input_ids must be integer token ids, got dtype {input_ids.dtype}")
        _check_range("input_ids", input_ids, c.vocab_size, "vocab_size")
        if position_ids is not None:
            if position_ids.shape[-1] != input_ids.shape[1]:
                raise ValueError(
                    f"position_ids shape {tuple(position_ids.shape)} does not match input_ids {tuple(input_ids.shape)}"
                )
            _check_range(
                "position_ids",
                position_ids,
                c.max_position_embeddings,
                "max_position_embeddings",
                hint=f"sequence length {input_ids.shape[1]} is longer than the position table",
            )
        if token_type_ids is not None:
            if token_type_ids.shape != input_ids.shape:
                raise ValueError(
                    f"token_type_ids shape {tuple(token_type_ids.shape)} does not match input_ids {tuple(input_ids.shape)}"
                )
            if c.type_vocab_size == 0:
                raise ValueError(f"{type(self).__name__} has no token-type embeddings; do not pass token_type_ids")
            _check_range("token_type_ids", token_type_ids, c.type_vocab_size, "type_vocab_size")
        if attention_mask is not None:
            if attention_mask.shape != input_ids.shape:
                raise ValueError(
                    f"attention_mask shape {tuple(attention_mask.shape)} does not match input_ids {tuple(input_ids.shape)}"
                )
            empty = (attention_mask.sum(dim=1) == 0).nonzero().flatten().tolist()
            if empty:
                raise ValueError(f"attention_mask rows {empty} have no tokens to attend to")


def _check_range(name: str, ids: torch.Tensor, size: int, size_name: str, hint: str = "") -> None:
    if ids.numel() == 0:
        return
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise ValueError(f"{name} contains {bad}, outside [0, {size}) ({size_name}){'; ' + hint if hint else ''}")
