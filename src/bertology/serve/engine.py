"""The model side of the server: a loaded checkpoint, its tokenizer and what its head serves.

A thin layer over `Pipeline` (classification, pairs, regression, tagging, QA) and
`tasks.inference` (embeddings from any encoder, fill-mask from an MLM head). Only the batching
worker thread calls `prepare` and `run`, so the model and the tokenizer have one owner.

    prepare(op, request) -> tokens     checks what needs the tokenizer (lengths, the mask token);
                                       raises ApiError for this request alone
    run(op, requests) -> results       one forward pass for every request of a batch, one result each

The model runs on the device it was loaded to (`Engine.load(..., device="cuda")`); requests are
tokenized on the CPU and each batch copied there once (tasks/forward.py).

Endpoints by head: every model serves /embed and /embed_all (its encoder's sentence and token
vectors), /similarity, /tokenize, /decode and /attention; an MLM head adds /fill-mask, a sequence
classifier (classify, pair, regress) /predict, one trained on pairs /rerank as well, a token
classifier /tag, a QA head /qa, a multiple-choice head /predict (a context and its choices).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..hardware import check_bf16_requested
from ..models import check_tokenizer, family_of, load
from ..nn import fused
from ..nn.int8 import is_int8, kernel_of as int8_kernel
from ..tasks.base import Example
from ..tasks.finetune import load_tokenizer
from ..tasks.forward import precision_name
from ..tasks.inference import MLM_HEADS, embed, fill_mask, mask_token_of, tagged_entities, token_vectors, word_spans
from ..tasks.pipeline import Pipeline
from ..train.device import model_device
from ..viz import attention_weights
from .schemas import (
    ApiError,
    AttentionRequest,
    ChoiceRequest,
    DecodeRequest,
    EmbedRequest,
    FillMaskRequest,
    PredictRequest,
    QARequest,
    RerankRequest,
    SimilarityRequest,
    TagRequest,
    TokenizeRequest,
    invalid,
)

ALWAYS = ("embed", "embed_all", "similarity", "tokenize", "decode", "attention")
# every layer's and head's T × T weights go back as JSON: L·N·T² numbers (6·12·128² = 1.2 M for MiniLM at 128)
ATTENTION_MAX_TOKENS = 128
KIND_ENDPOINTS = {
    "embedding": (),
    "fill-mask": ("fill-mask",),
    "classifier": ("predict",),
    "tagger": ("tag",),
    "qa": ("qa",),
    "choice": ("predict",),
}


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
        if self.pipeline is not None:
            task = self.pipeline.task.name
            self.kind = {"tag": "tagger", "qa": "qa", "choice": "choice"}.get(task, "classifier")
        else:
            self.kind = "fill-mask" if self.head in MLM_HEADS else "embedding"
        reranker = self.pipeline is not None and self.pipeline.task.name == "pair"
        self.endpoints = frozenset(ALWAYS + KIND_ENDPOINTS[self.kind] + (("rerank",) if reranker else ()))
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

    # ---- prepare: per request, in the worker thread ------------------------------------------
    def prepare(self, op: str, request) -> int:
        """The request's tokens (what it costs a batch); refuses what one forward pass would choke on."""
        if op in ("embed", "embed_all"):
            request.tokens = self._lengths([(t, None) for t in request.texts], request.truncate, self.max_length)
            return request.tokens
        if op == "similarity":
            texts = [request.source, *request.sentences]
            return self._lengths([(t, None) for t in texts], request.truncate, self.max_length)
        if op == "rerank":
            return self._lengths([(request.query, t) for t in request.texts], request.truncate, self.task_max_length)
        if op == "decode":
            size = self.model.config.vocab_size
            for i, row in enumerate(request.ids):
                if row and max(row) >= size:
                    raise invalid(f"ids[{i}] holds {max(row)}, outside the vocabulary [0, {size})")
            return sum(len(row) for row in request.ids)
        if op == "fill-mask":
            mask = mask_token_of(self.model)
            mask_id = self.tokenizer.token_to_id(mask)
            cost = self._lengths([(t, None) for t in request.texts], request.truncate, self.max_length)
            cut = self.tokenizer.encode_batch(request.texts, truncation=True, max_length=self.max_length)
            for i, enc in enumerate(cut):
                if mask_id not in enc.ids:
                    raise invalid(
                        f"input {i} has no {mask} token to fill"
                        + (" (after truncation)" if mask in request.texts[i] else "")
                    )
            return cost
        if op == "predict" and isinstance(request, ChoiceRequest):  # every (context, choice) pair is a sequence
            limit, cost = self.task_max_length, 0
            for i, (context, choices) in enumerate(request.items):
                for k, choice in enumerate(choices):
                    n = len(self.tokenizer.encode(context, choice))
                    if n > limit and not request.truncate:
                        raise invalid(
                            f"input {i}, choice {k}: the context and the choice are {n} tokens long, longer "
                            f'than the model\'s limit of {limit} (send "truncate": true to cut them)'
                        )
                    cost += min(n, limit)
            return cost
        if op == "predict":
            return self._lengths(
                [x if isinstance(x, tuple) else (x, None) for x in request.items],
                request.truncate,
                self.task_max_length,
            )
        if op == "tag":
            return self._lengths(
                [(" ".join(t.split()), None) for t in request.texts], request.truncate, self.task_max_length
            )
        if op == "qa":
            try:  # the question must fit a window with room for the context (the context is cut into windows)
                features = self.pipeline.task.featurize(
                    self._qa_examples(request), self.tokenizer, self.pipeline.max_length, None, self.pipeline.stride
                )
            except ValueError as e:
                raise invalid(str(e)) from None
            return int(features.tensors["attention_mask"].sum())
        if op == "tokenize":
            return sum(len(e) for e in self.tokenizer.encode_batch(request.texts))
        if op == "attention":
            limit = min(self.max_length, ATTENTION_MAX_TOKENS)
            return self._lengths([(request.text, request.pair)], False, limit)
        raise ValueError(f"unknown operation {op!r}")

    def _lengths(self, items: list[tuple[str, str | None]], truncate: bool, limit: int) -> int:
        encodings = [self.tokenizer.encode(text, pair) for text, pair in items]
        for i, enc in enumerate(encodings):
            if len(enc) > limit and not truncate:
                raise invalid(
                    f"input {i} is {len(enc)} tokens long, longer than the model's limit of {limit} "
                    '(send "truncate": true to cut it)'
                )
        return sum(min(len(e), limit) for e in encodings)

    # ---- run: a batch of requests of one operation ---------------------------------------------
    def run(self, op: str, requests: list) -> list[Any]:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):  # the Pipeline passes bf16 on itself
            return getattr(self, "_run_" + op.replace("-", "_"))(requests)

    def _run_embed(self, requests: list[EmbedRequest]) -> list[Any]:
        texts = [t for r in requests for t in r.texts]
        vectors = embed(self.model, self.tokenizer, texts, self.pooling, normalize=False, max_length=self.max_length)
        normalized = torch.nn.functional.normalize(vectors, dim=-1)
        out, i = [], 0
        for r in requests:
            chosen = normalized if r.normalize else vectors
            out.append(chosen[i : i + len(r.texts)].tolist())
            i += len(r.texts)
        return out

    def _run_embed_all(self, requests: list[EmbedRequest]) -> list[Any]:
        texts = [t for r in requests for t in r.texts]
        vectors = token_vectors(self.model, self.tokenizer, texts, max_length=self.max_length)
        out, i = [], 0
        for r in requests:
            out.append([v.tolist() for v in vectors[i : i + len(r.texts)]])
            i += len(r.texts)
        return out

    def _run_similarity(self, requests: list[SimilarityRequest]) -> list[Any]:
        """Cosine similarity of each sentence to its request's source sentence."""
        texts = [t for r in requests for t in (r.source, *r.sentences)]
        vectors = embed(self.model, self.tokenizer, texts, self.pooling, normalize=True, max_length=self.max_length)
        out, i = [], 0
        for r in requests:
            source, others = vectors[i], vectors[i + 1 : i + 1 + len(r.sentences)]
            out.append((others @ source).tolist())
            i += 1 + len(r.sentences)
        return out

    def _run_rerank(self, requests: list[RerankRequest]) -> list[Any]:
        """Each text's relevance to the query, best first: the pair classifier's probability of its last
        label (of relevance, for one label: the sigmoid of its logit); raw_scores: that label's logit."""
        examples = [
            Example(r.query, t, None, id=str(i), where=f"texts[{i}]") for r in requests for i, t in enumerate(r.texts)
        ]
        logits = torch.stack(self.pipeline.logits(examples)).float()  # (N, labels)
        probabilities = logits.sigmoid() if logits.shape[-1] == 1 else logits.softmax(-1)
        out, i = [], 0
        for r in requests:
            scores = (logits if r.raw_scores else probabilities)[i : i + len(r.texts), -1].tolist()
            ranked = [
                {"index": k, "score": v, **({"text": r.texts[k]} if r.return_text else {})}
                for k, v in enumerate(scores)
            ]
            out.append(sorted(ranked, key=lambda d: -d["score"]))
            i += len(r.texts)
        return out

    def _run_decode(self, requests: list[DecodeRequest]) -> list[Any]:
        return [self.tokenizer.decode_batch(r.ids, skip_special_tokens=r.skip_special_tokens) for r in requests]

    def _run_fill_mask(self, requests: list[FillMaskRequest]) -> list[Any]:
        texts = [t for r in requests for t in r.texts]
        top_k = max(r.top_k for r in requests)
        filled = fill_mask(self.model, self.tokenizer, texts, top_k, max_length=self.max_length)
        out, i = [], 0
        for r in requests:
            mine = [
                [[c._asdict() for c in cands[: r.top_k]] for cands in per_text]
                for per_text in filled[i : i + len(r.texts)]
            ]
            out.append(mine[0] if r.single else mine)
            i += len(r.texts)
        return out

    def _run_predict(self, requests: list[PredictRequest] | list[ChoiceRequest]) -> list[Any]:
        """Texts and text pairs go through the Pipeline separately (a batch has one input layout);
        raw_scores requests get the head's logits instead of the Pipeline's probabilities."""
        if self.kind == "choice":
            return self._run_choice(requests)
        pipe, names = self.pipeline, self._label_names()
        flat = [(k, x) for k, r in enumerate(requests) for x in r.items]
        ranked: list[Any] = [None] * len(flat)
        for raw in (False, True):
            for pairs in (False, True):
                chosen = [
                    j
                    for j, (k, x) in enumerate(flat)
                    if requests[k].raw_scores == raw and isinstance(x, tuple) == pairs
                ]
                if not chosen:
                    continue
                examples = [
                    Example(*(flat[j][1] if pairs else (flat[j][1], None)), id=str(i), where=f"input {i}")
                    for i, j in enumerate(chosen)
                ]
                if raw:
                    scores = [dict(zip(names, row.tolist())) for row in pipe.logits(examples)]
                elif pipe.task.name == "regress":
                    scores = [{names[0]: v} for v in pipe.predict_examples(examples)]
                else:
                    scores = [p.probabilities for p in pipe.predict_examples(examples)]
                for j, s in zip(chosen, scores):
                    ranked[j] = sorted(({"label": k, "score": v} for k, v in s.items()), key=lambda d: -d["score"])
        out, i = [], 0
        for r in requests:
            out.append(ranked[i] if r.single else ranked[i : i + len(r.items)])
            i += len(r.items)
        return out

    def _run_choice(self, requests: list[ChoiceRequest]) -> list[Any]:
        """Each item's choices scored by the multiple-choice head: the softmax over its choices (raw_scores: the
        logits) in the order sent, and the chosen index. Items with as many choices share a forward pass."""
        flat = [(k, item) for k, r in enumerate(requests) for item in r.items]
        answers: list[Any] = [None] * len(flat)
        for n in sorted({len(choices) for _, (_, choices) in flat}):  # a batch is (items, choices, tokens)
            chosen = [j for j, (_, (_, choices)) in enumerate(flat) if len(choices) == n]
            examples = [
                Example(flat[j][1][0], list(flat[j][1][1]), None, id=str(i), where=f"input {i}")
                for i, j in enumerate(chosen)
            ]
            for j, logits in zip(chosen, self.pipeline.logits(examples)):  # (C,) each
                scores = logits if requests[flat[j][0]].raw_scores else logits.softmax(-1)
                best = int(logits.argmax())
                answers[j] = {"choice": best, "text": flat[j][1][1][best], "scores": scores.tolist()}
        out, i = [], 0
        for r in requests:
            out.append(answers[i] if r.single else answers[i : i + len(r.items)])
            i += len(r.items)
        return out

    def _label_names(self) -> list[str]:
        id2label = self.model.config.id2label or {}
        return [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(self.model.config.num_labels)]

    def _run_tag(self, requests: list[TagRequest]) -> list[Any]:
        texts = [t for r in requests for t in r.texts]
        examples = [
            Example([w for w, _, _ in word_spans(t)], None, None, id=str(i), where=f"input {i}")
            for i, t in enumerate(texts)
        ]
        predictions = self.pipeline.predict_examples(examples)
        entities = [tagged_entities(t, p["tags"], p["scores"]) for t, p in zip(texts, predictions)]
        out, i = [], 0
        for r in requests:
            out.append(entities[i] if r.single else entities[i : i + len(r.texts)])
            i += len(r.texts)
        return out

    def _qa_examples(self, request: QARequest) -> list[Example]:
        return [Example(q, c, None, id=str(i), where=f"input {i}") for i, (q, c) in enumerate(request.items)]

    def _run_qa(self, requests: list[QARequest]) -> list[Any]:
        examples = [e for r in requests for e in self._qa_examples(r)]
        answers = [
            {"answer": p["text"], "score": p["score"], "start": p["start"], "end": p["end"]}
            for p in self.pipeline.predict_examples(examples)
        ]
        out, i = [], 0
        for r in requests:
            out.append(answers[i] if r.single else answers[i : i + len(r.items)])
            i += len(r.items)
        return out

    def _run_tokenize(self, requests: list[TokenizeRequest]) -> list[Any]:
        out = []
        for r in requests:
            encodings = self.tokenizer.encode_batch(r.texts, add_special_tokens=r.add_special_tokens)
            out.append(
                [
                    [
                        {"id": i, "text": t, "special": bool(s), "start": None if s else a, "stop": None if s else b}
                        for i, t, s, (a, b) in zip(e.ids, e.tokens, e.special_tokens_mask, e.offsets)
                    ]
                    for e in encodings
                ]
            )
        return out

    def _run_attention(self, requests: list[AttentionRequest]) -> list[Any]:
        return [attention_weights(self.model, self.tokenizer, r.text, r.pair) for r in requests]


def error_of(exc: BaseException) -> ApiError:
    """What the client is told when a batch's forward pass raised (ApiError as it is; a ValueError
    from bertology's checks is the input's fault; anything else is the server's)."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, ValueError):
        return invalid(str(exc))
    return ApiError(500, "Backend", f"{type(exc).__name__}: {exc}")
