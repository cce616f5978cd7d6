"""What keeps a long-running server safe from its clients: the API key and the time limits.

    KeyRequired      ASGI middleware: every route but /health and the page's static HTML needs
                     `Authorization: Bearer KEY` (text-embeddings-inference's --api-key); otherwise 401
                     in TEI's {"error", "error_type"} shape, with `WWW-Authenticate: Bearer`
    guarded_h11      uvicorn's h11 protocol with the two limits uvicorn lacks: a request head must
                     arrive within --read-timeout of the connection (or of the previous answer on a
                     kept-alive one), and a client that stops reading its answer for --write-timeout is
                     cut off. uvicorn's own settings do the rest: timeout_keep_alive for idle
                     connections, timeout_graceful_shutdown for the SIGTERM grace.

A stalled client otherwise holds a connection (and its unread answer) until the process ends, and
uvicorn's graceful shutdown waits for every open connection: one such client would keep a
SIGTERM'd server alive forever.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json

OPEN_PATHS = frozenset(
    {"/health", "/"}
)  # "/" is the page's static HTML: it holds nothing of the model, and asks for the key
ENV_KEY = "BERTOLOGY_API_KEY"


def is_loopback(host: str) -> bool:
    """True for an address only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


def key_problem(key: str) -> str | None:
    """Why `key` cannot be sent in an HTTP header as `Bearer KEY`, or None when it can."""
    if not key:
        return "is empty"
    if any(c.isspace() or not c.isprintable() or not c.isascii() for c in key):
        return "must be printable ASCII without spaces (it travels in the Authorization header)"
    return None


async def send_json(send, status: int, body: dict, headers: tuple = ()) -> None:
    """A whole JSON answer as two ASGI messages (this module stays free of Starlette, so the CLI stays light)."""
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": data})


def unauthorized_body(path: str, sent: bool) -> dict:
    why = (
        "the Authorization header's bearer token is not the server's key"
        if sent
        else "send the server's key as `Authorization: Bearer KEY` (the server was started with --api-key)"
    )
    return {"error": f"{path}: unauthorized: {why}", "error_type": "Unauthorized"}


class KeyRequired:
    """ASGI middleware: refuses (401) an HTTP request to a closed path without the right bearer token.
    `on_refused(path, status)` lets the metrics count refusals."""

    def __init__(self, app, key: str, on_refused=lambda path, status: None):
        self.app, self.on_refused = app, on_refused
        self.expected = f"Bearer {key}".encode("ascii")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS and scope["method"] in ("GET", "HEAD"):
            return await self.app(scope, receive, send)
        sent = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        if sent is not None and hmac.compare_digest(sent, self.expected):  # constant time: no timing oracle
            return await self.app(scope, receive, send)
        self.on_refused(scope["path"], 401)
        await send_json(
            send,
            401,
            unauthorized_body(scope["path"], sent is not None),
            ((b"www-authenticate", b'Bearer realm="bertology"'),),
        )


class CountCancelled:
    """ASGI middleware: counts requests cancelled before their answer (uvicorn cancels what is still running
    when the SIGTERM grace ends), so the server can say how many it did not answer."""

    def __init__(self, app, state):
        self.app, self.state = app, state
        state.cancelled = 0

    async def __call__(self, scope, receive, send):
        try:
            await self.app(scope, receive, send)
        except asyncio.CancelledError:
            self.state.cancelled += 1
            raise


def _timeout_answer() -> bytes:
    body = json.dumps({"error": "the request did not arrive within --read-timeout", "error_type": "Timeout"}).encode()
    return (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


def guarded_h11(read_timeout: float, write_timeout: float):
    """uvicorn's H11Protocol with a deadline for each request head and one for a client that stops reading."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11(H11Protocol):
        _head_timer = None
        _write_timer = None
        _partial = False  # bytes of a request head arrived since the head timer was set

        def data_received(self, data: bytes) -> None:
            self._partial = True
            super().data_received(data)

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm_head()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():  # the answer ended the connection: no next request to wait for
                return
            self._arm_head()
            if self.transport.get_write_buffer_size() > 0:
                self._arm_write()  # the answer still sits in our buffer: the client must take it in time

        def connection_lost(self, exc) -> None:
            for timer in (self._head_timer, self._write_timer):
                if timer is not None:
                    timer.cancel()
            super().connection_lost(exc)

        def pause_writing(self) -> None:  # the client is not reading as fast as we write
            super().pause_writing()
            self._arm_write()

        def resume_writing(self) -> None:
            super().resume_writing()
            if self._write_timer is not None and self.transport.get_write_buffer_size() == 0:
                self._write_timer.cancel()
                self._write_timer = None

        def _arm_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._partial = False
            self._head_timer = self.loop.call_later(read_timeout, self._head_late, self.cycle)

        def _head_late(self, waiting_after) -> None:
            # no request head since the timer was set (a new one would be a new, unfinished cycle)
            idle = self.cycle is waiting_after and (waiting_after is None or waiting_after.response_complete)
            if idle and not self.transport.is_closing():
                if self._partial:  # part of a head came: say why; a silent idle connection is just closed
                    self.transport.write(_timeout_answer())
                self.transport.close()

        def _arm_write(self) -> None:
            if self._write_timer is None:
                self._write_timer = self.loop.call_later(write_timeout, self._write_late)

        def _write_late(self) -> None:
            self._write_timer = None
            if self.transport.get_write_buffer_size() > 0 or self.flow.write_paused:
                self.logger.warning(
                    "%s:%s stopped reading its answer for --write-timeout %gs: connection closed",
                    *(self.client or ("?", "?")),
                    write_timeout,
                )
                self.transport.abort()

    return GuardedH11
