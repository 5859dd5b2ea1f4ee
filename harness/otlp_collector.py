"""A local OTLP/HTTP collector stand-in: accepts ``POST /v1/traces`` (and ``/v1/logs``, ``/v1/metrics``) on
127.0.0.1 and decodes the protobuf export with opentelemetry-proto (installed with the distro).

Spans are kept as :class:`CollectedSpan` (hex ids, attributes as plain values) for assertions.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from harness.loopback import LoopbackServer, send_reply


@dataclass
class CollectedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


class OtlpCollector(LoopbackServer):
    def __init__(self) -> None:
        self.spans: list[CollectedSpan] = []
        self.requests: list[str] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                collector._received(self.path, body)
                send_reply(
                    self, 200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf"
                )

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler, daemon_threads=True)

    @property
    def endpoint(self) -> str:
        return self.url

    def _received(self, path: str, body: bytes) -> None:
        with self._lock:
            self.requests.append(path)
            if not path.endswith("/v1/traces"):
                return
            request = ExportTraceServiceRequest.FromString(body)
            for rs in request.resource_spans:
                resource = _attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(
                            CollectedSpan(
                                name=s.name,
                                trace_id=s.trace_id.hex(),
                                span_id=s.span_id.hex(),
                                parent_span_id=s.parent_span_id.hex(),
                                attributes=_attrs(s.attributes),
                                resource=resource,
                            )
                        )

    def wait_for(self, predicate: Callable[[list[CollectedSpan]], bool], timeout: float = 20.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(list(self.spans)):
                    return True
            time.sleep(0.05)
        return False
