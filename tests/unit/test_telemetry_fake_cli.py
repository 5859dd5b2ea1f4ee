"""Tool hooks, spans and per-turn cost through the real claude-agent-sdk and the fake CLI on a warm client.

Checks the hook input shapes the telemetry relies on, span nesting when hooks run in the SDK's own tasks,
and that cumulative ``model_usage`` is priced once per turn (hand-computed from the fake's fixed usage).
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness import fake_claude as fc
from harness.cli import write_fake_cli
from runtime.observe.costs import TurnCostTracker
from runtime.observe.metrics import EmfMetrics, TurnRecord
from runtime.observe.tool_hooks import ToolTelemetry
from runtime.observe.tracing import Tracing, record_turn_result

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
CALL_USD_REGIONAL = fc.CALL_COST_USD * 1.1  # 0.007245 at global Sonnet 4.5 list price, +10 % for us.


async def _prompt(text: str) -> AsyncIterator[dict[str, Any]]:
    yield {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None}


def test_warm_client_tool_metrics_spans_and_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(tmp_path / "fake.log"))
    (tmp_path / "work").mkdir()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider.get_tracer("t"), agent="demo")
    out = io.StringIO()
    metrics = EmfMetrics(namespace="T", agent="demo", stream=out)
    tools = ToolTelemetry(metrics, tracing, session_id="rt-1")
    tracker = TurnCostTracker(default_model=MODEL)
    options = ClaudeAgentOptions(
        cli_path=str(write_fake_cli(tmp_path)),
        cwd=str(tmp_path / "work"),
        env={"CLAUDE_CONFIG_DIR": str(tmp_path / "config")},
        model=MODEL,
        allowed_tools=["Bash"],
        hooks=tools.hooks(),  # type: ignore[arg-type]
    )

    async def go() -> list[tuple[ResultMessage, float]]:
        results = []
        async with ClaudeSDKClient(options) as client:
            for text in ("[bash:ls]", "[bash:pwd] [bash:whoami]"):
                with (
                    tracing.invocation(session_id="rt-1"),
                    tracing.turn(model=MODEL) as span,
                    tools.bind(span),
                ):
                    await client.query(_prompt(text))
                    messages = [m async for m in client.receive_response()]
                    result = next(m for m in messages if isinstance(m, ResultMessage))
                    cost = tracker.price(result.model_usage, result.usage)
                    record_turn_result(
                        span, cost, sdk_cost_usd=result.total_cost_usd, num_turns=result.num_turns
                    )
                    metrics.record_turn(TurnRecord(model=MODEL, cost=cost, invocation_latency_ms=1.0))
                    results.append((result, cost.total_cost_usd))
        return results

    (first, cost1), (second, cost2) = asyncio.run(asyncio.wait_for(go(), timeout=30))
    # turn 1: 2 model calls (tool + reply); turn 2: 3. model_usage is cumulative (5 calls), priced per turn.
    assert (first.num_turns, second.num_turns) == (2, 3)
    assert cost1 == pytest.approx(2 * CALL_USD_REGIONAL)
    assert cost2 == pytest.approx(3 * CALL_USD_REGIONAL)
    assert second.total_cost_usd == pytest.approx(5 * fc.CALL_COST_USD)  # the SDK's cumulative figure

    docs = [json.loads(line) for line in out.getvalue().splitlines()]
    tool_docs = [d for d in docs if "Tool" in d]
    assert [d["Tool"] for d in tool_docs] == ["Bash", "Bash", "Bash"]
    assert all(
        d["ToolCalls"] == [1.0] and d["ToolErrors"] == [0.0] and d["ToolLatencyMs"][0] >= 0 for d in tool_docs
    )
    assert all(d["ToolUseId"].startswith("toolu_") for d in tool_docs)
    turn_docs = [d for d in docs if "Turns" in d]
    assert [d["InputTokens"] for d in turn_docs] == [[2000.0], [3000.0]]

    spans = exporter.get_finished_spans()
    turns = [s for s in spans if s.name == f"chat {MODEL}"]
    tool_spans = [s for s in spans if s.name == "execute_tool Bash"]
    assert len(turns) == 2 and len(tool_spans) == 3
    assert [s.parent.span_id if s.parent else None for s in tool_spans] == [turns[0].context.span_id] + [
        turns[1].context.span_id
    ] * 2
    assert tools.pending == 0 and tools.errors == 0
