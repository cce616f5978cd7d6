"""The API described: `GET /openapi.json` (OpenAPI 3.1) and `GET /docs` (the same description as a page).

Each route's body and answer are JSON Schema, written here in the shapes schemas.py's parsers read; which
heads serve a route comes from the table of handlers. The parsers stay the one place that validates a request
(their messages name the field at fault); the integration tier holds the two in agreement
(tests/serve/test_serve_routes.py sends every route, for every head, a body that fits its schema and
validates the answer against its schema, and sends each example body to the heads it is for). The
description is the whole API: a route the loaded head does not serve answers 404, and `info.description`
names what the loaded model serves.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from .handlers import HANDLERS


def _array(items: dict) -> dict:
    return {"type": "array", "items": items}


def _object(required: dict, optional: dict | None = None) -> dict:
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
    }


def _any(*schemas: dict) -> dict:
    return {"anyOf": list(schemas)}


STRING, NUMBER, INTEGER, BOOLEAN = {"type": "string"}, {"type": "number"}, {"type": "integer"}, {"type": "boolean"}
NULLABLE_INTEGER = {"type": ["integer", "null"]}
TEXTS = _any(STRING, _array(STRING))
ERROR = _object({"error": STRING, "error_type": STRING})
SCORES = _array(_object({"label": STRING, "score": NUMBER}))  # best first
CANDIDATES = _array(_object({"sequence": STRING, "score": NUMBER, "token": INTEGER, "token_str": STRING}))
ENTITIES = _array(_object({"entity_group": STRING, "score": NUMBER, "word": STRING, "start": INTEGER, "end": INTEGER}))
ANSWER = _object({"answer": STRING, "score": NUMBER, "start": INTEGER, "end": INTEGER})
CHOSEN = _object({"choice": INTEGER, "text": STRING, "scores": _array(NUMBER)})
VECTORS = _array(_array(NUMBER))
QUESTION = _object({"question": STRING, "context": STRING})
CHOICE_ITEM = _any(_object({"context": STRING, "choices": _array(STRING)}), _array(STRING))
SIMILARITY_BODY = _object(
    {"inputs": _object({"source_sentence": STRING, "sentences": _array(STRING)})}, {"truncate": BOOLEAN}
)
PREDICT_INPUTS = _any(STRING, _array(_any(STRING, _array(STRING))))


@dataclass(frozen=True)
class RouteDoc:
    method: str
    path: str
    summary: str
    body: dict | None = None  # JSON Schema of the request body
    answer: dict | None = None  # JSON Schema of a 2xx answer (None: not JSON)
    media_type: str = "application/json"  # of the answer
    examples: dict[str, Any] | None = None  # for whom (a head's kind, or any head) → a body the route accepts


ROUTES = [
    RouteDoc("GET", "/", "a page to try the model: its answer, its tokens, its attention", media_type="text/html"),
    RouteDoc(
        "POST",
        "/",
        "the loaded head's own task in the Hugging Face Inference API's shapes (as TEI routes it): an embedding "
        "model's vectors, a classifier's scores (one list per input), fill-mask's candidates (flat for a text with "
        "one mask), tags, an answer, a choice; a source_sentence body is sentence similarity for any head; "
        '{"inputs", "parameters": {...}} is read as the flat body',
        _object(
            {
                "inputs": _any(
                    PREDICT_INPUTS,
                    QUESTION,
                    _array(QUESTION),
                    SIMILARITY_BODY["properties"]["inputs"],
                    CHOICE_ITEM,
                    _array(CHOICE_ITEM),
                )
            },
            {"parameters": {"type": "object"}},
        ),
        _any(
            VECTORS,  # an embedding model
            _array(SCORES),  # a classifier: one list per input
            CANDIDATES,  # fill-mask, one text with one mask
            _array(_any(CANDIDATES, _array(CANDIDATES))),  # one list per mask, or per text
            _array(NUMBER),  # similarity
            ENTITIES,
            _array(ENTITIES),
            ANSWER,
            _array(ANSWER),
            CHOSEN,
            _array(CHOSEN),
        ),
        examples={
            "embedding": {"inputs": "IMAP email client"},
            "fill-mask": {"inputs": "a [MASK] client", "parameters": {"top_k": 3}},
            "classifier": {"inputs": "IMAP email client"},
            "regression": {"inputs": "IMAP email client"},
            "prompt classifier": {"inputs": "IMAP email client"},
            "pair": {"inputs": ["a mail client", "IMAP email client"]},
            "tagger": {"inputs": "John Smith lives in Paris"},
            "qa": {"inputs": {"question": "Who lives in Paris?", "context": "John Smith lives in Paris."}},
            "choice": {"inputs": {"context": "a program that reads", "choices": ["mail", "games"]}},
        },
    ),
    RouteDoc(
        "GET",
        "/health",
        "200 while the server takes requests, 503 while it stops",
        answer=_object({"status": STRING}),
    ),
    RouteDoc(
        "GET",
        "/info",
        "the model: its head and task, labels, limits, the endpoints it serves",
        answer=_object(
            {
                "model_id": STRING,
                "kind": STRING,
                "architecture": STRING,
                "endpoints": _array(STRING),
                "max_input_length": INTEGER,
            }
        ),
    ),
    RouteDoc(
        "GET",
        "/metrics",
        "Prometheus text: requests by endpoint and status, batches, queue depth",
        media_type="text/plain",
    ),
    RouteDoc(
        "GET",
        "/openapi.json",
        "this description",
        answer=_object({"openapi": STRING, "paths": {"type": "object"}}),
    ),
    RouteDoc("GET", "/docs", "this description as a page", media_type="text/html"),
    RouteDoc(
        "POST",
        "/embed",
        "the encoder's sentence vectors (--pooling), normalized unless asked not to",
        _object({"inputs": TEXTS}, {"normalize": BOOLEAN, "truncate": BOOLEAN}),
        VECTORS,
        examples={"any": {"inputs": ["IMAP email client", "a puzzle game"]}},
    ),
    RouteDoc(
        "POST",
        "/embed_all",
        "every token's vector, special tokens included, per input",
        _object({"inputs": TEXTS}, {"truncate": BOOLEAN}),
        _array(VECTORS),
        examples={"any": {"inputs": "IMAP email client"}},
    ),
    RouteDoc(
        "POST",
        "/similarity",
        "the cosine of each sentence's vector to the source sentence's",
        SIMILARITY_BODY,
        _array(NUMBER),
        examples={
            "any": {"inputs": {"source_sentence": "a mail client", "sentences": ["IMAP email client", "a game"]}}
        },
    ),
    RouteDoc(
        "POST",
        "/v1/embeddings",
        "OpenAI's embeddings: normalized vectors, as floats or base64 little-endian float32",
        _object({"input": TEXTS}, {"model": STRING, "encoding_format": {"enum": ["float", "base64"]}}),
        _object(
            {
                "object": STRING,
                "data": _array(
                    _object({"object": STRING, "embedding": _any(_array(NUMBER), STRING), "index": INTEGER})
                ),
                "model": STRING,
                "usage": _object({"prompt_tokens": INTEGER, "total_tokens": INTEGER}),
            }
        ),
        examples={"any": {"input": ["IMAP email client"], "model": "bertology"}},
    ),
    RouteDoc(
        "POST",
        "/tokenize",
        "each input's tokens with their ids and character spans",
        _object({"inputs": TEXTS}, {"add_special_tokens": BOOLEAN}),
        _array(
            _array(
                _object(
                    {
                        "id": INTEGER,
                        "text": STRING,
                        "special": BOOLEAN,
                        "start": NULLABLE_INTEGER,
                        "stop": NULLABLE_INTEGER,
                    }
                )
            )
        ),
        examples={"any": {"inputs": "IMAP email client"}},
    ),
    RouteDoc(
        "POST",
        "/decode",
        "token ids back to text",
        _object({"ids": _any(_array(INTEGER), _array(_array(INTEGER)))}, {"skip_special_tokens": BOOLEAN}),
        _array(STRING),
        examples={"any": {"ids": [2, 7, 3]}},
    ),
    RouteDoc(
        "POST",
        "/attention",
        "every layer's and head's attention weights over the tokens (format html: the interactive view)",
        _object({"inputs": STRING}, {"pair": STRING, "format": {"enum": ["json", "html"]}}),
        _object({"tokens": _array(STRING), "special": _array(BOOLEAN), "weights": _array(_array(VECTORS))}),
        examples={"any": {"inputs": "IMAP email client"}},
    ),
    RouteDoc(
        "POST",
        "/predict",
        "a sequence classifier's labels, best first (a regression: its value; a pair classifier: [text, pair]); a "
        "multiple-choice head's chosen choice and its scores",
        _object(
            {"inputs": _any(PREDICT_INPUTS, CHOICE_ITEM, _array(CHOICE_ITEM))},
            {"raw_scores": BOOLEAN, "truncate": BOOLEAN, "top_k": {"type": "integer", "minimum": 1}},
        ),
        _any(SCORES, _array(SCORES), CHOSEN, _array(CHOSEN)),
        examples={
            "classifier": {"inputs": "puzzle game with falling blocks"},
            "regression": {"inputs": "puzzle game with falling blocks"},
            "prompt classifier": {"inputs": "puzzle game with falling blocks"},
            "pair": {"inputs": ["a mail client", "IMAP email client"]},
            "choice": {"inputs": {"context": "a program that reads", "choices": ["mail", "games"]}},
        },
    ),
    RouteDoc(
        "POST",
        "/rerank",
        "each text's relevance to the query, best first (a classifier fine-tuned on pairs)",
        _object(
            {"query": STRING, "texts": _array(STRING)},
            {"raw_scores": BOOLEAN, "return_text": BOOLEAN, "truncate": BOOLEAN},
        ),
        _array(_object({"index": INTEGER, "score": NUMBER}, {"text": STRING})),
        examples={"any": {"query": "a mail client", "texts": ["IMAP email client", "a puzzle game"]}},
    ),
    RouteDoc(
        "POST",
        "/fill-mask",
        "the masked LM's candidates for each mask, best first: per mask for one text, per text for several",
        _object({"inputs": TEXTS}, {"top_k": {"type": "integer", "minimum": 1, "maximum": 100}, "truncate": BOOLEAN}),
        _any(_array(CANDIDATES), _array(_array(CANDIDATES))),
        examples={"any": {"inputs": "a [MASK] client", "top_k": 3}},
    ),
    RouteDoc(
        "POST",
        "/tag",
        "a token classifier's entities with character spans (one list per input for several)",
        _object({"inputs": TEXTS}, {"truncate": BOOLEAN}),
        _any(ENTITIES, _array(ENTITIES)),
        examples={"any": {"inputs": "John Smith lives in Paris"}},
    ),
    RouteDoc(
        "POST",
        "/qa",
        "an extractive QA head's answer span in the context (a list for several)",
        _any(QUESTION, _object({"inputs": _any(QUESTION, _array(QUESTION))})),
        _any(ANSWER, _array(ANSWER)),
        examples={"any": {"question": "Who lives in Paris?", "context": "John Smith lives in Paris."}},
    ),
]


def with_mask(body: Any, mask: str | None) -> Any:
    """An example body with the loaded model's mask token where it says [MASK] (RoBERTa's is <mask>)."""
    return json.loads(json.dumps(body).replace("[MASK]", mask)) if mask else body


def served_by(path: str) -> str:
    """The heads that serve a route, from the table of handlers (every head: "any head")."""
    heads = [name for name, handler in HANDLERS.items() if path.lstrip("/") in handler.ops]
    return ", ".join(heads) if heads else "any head"


def describe(engine_info: dict) -> dict:
    """The OpenAPI 3.1 description of the server, its title naming the loaded model and what it serves."""
    paths: dict[str, dict] = {}
    for r in ROUTES:
        answer = {"schema": r.answer} if r.answer is not None else {"schema": {"type": "string"}}
        operation = {
            "summary": r.summary,
            "description": f"served by: {served_by(r.path)}",
            "responses": {
                "200": {"description": "the answer", "content": {r.media_type: answer}},
                "4XX": {
                    "description": "text-embeddings-inference's error (404: the loaded head does not serve it)",
                    "content": {"application/json": {"schema": ERROR}},
                },
            },
        }
        if r.body is not None:
            examples = {
                who: {"summary": f"for {who} head", "value": with_mask(v, engine_info["mask_token"])}
                for who, v in (r.examples or {}).items()
            }
            content = {"schema": r.body, **({"examples": examples} if examples else {})}
            operation["requestBody"] = {"required": True, "content": {"application/json": content}}
        paths.setdefault(r.path, {})[r.method.lower()] = operation
    endpoints = ", ".join("/" + e for e in engine_info["endpoints"])
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "bertology serve",
            "version": "1",
            "description": (
                f"{engine_info['architecture']} ({engine_info['kind']}) from {engine_info['model_id']}; it serves "
                f"{endpoints}, POST / and the GET routes; the other POST routes below answer 404 for it. "
                "Requests and answers follow "
                'text-embeddings-inference; errors are {"error", "error_type"}.'
            ),
        },
        "paths": paths,
    }


def page(description: dict) -> str:
    """The description as one self-contained HTML page (no script, nothing fetched from elsewhere)."""
    sections = []
    for path, operations in description["paths"].items():
        for method, op in operations.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            answer = op["responses"]["200"]["content"]
            parts = [
                f"<h2><code>{method.upper()} {html.escape(path)}</code></h2>",
                f"<p>{html.escape(op['summary'])} <em>({html.escape(op['description'])})</em></p>",
            ]
            for who, example in body.get("examples", {}).items():
                parts.append(
                    f"<p>example body ({html.escape(who)})</p><pre>{html.escape(json.dumps(example['value']))}</pre>"
                )
            if "schema" in body:
                parts.append(
                    f"<details><summary>body</summary><pre>{html.escape(json.dumps(body['schema'], indent=1))}</pre></details>"
                )
            for media, schema in answer.items():
                parts.append(
                    f"<details><summary>answer ({html.escape(media)})</summary>"
                    f"<pre>{html.escape(json.dumps(schema['schema'], indent=1))}</pre></details>"
                )
            sections.append("<section>" + "".join(parts) + "</section>")
    info = description["info"]
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>bertology serve: API</title>"
        "<style>body{font:15px system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
        "pre{background:#f4f4f4;padding:.5em;overflow:auto}h2{font-size:1.1em;margin-top:1.5em}</style></head><body>"
        f"<h1>{html.escape(info['title'])}</h1><p>{html.escape(info['description'])}</p>"
        "<p>The machine-readable form: <a href='/openapi.json'>/openapi.json</a>.</p>"
        + "".join(sections)
        + "</body></html>"
    )
