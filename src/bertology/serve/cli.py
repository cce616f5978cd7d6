"""`bertology serve --model DIR`: argument parsing and the uvicorn launch; the server is app.py.

Nothing heavy is imported until the command runs, so `bertology --help` stays fast: Starlette,
uvicorn and torch load inside `_serve`.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

from ..options import add_arguments, from_args
from .guard import ENV_KEY, is_loopback
from .options import ServeOptions


def _listen(host: str, port: int) -> socket.socket:
    """Bind before loading anything slow, so a taken port is one clear message (not a log line and exit 1)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as e:
        raise OSError(f"--host {host} --port {port}: cannot listen there ({e.strerror or e})") from None


# oneDNN primitives a server keeps for shapes it saw (oneDNN's default: 1,024). Every batch packs another
# number of real tokens, so nearly every batch is a new shape: the default cache grew a server's RSS for as
# long as new shapes came (docs/serving.md, "Soak"), a small one keeps it flat and the last few shapes warm.
PRIMITIVE_CACHE = 16


def bound_primitive_cache() -> None:
    """Cap oneDNN's primitive cache at PRIMITIVE_CACHE, before torch loads (oneDNN reads it once); a
    capacity the user set is kept."""
    if "torch" not in sys.modules:
        os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(PRIMITIVE_CACHE))


def _serve(args) -> int:
    bound_primitive_cache()
    options = from_args(
        ServeOptions, args, api_key=args.api_key if args.api_key is not None else os.environ.get(ENV_KEY)
    )
    try:
        import uvicorn

        from .app import create_app
        from .guard import guarded_h11
    except ImportError as e:
        raise ValueError(
            f"bertology serve needs the serve extra ({e.name} is missing): pip install 'bertology[serve]'"
        ) from None
    from ..hardware import resolve_device
    from .engine import Engine

    # a GPU that is not there, then a bad model, fail before the port is held
    notes: list[str] = []  # said after the line with the address, which clients read first
    device = resolve_device(options.device, notes.append)
    if options.int8 and device.type != "cpu":
        raise ValueError(f"--int8 is for the CPU; the model would run on {device} (pass --device cpu)")
    if options.bf16 and device.type != "cpu":  # the engine would drop it: no option is silently ignored
        raise ValueError(
            f"--bf16: read by the CPU alone (--device cpu); on {device} every forward pass runs under autocast "
            "already, so leave --bf16 out"
        )
    engine = Engine.load(
        options.model,
        options.tokenizer,
        options.pooling,
        options.bf16,
        options.compile,
        device,
        quantize="int8" if options.int8 else None,
        say=notes.append,
    )
    sock = _listen(options.host, options.port)
    host, port = sock.getsockname()[:2]
    print(
        f"bertology serve: {engine.model.architecture} from {options.model} ({engine.kind}: "
        f"{', '.join('/' + e for e in sorted(engine.endpoints))}) [{engine.device}, {engine.precision}] on "
        f"http://{host}:{port}/",
        flush=True,
    )
    for note in notes:
        print(f"bertology serve: {note}", flush=True)
    if options.api_key is None and not is_loopback(host):
        print(
            f"bertology serve: no --api-key: anyone who can reach {host}:{port} can use it (--allow-anonymous)",
            flush=True,
        )
    # uvicorn's own limits: idle kept-alive connections close after 5 s, and the SIGTERM grace is bounded;
    # guarded_h11 adds the two it lacks (a slow request head, an answer left unread)
    config = uvicorn.Config(
        create_app(engine, options),
        log_level="warning" if options.quiet else "info",
        access_log=not options.quiet,
        timeout_graceful_shutdown=options.shutdown_grace,
        http=guarded_h11(options.read_timeout, options.write_timeout),
    )
    # uvicorn catches SIGTERM / SIGINT, stops accepting, lets the requests in flight finish within the grace (the
    # batcher drains its queue), then raises the signal again for the handler it found: make that a note, not a death
    stopped: list[int] = []
    previous = {
        s: signal.signal(s, lambda number, frame: stopped.append(number)) for s in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    app = config.app
    cancelled = app.state.cancelled if hasattr(app, "state") else 0
    print(
        f"bertology serve: stopped{' by ' + signal.Signals(stopped[0]).name if stopped else ''}; "
        + (
            f"{cancelled} request(s) still running after --shutdown-grace {options.shutdown_grace:g}s were cancelled"
            if cancelled
            else "every request received was answered"
        ),
        flush=True,
    )
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve a model over HTTP (text-embeddings-inference's API) with dynamic "
        "batching, and a page to try it at /",
    )
    add_arguments(p, ServeOptions)
    p.set_defaults(func=_serve)
