"""The HTTP API: Starlette routes over the Engine, through the Batcher.

Handlers run on the event loop and do no model work: they read the body (capped), check its
shape (schemas.py), queue the request and await its result. The page at `GET /` is a static file
(page/index.html) that calls the same API; `GET /openapi.json` and `GET /docs` describe it (openapi.py).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import struct
import time
from importlib import resources

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ..viz import attention_html
from . import schemas
from .batching import Batcher, BatchLimits
from .engine import Engine, error_of
from .handlers import COMMON, HANDLERS
from .guard import CountCancelled, KeyRequired
from .metrics import Metrics
from .openapi import describe, page as api_page
from .options import ServeOptions
from .schemas import ApiError


async def read_json(request: Request, limit: int, timeout: float | None = None):
    """The body as JSON, refusing (413) more than `limit` bytes whether or not Content-Length says so, and
    (408) a body that takes longer than `timeout` seconds to arrive."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise schemas.too_large(f"the body is {int(declared):,} bytes, more than --max-body-bytes {limit:,}")
    body = bytearray()
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    raise schemas.too_large(f"the body is more than --max-body-bytes {limit:,} bytes")
    except TimeoutError:
        raise ApiError(
            408, "Timeout", f"the body did not arrive within --read-timeout {timeout:g}s ({len(body):,} bytes came)"
        ) from None
    except ClientDisconnect:  # the client left mid-body: an answer nobody reads, counted, not a server error
        raise ApiError(
            400, "Validation", f"the client closed the connection after {len(body):,} bytes of its body"
        ) from None
    try:
        return json.loads(body)
    except ValueError as e:  # UnicodeDecodeError included
        raise schemas.invalid(f"the body is not JSON: {e}") from None


def create_app(engine: Engine, options: ServeOptions) -> Starlette:
    metrics = Metrics()
    batcher = Batcher(
        engine.prepare,
        engine.run,
        BatchLimits(
            options.max_batch_tokens, options.max_batch_requests, options.max_wait_ms, options.max_concurrent_requests
        ),
        error_of,
        on_batch=metrics.batch,
    )
    page = resources.files(__package__).joinpath("page/index.html").read_text(encoding="utf-8")
    info = {
        **engine.info(),
        "max_batch_tokens": options.max_batch_tokens,
        "max_batch_requests": options.max_batch_requests,
        "max_client_batch_size": options.max_client_batch_size,
        "max_concurrent_requests": options.max_concurrent_requests,
        "max_body_bytes": options.max_body_bytes,
    }

    def answer(path: str, started: float, response: Response) -> Response:
        metrics.request(path, response.status_code, time.perf_counter() - started)
        return response

    def failed(path: str, started: float, e: ApiError) -> Response:
        return answer(path, started, JSONResponse(e.body(), e.status))

    def served(path: str, op: str) -> None:
        if op not in engine.endpoints:
            raise ApiError(
                404,
                "NotFound",
                f"{path}: the loaded {engine.model.architecture} does not serve "
                f"this; it serves {', '.join('/' + e for e in sorted(engine.endpoints))}",
            )

    async def submit(request: Request, op: str, parse_body) -> tuple[object, object]:
        served(request.url.path, op)
        body = await read_json(request, options.max_body_bytes, options.read_timeout)
        parsed = parse_body(body) if parse_body else parse(op, body)
        return parsed, await batcher.submit(op, parsed)

    def root_op(body) -> tuple[str, object, object]:
        """The operation, request and rendering of a POST / body: a sentence-similarity body for any
        encoder, otherwise the head's own task, answered in the Inference API's shapes."""
        body = schemas.with_parameters(body)
        if isinstance(body, dict) and isinstance(body.get("inputs"), dict) and "source_sentence" in body["inputs"]:
            return "similarity", schemas.parse_similarity(body, options.max_client_batch_size), None
        handler = engine.handler
        return handler.root, parse(handler.root, body), handler.render_root

    async def root(request: Request) -> Response:
        started = time.perf_counter()
        try:
            body = await read_json(request, options.max_body_bytes, options.read_timeout)
            op, parsed, render = root_op(body)
            result = await batcher.submit(op, parsed)
        except ApiError as e:
            return failed(request.url.path, started, e)
        return answer(request.url.path, started, JSONResponse(render(parsed, result) if render else result))

    def parse(op: str, body):
        # the Inference API's clients send options in "parameters" to any URL they are given, a route's too
        return engine.ops[op].parse(schemas.with_parameters(body), options.max_client_batch_size)

    def endpoint(op: str, parse_body=None, render=None):
        """A route for one operation: the head's own parser unless `parse_body` reads another shape."""

        async def handler(request: Request) -> Response:
            started = time.perf_counter()
            try:
                parsed, result = await submit(request, op, parse_body)
            except ApiError as e:
                return failed(request.url.path, started, e)
            return answer(request.url.path, started, render(parsed, result) if render else JSONResponse(result))

        return handler

    def openai_render(request, vectors) -> Response:
        def encode(v):
            return (
                base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() if request.encoding_format == "base64" else v
            )

        data = [{"object": "embedding", "embedding": encode(v), "index": i} for i, v in enumerate(vectors)]
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": engine.name,
                "usage": {"prompt_tokens": request.tokens, "total_tokens": request.tokens},
            }
        )

    def attention_render(request, weights) -> Response:
        if request.format == "html":
            return HTMLResponse(attention_html(weights, request.text + (f" / {request.pair}" if request.pair else "")))
        return JSONResponse(
            {
                "tokens": weights.tokens,
                "special": weights.special,
                "weights": [
                    [[[round(v, 5) for v in row] for row in h] for h in layer] for layer in weights.weights.tolist()
                ],
            }
        )

    async def health(request: Request) -> Response:
        if not batcher.running:
            return JSONResponse({"error": "unhealthy", "error_type": "Unhealthy"}, 503)
        return JSONResponse({"status": "ok"})

    async def get_info(request: Request) -> Response:
        return JSONResponse(info)

    async def get_metrics(request: Request) -> Response:
        return PlainTextResponse(metrics.render(batcher.depth), media_type="text/plain; version=0.0.4")

    async def get_page(request: Request) -> Response:
        return HTMLResponse(page)

    description = describe(engine.info())
    described = api_page(description)

    async def get_openapi(request: Request) -> Response:
        return JSONResponse(description)

    async def get_docs(request: Request) -> Response:
        return HTMLResponse(described)

    async def not_found(request: Request, exc: HTTPException) -> Response:
        kind = "NotFound" if exc.status_code == 404 else "Validation"
        message = f"{request.method} {request.url.path}: " + (
            "no such endpoint" if exc.status_code == 404 else exc.detail
        )
        return JSONResponse({"error": message, "error_type": kind}, exc.status_code)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        batcher.start()
        try:
            yield
        finally:  # uvicorn lets the requests in flight finish first; the queue drains, then the worker ends
            await asyncio.to_thread(batcher.stop)

    routes = [
        Route("/", get_page, methods=["GET"]),
        Route("/", root, methods=["POST"]),
        Route("/health", health),
        Route("/info", get_info),
        Route("/metrics", get_metrics),
        Route("/openapi.json", get_openapi),
        Route("/docs", get_docs),
        Route(
            "/v1/embeddings",
            endpoint(
                "embed",
                lambda body: schemas.parse_openai_embeddings(body, options.max_client_batch_size),
                openai_render,
            ),
            methods=["POST"],
        ),
    ]
    # a route per operation of any head (the loaded head's own answer, the others 404): a task added to the
    # table of handlers is routed with no change here
    renders = {"attention": attention_render}
    for op in sorted({*COMMON, *(op for handler in HANDLERS.values() for op in handler.ops)}):
        routes.append(Route("/" + op, endpoint(op, render=renders.get(op)), methods=["POST"]))
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found, 405: not_found})
    app.state.engine, app.state.batcher, app.state.metrics = engine, batcher, metrics
    if options.api_key is not None:
        known = {route.path for route in routes}  # counted per endpoint; any other path would grow the metrics

        def refused(path: str, status: int) -> None:
            if path in known:
                metrics.request(path, status, 0.0)

        app.add_middleware(KeyRequired, key=options.api_key, on_refused=refused)
    app.add_middleware(CountCancelled, state=app.state)
    return app
