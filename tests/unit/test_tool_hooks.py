"""Tool hooks driven with the SDK's real hook input shapes: timing, counts, spans, denials, no raising."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from runtime.observe.metrics import EmfMetrics, ToolRecord
from runtime.observe.tool_hooks import ToolTelemetry
from runtime.observe.tracing import Tracing

CLAUDE_SESSION = "5b0a3f7e-1111-5222-8333-444455556666"


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _base(event: str, tool: str, tool_use_id: str, **extra: object) -> dict[str, object]:
    return {
        "session_id": CLAUDE_SESSION,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/work",
        "permission_mode": "default",
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": {"command": "ls -la", "description": "list"},
        "tool_use_id": tool_use_id,
        **extra,
    }


@pytest.fixture
def setup():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider.get_tracer("test"), agent="demo")
    out = io.StringIO()
    metrics = EmfMetrics(namespace="T", agent="demo", stream=out)
    clock = Clock()
    telemetry = ToolTelemetry(metrics, tracing, clock=clock, session_id="rt-1", caller="octocat")
    return telemetry, tracing, exporter, out, clock


def _docs(out: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_success_and_failure_are_timed_counted_and_traced(setup) -> None:
    telemetry, tracing, exporter, out, clock = setup

    async def turn() -> None:
        with tracing.turn(model="m") as span, telemetry.bind(span, claude_session_id=CLAUDE_SESSION):
            await telemetry.pre_tool_use(_base("PreToolUse", "Bash", "toolu_1"), "toolu_1", {"signal": None})
            clock.t += 0.25
            out_ = await telemetry.post_tool_use(
                _base("PostToolUse", "Bash", "toolu_1", tool_response={"stdout": "x"}),
                "toolu_1",
                {"signal": None},
            )
            assert out_ == {}
            await telemetry.pre_tool_use(_base("PreToolUse", "Read", "toolu_2"), "toolu_2", {"signal": None})
            clock.t += 0.5
            await telemetry.post_tool_use_failure(
                _base("PostToolUseFailure", "Read", "toolu_2", error="ENOENT: no such file", duration_ms=42),
                "toolu_2",
                {"signal": None},
            )

    asyncio.run(turn())
    bash, read = _docs(out)
    assert bash["Tool"] == "Bash" and bash["ToolCalls"] == [1.0] and bash["ToolErrors"] == [0.0]
    assert bash["ToolLatencyMs"] == [250.0]
    assert bash["SessionId"] == "rt-1" and bash["ToolUseId"] == "toolu_1" and bash["Caller"] == "octocat"
    assert read["Tool"] == "Read" and read["ToolErrors"] == [1.0]
    assert read["ToolLatencyMs"] == [42.0]  # the CLI's duration_ms wins over our clock
    spans = {s.name: s for s in exporter.get_finished_spans()}
    turn_span = spans["chat m"]
    for name in ("execute_tool Bash", "execute_tool Read"):
        assert spans[name].parent.span_id == turn_span.context.span_id
    assert spans["execute_tool Read"].status.status_code == StatusCode.ERROR
    assert "ENOENT" in spans["execute_tool Read"].status.description
    assert "ls -la" not in json.dumps({k: dict(s.attributes) for k, s in spans.items()})  # no tool args
    assert telemetry.pending == 0 and telemetry.errors == 0


def test_hooks_running_in_a_foreign_context_still_nest_under_the_bound_turn(setup) -> None:
    """The SDK runs hook callbacks in tasks created at connect time, outside the turn's context."""
    telemetry, tracing, exporter, _, _ = setup

    async def main() -> None:
        inbox: asyncio.Queue = asyncio.Queue()

        async def reader() -> None:  # created before the turn span exists, like the SDK's read task
            while (item := await inbox.get()) is not None:
                await item
                inbox.task_done()

        task = asyncio.create_task(reader())
        with tracing.turn(model="m") as span, telemetry.bind(span, claude_session_id=CLAUDE_SESSION):
            await inbox.put(telemetry.pre_tool_use(_base("PreToolUse", "Grep", "t9"), "t9", None))
            await inbox.put(telemetry.post_tool_use(_base("PostToolUse", "Grep", "t9"), "t9", None))
            await inbox.join()  # both hooks ran inside the turn span
        await inbox.put(None)
        await task

    asyncio.run(main())
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert spans["execute_tool Grep"].parent.span_id == spans["chat m"].context.span_id


def test_denied_tool_counts_tool_denied_only(setup) -> None:
    telemetry, _, exporter, out, _ = setup
    asyncio.run(telemetry.pre_tool_use(_base("PreToolUse", "Write", "t3"), "t3", None))
    telemetry.record_denied("Write", tool_use_id="t3")
    telemetry.record_denied("WebFetch")
    write, fetch = _docs(out)
    assert write["Tool"] == "Write" and write["ToolDenied"] == [1.0] and "ToolCalls" not in write
    assert fetch["Tool"] == "WebFetch" and fetch["ToolDenied"] == [1.0]
    (span,) = exporter.get_finished_spans()
    assert span.attributes["agentkit.tool.denied"] is True
    assert telemetry.pending == 0


def test_denial_before_its_pre_tool_use_leaves_no_open_call(setup) -> None:
    # The CLI may run the policy's PreToolUse callback before ours: the later PreToolUse must not open a
    # call that the turn's end would close as abandoned (a ToolError).
    telemetry, tracing, exporter, out, _ = setup

    async def turn() -> None:
        with tracing.turn(model="m") as span, telemetry.bind(span, claude_session_id=CLAUDE_SESSION):
            telemetry.record_denied("Bash", tool_use_id="t9", claude_session_id=CLAUDE_SESSION)
            await telemetry.pre_tool_use(_base("PreToolUse", "Bash", "t9"), "t9", None)
            assert telemetry.pending == 0
            await telemetry.pre_tool_use(_base("PreToolUse", "Bash", "t10"), "t10", None)  # another call
            assert telemetry.pending == 1

    asyncio.run(turn())
    denied, abandoned = _docs(out)
    assert denied["Tool"] == "Bash" and denied["ToolDenied"] == [1.0] and "ToolErrors" not in denied
    assert denied["SessionId"] == "rt-1" and denied["ToolUseId"] == "t9"
    assert abandoned["ToolUseId"] == "t10" and abandoned["ToolErrors"] == [1.0]
    assert [s.name for s in exporter.get_finished_spans()] == ["execute_tool Bash", "chat m"]


def test_turn_end_closes_abandoned_tool_calls(setup) -> None:
    telemetry, tracing, exporter, out, clock = setup

    async def turn() -> None:
        with tracing.turn(model="m") as span, telemetry.bind(span, claude_session_id=CLAUDE_SESSION):
            await telemetry.pre_tool_use(_base("PreToolUse", "Bash", "t4"), "t4", None)
            clock.t += 1.0  # interrupted: no PostToolUse

    asyncio.run(turn())
    (doc,) = _docs(out)
    assert doc["ToolErrors"] == [1.0] and doc["ToolLatencyMs"] == [1000.0]
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert spans["execute_tool Bash"].status.status_code == StatusCode.ERROR
    assert telemetry.pending == 0


def test_post_without_pre_is_still_counted(setup) -> None:
    telemetry, _, _, out, _ = setup
    asyncio.run(telemetry.post_tool_use(_base("PostToolUse", "Glob", "t5", duration_ms=3), None, None))
    (doc,) = _docs(out)
    assert doc["Tool"] == "Glob" and doc["ToolCalls"] == [1.0] and doc["ToolLatencyMs"] == [3.0]


def test_callbacks_never_raise(setup) -> None:
    telemetry, _, _, _, _ = setup

    class Exploding:
        def record_tool(self, record: ToolRecord) -> None:
            raise RuntimeError("sink bug")

    bad = ToolTelemetry(Exploding(), None)  # type: ignore[arg-type]

    async def drive() -> list[dict]:
        return [
            await bad.pre_tool_use(_base("PreToolUse", "Bash", "t6"), "t6", None),
            await bad.post_tool_use(_base("PostToolUse", "Bash", "t6"), "t6", None),
            await telemetry.pre_tool_use({"hook_event_name": "PreToolUse"}, None, None),  # no tool_use_id
            await telemetry.post_tool_use_failure("not a mapping", None, None),  # type: ignore[arg-type]
        ]

    assert asyncio.run(drive()) == [{}, {}, {}, {}]
    bad.record_denied("Bash")
    assert bad.errors == 2 and telemetry.errors == 2


def test_hooks_merge_into_agent_options(setup) -> None:
    telemetry, *_ = setup
    hooks = telemetry.hooks(timeout=5)
    assert set(hooks) == {"PreToolUse", "PostToolUse", "PostToolUseFailure"}
    for matchers in hooks.values():
        (matcher,) = matchers
        assert isinstance(matcher, HookMatcher) and matcher.matcher is None and matcher.timeout == 5
        assert len(matcher.hooks) == 1 and asyncio.iscoroutinefunction(matcher.hooks[0])
    options = ClaudeAgentOptions(hooks=hooks)  # type: ignore[arg-type]
    assert options.hooks is hooks


def test_shared_telemetry_tags_each_session(setup) -> None:
    _, tracing, exporter, out, _ = setup
    shared = ToolTelemetry(EmfMetrics(namespace="T", agent="demo", stream=out), tracing)

    def hook_input(event: str, claude_session: str, tid: str) -> dict[str, object]:
        return {**_base(event, "Bash", tid), "session_id": claude_session}

    async def main() -> None:
        with (
            tracing.turn(model="a") as span_a,
            shared.bind(span_a, claude_session_id="claude-a", session_id="rt-a", caller="alice"),
            tracing.turn(model="b") as span_b,
            shared.bind(span_b, claude_session_id="claude-b", session_id="rt-b", caller="bob"),
        ):
            await shared.pre_tool_use(hook_input("PreToolUse", "claude-a", "ta"), "ta", None)
            await shared.pre_tool_use(hook_input("PreToolUse", "claude-b", "tb"), "tb", None)
            await shared.post_tool_use(hook_input("PostToolUse", "claude-b", "tb"), "tb", None)
            await shared.post_tool_use(hook_input("PostToolUse", "claude-a", "ta"), "ta", None)
            shared.record_denied("Write", claude_session_id="claude-a")

    asyncio.run(main())
    b, a, denied = _docs(out)
    assert (a["SessionId"], a["Caller"], a["ToolUseId"]) == ("rt-a", "alice", "ta")
    assert (b["SessionId"], b["Caller"], b["ToolUseId"]) == ("rt-b", "bob", "tb")
    assert (denied["SessionId"], denied["ToolDenied"]) == ("rt-a", [1.0])
    spans = {s.name: s for s in exporter.get_finished_spans() if s.name.startswith("chat")}
    tools = [s for s in exporter.get_finished_spans() if s.name == "execute_tool Bash"]
    parents = {s.attributes["gen_ai.tool.call.id"]: s.parent.span_id for s in tools}
    assert parents == {"ta": spans["chat a"].context.span_id, "tb": spans["chat b"].context.span_id}
