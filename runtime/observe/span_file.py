"""Write the runtime's OpenTelemetry spans to a JSON-lines file (``AGENTKIT_SPANS_FILE``), for local runs.

In a container, ADOT exports spans to AgentCore observability. Locally there is no collector, so this
exporter writes one JSON object per finished span, with the field names CloudWatch Transaction Search
uses for its ``aws/spans`` records (``traceId``, ``spanId``, ``parentSpanId``, ``name``, ``kind``,
``startTimeUnixNano``, ``endTimeUnixNano``, ``durationNano``, ``attributes``, ``status.code``), so one reader
(``agentkit report --spans``) serves both. Spans are written as they end (a simple processor), so a
killed process loses nothing already finished.

Needs ``opentelemetry-sdk`` (a dev dependency; ADOT brings it in the image). Without it, or when the file
cannot be opened, :func:`install_span_file` logs why and returns False: the runtime runs without it.

Environment variables: ``AGENTKIT_SPANS_FILE`` (read by ``python -m runtime``). IAM actions: none.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from runtime.env import ENV_SPANS_FILE

logger = logging.getLogger(__name__)


def span_record(span: Any) -> dict[str, Any]:
    """The JSON record of a finished SDK ``ReadableSpan``."""
    context = span.get_span_context()
    parent = span.parent
    status = span.status
    start, end = int(span.start_time or 0), int(span.end_time or span.start_time or 0)
    record: dict[str, Any] = {
        "traceId": f"{context.trace_id:032x}",
        "spanId": f"{context.span_id:016x}",
        "parentSpanId": f"{parent.span_id:016x}" if parent is not None else None,
        "name": span.name,
        "kind": span.kind.name,
        "startTimeUnixNano": start,
        "endTimeUnixNano": end,
        "durationNano": end - start,
        "attributes": {k: _plain(v) for k, v in (span.attributes or {}).items()},
        "status": {"code": status.status_code.name},
        "scope": {"name": span.instrumentation_scope.name if span.instrumentation_scope else None},
    }
    if status.description:
        record["status"]["message"] = status.description
    return record


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _exporter_class() -> type:
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class JsonLinesSpanExporter(SpanExporter):
        """Appends one JSON line per span to ``stream``; thread-safe."""

        def __init__(self, stream: IO[str]) -> None:
            self._stream = stream
            self._lock = threading.Lock()

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            try:
                text = "".join(json.dumps(span_record(s), default=str) + "\n" for s in spans)
                with self._lock:
                    self._stream.write(text)
                    self._stream.flush()
            except Exception as exc:  # an exporter must not break the turn that ended the span
                logger.warning("could not write %d span(s): %s", len(spans), exc)
                return SpanExportResult.FAILURE
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            with self._lock:
                self._stream.close()

    return JsonLinesSpanExporter


def install_span_file(path: str | Path, *, provider: Any = None) -> bool:
    """Export spans to ``path`` (appended): on ``provider``, else on the global SDK tracer provider (ADOT's,
    when present), else on a new one made global. Returns False (after logging why) when it cannot."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    except ImportError:
        logger.warning("%s is set but opentelemetry-sdk is not installed: no span file", ENV_SPANS_FILE)
        return False
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        stream = open(target, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - closed by the exporter
    except OSError as exc:
        logger.warning("%s=%s cannot be opened (%s): no span file", ENV_SPANS_FILE, path, exc)
        return False
    if provider is None:
        current = trace.get_tracer_provider()
        if isinstance(current, TracerProvider):
            provider = current
        else:
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(_exporter_class()(stream)))
    logger.info("writing spans to %s", target)
    return True
