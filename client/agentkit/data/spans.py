"""Read OpenTelemetry spans as JSON lines: the file a local run writes (``AGENTKIT_SPANS_FILE``) or the span
records of CloudWatch Transaction Search (log group ``aws/spans``), which share the same field names
(``traceId``, ``spanId``, ``parentSpanId``, ``name``, ``startTimeUnixNano``, ``endTimeUnixNano``,
``attributes``, ``status.code``).

The runtime puts the runtime session id on its spans as ``gen_ai.conversation.id`` (``runtime/observe/tracing.py``);
``session.id`` (OpenTelemetry baggage, as AgentCore's docs ask) is read too.

IAM actions: none (a local file); ``logs:FilterLogEvents`` on ``aws/spans`` for the CloudWatch path.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit.data.local_files import read_local_file

SESSION_ATTRIBUTES = ("gen_ai.conversation.id", "session.id")


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int  # epoch nanoseconds, as recorded
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    status: str = "UNSET"

    @property
    def start(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.start_ns / 1e9, tz=dt.UTC)

    @property
    def end(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.end_ns / 1e9, tz=dt.UTC)

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6

    @property
    def session_id(self) -> str | None:
        return next((str(self.attributes[k]) for k in SESSION_ATTRIBUTES if self.attributes.get(k)), None)

    @property
    def failed(self) -> bool:
        return self.status == "ERROR" or "error.type" in self.attributes


def parse_span(obj: Any) -> Span | None:
    """A :class:`Span` from one JSON record, or None when the record is not a span."""
    if not isinstance(obj, dict) or not {"traceId", "spanId", "name", "startTimeUnixNano"} <= set(obj):
        return None
    status = obj.get("status") or {}
    code = str(status.get("code", "UNSET") if isinstance(status, dict) else status).upper()
    attributes = obj.get("attributes") or {}
    end = obj.get("endTimeUnixNano") or int(obj["startTimeUnixNano"]) + int(obj.get("durationNano") or 0)
    return Span(
        trace_id=str(obj["traceId"]),
        span_id=str(obj["spanId"]),
        parent_id=str(obj["parentSpanId"]) if obj.get("parentSpanId") else None,
        name=str(obj["name"]),
        start_ns=int(obj["startTimeUnixNano"]),
        end_ns=int(end),
        attributes=dict(attributes) if isinstance(attributes, dict) else {},
        status=code.removeprefix("STATUS_CODE_"),
    )


def parse_span_lines(lines: Iterable[str]) -> list[Span]:
    """Spans among JSON lines (other lines are skipped)."""
    spans: list[Span] = []
    for line in lines:
        text = line.strip()
        if not text.startswith("{"):
            continue
        try:
            span = parse_span(json.loads(text))
        except (json.JSONDecodeError, TypeError, ValueError):
            continue
        if span is not None:
            spans.append(span)
    return spans


def read_span_file(path: str | Path) -> list[Span]:
    """The spans of a JSON-lines file.

    Raises:
        AgentkitError: usage error when the file is missing or unreadable.
    """
    return read_local_file(path, parse_span_lines, kind="span", env_var="AGENTKIT_SPANS_FILE")


def sessions_with_spans(spans: Iterable[Span]) -> list[str]:
    """Session ids that have spans, latest first."""
    latest: dict[str, dt.datetime] = {}
    for span in spans:
        if span.session_id:
            latest[span.session_id] = max(latest.get(span.session_id, span.start), span.start)
    return sorted(latest, key=lambda s: latest[s], reverse=True)


def session_trace(spans: Iterable[Span], session_id: str) -> list[tuple[int, Span]]:
    """Every span of the traces that touch ``session_id``, as (depth, span) in tree order (children after
    their parent, siblings by start time); orphans (parent not in the set) are roots."""
    spans = list(spans)
    traces = {s.trace_id for s in spans if s.session_id == session_id}
    chosen = [s for s in spans if s.trace_id in traces]
    ids = {s.span_id for s in chosen}
    children: dict[str | None, list[Span]] = defaultdict(list)
    for span in chosen:
        children[span.parent_id if span.parent_id in ids else None].append(span)
    ordered: list[tuple[int, Span]] = []

    def walk(parent: str | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: (s.start_ns, s.name)):
            ordered.append((depth, span))
            walk(span.span_id, depth + 1)

    walk(None, 0)
    return ordered
