"""The model side of the server: a loaded checkpoint, its tokenizer and what its head serves.

A thin layer over `Pipeline` (classification, pairs, regression, tagging, QA) and
`tasks.inference` (embeddings from any encoder, fill-mask from an MLM head). Only the batching
worker thread calls `prepare` and `run`, so the model and the tokenizer have one owner.

    prepare(op, request) -> tokens     checks what needs the tokenizer (lengths, the mask token);
                                       raises ApiError for this request alone
    run(op, requests) -> results       one forward pass for every request of a batch, one result each

The model runs on the device it was loaded to (`Engine.load(..., device="cuda")`); requests are
tokenized on the CPU and each batch copied there once (tasks/forward.py).

Every model serves /embed and /embed_all (its encoder's sentence and token vectors), /similarity,
/tokenize, /decode and /attention; its head adds its own (handlers.py: the table of tasks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..hardware import check_bf16_requested
from ..models import check_tokenizer, family_of, load
from ..nn import fused
from ..nn.int8 import is_int8, kernel_of as int8_kernel
from ..tasks.finetune import load_tokenizer
from ..tasks.forward import precision_name
from ..tasks.inference import mask_token_of
from ..tasks.pipeline import Pipeline
from ..train.device import model_device
from .handlers import COMMON, HANDLERS, Op, handler_name
from .schemas import ApiError, invalid


class Engine:
    def __init__(self, model, tokenizer, name: str = "model", pooling: str = "mean", bf16: bool = False):
        self.device = model_device(model)
        bf16 = bf16 and self.device.type == "cpu"  # a GPU's autocast is always on (tasks/forward.py)
        self.model, self.tokenizer, self.name, self.pooling, self.bf16 = model.eval(), tokenizer, name, pooling, bf16
        self.precision = precision_name(self.device, bf16) + (" + int8 linear layers" if is_int8(model) else "")
        if bf16:
            check_bf16_requested()
            model.store_linear_weights()  # what autocast would cast them to on every request, cast once
        self.pipeline = Pipeline.for_model(model, tokenizer)
        if self.pipeline is not None:
            self.pipeline.bf16 = bf16
        self.family = family_of(model.config)
        self.head = model.architecture[len(self.family.class_prefix) :]  # "Model", "ForMaskedLM", …
        self.handler = HANDLERS[handler_name(self.pipeline, self.head)]
        self.kind = self.handler.kind
        self.ops = {**COMMON, **self.handler.ops}
        self.endpoints = frozenset(self.ops)
        self.max_length = model.config.max_length  # the position table's limit, special tokens included
        self.task_max_length = self.pipeline.max_length if self.pipeline else self.max_length

    @classmethod
    def load(
        cls,
        path: str | Path,
        tokenizer: str | None = None,
        pooling: str = "mean",
        bf16: bool = False,
        compile: bool = False,
        device: str | torch.device = "cpu",
        quantize: str | None = None,
        say=None,
    ) -> "Engine":
        """A model directory `bertology.load` reads (safetensors, or a weights_only pickle) and its tokenizer,
        the model on `device` (`quantize="int8"`: its linear layers int8, on the CPU; notes through `say`)."""
        model = load(path, compile=compile, device=device, quantize=quantize, say=say)
        name = Path(path).resolve().name
        tok = load_tokenizer(str(path), tokenizer)
        check_tokenizer(model.config, tok, tokenizer or Path(path) / "tokenizer.json")
        engine = cls(model, tok, name, pooling, bf16)
        if not compile:  # a compiled model compiles each shape on first use: warming it up is minutes, not seconds
            note = engine.warm_up()
            if say is not None and note:
                say(note)
        return engine

    def warm_up(self, lengths: tuple[tuple[int, int], ...] = ((1, 32), (8, 64), (32, 128))) -> str | None:
        """Forward passes over a few (batch, length) shapes before the first request, so that the first
        requests do not pay the one-time costs (on the CPU, oneDNN's weight packing: nn/fused.py). Returns the
        path served, in words."""
        backbone = getattr(self.model, "backbone", self.model)
        c = self.model.config
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            for batch, length in lengths:
                length = min(length, c.max_length)
                ids = torch.full((batch, length), min(100, c.vocab_size - 1), device=self.device)
                ids[:, 0] = min(101, c.vocab_size - 1)
                backbone(input_ids=ids, attention_mask=torch.ones_like(ids))
        if self.device.type != "cpu":
            return None
        linear = (
            f"int8 linear layers on {int8_kernel(self.model)}'s kernel (asked for)"
            if is_int8(self.model)
            else "bf16 autocast (asked for)"
            if self.bf16
            else "fp32 linear layers through oneDNN, bias + GELU and the residual add in the product"
            if fused.ONEDNN and fused.available()
            else "fp32 linear layers (PyTorch's kernels)"
        )
        return (
            f"path: eager, {linear}, padding skipped in the linear layers and attention (--compile is used only when asked: "
            "each new batch shape compiles for seconds to minutes first)"
        )

    def info(self) -> dict[str, Any]:
        config = self.model.config
        labels = None
        if self.kind in ("classifier", "tagger") and self.pipeline.task.name != "regress":
            labels = [config.id2label.get(i, config.id2label.get(str(i))) for i in range(config.num_labels)]
        model_type = (
            {
                "classifier": {
                    "id2label": {str(i): n for i, n in enumerate(labels)},
                    "label2id": {n: i for i, n in enumerate(labels)},
                }
            }
            if self.kind == "classifier" and labels
            else {"embedding": {"pooling": self.pooling}}
        )
        return {
            "model_id": self.name,
            "model_type": model_type,
            "model_dtype": self.precision,
            "device": str(self.device),
            "architecture": self.model.architecture,
            "family": self.family.name,
            "head": self.head,
            "kind": self.kind,
            "task": self.pipeline.task.name if self.pipeline else None,
            "labels": labels,
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "max_input_length": self.task_max_length,
            "max_position_length": self.max_length,
            "num_layers": config.num_hidden_layers,
            "num_heads": config.num_attention_heads,
            "hidden_size": config.hidden_size,
            "pooling": self.pooling,
            "mask_token": mask_token_of(self.model) if self.kind == "fill-mask" else None,
            "endpoints": sorted(self.endpoints),
        }

    # ---- per request and per batch, in the worker thread: the handler's operations ----------------
    def prepare(self, op: str, request) -> int:
        """The request's tokens (what it costs a batch); refuses what one forward pass would choke on."""
        return self._op(op).prepare(self, request)

    def run(self, op: str, requests: list) -> list[Any]:
        """One result per request, one forward pass for the batch."""
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):  # the Pipeline passes bf16 on itself
            return self._op(op).run(self, requests)

    def _op(self, op: str) -> Op:
        if op not in self.ops:
            raise ValueError(f"unknown operation {op!r} for a {self.kind} (it serves {', '.join(sorted(self.ops))})")
        return self.ops[op]

    def fit(self, items: list[tuple[str, str | None]], truncate: bool, limit: int) -> int:
        """The tokens of (text, pair) items, each at most `limit` long; a longer one is refused unless `truncate`."""
        encodings = [self.tokenizer.encode(text, pair) for text, pair in items]
        for i, enc in enumerate(encodings):
            if len(enc) > limit and not truncate:
                raise invalid(
                    f"input {i} is {len(enc)} tokens long, longer than the model's limit of {limit} "
                    '(send "truncate": true to cut it)'
                )
        return sum(min(len(e), limit) for e in encodings)


def error_of(exc: BaseException) -> ApiError:
    """What the client is told when a batch's forward pass raised (ApiError as it is; a ValueError
    from bertology's checks is the input's fault; anything else is the server's)."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, ValueError):
        return invalid(str(exc))
    return ApiError(500, "Backend", f"{type(exc).__name__}: {exc}")
