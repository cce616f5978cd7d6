"""`bertology serve`: a model behind an HTTP API (text-embeddings-inference's shapes), with dynamic
batching and a page to try it. Needs the `serve` extra (Starlette, uvicorn).

    options.py   ServeOptions: every flag, its default and range
    schemas.py   request bodies → checked requests; the API's errors
    engine.py    the model side: a thin layer over Pipeline and tasks.inference
    handlers.py  the table of tasks: what each head serves, and how each operation runs
    batching.py  the queue and the one worker thread that owns the model
    metrics.py   Prometheus text for /metrics
    app.py       the Starlette routes
    openapi.py   the API described: /openapi.json and /docs
    page/        the static page at /
    cli.py       the command; imports none of the above until it runs

From Python: `create_app(Engine.load("DIR"), ServeOptions(model="DIR"))` from `bertology.serve.app`
is an ASGI application.
"""
