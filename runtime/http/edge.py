"""The HTTP edge of the runtime: body limits, the error contract for what the HTTP layer would answer itself,
and disconnects.

:class:`HttpGuard` is the outermost ASGI layer of the runtime app:

- ``POST /invocations`` bodies are read as a stream against a byte limit: a ``Content-Length`` over the limit
  is refused before a byte of the body is read, a chunked body as soon as it passes the limit (``413
  prompt_too_large``), so a 50 MB body never sits in memory. The body read here is the one the invocation
  handler parses (it is handed on, not read again).
- A wrong method (``405 method_not_allowed``), an unknown path (``404 not_found``), any other plain-text
  reply of the framework and an unhandled exception (``500 internal_error``) become
  ``{"type": "error", "code", "message"}``, the one error format of every reply (:mod:`runtime.protocol`;
  the contract in docs/http-api.md#errors).
- Once the body is read, the guard alone listens for the client going away. When it does before the reply
  is complete, the request's :class:`DisconnectSignal` (``scope["agentkit.disconnect"]``, see
  :func:`disconnect_signal`) fires; the invocation handler registers there what interrupts the turn.

:class:`ContractH11Protocol` is uvicorn's h11 protocol whose "Invalid HTTP request" reply (bad chunking, a
malformed request line or header) follows the same contract; pass it as ``http=`` to ``uvicorn.run``.

Small writes are not held back: asyncio sets ``TCP_NODELAY`` on every TCP transport it creates (CPython's
``selector_events._SelectorSocketTransport``), so each SSE event leaves as soon as it is written.

Environment: none (the limit is passed in by :mod:`runtime.http.server`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from runtime.protocol import SESSION_HEADER

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Error code for each status the framework may answer in its own words.
_CODES = {
    400: "invalid_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "prompt_too_large",
    415: "unsupported_media_type",
}


def error_body(code: str, message: str) -> bytes:
    return json.dumps({"type": "error", "code": code, "message": message}).encode()


#: The session header as it appears in an ASGI scope (lower-case bytes).
_SESSION_HEADER = SESSION_HEADER.lower().encode()


def _one_line(text: str, limit: int) -> str:
    """``text`` on one line (a caller's value cannot forge log lines), cut to ``limit`` characters."""
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def log_refusal(status: int, code: str, reason: str, *, session: str | bytes | None, path: str = "") -> None:
    """One log line for a request refused before a turn ran: status, code, session (``-`` when the request
    has none) and the reason the caller was given. Failed turns are logged by the session that ran them."""
    if isinstance(session, bytes):
        session = session.decode("utf-8", "replace")
    logger.warning(
        "refused %s: %d %s session=%s: %s",
        path or "request",
        status,
        code,
        _one_line(session, 80) if session else "-",
        _one_line(reason, 300),
    )


def scope_session(scope: Scope) -> bytes | None:
    """The request's runtime session id header, as sent (None without one)."""
    return _header(scope.get("headers", []), _SESSION_HEADER)


class DisconnectSignal:
    """Fires once when the client leaves before its reply is complete; thread-safe (two event loops)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.fired = False

    def add(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the client disconnects (at once if it already has)."""
        with self._lock:
            if not self.fired:
                self._callbacks.append(callback)
                return
        _call(callback)

    def fire(self) -> None:
        with self._lock:
            if self.fired:
                return
            self.fired = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            _call(callback)


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:  # a callback must never break the HTTP layer
        logger.exception("disconnect callback failed")


#: Where :class:`HttpGuard` puts an invocation's :class:`DisconnectSignal` in the ASGI scope.
DISCONNECT_SCOPE_KEY = "agentkit.disconnect"


def disconnect_signal(scope: Scope) -> DisconnectSignal:
    """The request's disconnect signal (a fresh one that never fires outside a guarded invocation)."""
    signal = scope.get(DISCONNECT_SCOPE_KEY)
    if not isinstance(signal, DisconnectSignal):
        signal = scope[DISCONNECT_SCOPE_KEY] = DisconnectSignal()
    return signal


def set_on_loop(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> Callable[[], None]:
    """A callback that sets ``event`` on ``loop`` from any thread (a disconnect fires on the server's loop,
    the turn waits on the worker loop)."""

    def _set() -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing left to interrupt
            loop.call_soon_threadsafe(event.set)

    return _set


class HttpGuard:
    """ASGI middleware; see the module docstring.

    Args:
        app: the wrapped ASGI app.
        max_body_bytes: largest ``POST /invocations`` body accepted.
        routes: path → allowed methods; other paths get 404, other methods 405.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        routes: dict[str, frozenset[str]] | None = None,
        invocations_path: str = "/invocations",
        limit_hint: str = "",
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.limit_hint = limit_hint
        self.invocations_path = invocations_path
        self.routes = routes or {
            invocations_path: frozenset({"POST"}),
            "/ping": frozenset({"GET", "HEAD"}),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope.get("path", ""), scope.get("method", "GET")
        reply = _ContractSend(send, self.limit_hint, where=f"{method} {path}", session=scope_session(scope))
        allowed = self.routes.get(path)
        if allowed is None:
            await reply.error(404, "not_found", f"no route {path!r}; use POST /invocations or GET /ping")
            return
        if method not in allowed:
            await reply.error(
                405,
                "method_not_allowed",
                f"{method} is not allowed on {path}; use {' or '.join(sorted(allowed))}",
                headers=[(b"allow", ", ".join(sorted(allowed)).encode())],
            )
            return
        if path != self.invocations_path:
            await self._run(scope, receive, reply)
            return
        await self._invocation(scope, receive, reply)

    async def _invocation(self, scope: Scope, receive: Receive, reply: _ContractSend) -> None:
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await reply.too_large(declared, self.max_body_bytes)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left (or the HTTP layer refused the body): nobody to answer
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_body_bytes:
                await reply.too_large(size, self.max_body_bytes)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        del chunks
        signal = DisconnectSignal()
        gone = asyncio.Event()

        async def watch() -> None:  # the only reader of the real receive from now on
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone.set()
                    if not reply.complete:
                        logger.info("client disconnected before its reply was complete")
                        signal.fire()
                    return

        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        watcher = asyncio.create_task(watch(), name="agentkit-disconnect-watch")
        scope[DISCONNECT_SCOPE_KEY] = signal
        try:
            await self._run(scope, replay, reply)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher

    async def _run(self, scope: Scope, receive: Receive, reply: _ContractSend) -> None:
        try:
            await self.app(scope, receive, reply)
        except Exception:
            logger.exception("unhandled error in the HTTP app")
            if not reply.started:
                await reply.error(
                    500, "internal_error", "internal error; the details are in the runtime logs"
                )


class _ContractSend:
    """Wraps ``send``: passes successful and streaming replies through; an error reply (status >= 400) is held
    until its body is complete and sent on if it already is ``{"type": "error", "code", "message"}``, else
    replaced by one (the framework's plain-text 404/405/500, or the base app's ``{"error": ...}``)."""

    def __init__(
        self, send: Send, limit_hint: str = "", *, where: str = "", session: bytes | None = None
    ) -> None:
        self._send = send
        self._limit_hint = limit_hint
        self._where, self._session = where, session  # what a refusal's log line names
        self.started = False
        self.complete = False
        self._held: Message | None = None  # an error reply's start, waiting for its body
        self._body = b""

    async def __call__(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.started = True
            if int(message["status"]) >= 400:
                self._held = message
                return
        elif kind == "http.response.body" and self._held is not None:
            self._body += message.get("body", b"")
            if message.get("more_body", False):
                return
            held, body = self._held, self._body
            self._held, self._body = None, b""
            if _is_contract(body):
                self.complete = True
                await self._send(held)
                await self._send({"type": "http.response.body", "body": body, "more_body": False})
                return
            status = int(held["status"])
            text = (
                "internal error; the details are in the runtime logs" if status >= 500 else f"HTTP {status}"
            )
            extra = [(k, v) for k, v in held.get("headers", []) if k.lower() == b"allow"]
            code = _CODES.get(status, "internal_error" if status >= 500 else "http_error")
            if status < 500:  # a 5xx is logged with its traceback where it happened
                log_refusal(status, code, text, session=self._session, path=self._where)
            await self._write(status, error_body(code, text), extra)
            return
        if kind == "http.response.body" and not message.get("more_body", False):
            self.complete = True
        await self._send(message)

    async def error(
        self, status: int, code: str, message: str, *, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        self.started = True
        if status < 500:  # a 5xx is logged with its traceback where it happened
            log_refusal(status, code, message, session=self._session, path=self._where)
        await self._write(status, error_body(code, message), headers or [])

    async def too_large(self, size: int, limit: int) -> None:
        await self.error(
            413,
            "prompt_too_large",
            f"request body is over {limit} bytes (got at least {size}){self._limit_hint}; shorten the prompt or "
            "split the work over several turns of one session",
        )  # no "connection: close": uvicorn then discards the rest of the body (memory stays flat) and the
        # client can finish sending and read this reply instead of a reset

    async def _write(self, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        await self._send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    *headers,
                ],
            }
        )
        self.complete = True
        await self._send({"type": "http.response.body", "body": body, "more_body": False})


def _is_contract(body: bytes) -> bool:
    try:
        doc = json.loads(body)
    except ValueError:
        return False
    return (
        isinstance(doc, dict)
        and doc.get("type") == "error"
        and isinstance(doc.get("code"), str)
        and isinstance(doc.get("message"), str)
    )


def _header(headers: Any, name: bytes) -> bytes | None:
    for key, value in headers:
        if key.lower() == name:
            return bytes(value)
    return None


def _content_length(scope: Scope) -> int | None:
    raw = _header(scope.get("headers", []), b"content-length")
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None  # h11 refuses a malformed Content-Length before the app sees it


class ContractH11Protocol(H11Protocol):
    """uvicorn's h11 protocol; its reply to a request it cannot parse follows the error contract."""

    def send_400_response(self, msg: str) -> None:
        reason = (
            f"{msg.rstrip('.')}: the HTTP request could not be parsed (bad chunked encoding, request line or "
            "headers); send a well-formed HTTP/1.1 request"
        )
        log_refusal(400, "invalid_request", reason, session=None, path="unparsable HTTP request")
        body = error_body("invalid_request", reason)
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        try:
            for event in (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event))
        except h11.LocalProtocolError:  # a reply was already under way: nothing more can be said
            pass
        self.transport.close()
