"""Trace context and session baggage for one invocation.

CloudWatch's generative AI observability groups an agent's spans by session and joins them with the
platform's own spans when the agent (a) continues the trace AgentCore started and (b) carries the session id
as OpenTelemetry baggage ``session.id``. AWS's AgentCore observability guide asks agents to set that baggage
(``baggage.set_baggage("session.id", ...)``) for their spans to be grouped by session:
https://docs.aws.amazon.com/bedrock-agentcore/latest/devguide/observability-configure.html
With ``AGENT_OBSERVABILITY_ENABLED`` (set by AgentCore), ADOT's configurator adds a ``BaggageSpanProcessor`` that
copies the ``session.id`` baggage entry onto every span (``aws_opentelemetry_configurator._customize_span_processors``);
the runtime also puts ``session.id`` on its own spans, so the grouping holds under any tracer provider.

Where the trace context comes from: ``InvokeAgentRuntime`` takes ``traceId`` / ``traceParent`` / ``traceState``
/ ``baggage`` and sends them as the ``X-Amzn-Trace-Id``, ``traceparent``, ``tracestate`` and ``baggage`` HTTP
headers (botocore's ``bedrock-agentcore`` service model). bedrock-agentcore's app does not put them in the
handler's ``context.request_headers`` (only ``Authorization`` and ``X-Amzn-Bedrock-AgentCore-Runtime-Custom-*``
pass its filter) and does not extract a trace context itself — it only parses ``baggage`` for its config
bundles — and relied on the ASGI instrumentation the ``opentelemetry-instrument`` wrapper installed to make
its server span. The runtime therefore extracts the context from the raw request headers with the globally
configured propagators (ADOT: ``baggage,xray,tracecontext``; plain OpenTelemetry: ``tracecontext,baggage``) and
parents its ``invoke_agent`` span on it. Spans are created on the session's own task, so the context travels
with the queued turn (``TurnRequest.trace_headers``, extracted when the turn's spans start: after the
background OpenTelemetry set-up has installed ADOT's propagators) rather than through ``contextvars``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry import baggage, propagate
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Getter

#: The baggage key (and span attribute) AgentCore observability groups sessions by.
SESSION_BAGGAGE_KEY = "session.id"

#: Headers a propagator may read; AgentCore sends these for InvokeAgentRuntime's trace parameters.
TRACE_HEADERS = ("traceparent", "tracestate", "baggage", "x-amzn-trace-id")


def trace_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """The trace-related headers of a request, names lower-cased."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    return {k.lower(): v for k, v in items if k.lower() in TRACE_HEADERS}


class _LowerCaseGetter(Getter[dict[str, str]]):
    """Header lookup ignoring case (the X-Ray propagator asks for ``X-Amzn-Trace-Id``, W3C for ``traceparent``)."""

    def get(self, carrier: dict[str, str], key: str) -> list[str] | None:
        value = carrier.get(key.lower())
        return None if value is None else [value]

    def keys(self, carrier: dict[str, str]) -> list[str]:
        return list(carrier)


_GETTER = _LowerCaseGetter()


def invocation_context(
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None, session_id: str
) -> Context:
    """The context an invocation's spans start in: the caller's trace (if its headers carry one) plus the
    baggage ``session.id`` = the runtime session id."""
    carrier = trace_headers(headers or {})
    ctx = propagate.extract(carrier, getter=_GETTER) if carrier else Context()
    return baggage.set_baggage(SESSION_BAGGAGE_KEY, session_id, context=ctx)


def session_of(ctx: Any) -> str | None:
    """The ``session.id`` baggage entry of ``ctx`` (None when absent)."""
    value = baggage.get_baggage(SESSION_BAGGAGE_KEY, context=ctx) if ctx is not None else None
    return value if isinstance(value, str) else None


__all__ = ["SESSION_BAGGAGE_KEY", "invocation_context", "session_of", "trace_headers"]
