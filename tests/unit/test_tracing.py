"""Spans nest invocation → turn → tool call (plus session load/flush) and carry GenAI attributes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from runtime.errors import BudgetExceeded
from runtime.observe.costs import compute_turn_cost
from runtime.observe.tracing import Tracing, record_turn_result

SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracing(exporter: InMemorySpanExporter) -> Tracing:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Tracing(provider.get_tracer("test"), agent="demo")


def attrs(span: ReadableSpan) -> Mapping[str, Any]:
    assert span.attributes is not None
    return span.attributes


def parent_id(span: ReadableSpan) -> int:
    assert span.parent is not None, f"{span.name} has no parent"
    return span.parent.span_id


def _by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {s.name: s for s in exporter.get_finished_spans()}


def test_invocation_turn_tool_and_session_spans_nest(
    tracing: Tracing, exporter: InMemorySpanExporter
) -> None:
    cost = compute_turn_cost(
        {
            SONNET: {
                "inputTokens": 1200,
                "outputTokens": 350,
                "cacheReadInputTokens": 20_000,
                "cacheCreationInputTokens": 4000,
            }
        },
        None,
        default_model=SONNET,
    )
    with tracing.invocation(session_id="rt-1", caller="octocat", model=SONNET) as inv:
        with tracing.session_op("load", session_id="c-1", store="sqlite"):
            pass
        with tracing.turn(model=SONNET, claude_session_id="c-1") as turn:
            tool = tracing.start_tool(tool_name="Bash", tool_use_id="toolu_01")
            Tracing.end_tool(tool, latency_ms=12.5)
            record_turn_result(
                turn, cost, sdk_cost_usd=0.02, num_turns=2, subtype="success", time_to_first_token_ms=90.0
            )
        with tracing.session_op("flush", session_id="c-1", store="sqlite"):
            pass
    spans = _by_name(exporter)
    assert set(spans) == {
        "invoke_agent demo",
        "session.load",
        "chat " + SONNET,
        "execute_tool Bash",
        "session.flush",
    }
    inv_s, turn_s, tool_s = spans["invoke_agent demo"], spans["chat " + SONNET], spans["execute_tool Bash"]
    assert inv_s.parent is None
    assert parent_id(turn_s) == inv.get_span_context().span_id
    assert parent_id(tool_s) == turn.get_span_context().span_id
    assert parent_id(spans["session.load"]) == inv_s.context.span_id
    assert parent_id(spans["session.flush"]) == inv_s.context.span_id
    assert len({s.context.trace_id for s in spans.values()}) == 1

    assert attrs(inv_s)["gen_ai.system"] == "aws.bedrock"
    assert attrs(inv_s)["gen_ai.operation.name"] == "invoke_agent"
    assert attrs(inv_s)["gen_ai.conversation.id"] == "rt-1"
    assert attrs(inv_s)["agentkit.caller"] == "octocat"
    t = attrs(turn_s)
    assert t["gen_ai.request.model"] == SONNET
    assert t["gen_ai.usage.input_tokens"] == 1200 + 20_000 + 4000
    assert t["gen_ai.usage.output_tokens"] == 350
    assert t["gen_ai.usage.cache_read.input_tokens"] == 20_000
    assert t["gen_ai.usage.cache_creation.input_tokens"] == 4000
    assert t["agentkit.cost_usd"] == pytest.approx(0.032835)
    assert t["agentkit.sdk_cost_usd"] == 0.02
    assert t["agentkit.num_turns"] == 2
    assert turn_s.status.status_code == StatusCode.UNSET
    assert attrs(tool_s)["gen_ai.tool.name"] == "Bash"
    assert attrs(tool_s)["gen_ai.tool.call.id"] == "toolu_01"
    assert attrs(tool_s)["agentkit.tool.latency_ms"] == 12.5


def test_error_result_and_exceptions_mark_spans(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    cost = compute_turn_cost(None, None, default_model=SONNET)
    with pytest.raises(BudgetExceeded), tracing.invocation(session_id="rt-2"):
        with tracing.turn(model=SONNET) as turn:
            record_turn_result(turn, cost, subtype="error_max_turns", is_error=True)
        raise BudgetExceeded("session budget spent")
    spans = _by_name(exporter)
    turn_s, inv_s = spans["chat " + SONNET], spans["invoke_agent demo"]
    assert turn_s.status.status_code == StatusCode.ERROR
    assert attrs(turn_s)["error.type"] == "error_max_turns"
    assert inv_s.status.status_code == StatusCode.ERROR
    assert attrs(inv_s)["error.type"] == "budget_exceeded"
    assert any(e.name == "exception" for e in inv_s.events)


def test_failed_tool_span(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    span = tracing.start_tool(tool_name="Read", tool_use_id="t2")
    Tracing.end_tool(span, error="file not found")
    (s,) = exporter.get_finished_spans()
    assert s.status.status_code == StatusCode.ERROR and s.status.description == "file not found"
    assert attrs(s)["error.type"] == "tool_error"


def test_default_tracer_works_without_a_provider() -> None:
    tracing = Tracing()  # global no-op (or whatever provider is installed)
    with tracing.invocation(session_id="x"), tracing.turn(model=SONNET) as span:
        record_turn_result(span, compute_turn_cost(None, None, default_model=SONNET))
