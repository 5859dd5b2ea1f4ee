"""Session registry lifecycle: FIFO per session, isolation, idle eviction, recovery after a failed turn.

The registry is the unit under test; the turn runner is its collaborator, replaced by a recording one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from runtime.errors import AgentKitError, AgentProcessError, SessionBusy
from runtime.protocol import Failure
from runtime.sessions import SessionRegistry
from runtime.turn_request import TurnRequest

pytestmark = pytest.mark.anyio


async def until(predicate: Any, timeout: float = 5.0) -> None:
    """Wait, yielding to the loop, until ``predicate()`` holds; fail after ``timeout`` seconds."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.001)


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

    def check_request(self, request: TurnRequest) -> None:
        return None

    async def prepare(self, session: Any, request: TurnRequest) -> None:
        return None

    def wants_reconnect(self, session: Any, request: TurnRequest) -> bool:
        return False

    async def run_turn(self, session: Any, client: Any, request: TurnRequest, emit: Any) -> None:
        self.log.append(("start", session.key, request.prompt))
        if request.prompt == "fail":
            raise AgentProcessError("CLI died")
        for _ in range(5):  # give the loop to anything else that is ready (another turn must not start here)
            await asyncio.sleep(0)
        self.log.append(("end", session.key, request.prompt))
        await emit({"type": "result", "text": request.prompt})


def _code(item: Any) -> str:
    """The error code a turn ended with ("ok" for a result)."""
    return item.event["code"] if isinstance(item, Failure) else "ok"


async def _invoke(registry: SessionRegistry, key: str, prompt: str) -> AsyncIterator[Any]:
    """Queue ``prompt`` on session ``key`` (one id for the registry, runtime and Claude session; no actor)."""
    return await registry.invoke(
        key=key,
        runtime_session_id=key,
        claude_session_id=key,
        actor_id=None,
        request=TurnRequest(prompt=prompt),
    )


async def _collect(registry: SessionRegistry, key: str, prompt: str) -> list[Any]:
    return [e async for e in await _invoke(registry, key, prompt)]


async def test_turns_on_one_session_run_in_arrival_order_without_interleaving() -> None:
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10)
    results = await asyncio.gather(*(_collect(registry, "s1", f"p{i}") for i in range(5)))
    assert [r[-1]["text"] for r in results] == [f"p{i}" for i in range(5)]
    assert runner.log == [(kind, "s1", f"p{i}") for i in range(5) for kind in ("start", "end")]
    assert runner.connects == ["s1"]
    await registry.close_all()
    assert runner.disconnects == ["s1"]


class RendezvousRunner(RecordingRunner):
    """Each turn ends only once ``expected`` turns have started: turns run one after another deadlock here."""

    def __init__(self, expected: int) -> None:
        super().__init__()
        self.expected = expected
        self.all_started = asyncio.Event()

    async def run_turn(self, session: Any, client: Any, request: TurnRequest, emit: Any) -> None:
        self.log.append(("start", session.key, request.prompt))
        if sum(1 for entry in self.log if entry[0] == "start") == self.expected:
            self.all_started.set()
        await self.all_started.wait()
        self.log.append(("end", session.key, request.prompt))
        await emit({"type": "result", "text": request.prompt})


async def test_sessions_run_concurrently_and_separately() -> None:
    runner = RendezvousRunner(expected=2)
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10)
    async with asyncio.timeout(5):  # a registry that ran sessions one at a time never gets both started
        await asyncio.gather(_collect(registry, "a", "x"), _collect(registry, "b", "y"))
    assert sorted(runner.connects) == ["a", "b"]
    assert [entry[0] for entry in runner.log] == ["start", "start", "end", "end"]
    await registry.close_all()


async def test_failed_turn_yields_error_event_and_next_turn_reconnects() -> None:
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10)
    failed = await _collect(registry, "s", "fail")
    # The HTTP status travels next to the error event inside the runtime (the server unwraps it).
    assert failed == [Failure({"type": "error", "code": "agent_process_error", "message": "CLI died"}, 502)]
    ok = await _collect(registry, "s", "again")
    assert ok[-1]["text"] == "again"
    assert runner.connects == ["s", "s"] and runner.disconnects == ["s"]
    await registry.close_all()


async def test_idle_session_is_evicted_and_recreated() -> None:
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=0.05, max_queued=10)
    await _collect(registry, "s", "one")
    await until(lambda: len(registry) == 0 and runner.disconnects == ["s"])
    await _collect(registry, "s", "two")
    assert runner.connects == ["s", "s"]
    await registry.close_all()


async def test_too_many_waiting_turns_are_refused() -> None:
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=2)
    first = asyncio.ensure_future(_collect(registry, "s", "a"))
    while not runner.log:  # "a" is running; the queue is empty again
        await asyncio.sleep(0.001)
    await _invoke(registry, "s", "b")
    await _invoke(registry, "s", "c")
    with pytest.raises(SessionBusy, match="already waiting"):
        await _invoke(registry, "s", "d")
    await first
    await registry.close_all()


class ChattyRunner(RecordingRunner):
    def __init__(self) -> None:
        super().__init__()
        self.emitted = asyncio.Event()

    async def run_turn(self, session: Any, client: Any, request: TurnRequest, emit: Any) -> None:
        for word in ("a", "b", "c"):
            await emit({"type": "text", "text": word})
        await emit({"type": "tool_use", "id": "t1", "name": "x", "input_summary": "{}"})
        await emit({"type": "text", "text": "d"})
        await emit({"type": "result", "text": "abcd"})
        self.emitted.set()


async def test_waiting_text_deltas_are_merged_and_order_is_kept() -> None:
    runner = ChattyRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10)
    events = await _invoke(registry, "s", "p")
    await asyncio.wait_for(runner.emitted.wait(), 5)  # everything is queued before the consumer reads
    received: list[Any] = [e async for e in events]
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
    running = await _invoke(registry, "s", "a")
    queued = await _invoke(registry, "s", "b")
    first = await running.__anext__()
    assert first == {"type": "text", "text": "working"} and registry.active_turns == 1
    await asyncio.wait_for(registry.close_all(), timeout=5)  # does not wait for the 60 s turn
    assert _code([e async for e in running][-1]) == "shutting_down"
    assert _code([e async for e in queued][-1]) == "shutting_down"
    assert runner.disconnects == ["s"] and registry.active_turns == 0 and len(registry) == 0


class StatusRunner(RecordingRunner):
    async def run_turn(self, session: Any, client: Any, request: TurnRequest, emit: Any) -> None:
        if request.prompt == "throttled":
            raise AgentKitError("slow down", code="model_error", http_status=429)
        raise RuntimeError("secret detail /etc/passwd")


async def test_error_events_carry_their_own_status_and_internal_errors_hide_details() -> None:
    registry = SessionRegistry(runner=StatusRunner(), idle_timeout_s=5, max_queued=10)
    (throttled,) = await _collect(registry, "s", "throttled")
    assert throttled.event["code"] == "model_error" and throttled.http_status == 429
    (internal,) = await _collect(registry, "s", "boom")
    assert internal.event["code"] == "internal_error" and internal.http_status == 500
    message = internal.event["message"]
    assert "RuntimeError" in message and "runtime logs" in message
    assert "secret" not in message and "passwd" not in message
    await registry.close_all()


async def test_session_cap_closes_the_least_recently_used_idle_session() -> None:
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10, max_sessions=2)
    await _collect(registry, "a", "x")
    await _collect(registry, "b", "y")
    await _collect(registry, "a", "z")  # b is now the least recently used
    await _collect(registry, "c", "w")
    assert registry.get("b") is None and registry.get("a") is not None and registry.get("c") is not None
    await until(lambda: runner.disconnects)  # the evicted client closes in the background
    assert runner.disconnects == ["b"] and len(registry) == 2
    await registry.close_all()


async def test_session_cap_refuses_a_new_session_when_every_session_is_busy() -> None:
    runner = SlowRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10, max_sessions=2)
    running = []
    for key in ("a", "b"):
        events = await _invoke(registry, key, key)
        first: Any = await events.__anext__()
        assert first["text"] == "working"
        running.append(events)
    with pytest.raises(SessionBusy, match="too many active sessions") as info:
        await _invoke(registry, "c", "c")
    assert info.value.http_status == 429
    # An existing session still takes turns (queued behind its running one).
    await _invoke(registry, "a", "a2")
    assert runner.disconnects == [] and len(registry) == 2
    await asyncio.wait_for(registry.close_all(), timeout=5)


class PersistingRunner(RecordingRunner):
    def __init__(self) -> None:
        super().__init__()
        self.persisted: list[str] = []
        self.persisting = asyncio.Event()  # the post-reply work has started
        self.release = asyncio.Event()  # lets it finish

    async def run_turn(self, session: Any, client: Any, request: TurnRequest, emit: Any) -> Any:
        await emit({"type": "result", "text": request.prompt})

        async def persist() -> None:
            self.persisting.set()
            await self.release.wait()
            self.persisted.append(request.prompt)

        return persist()


async def test_shutdown_lets_a_running_persistence_finish() -> None:
    runner = PersistingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10)
    events = await _collect(registry, "s", "last turn")
    assert events[-1]["type"] == "result" and runner.persisted == []  # the reply is out before persistence
    await asyncio.wait_for(runner.persisting.wait(), 5)
    closing = asyncio.ensure_future(registry.close_all())
    for _ in range(20):  # close_all runs as far as it can: it must be waiting for the persistence
        await asyncio.sleep(0)
    assert not closing.done() and runner.disconnects == []
    runner.release.set()
    await asyncio.wait_for(closing, timeout=5)
    assert runner.persisted == ["last turn"]
    assert runner.disconnects == ["s"] and registry.active_turns == 0


async def test_close_is_bounded_and_queued_turns_are_not_run_with_a_long_idle_timeout() -> None:
    # Regression (CPython gh-86296): ``asyncio.wait_for(queue.get(), ...)`` on 3.11 could swallow the shutdown's
    # cancellation when a queued turn was ready at that moment, so queued paid turns still ran and close_all
    # waited out the idle timeout (900 s in production).
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=900, max_queued=10)
    first = asyncio.ensure_future(_collect(registry, "s", "a"))
    while not runner.log:  # "a" is running
        await asyncio.sleep(0.001)
    queued = [await _invoke(registry, "s", p) for p in ("b", "c")]
    await first  # "a" is done; the session takes "b" off its queue now
    async with asyncio.timeout(5):
        await registry.close_all()
        replies = [[e async for e in events] for events in queued]
    assert [_code(r[-1]) for r in replies] == ["shutting_down", "shutting_down"]
    # "b" may have started just before the close (then it was interrupted); "c" never ran, nothing finished.
    assert ("start", "s", "c") not in runner.log and runner.log[-1] != ("end", "s", "b")
    assert len(registry) == 0


class HeldRunner(RecordingRunner):
    """Each turn runs until the test releases it."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def run_turn(self, session: Any, client: Any, request: TurnRequest, emit: Any) -> None:
        self.log.append(("start", session.key, request.prompt))
        await self.release.wait()
        await emit({"type": "result", "text": request.prompt})


async def test_a_new_session_is_never_evicted_before_its_first_turn_starts() -> None:
    # Regression: a new session looked idle between taking its request off the queue and starting it, so a
    # concurrent new session at the cap evicted it and its caller got a false ``shutting_down`` (503); seen as 2
    # of 48 callers with AGENTKIT_MAX_SESSIONS=4 and 8 concurrent new sessions. The second session arrives after
    # every number of loop iterations that covers the window: it is refused (429), the first turn runs.
    for yields in range(10):
        runner = HeldRunner()
        registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10, max_sessions=1)
        first = await _invoke(registry, "a", "x")
        for _ in range(yields):
            await asyncio.sleep(0)
        with pytest.raises(SessionBusy, match="too many active sessions"):
            await _invoke(registry, "b", "y")
        runner.release.set()
        assert [e async for e in first] == [{"type": "result", "text": "x"}], f"after {yields} yields"
        await registry.close_all()


async def test_eight_concurrent_new_sessions_at_a_cap_of_four_get_no_shutting_down() -> None:
    runner = RecordingRunner()
    registry = SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=10, max_sessions=4)

    async def caller(key: str) -> list[str]:
        codes = []
        for turn in range(6):
            try:
                events = await _collect(registry, key, f"{key}{turn}")
            except SessionBusy:  # every warm session busy: a 429 the caller retries, not a lost turn
                codes.append("session_busy")
                await asyncio.sleep(0)
                continue
            codes.append(_code(events[-1]))
        return codes

    results = await asyncio.gather(*(caller(f"k{i}") for i in range(8)))
    codes = [code for per_caller in results for code in per_caller]
    assert "shutting_down" not in codes
    assert codes.count("ok") >= 6  # each of the first four sessions ran its turns
    await registry.close_all()


class FailingConnectRunner(RecordingRunner):
    async def connect(self, session: Any, request: TurnRequest) -> Any:
        raise AgentProcessError("could not start the CLI")


async def test_client_cleanup_runs_after_every_close_and_after_a_failed_connect() -> None:
    """The CLI process's private directories go when its client goes: idle close, failed connect, shutdown."""
    dropped: list[tuple[str, list[str]]] = []
    runner = RecordingRunner()
    registry = SessionRegistry(
        runner=runner,
        idle_timeout_s=0.05,
        max_queued=10,
        on_client_dropped=lambda s: dropped.append((s.key, list(runner.disconnects))),
    )
    await _collect(registry, "idle", "one")
    await asyncio.sleep(0.2)
    assert dropped and dropped[0] == ("idle", ["idle"])  # after the client was disconnected, not before
    failing = SessionRegistry(
        runner=FailingConnectRunner(),
        idle_timeout_s=10,
        max_queued=10,
        on_client_dropped=lambda s: dropped.append((s.key, [])),
    )
    (event,) = await _collect(failing, "broken", "hi")
    assert _code(event) != "ok" and ("broken", []) in dropped
    await _collect(registry, "live", "two")
    await registry.close_all()
    await failing.close_all()
    assert [key for key, _ in dropped].count("live") >= 1
