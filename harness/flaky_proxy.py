"""A loopback HTTP proxy that fails chosen requests before forwarding the rest (an AWS outage, offline).

``FlakyProxy(upstream, fail=lambda method, path: bool, status=503)`` answers matching requests with an AWS-style
JSON error while ``failures_left > 0``, and forwards everything else to ``upstream`` (e.g. a moto server).
``port`` fixes its port (default: a free one).
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from harness.loopback import LoopbackServer


class FlakyProxy(LoopbackServer):
    def __init__(
        self,
        upstream: str,
        *,
        fail: Callable[[str, str], bool],
        failures: int,
        status: int = 503,
        port: int = 0,
    ) -> None:
        self.failures_left = failures
        self.failed: list[str] = []
        target = urlsplit(upstream)
        host = target.hostname or "127.0.0.1"
        proxy = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                with lock:
                    should_fail = proxy.failures_left > 0 and fail(self.command, self.path)
                    if should_fail:
                        proxy.failures_left -= 1
                        proxy.failed.append(f"{self.command} {self.path}")
                if should_fail:
                    payload = json.dumps({"message": "injected outage"}).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("x-amzn-ErrorType", "ServiceUnavailableException")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection(host, target.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        super().__init__(Handler, port=port)
