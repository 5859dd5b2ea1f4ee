"""Issue 16 item 10: the runtime's spans continue the trace AgentCore passes in and carry ``session.id``.

In-memory span exporter; the real observer (invocation → turn spans) and the real tool hooks (tool span
from a PreToolUse/PostToolUse pair, run from another task as the SDK does).
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry import baggage, propagate, trace
from opentelemetry.processor.baggage import BaggageSpanProcessor
from opentelemetry.propagate import get_global_textmap, set_global_textmap
from opentelemetry.propagators.aws import AwsXRayPropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from runtime.observe.baggage import SESSION_BAGGAGE_KEY, invocation_context, session_of, trace_headers
from runtime.observe.observer import Observer
from runtime.observe.tracing import Tracing

SESSION = "rt-session-0123456789abcdef0123456789abcdef"
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    # What ADOT's configurator adds under AGENT_OBSERVABILITY_ENABLED: baggage session.id -> span attribute.
    provider.add_span_processor(BaggageSpanProcessor(lambda key: key == SESSION_BAGGAGE_KEY))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


@pytest.fixture
def adot_propagators():
    """The propagators ADOT's distro installs (``baggage,xray,tracecontext``), restored afterwards."""
    from opentelemetry.baggage.propagation import W3CBaggagePropagator

    previous = get_global_textmap()
    set_global_textmap(
        CompositePropagator([W3CBaggagePropagator(), AwsXRayPropagator(), TraceContextTextMapPropagator()])
    )
    yield
    set_global_textmap(previous)


def run_turn(telemetry: Observer, trace_headers: dict[str, str] | None, *, tool: bool = True) -> None:
    """The turn's spans as the runtime makes them: on a task of their own (the session's), with the tool
    span opened and closed by the hook callbacks from yet another task."""
    session = SimpleNamespace(runtime_session_id=SESSION, actor_id="octocat", claude_session_id="claude-1")
    request = SimpleNamespace(metadata={}, trace_headers=trace_headers)

    async def hooks() -> None:
        hook_input = {"session_id": "claude-1", "tool_name": "Bash", "tool_input": {"command": "ls"}}
        await telemetry.tools.pre_tool_use(hook_input, "toolu_1", None)
        await telemetry.tools.post_tool_use({**hook_input, "tool_response": "ok"}, "toolu_1", None)

    async def session_task() -> None:
        with telemetry.turn_span(session, request):
            if tool:
                await asyncio.create_task(hooks())

    asyncio.run(session_task())


def spans_by_name(exporter: InMemorySpanExporter) -> dict[str, Any]:
    return {s.name: s for s in exporter.get_finished_spans()}


def test_spans_continue_the_callers_w3c_trace_and_carry_session_id(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    telemetry = Observer(tracing=Tracing(provider.get_tracer("t"), agent="demo"), model="m")
    headers = {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01", "Authorization": "Bearer x"}
    run_turn(telemetry, trace_headers(headers))

    spans = spans_by_name(exporter)
    invocation, turn, tool = spans["invoke_agent demo"], spans["chat m"], spans["execute_tool Bash"]
    for span in (invocation, turn, tool):
        assert format(span.context.trace_id, "032x") == CALLER_TRACE
        assert span.attributes["session.id"] == SESSION
    assert format(invocation.parent.span_id, "016x") == CALLER_SPAN and invocation.parent.is_remote
    assert turn.parent.span_id == invocation.context.span_id
    assert tool.parent.span_id == turn.context.span_id


def test_x_amzn_trace_id_is_continued_with_adots_propagators(
    provider: TracerProvider, exporter: InMemorySpanExporter, adot_propagators: None
) -> None:
    telemetry = Observer(tracing=Tracing(provider.get_tracer("t"), agent="demo"), model="m")
    headers = {
        "X-Amzn-Trace-Id": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    }
    run_turn(telemetry, trace_headers(headers), tool=False)
    invocation = spans_by_name(exporter)["invoke_agent demo"]
    assert format(invocation.context.trace_id, "032x") == "5759e988bd862e3fe1be46a994272793"
    assert format(invocation.parent.span_id, "016x") == "53995c3f42cd8ad8"


def test_without_trace_headers_a_new_trace_still_carries_the_session(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    ctx = invocation_context({"Authorization": "Bearer x"}, SESSION)
    assert session_of(ctx) == SESSION
    assert trace.get_current_span(ctx).get_span_context().is_valid is False
    run_turn(Observer(tracing=Tracing(provider.get_tracer("t"), agent="demo"), model="m"), None)
    spans = spans_by_name(exporter)
    invocation = spans["invoke_agent demo"]
    assert invocation.parent is None
    assert {s.attributes["session.id"] for s in spans.values()} == {SESSION}


def test_baggage_reaches_spans_of_other_libraries_in_the_turn(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A span another instrumentation (e.g. botocore) opens inside the turn gets ``session.id`` from the
    baggage through ADOT's BaggageSpanProcessor; the session id the caller sent as baggage is replaced by ours."""
    ctx = invocation_context({"baggage": "session.id=spoofed,other=1"}, SESSION)
    assert session_of(ctx) == SESSION and baggage.get_baggage("other", ctx) == "1"
    from opentelemetry import context as otel_context

    token = otel_context.attach(ctx)
    try:
        with provider.get_tracer("botocore").start_as_current_span("BedrockAgentCore.CreateEvent"):
            pass
    finally:
        otel_context.detach(token)
    (span,) = exporter.get_finished_spans()
    assert span.attributes is not None and span.attributes["session.id"] == SESSION


def test_invocation_context_ignores_non_trace_headers() -> None:
    ctx = invocation_context({"X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor": "a", "Cookie": "x"}, SESSION)
    assert dict(baggage.get_all(ctx)) == {SESSION_BAGGAGE_KEY: SESSION}
    assert propagate.extract({}) is not None  # the global propagators stay usable
