"""The one way the HTTP fakes serve: a ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) in a daemon thread.

Subclasses (or holders) pass their request handler; ``with server:`` starts it and always stops it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


def send_reply(
    handler: BaseHTTPRequestHandler,
    status: int,
    body: bytes,
    content_type: str = "application/json",
    headers: Mapping[str, str] | None = None,
) -> None:
    """Answer the request ``handler`` serves: status, ``Content-Type``, ``Content-Length``, ``headers``, body."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(body)


class LoopbackServer:
    """An HTTP server on 127.0.0.1; a context manager that starts it and shuts it down.

    Args:
        handler: the request handler class.
        poll_interval: how often ``serve_forever`` checks for shutdown.
        daemon_threads: do not wait for running handlers at shutdown (for long streamed replies).
        port: the port to listen on (default: a free one); a fixed one lets a client be pointed at an address
            before anything listens there (a dead endpoint that comes back).
    """

    def __init__(
        self,
        handler: type[BaseHTTPRequestHandler],
        *,
        poll_interval: float = 0.5,
        daemon_threads: bool = False,
        port: int = 0,
    ) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._server.daemon_threads = daemon_threads
        self._thread = threading.Thread(target=self._server.serve_forever, args=(poll_interval,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
