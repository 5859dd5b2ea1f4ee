"""OpenTelemetry spans for the runtime: invocation → turn → tool call, plus session load / flush.

Only the OpenTelemetry *API* is used, so spans go to whatever tracer provider is installed: ADOT
(``opentelemetry-instrument``) in the container, which AgentCore observability reads; the SDK's
``InMemorySpanExporter`` in tests; a no-op provider otherwise (near-zero cost).

Attributes follow the OpenTelemetry GenAI semantic conventions where one exists (``gen_ai.system`` and
``gen_ai.provider.name`` = ``aws.bedrock``, ``gen_ai.operation.name``, ``gen_ai.request.model``,
``gen_ai.agent.name``, ``gen_ai.conversation.id``, ``gen_ai.usage.input_tokens`` (all input: uncached + cache
read + cache write, as the conventions ask), ``gen_ai.usage.output_tokens``,
``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.cache_creation.input_tokens``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id``) and ``agentkit.*`` otherwise (``agentkit.cost_usd``, ``agentkit.sdk_cost_usd``, ...).
Unlike metrics, spans may carry session ids.

Note for hooks: the SDK runs hook callbacks in tasks created when the client connected, so the current
OpenTelemetry context inside a hook is *not* the turn's. Tool spans therefore take their parent explicitly
(see :class:`runtime.observe.tool_hooks.ToolTelemetry.bind`).

Environment variables: none (the tracer provider reads the usual ``OTEL_*`` variables).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal

from opentelemetry import baggage, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from runtime.observe.costs import TurnCost

TRACER_NAME = "agentkit.runtime"
GEN_AI_SYSTEM = "aws.bedrock"


def _clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attributes.items() if v is not None}


def _mark_error(span: Span, exc: BaseException) -> None:
    code = getattr(exc, "code", None)
    span.set_attribute("error.type", code if isinstance(code, str) else type(exc).__qualname__)


def _session_baggage(ctx: Context | None = None) -> str | None:
    """The ``session.id`` baggage of ``ctx`` (default: the current context), if any."""
    value = baggage.get_baggage("session.id", context=ctx)
    return value if isinstance(value, str) else None


class Tracing:
    """Span factory for the runtime. ``tracer`` defaults to the global provider's tracer."""

    def __init__(self, tracer: Tracer | None = None, *, agent: str = "agentkit") -> None:
        self.tracer = tracer or trace.get_tracer(TRACER_NAME)
        self.agent = agent

    def _base(self, operation: str) -> dict[str, Any]:
        return {
            "gen_ai.system": GEN_AI_SYSTEM,
            "gen_ai.provider.name": GEN_AI_SYSTEM,
            "gen_ai.operation.name": operation,
            "gen_ai.agent.name": self.agent,
        }

    @contextmanager
    def _span(
        self, name: str, attributes: dict[str, Any], kind: SpanKind = SpanKind.INTERNAL
    ) -> Iterator[Span]:
        with self.tracer.start_as_current_span(
            name,
            kind=kind,
            attributes=_clean(attributes),
            record_exception=True,
            set_status_on_exception=True,
        ) as span:
            try:
                yield span
            except BaseException as exc:
                _mark_error(span, exc)
                raise

    @contextmanager
    def invocation(
        self, *, session_id: str, caller: str | None = None, model: str | None = None
    ) -> Iterator[Span]:
        """Span ``invoke_agent <agent>`` around one ``POST /invocations``; exceptions recorded, re-raised."""
        attrs = self._base("invoke_agent") | {
            "gen_ai.conversation.id": session_id,
            "session.id": session_id,  # what AgentCore observability groups by (runtime.observe.baggage)
            "gen_ai.request.model": model,
            "agentkit.caller": caller,
        }
        with self._span(f"invoke_agent {self.agent}", attrs) as span:
            yield span

    @contextmanager
    def turn(self, *, model: str, claude_session_id: str | None = None) -> Iterator[Span]:
        """Span ``chat <model>`` around one prompt → result exchange with the CLI; pass its span to
        :func:`record_turn_result` once the ``ResultMessage`` arrives."""
        attrs = self._base("chat") | {
            "gen_ai.request.model": model,
            "session.id": _session_baggage(),
            "agentkit.claude_session_id": claude_session_id,
        }
        with self._span(f"chat {model}", attrs) as span:
            yield span

    def approval_event(self, event: str, attributes: Mapping[str, Any]) -> None:
        """Span ``approval.<event>`` (requested, approved, denied, expired, used, withdrawn) with the session's ``session.id``,
        so it groups with the session's other spans; ended at once (the wait itself spans processes)."""
        with self._span(f"approval.{event}", {"agentkit.approval.event": event, **attributes}):
            pass

    @contextmanager
    def session_op(
        self, op: Literal["load", "flush", "resume"], *, session_id: str, store: str | None = None
    ) -> Iterator[Span]:
        """Span ``session.<op>`` around a session-store load / flush."""
        attrs = {
            "agentkit.session.op": op,
            "gen_ai.conversation.id": session_id,
            "agentkit.session.store": store,
        }
        with self._span(f"session.{op}", attrs) as span:
            yield span

    def start_tool(self, *, tool_name: str, tool_use_id: str | None, parent: Context | None = None) -> Span:
        """Start (not activate) ``execute_tool <name>`` under ``parent`` (None: the current context)."""
        attrs = self._base("execute_tool") | {
            "gen_ai.tool.name": tool_name,
            "session.id": _session_baggage(parent),
            "gen_ai.tool.call.id": tool_use_id,
        }
        return self.tracer.start_span(f"execute_tool {tool_name}", context=parent, attributes=_clean(attrs))

    @staticmethod
    def end_tool(span: Span, *, error: str | None = None, latency_ms: float | None = None) -> None:
        """End a tool span; ``error`` marks it failed (status ERROR, ``error.type`` = ``tool_error``)."""
        if latency_ms is not None:
            span.set_attribute("agentkit.tool.latency_ms", float(latency_ms))
        if error is not None:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, error[:500]))
        span.end()


def record_turn_result(
    span: Span,
    cost: TurnCost,
    *,
    sdk_cost_usd: float | None = None,
    num_turns: int | None = None,
    subtype: str | None = None,
    is_error: bool = False,
    time_to_first_token_ms: float | None = None,
    response_model: str | None = None,
) -> None:
    """Put usage, cost and outcome of a ``ResultMessage`` on ``span`` (usually the turn span and, for a
    one-turn invocation, the invocation span too). An error result sets status ERROR."""
    attrs = {
        "gen_ai.usage.input_tokens": cost.input_tokens + cost.cache_read_tokens + cost.cache_write_tokens,
        "gen_ai.usage.output_tokens": cost.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": cost.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": cost.cache_write_tokens,
        "agentkit.usage.uncached_input_tokens": cost.input_tokens,
        "agentkit.cost_usd": cost.total_cost_usd,
        "agentkit.cost_complete": cost.complete,
        "agentkit.sdk_cost_usd": sdk_cost_usd,
        "agentkit.num_turns": num_turns,
        "agentkit.result_subtype": subtype,
        "agentkit.time_to_first_token_ms": time_to_first_token_ms,
        "gen_ai.response.model": response_model or (next(iter(cost.per_model), None)),
    }
    if cost.unknown_models:
        attrs["agentkit.unknown_models"] = ",".join(cost.unknown_models)
    span.set_attributes(_clean(attrs))
    if is_error:
        span.set_attribute("error.type", subtype or "agent_error")
        span.set_status(Status(StatusCode.ERROR, f"result subtype {subtype}"))
