"""Session registry lifecycle: FIFO per session, isolation, idle eviction, recovery after a failed turn.

The registry is the unit under test; the turn runner is its collaborator, replaced by a recording one.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runtime.errors import AgentProcessError, SessionBusy
from runtime.sessions import SessionRegistry, TurnRequest

pytestmark = pytest.mark.anyio


class RecordingRunner:
    def __init__(self) -> None:
        self.connects: list[str] = []
        self.disconnects: list[str] = []
        self.log: list[tuple[str, str, str]] = []

    async def connect(self, session: Any, request: TurnRequest) -> Any:
        self.connects.append(session.key)
        runner = self

        class Client:
            async def disconnect(self) -> None:
                runner.disconnects.append(session.key)

        return Client()

    def wants_reconnect(self, session: Any, request: TurnRequest) -> bool:
        return False

    async def run_turn(self, session: Any, client: Any, request: TurnRequest, emit: Any) -> None:
        self.log.append(("start", session.key, request.prompt))
        if request.prompt == "fail":
            raise AgentProcessError("CLI died")
        await asyncio.sleep(0.02)
        self.log.append(("end", session.key, request.prompt))
        await emit({"type": "result", "text": request.prompt})


async def _collect(registry: SessionRegistry, key: str, prompt: str) -> list[dict]:
    events = await registry.invoke(
        key=key,
        runtime_session_id=key,
        claude_session_id=key,
        actor_id=None,
        request=TurnRequest(prompt=prompt),
    )
    return [e async for e in events]


async def test_turns_on_one_session_run_in_arrival_order_without_interleaving() -> None:
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10)
    results = await asyncio.gather(*(_collect(registry, "s1", f"p{i}") for i in range(5)))
    assert [r[-1]["text"] for r in results] == [f"p{i}" for i in range(5)]
    assert runner.log == [(kind, "s1", f"p{i}") for i in range(5) for kind in ("start", "end")]
    assert runner.connects == ["s1"]
    await registry.close_all()
    assert runner.disconnects == ["s1"]


async def test_sessions_run_concurrently_and_separately() -> None:
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10)
    await asyncio.gather(_collect(registry, "a", "x"), _collect(registry, "b", "y"))
    assert sorted(runner.connects) == ["a", "b"]
    starts = [i for i, entry in enumerate(runner.log) if entry[0] == "start"]
    assert starts == [0, 1]  # both started before either ended
    await registry.close_all()


async def test_failed_turn_yields_error_event_and_next_turn_reconnects() -> None:
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10)
    failed = await _collect(registry, "s", "fail")
    assert failed == [{"type": "error", "code": "agent_process_error", "message": "CLI died"}]
    ok = await _collect(registry, "s", "again")
    assert ok[-1]["text"] == "again"
    assert runner.connects == ["s", "s"] and runner.disconnects == ["s"]
    await registry.close_all()


async def test_idle_session_is_evicted_and_recreated() -> None:
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=0.05, max_queued=10)
    await _collect(registry, "s", "one")
    await asyncio.sleep(0.2)
    assert len(registry) == 0 and runner.disconnects == ["s"]
    await _collect(registry, "s", "two")
    assert runner.connects == ["s", "s"]
    await registry.close_all()


async def test_too_many_waiting_turns_are_refused() -> None:
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=2)
    first = asyncio.ensure_future(_collect(registry, "s", "a"))
    while not runner.log:  # "a" is running; the queue is empty again
        await asyncio.sleep(0.001)
    await registry.invoke(
        key="s", runtime_session_id="s", claude_session_id="s", actor_id=None, request=TurnRequest(prompt="b")
    )
    await registry.invoke(
        key="s", runtime_session_id="s", claude_session_id="s", actor_id=None, request=TurnRequest(prompt="c")
    )
    with pytest.raises(SessionBusy, match="already waiting"):
        await registry.invoke(
            key="s",
            runtime_session_id="s",
            claude_session_id="s",
            actor_id=None,
            request=TurnRequest(prompt="d"),
        )
    await first
    await registry.close_all()


class ChattyRunner(RecordingRunner):
    async def run_turn(self, session: Any, client: Any, request: TurnRequest, emit: Any) -> None:
        for word in ("a", "b", "c"):
            await emit({"type": "text", "text": word})
        await emit({"type": "tool_use", "id": "t1", "name": "x", "input_summary": "{}"})
        await emit({"type": "text", "text": "d"})
        await emit({"type": "result", "text": "abcd"})


async def test_waiting_text_deltas_are_merged_and_order_is_kept() -> None:
    registry = SessionRegistry(runner=ChattyRunner(), idle_timeout_s=5, max_queued=10)
    events = await registry.invoke(
        key="s", runtime_session_id="s", claude_session_id="s", actor_id=None, request=TurnRequest(prompt="p")
    )
    await asyncio.sleep(0.05)  # everything is queued before the consumer reads
    received = [e async for e in events]
    assert [e["type"] for e in received] == ["text", "tool_use", "text", "result"]
    assert [e["text"] for e in received if e["type"] == "text"] == ["abc", "d"]
    await registry.close_all()


class SlowRunner(RecordingRunner):
    async def run_turn(self, session: Any, client: Any, request: TurnRequest, emit: Any) -> None:
        await emit({"type": "text", "text": "working"})
        await asyncio.sleep(60)


async def test_shutdown_ends_running_and_queued_turns_with_a_retryable_error() -> None:
    runner = SlowRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10)
    running = await registry.invoke(
        key="s", runtime_session_id="s", claude_session_id="s", actor_id=None, request=TurnRequest(prompt="a")
    )
    queued = await registry.invoke(
        key="s", runtime_session_id="s", claude_session_id="s", actor_id=None, request=TurnRequest(prompt="b")
    )
    first = await running.__anext__()
    assert first == {"type": "text", "text": "working"} and registry.active_turns == 1
    await asyncio.wait_for(registry.close_all(), timeout=5)  # does not wait for the 60 s turn
    assert [e async for e in running][-1]["code"] == "shutting_down"
    assert [e async for e in queued][-1]["code"] == "shutting_down"
    assert runner.disconnects == ["s"] and registry.active_turns == 0 and len(registry) == 0
