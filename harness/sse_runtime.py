"""A loopback HTTP stand-in that speaks the invocation contract (``POST /invocations``, SSE or JSON replies).

Each test scripts the reply with a :class:`Reply`; the server records every request it received. It also
serves as a stand-in for the AgentCore data plane (``POST /runtimes/{arn}/invocations``)
so the boto3 path can run over real HTTP.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from harness.loopback import LoopbackServer


def sse(*events: Any) -> list[bytes]:
    """Events encoded as SSE frames, one frame per element (the server flushes after each)."""
    return [f"data: {json.dumps(event)}\n\n".encode() for event in events]


@dataclass
class Reply:
    """What the stand-in answers: status, content type, body parts (flushed one by one) and extra headers.

    ``before_part`` is called with the index of each part before it is written, so a test can hold the
    stream open until the client has shown the previous part.
    """

    status: int = 200
    content_type: str = "text/event-stream"
    parts: Iterable[bytes] = ()
    headers: dict[str, str] = field(default_factory=dict)
    before_part: Callable[[int], None] | None = None


@dataclass
class Received:
    """One request the stand-in received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class SseRuntimeStandIn(LoopbackServer):
    """Threaded HTTP server on 127.0.0.1; ``replies`` are served in order (the last one repeats)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies) or [Reply(parts=sse({"type": "result", "subtype": "success"}))]
        self.received: list[Received] = []
        self._lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with stand_in._lock:
                    stand_in.received.append(Received("POST", self.path, dict(self.headers.items()), body))
                    index = min(len(stand_in.received), len(stand_in.replies)) - 1
                    reply = stand_in.replies[index]
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                for i, part in enumerate(reply.parts):
                    if reply.before_part is not None:
                        reply.before_part(i)
                    self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        super().__init__(Handler, poll_interval=0.02, daemon_threads=True)
