"""The server's tasks as a table of handlers: what each head adds to the routes every model serves.

An operation (`Op`) is one endpoint's work: how its body is read, what a request costs a batch (its
tokens, checked against the model's limits) and how a batch of requests runs. Every model serves
`COMMON` (its encoder's vectors, similarity, tokenize, decode, attention); a head adds its own
operations and names the one `POST /` answers. `HANDLERS[handler_name(...)]` is the one place a new
task is added:

    embedding        a backbone: POST / is /embed
    fill-mask        a masked-LM or pretraining head: /fill-mask
    classify         a sequence classifier: /predict
    pair             one fine-tuned on text pairs: /predict of [text, pair], /rerank
    regress          a one-label sequence classifier: /predict, the value as its score
    prompt           a classifier that reads a template's blank with its pretrained head: /predict
    tag              a token classifier: /tag
    qa               an extractive QA head: /qa
    choice           a multiple-choice head: /predict of a context and its choices

Each `prepare` and `run` takes the Engine first; only the batching worker calls them. A new operation is
routed at `POST /<name>` with no change elsewhere (app.py routes every operation of the table); describe it
in openapi.py's ROUTES too (tests/serve/test_serve_openapi.py fails until the description lists it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from ..tasks.base import Example
from ..tasks.inference import MLM_HEADS, embed, fill_mask, mask_token_of, tagged_entities, token_vectors, word_spans
from ..viz import attention_weights
from . import schemas
from .schemas import invalid

# every layer's and head's T × T weights go back as JSON: L·N·T² numbers (6·12·128² = 1.2 M for MiniLM at 128)
ATTENTION_MAX_TOKENS = 128


@dataclass(frozen=True)
class Op:
    parse: Callable[[Any, int], Any]  # (body, max_client_batch_size) -> request; raises ApiError
    prepare: Callable[[Any, Any], int]  # (engine, request) -> its tokens; raises ApiError for this request
    run: Callable[[Any, list], list]  # (engine, requests) -> one result per request, one forward pass


@dataclass(frozen=True)
class Handler:
    kind: str  # what /info and the start line call it
    ops: dict[str, Op] = field(default_factory=dict)  # the endpoints this head adds to COMMON
    root: str = "embed"  # the operation POST / runs
    # POST /'s answer in the Inference API's shape, from (request, result) (default: the operation's own)
    render_root: Callable[[Any, Any], Any] = lambda request, result: result


def handler_name(pipeline, head: str) -> str:
    """The HANDLERS key of a model: its Pipeline's task (a prompt classifier apart), else its head."""
    if pipeline is None:
        return "fill-mask" if head in MLM_HEADS else "embedding"
    if getattr(pipeline.task, "prompt", None) is not None:
        return "prompt"
    return pipeline.task.name


def _split(requests: list, results: list, size: Callable[[Any], int], flat: bool = False) -> list:
    """Each request's own slice of the batch's results (a request that sent one input: its one result
    when `flat`)."""
    out, i = [], 0
    for r in requests:
        n = size(r)
        out.append(results[i] if flat and r.single else results[i : i + n])
        i += n
    return out


# ---- every model ------------------------------------------------------------------------------
def _prepare_texts(engine, request) -> int:
    request.tokens = engine.fit([(t, None) for t in request.texts], request.truncate, engine.max_length)
    return request.tokens


def _run_embed(engine, requests: list[schemas.EmbedRequest]) -> list:
    texts = [t for r in requests for t in r.texts]
    vectors = embed(
        engine.model, engine.tokenizer, texts, engine.pooling, normalize=False, max_length=engine.max_length
    )
    normalized = torch.nn.functional.normalize(vectors, dim=-1)
    out, i = [], 0
    for r in requests:
        chosen = normalized if r.normalize else vectors
        out.append(chosen[i : i + len(r.texts)].tolist())
        i += len(r.texts)
    return out


def _run_embed_all(engine, requests: list[schemas.EmbedRequest]) -> list:
    texts = [t for r in requests for t in r.texts]
    vectors = token_vectors(engine.model, engine.tokenizer, texts, max_length=engine.max_length)
    return _split(requests, [v.tolist() for v in vectors], lambda r: len(r.texts))


def _prepare_similarity(engine, request: schemas.SimilarityRequest) -> int:
    return engine.fit([(t, None) for t in (request.source, *request.sentences)], request.truncate, engine.max_length)


def _run_similarity(engine, requests: list[schemas.SimilarityRequest]) -> list:
    """Cosine similarity of each sentence to its request's source sentence."""
    texts = [t for r in requests for t in (r.source, *r.sentences)]
    vectors = embed(engine.model, engine.tokenizer, texts, engine.pooling, normalize=True, max_length=engine.max_length)
    out, i = [], 0
    for r in requests:
        source, others = vectors[i], vectors[i + 1 : i + 1 + len(r.sentences)]
        out.append((others @ source).tolist())
        i += 1 + len(r.sentences)
    return out


def _prepare_decode(engine, request: schemas.DecodeRequest) -> int:
    size = engine.model.config.vocab_size
    for i, row in enumerate(request.ids):
        if row and max(row) >= size:
            raise invalid(f"ids[{i}] holds {max(row)}, outside the vocabulary [0, {size})")
    return sum(len(row) for row in request.ids)


def _run_decode(engine, requests: list[schemas.DecodeRequest]) -> list:
    return [engine.tokenizer.decode_batch(r.ids, skip_special_tokens=r.skip_special_tokens) for r in requests]


def _prepare_tokenize(engine, request: schemas.TokenizeRequest) -> int:
    return sum(len(e) for e in engine.tokenizer.encode_batch(request.texts))


def _run_tokenize(engine, requests: list[schemas.TokenizeRequest]) -> list:
    def token(i, t, s, a, b):
        return {"id": i, "text": t, "special": bool(s), "start": None if s else a, "stop": None if s else b}

    return [
        [
            [token(i, t, s, a, b) for i, t, s, (a, b) in zip(e.ids, e.tokens, e.special_tokens_mask, e.offsets)]
            for e in engine.tokenizer.encode_batch(r.texts, add_special_tokens=r.add_special_tokens)
        ]
        for r in requests
    ]


def _prepare_attention(engine, request: schemas.AttentionRequest) -> int:
    return engine.fit([(request.text, request.pair)], False, min(engine.max_length, ATTENTION_MAX_TOKENS))


def _run_attention(engine, requests: list[schemas.AttentionRequest]) -> list:
    return [attention_weights(engine.model, engine.tokenizer, r.text, r.pair) for r in requests]


COMMON = {
    "embed": Op(schemas.parse_embed, _prepare_texts, _run_embed),
    "embed_all": Op(schemas.parse_embed, _prepare_texts, _run_embed_all),
    "similarity": Op(schemas.parse_similarity, _prepare_similarity, _run_similarity),
    "tokenize": Op(schemas.parse_tokenize, _prepare_tokenize, _run_tokenize),
    "decode": Op(schemas.parse_decode, _prepare_decode, _run_decode),
    "attention": Op(lambda body, _: schemas.parse_attention(body), _prepare_attention, _run_attention),
}


# ---- fill-mask ----------------------------------------------------------------------------------
def _prepare_fill_mask(engine, request: schemas.FillMaskRequest) -> int:
    mask = mask_token_of(engine.model)
    mask_id = engine.tokenizer.token_to_id(mask)
    cost = engine.fit([(t, None) for t in request.texts], request.truncate, engine.max_length)
    cut = engine.tokenizer.encode_batch(request.texts, truncation=True, max_length=engine.max_length)
    for i, enc in enumerate(cut):
        if mask_id not in enc.ids:
            raise invalid(
                f"input {i} has no {mask} token to fill" + (" (after truncation)" if mask in request.texts[i] else "")
            )
    return cost


def _run_fill_mask(engine, requests: list[schemas.FillMaskRequest]) -> list:
    texts = [t for r in requests for t in r.texts]
    filled = fill_mask(
        engine.model, engine.tokenizer, texts, max(r.top_k for r in requests), max_length=engine.max_length
    )
    out, i = [], 0
    for r in requests:
        mine = [
            [[c._asdict() for c in cands[: r.top_k]] for cands in per_text] for per_text in filled[i : i + len(r.texts)]
        ]
        out.append(mine[0] if r.single else mine)
        i += len(r.texts)
    return out


def _one_mask_flat(request, result) -> list:
    """The Inference API's fill-mask: a text with one mask gets its candidates flat."""

    def flat(per_mask):
        return per_mask[0] if len(per_mask) == 1 else per_mask

    return flat(result) if request.single else [flat(r) for r in result]


FILL_MASK = Op(schemas.parse_fill_mask, _prepare_fill_mask, _run_fill_mask)


# ---- sequence classifiers: classify, pair, regress, prompt --------------------------------------
def _prepare_predict(engine, request: schemas.PredictRequest) -> int:
    items = [x if isinstance(x, tuple) else (x, None) for x in request.items]
    return engine.fit(items, request.truncate, engine.task_max_length)


def _label_names(engine) -> list[str]:
    config = engine.model.config
    id2label = config.id2label or {}
    return [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(config.num_labels)]


def _run_predict(engine, requests: list[schemas.PredictRequest]) -> list:
    """Texts and text pairs go through the Pipeline separately (a batch has one input layout);
    raw_scores requests get the head's logits instead of the Pipeline's probabilities (a regression:
    its value)."""
    pipe, names = engine.pipeline, _label_names(engine)
    flat = [(k, x) for k, r in enumerate(requests) for x in r.items]
    ranked: list[Any] = [None] * len(flat)
    for raw in (False, True):
        for pairs in (False, True):
            chosen = [
                j for j, (k, x) in enumerate(flat) if requests[k].raw_scores == raw and isinstance(x, tuple) == pairs
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
                best = sorted(({"label": k, "score": v} for k, v in s.items()), key=lambda d: -d["score"])
                ranked[j] = best[: requests[flat[j][0]].top_k]
    return _split(requests, ranked, lambda r: len(r.items), flat=True)


def _per_input(request, result) -> list:
    """The Inference API's text classification: a list of scores per input, one input too."""
    return [result] if request.single else result


def _prepare_rerank(engine, request: schemas.RerankRequest) -> int:
    return engine.fit([(request.query, t) for t in request.texts], request.truncate, engine.task_max_length)


def _run_rerank(engine, requests: list[schemas.RerankRequest]) -> list:
    """Each text's relevance to the query, best first: the pair classifier's probability of its last
    label (of relevance, for one label: the sigmoid of its logit); raw_scores: that label's logit."""
    examples = [
        Example(r.query, t, None, id=str(i), where=f"texts[{i}]") for r in requests for i, t in enumerate(r.texts)
    ]
    logits = torch.stack(engine.pipeline.logits(examples)).float()  # (N, labels)
    probabilities = logits.sigmoid() if logits.shape[-1] == 1 else logits.softmax(-1)
    out, i = [], 0
    for r in requests:
        scores = (logits if r.raw_scores else probabilities)[i : i + len(r.texts), -1].tolist()
        ranked = [
            {"index": k, "score": v, **({"text": r.texts[k]} if r.return_text else {})} for k, v in enumerate(scores)
        ]
        out.append(sorted(ranked, key=lambda d: -d["score"]))
        i += len(r.texts)
    return out


def _parse_texts(body, max_client_batch_size: int) -> schemas.PredictRequest:
    return schemas.parse_predict(body, max_client_batch_size, pairs=False)


def _parse_pairs(body, max_client_batch_size: int) -> schemas.PredictRequest:
    return schemas.parse_predict(body, max_client_batch_size, pairs=True)


PREDICT = Op(_parse_texts, _prepare_predict, _run_predict)


def classifier(predict: Op = PREDICT, **more: Op) -> Handler:
    return Handler("classifier", {"predict": predict, **more}, "predict", _per_input)


# ---- token classification, QA, multiple choice -------------------------------------------------
def _prepare_tag(engine, request: schemas.TagRequest) -> int:
    return engine.fit([(" ".join(t.split()), None) for t in request.texts], request.truncate, engine.task_max_length)


def _run_tag(engine, requests: list[schemas.TagRequest]) -> list:
    texts = [t for r in requests for t in r.texts]
    examples = [
        Example([w for w, _, _ in word_spans(t)], None, None, id=str(i), where=f"input {i}")
        for i, t in enumerate(texts)
    ]
    predictions = engine.pipeline.predict_examples(examples)
    entities = [tagged_entities(t, p["tags"], p["scores"]) for t, p in zip(texts, predictions)]
    return _split(requests, entities, lambda r: len(r.texts), flat=True)


def _qa_examples(request: schemas.QARequest) -> list[Example]:
    return [Example(q, c, None, id=str(i), where=f"input {i}") for i, (q, c) in enumerate(request.items)]


def _prepare_qa(engine, request: schemas.QARequest) -> int:
    pipe = engine.pipeline
    try:  # the question must fit a window with room for the context (the context is cut into windows)
        features = pipe.task.featurize(_qa_examples(request), engine.tokenizer, pipe.max_length, None, pipe.stride)
    except ValueError as e:
        raise invalid(str(e)) from None
    return int(features.tensors["attention_mask"].sum())


def _run_qa(engine, requests: list[schemas.QARequest]) -> list:
    examples = [e for r in requests for e in _qa_examples(r)]
    answers = [
        {"answer": p["text"], "score": p["score"], "start": p["start"], "end": p["end"]}
        for p in engine.pipeline.predict_examples(examples)
    ]
    return _split(requests, answers, lambda r: len(r.items), flat=True)


def _prepare_choice(engine, request: schemas.ChoiceRequest) -> int:
    """Every (context, choice) pair is a sequence of the forward pass."""
    limit, cost = engine.task_max_length, 0
    for i, (context, choices) in enumerate(request.items):
        for k, choice in enumerate(choices):
            n = len(engine.tokenizer.encode(context, choice))
            if n > limit and not request.truncate:
                raise invalid(
                    f"input {i}, choice {k}: the context and the choice are {n} tokens long, longer "
                    f'than the model\'s limit of {limit} (send "truncate": true to cut them)'
                )
            cost += min(n, limit)
    return cost


def _run_choice(engine, requests: list[schemas.ChoiceRequest]) -> list:
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
        for j, logits in zip(chosen, engine.pipeline.logits(examples)):  # (C,) each
            scores = logits if requests[flat[j][0]].raw_scores else logits.softmax(-1)
            best = int(logits.argmax())
            answers[j] = {"choice": best, "text": flat[j][1][1][best], "scores": scores.tolist()}
    return _split(requests, answers, lambda r: len(r.items), flat=True)


# ---- the table --------------------------------------------------------------------------------
HANDLERS: dict[str, Handler] = {
    "embedding": Handler("embedding"),
    "fill-mask": Handler("fill-mask", {"fill-mask": FILL_MASK}, "fill-mask", _one_mask_flat),
    "classify": classifier(),
    "pair": classifier(
        Op(_parse_pairs, _prepare_predict, _run_predict), rerank=Op(schemas.parse_rerank, _prepare_rerank, _run_rerank)
    ),
    "regress": classifier(),
    "prompt": classifier(),
    "tag": Handler("tagger", {"tag": Op(schemas.parse_tag, _prepare_tag, _run_tag)}, "tag"),
    "qa": Handler("qa", {"qa": Op(schemas.parse_qa, _prepare_qa, _run_qa)}, "qa"),
    # TEI has no multiple choice: its /predict extended to a context and its choices
    "choice": Handler("choice", {"predict": Op(schemas.parse_choice, _prepare_choice, _run_choice)}, "predict"),
}
