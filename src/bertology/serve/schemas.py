"""Request bodies → checked request objects, and the API's errors, in text-embeddings-inference's shapes.

Every check names the field and the value at fault; nothing here needs the model or the tokenizer
(lengths in tokens are checked by the engine, which owns the tokenizer). Errors are
`{"error": "...", "error_type": "..."}` with TEI's status codes:

    422 Validation   a body that is not JSON, a wrong type, an empty text, an input too long with truncate false
    413 Validation   a body over --max-body-bytes, more inputs than --max-client-batch-size, more tokens
                     than --max-batch-tokens
    429 Overloaded   --max-concurrent-requests already queued or running
    404 NotFound     an endpoint the loaded head does not serve, or no such path
    503 Unhealthy    the server is shutting down
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class ApiError(Exception):
    def __init__(self, status: int, error_type: str, message: str):
        super().__init__(message)
        self.status, self.error_type, self.message = status, error_type, message

    def body(self) -> dict[str, str]:
        return {"error": self.message, "error_type": self.error_type}


def invalid(message: str) -> ApiError:
    return ApiError(422, "Validation", message)


def too_large(message: str) -> ApiError:
    return ApiError(413, "Validation", message)


@dataclass
class EmbedRequest:
    texts: list[str]
    single: bool  # the body sent one string (TEI answers a list of one vector either way)
    normalize: bool = True
    truncate: bool = False
    encoding_format: str = "float"  # /v1/embeddings: "float" or "base64" (little-endian float32)
    tokens: int = 0  # counted by the engine when it prepares the request (OpenAI's usage)


@dataclass
class PredictRequest:
    items: list[str | tuple[str, str]]  # a text, or (text, pair)
    single: bool
    raw_scores: bool = False
    truncate: bool = False
    top_k: int | None = None  # the Inference API's: only the best k labels (None: every label)


@dataclass
class ChoiceRequest:
    items: list[tuple[str, list[str]]]  # (context, its choices): every item of a request has as many choices
    single: bool
    raw_scores: bool = False
    truncate: bool = False


@dataclass
class FillMaskRequest:
    texts: list[str]
    single: bool
    top_k: int = 5
    truncate: bool = False


@dataclass
class TokenizeRequest:
    texts: list[str]
    add_special_tokens: bool = True


@dataclass
class TagRequest:
    texts: list[str]
    single: bool
    truncate: bool = False


@dataclass
class QARequest:
    items: list[tuple[str, str]]  # (question, context)
    single: bool


@dataclass
class SimilarityRequest:
    source: str
    sentences: list[str]
    truncate: bool = False


@dataclass
class RerankRequest:
    query: str
    texts: list[str]
    raw_scores: bool = False
    return_text: bool = False
    truncate: bool = False


@dataclass
class DecodeRequest:
    ids: list[list[int]]
    single: bool
    skip_special_tokens: bool = True


@dataclass
class AttentionRequest:
    text: str
    pair: str | None = None
    format: str = "json"  # or "html": the page `bertology attention --out x.html` writes


def _object(body: Any) -> dict:
    if not isinstance(body, dict):
        raise invalid(f"the body should be a JSON object, got {_kind(body)}")
    return body


def _kind(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise invalid(f"{where} should be a string, got {_kind(value)}")
    if not value.strip():
        raise invalid(f"{where} is empty")
    return value


def _flag(body: dict, name: str, default: bool) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise invalid(f"{name} should be true or false, got {value!r}")
    return value


def _count(items: list, max_client_batch_size: int) -> None:
    if not items:
        raise invalid("inputs is an empty list")
    if len(items) > max_client_batch_size:
        raise too_large(
            f"batch size {len(items)} > maximum allowed batch size {max_client_batch_size} (--max-client-batch-size)"
        )


def _texts(body: dict, max_client_batch_size: int, key: str = "inputs") -> tuple[list[str], bool]:
    if key not in body:
        raise invalid(f"missing field {key!r}")
    value = body[key]
    if isinstance(value, str):
        return [_text(value, key)], True
    if not isinstance(value, list):
        raise invalid(f"{key} should be a string or a list of strings, got {_kind(value)}")
    _count(value, max_client_batch_size)
    return [_text(v, f"{key}[{i}]") for i, v in enumerate(value)], False


def parse_embed(body: Any, max_client_batch_size: int) -> EmbedRequest:
    body = _object(body)
    texts, single = _texts(body, max_client_batch_size)
    return EmbedRequest(texts, single, _flag(body, "normalize", True), _flag(body, "truncate", False))


def parse_openai_embeddings(body: Any, max_client_batch_size: int) -> EmbedRequest:
    """OpenAI's `{"input": str | [str], "model", "encoding_format": "float" | "base64"}` (vectors normalized)."""
    body = _object(body)
    texts, _ = _texts(body, max_client_batch_size, key="input")
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise invalid(f"encoding_format should be 'float' or 'base64', got {encoding!r}")
    return EmbedRequest(texts, False, True, False, encoding)


def parse_predict(body: Any, max_client_batch_size: int, pairs: bool) -> PredictRequest:
    """`inputs`: a text; [text, pair] (for a model trained on pairs, as TEI reads two strings); or a list
    whose items are texts, [text] or [text, pair]. For a model trained on single texts a list of
    strings is a batch of texts. `top_k` (the Inference API's) keeps the best labels only."""
    body = _object(body)
    if "inputs" not in body:
        raise invalid("missing field 'inputs'")
    value = body["inputs"]
    top_k = body.get("top_k")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise invalid(f"top_k should be a positive integer, got {top_k!r}")
    flags = _flag(body, "raw_scores", False), _flag(body, "truncate", False), top_k
    if isinstance(value, str):
        if pairs:
            raise invalid('this model classifies text pairs: send "inputs": [text, pair]')
        return PredictRequest([_text(value, "inputs")], True, *flags)
    if not isinstance(value, list):
        raise invalid(f"inputs should be a string, a [text, pair] list or a list of them, got {_kind(value)}")
    if pairs and len(value) == 2 and all(isinstance(v, str) for v in value):
        return PredictRequest([(_text(value[0], "inputs[0]"), _text(value[1], "inputs[1]"))], True, *flags)
    _count(value, max_client_batch_size)
    items: list[str | tuple[str, str]] = []
    for i, v in enumerate(value):
        if isinstance(v, list) and len(v) == 2:
            items.append((_text(v[0], f"inputs[{i}][0]"), _text(v[1], f"inputs[{i}][1]")))
        elif isinstance(v, list) and len(v) == 1:
            items.append(_text(v[0], f"inputs[{i}][0]"))
        elif isinstance(v, list):
            raise invalid(f"inputs[{i}] should be [text] or [text, pair], got a list of {len(v)}")
        else:
            items.append(_text(v, f"inputs[{i}]"))
        if pairs and not isinstance(items[-1], tuple):
            raise invalid(f"inputs[{i}]: this model classifies text pairs: send [text, pair]")
    return PredictRequest(items, False, *flags)


def _choice_item(value: Any, where: str, max_choices: int) -> tuple[str, list[str]]:
    """{"context", "choices": [...]} or [context, choice, choice, …] → (context, choices)."""
    if isinstance(value, dict):
        for key in ("context", "choices"):
            if key not in value:
                raise invalid(f"{where}: missing field {key!r}")
        context, choices, at = value["context"], value["choices"], f"{where}.choices"
        if not isinstance(choices, list):
            raise invalid(f"{at} should be a list of strings, got {_kind(choices)}")
        context = _text(context, f"{where}.context")
    elif isinstance(value, list):
        if not value:
            raise invalid(f"{where} is an empty list; send [context, choice, choice, …]")
        context, choices, at = _text(value[0], f"{where}[0]"), value[1:], where
    else:
        raise invalid(f'{where} should be [context, choice, choice, …] or {{"context", "choices"}}, got {_kind(value)}')
    if len(choices) < 2:
        raise invalid(f"{where} has {len(choices)} choice(s); multiple choice needs at least 2")
    if len(choices) > max_choices:
        raise invalid(
            f"{where} has {len(choices)} choices, more than {max_choices} (each choice is one sequence of "
            "the forward pass; --max-client-batch-size)"
        )
    offset = 0 if isinstance(value, dict) else 1  # the flat form's choices start after the context
    return context, [_text(c, f"{at}[{k + offset}]") for k, c in enumerate(choices)]


def parse_choice(body: Any, max_client_batch_size: int) -> ChoiceRequest:
    """A multiple-choice head's /predict (TEI has none; this extends its /predict): `inputs` is one item or a list
    of them, an item `{"context": str, "choices": [str, …]}` or `[context, choice, choice, …]`. Every item of a
    request has as many choices (at least 2, at most max_client_batch_size), as one forward pass scores them."""
    body = _object(body)
    if "inputs" not in body:
        raise invalid("missing field 'inputs'")
    value = body["inputs"]
    flags = _flag(body, "raw_scores", False), _flag(body, "truncate", False)
    flat = isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)  # [context, choice, …]
    single = isinstance(value, dict) or flat
    if single:
        return ChoiceRequest([_choice_item(value, "inputs", max_client_batch_size)], True, *flags)
    if not isinstance(value, list):
        raise invalid(
            f'inputs should be [context, choice, choice, …], {{"context", "choices"}} or a list of '
            f"them, got {_kind(value)}"
        )
    _count(value, max_client_batch_size)
    items = [_choice_item(v, f"inputs[{i}]", max_client_batch_size) for i, v in enumerate(value)]
    for i, (_, choices) in enumerate(items[1:], 1):
        if len(choices) != len(items[0][1]):
            raise invalid(
                f"inputs[{i}] has {len(choices)} choices, inputs[0] has {len(items[0][1])}: the items of one "
                "request need the same number of choices (send the others in another request)"
            )
    return ChoiceRequest(items, False, *flags)


def parse_fill_mask(body: Any, max_client_batch_size: int) -> FillMaskRequest:
    body = _object(body)
    texts, single = _texts(body, max_client_batch_size)
    top_k = body.get("top_k", 5)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 100:
        raise invalid(f"top_k should be an integer in [1, 100], got {top_k!r}")
    return FillMaskRequest(texts, single, top_k, _flag(body, "truncate", False))


def parse_tokenize(body: Any, max_client_batch_size: int) -> TokenizeRequest:
    body = _object(body)
    texts, _ = _texts(body, max_client_batch_size)
    return TokenizeRequest(texts, _flag(body, "add_special_tokens", True))


def parse_tag(body: Any, max_client_batch_size: int) -> TagRequest:
    body = _object(body)
    texts, single = _texts(body, max_client_batch_size)
    return TagRequest(texts, single, _flag(body, "truncate", False))


def _question(value: Any, where: str) -> tuple[str, str]:
    if not isinstance(value, dict):
        raise invalid(f"{where} should be an object with question and context, got {_kind(value)}")
    for key in ("question", "context"):
        if key not in value:
            raise invalid(f"{where}: missing field {key!r}")
    return _text(value["question"], f"{where}.question"), _text(value["context"], f"{where}.context")


def parse_qa(body: Any, max_client_batch_size: int) -> QARequest:
    """`{"question", "context"}`, or `{"inputs": [{"question", "context"}, …]}` for several."""
    body = _object(body)
    if "inputs" not in body:
        return QARequest([_question(body, "the body")], True)
    value = body["inputs"]
    if isinstance(value, dict):
        return QARequest([_question(value, "inputs")], True)
    if not isinstance(value, list):
        raise invalid(f"inputs should be a list of {{question, context}} objects, got {_kind(value)}")
    _count(value, max_client_batch_size)
    return QARequest([_question(v, f"inputs[{i}]") for i, v in enumerate(value)], False)


def with_parameters(body: Any) -> Any:
    """The Hugging Face Inference API's shape, `{"inputs", "parameters": {...}}`, as TEI's flat one (a
    field given at the top level wins); any other body as it is."""
    if isinstance(body, dict) and isinstance(body.get("parameters"), dict):
        return {**body["parameters"], **{k: v for k, v in body.items() if k != "parameters"}}
    return body


def parse_similarity(body: Any, max_client_batch_size: int) -> SimilarityRequest:
    """`{"inputs": {"source_sentence": str, "sentences": [str, …]}}` (TEI's and the Inference API's shape)."""
    body = _object(body)
    value = body.get("inputs")
    if not isinstance(value, dict):
        raise invalid(f"inputs should be an object with source_sentence and sentences, got {_kind(value)}")
    source = _text(value.get("source_sentence"), "inputs.source_sentence")
    sentences, _ = _texts(value, max_client_batch_size, key="sentences")
    return SimilarityRequest(source, sentences, _flag(body, "truncate", False))


def parse_rerank(body: Any, max_client_batch_size: int) -> RerankRequest:
    """TEI's `{"query": str, "texts": [str, …], "raw_scores", "return_text", "truncate"}`."""
    body = _object(body)
    query = _text(body.get("query"), "query")
    texts, _ = _texts(body, max_client_batch_size, key="texts")
    return RerankRequest(
        query,
        texts,
        _flag(body, "raw_scores", False),
        _flag(body, "return_text", False),
        _flag(body, "truncate", False),
    )


def parse_decode(body: Any, max_client_batch_size: int) -> DecodeRequest:
    """TEI's `{"ids": [int, …] | [[int, …], …], "skip_special_tokens": true}`."""
    body = _object(body)
    ids = body.get("ids")
    single = isinstance(ids, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in ids)
    rows = [ids] if single else ids
    if not isinstance(rows, list) or not rows:
        raise invalid(f"ids should be a list of token ids or a list of such lists, got {_kind(ids)}")
    _count(rows, max_client_batch_size)
    for i, row in enumerate(rows):
        if not isinstance(row, list) or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in row):
            raise invalid(f"ids[{i}] should be a list of non-negative integers")
    return DecodeRequest(rows, single, _flag(body, "skip_special_tokens", True))


def parse_attention(body: Any) -> AttentionRequest:
    body = _object(body)
    if "inputs" not in body:
        raise invalid("missing field 'inputs'")
    pair = body.get("pair")
    fmt = body.get("format", "json")
    if fmt not in ("json", "html"):
        raise invalid(f"format should be 'json' or 'html', got {fmt!r}")
    return AttentionRequest(_text(body["inputs"], "inputs"), None if pair is None else _text(pair, "pair"), fmt)
