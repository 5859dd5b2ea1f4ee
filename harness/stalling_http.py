"""A loopback HTTP server that answers part of a reply and then goes silent or drops the connection.

``StallingServer(parts=[...], then="stall" | "reset")`` reads each request, sends ``parts`` (raw bytes, e.g.
a status line, headers and the first chunk of a chunked SSE body), then either holds the connection open
without sending more (``stall``: the client's read timeout fires) or resets it (``reset``: TCP RST, as when
a proxy or the runtime dies mid-reply). With no parts and ``stall`` it never answers at all. ``requests``
records every request received (raw bytes), so a test can count how often a client sent the same one.
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import Literal

Then = Literal["stall", "reset"]


def sse_head(*chunks: bytes) -> list[bytes]:
    """A 200 ``text/event-stream`` reply head with chunked encoding, followed by ``chunks`` as HTTP chunks."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    return [head, *(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks)]


class StallingServer:
    """Threaded TCP server on 127.0.0.1; use as a context manager."""

    def __init__(self, *, parts: list[bytes] | None = None, then: Then = "stall") -> None:
        self.parts = parts or []
        self.then = then
        self.requests: list[bytes] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._held: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def __enter__(self) -> StallingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()
        for conn in self._held:
            conn.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            request = _read_request(conn)
        except OSError:
            conn.close()
            return
        with self._lock:
            self.requests.append(request)
        for part in self.parts:
            conn.sendall(part)
        if self.then == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
        else:
            self._held.append(conn)


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body
