"""``AgentTurnRunner`` turn paths that a well-behaved fake CLI cannot provoke: a stalled interrupt, a prompt
that never goes out, cancellation while connecting, aborted turns' spend, a session store that does not
answer, denials racing the tool telemetry, and request metadata on spans and metrics.

The runner, observer, accounting, policy and SQLite store are real; the SDK client is a scripted stand-in (passed
to ``run_turn`` in its :class:`CliProcess`, or built by ``AgentDeps.client_factory`` for ``connect``).
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import CLIConnectionError, PermissionResultDeny, ResultMessage, StreamEvent
from claude_agent_sdk.types import ToolPermissionContext
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness import fake_claude as fc
from runtime.accounting import Accounting
from runtime.agent.budget_policy import BudgetPolicy
from runtime.agent.definition import AgentDefinitionSpec
from runtime.agent.process import CliProcess
from runtime.agent.runner import AgentDeps, AgentTurnRunner
from runtime.config.settings import Settings
from runtime.errors import AgentProcessError, TurnTimeout
from runtime.guard.policy import PermissionPolicy
from runtime.observe.costs import TurnCostTracker
from runtime.observe.metrics import EmfMetrics
from runtime.observe.observer import Observer
from runtime.observe.tracing import Tracing
from runtime.protocol import Failure, TurnItem
from runtime.session_store.sqlite import SqliteSessionStore
from runtime.sessions import WarmSession
from runtime.turn_request import TurnRequest

pytestmark = pytest.mark.anyio

SID = "5b0a3f7e-1111-5222-8333-444455556666"
CALL_USD = fc.CALL_COST_USD * 1.1  # the fake's per-call usage at our price for a us. (regional) profile
USAGE = {
    "input_tokens": fc.CALL_INPUT_TOKENS,
    "output_tokens": fc.CALL_OUTPUT_TOKENS,
    "cache_creation_input_tokens": fc.CALL_CACHE_WRITE_TOKENS,
    "cache_read_input_tokens": fc.CALL_CACHE_READ_TOKENS,
}


class Setup:
    def __init__(
        self,
        tmp_path: Path,
        *,
        store: Any = None,
        turn_timeout_s: float = 30.0,
        tracing: Any = None,
        client_factory: Any = None,
        memory: Any = None,
        actor_id: str | None = None,
    ) -> None:
        # The hand-computed figures below are Sonnet 4.5's prices ($3/$15), the fake CLI's calibration: pin it.
        settings = Settings(
            state_dir=tmp_path,
            turn_timeout_s=turn_timeout_s,
            session_store="off",
            model="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        )
        definition = AgentDefinitionSpec()
        self.out = io.StringIO()
        self.observer = Observer(
            metrics=EmfMetrics(namespace="T", agent="demo", stream=self.out),
            tracing=tracing or Tracing(),
            model=settings.model,
        )
        self.accounting = Accounting(store=store, memory=memory, on_store_error=self.observer.store_error)
        self.model = settings.model
        deps = AgentDeps(
            settings=settings,
            definition=definition,
            policy=PermissionPolicy(
                allowed_tools=definition.permitted_tools,
                workspace=settings.resolved_workspace,
                bash_allowlist=definition.bash_allowlist,
            ),
            observer=self.observer,
            budgets=BudgetPolicy(max_turns=25, max_budget_usd=1.0),
        )
        if client_factory is not None:
            deps.client_factory = client_factory
        self.runner = AgentTurnRunner(deps)
        self.session = WarmSession(
            key=SID,
            runtime_session_id="rt-" + "1" * 36,
            claude_session_id=SID,
            actor_id=actor_id,
            runner=self.runner,
            account=self.accounting.open(
                claude_session_id=SID, runtime_session_id="rt-" + "1" * 36, actor_id=actor_id
            ),
            idle_timeout_s=5,
            max_queued=2,
        )
        self.process: CliProcess | None = None  # one CLI process, kept across turns until replaced
        self.events: list[Any] = []

    async def emit(self, event: TurnItem) -> None:
        self.events.append(event)

    async def turn(self, client: Any, request: TurnRequest | None = None, timeout: float = 5) -> Any:
        request = request or TurnRequest(prompt="go")
        if self.process is None:
            self.process = CliProcess(client=client, cost_tracker=TurnCostTracker(default_model=self.model))
        self.process.client = client  # each scripted client replays one turn of the same process
        after = await asyncio.wait_for(
            self.runner.run_turn(self.session, self.process, request, self.emit), timeout=timeout
        )
        await after
        return self.events[-1]

    def docs(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.getvalue().splitlines()]


def _event(event: dict[str, Any]) -> StreamEvent:
    return StreamEvent(uuid="u", session_id=SID, event=event)


def model_call(text: str = "hi") -> list[Any]:
    """One model call as the SDK streams it: message_start (input usage) ... message_delta (output)."""
    start = {"type": "message_start", "message": {"usage": {**USAGE, "output_tokens": 1}}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
    end = {"type": "message_delta", "usage": {"output_tokens": fc.CALL_OUTPUT_TOKENS}}
    return [_event(start), _event(delta), _event(end)]


def result(calls: int = 1, *, subtype: str = "success", is_error: bool = False) -> ResultMessage:
    return ResultMessage(
        subtype=subtype,
        duration_ms=1,
        duration_api_ms=1,
        is_error=is_error,
        num_turns=calls,
        session_id=SID,
        total_cost_usd=fc.CALL_COST_USD * calls,
        usage={k: v * calls for k, v in USAGE.items()},
        result=None if is_error else "done",
    )


class ScriptedClient:
    """Replays ``messages`` then ``final`` (a ResultMessage, or an exception to raise, or None to hang).

    Like the SDK when its message buffer is full, ``interrupt()`` is answered only after every scripted
    message has been taken by the consumer.
    """

    def __init__(self, messages: list[Any], final: Any, *, hang_query: bool = False) -> None:
        self.messages, self.final, self.hang_query = messages, final, hang_query
        self.drained = asyncio.Event()
        self.interrupts = 0
        self.sent: list[dict[str, Any]] = []

    async def query(self, prompt: AsyncIterator[dict[str, Any]]) -> None:
        if self.hang_query:
            await asyncio.Event().wait()
        self.sent += [m async for m in prompt]

    def receive_response(self) -> AsyncIterator[Any]:
        return self._replay()

    async def _replay(self) -> AsyncIterator[Any]:
        for message in self.messages:
            yield message
            await asyncio.sleep(0)
        self.drained.set()
        if self.final is None:
            await asyncio.Event().wait()
        if isinstance(self.final, BaseException):
            raise self.final
        yield self.final

    async def interrupt(self) -> None:
        self.interrupts += 1
        await self.drained.wait()


# -- interrupts and timeouts ------------------------------------------------------------------------------


async def test_an_over_budget_interrupt_does_not_stall_the_message_stream(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    chatter = [_event({"type": "ping"}) for _ in range(150)]  # more than the SDK buffers (100)
    client = ScriptedClient(model_call() + chatter, result(subtype="error_during_execution", is_error=True))
    final = await s.turn(client, TurnRequest(prompt="go", max_budget_usd=0.005))
    assert client.interrupts == 1
    assert isinstance(final, Failure) and final.http_status == 402
    assert final.event["code"] == "budget_exceeded" and "max_budget_usd of $0.0050" in final.event["message"]


async def test_sending_the_prompt_is_inside_the_turn_timeout(tmp_path: Path) -> None:
    s = Setup(tmp_path, turn_timeout_s=0.3)
    with pytest.raises(TurnTimeout, match="did not finish within"):
        await s.turn(ScriptedClient([], result(), hang_query=True))


# -- spend of turns without a result ---------------------------------------------------------------------


@pytest.mark.parametrize("ending", ["crash", "timeout"])
async def test_aborted_turns_count_and_persist_their_spend(tmp_path: Path, ending: str) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    await store.put_state(SID, {"spent_usd": 1.0, "turns": 4})
    s = Setup(tmp_path, store=store, turn_timeout_s=0.5)
    final = CLIConnectionError("the CLI exited") if ending == "crash" else None
    partial = model_call()[:1]  # a third call had started: its input tokens are billed
    client = ScriptedClient(model_call() + model_call() + partial, final)
    expected = (TurnTimeout, "did not finish") if ending == "timeout" else (AgentProcessError, "exited")
    with pytest.raises(expected[0], match=expected[1]):
        await s.turn(client)
    await s.accounting.drain()  # the spend is written in the background
    third = (fc.CALL_INPUT_TOKENS * 3 + 1 * 15 + fc.CALL_CACHE_WRITE_TOKENS * 3.75) / 1e6
    third += fc.CALL_CACHE_READ_TOKENS * 0.3 / 1e6
    spent = 2 * CALL_USD + third * 1.1
    assert await s.session.account.spent() == pytest.approx(1.0 + spent)
    assert await store.get_state(SID) == {"spent_usd": pytest.approx(1.0 + spent), "turns": 4}
    (doc,) = [d for d in s.docs() if "CostUSD" in d]
    assert doc["CostUSD"] == [pytest.approx(spent)] and doc["InputTokens"] == [3 * fc.CALL_INPUT_TOKENS]
    assert doc["Completed"] is False and "Turns" not in doc and "InvocationLatencyMs" not in doc


# -- the stored spend is never overwritten from an unknown base ------------------------------------------


class FlakyStateStore:
    """A real SQLite store whose first ``fail_gets`` reads fail."""

    def __init__(self, inner: SqliteSessionStore, fail_gets: int) -> None:
        self.inner, self.fail_gets = inner, fail_gets
        self.puts: list[dict[str, Any]] = []

    async def get_state(self, session_id: str) -> dict[str, Any] | None:
        if self.fail_gets > 0:
            self.fail_gets -= 1
            raise ConnectionError("store unreachable")
        return await self.inner.get_state(session_id)

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None:
        self.puts.append(dict(state))
        await self.inner.put_state(session_id, state)


async def test_a_failed_spend_read_never_overwrites_the_stored_total(tmp_path: Path) -> None:
    inner = SqliteSessionStore(tmp_path / "s.db")
    await inner.put_state(SID, {"spent_usd": 1.0, "turns": 4})
    store = FlakyStateStore(inner, fail_gets=2)  # the read before the turn, and the retry before the write
    s = Setup(tmp_path, store=store)
    first = await s.turn(ScriptedClient(model_call(), result()))
    assert first["type"] == "result" and first["cost_usd"] == pytest.approx(CALL_USD, abs=1e-6)
    assert first["session_cost_usd"] is None  # unknown, not a partial sum
    assert store.puts == [] and await inner.get_state(SID) == {"spent_usd": 1.0, "turns": 4}
    assert [d.get("operation") for d in s.docs() if "SessionStoreErrors" in d] == ["get_state"] * 2

    s.process = None  # a fresh CLI process
    second = await s.turn(ScriptedClient(model_call(), result()))
    assert second["session_cost_usd"] == pytest.approx(1.0 + 2 * CALL_USD, abs=1e-6)
    stored = await inner.get_state(SID)
    assert stored == {"spent_usd": pytest.approx(1.0 + 2 * CALL_USD), "turns": 6}  # loaded 4 + 2 turns


async def test_concurrent_spend_reads_fold_the_unpersisted_spend_in_once(tmp_path: Path) -> None:
    class SlowStore:
        async def get_state(self, session_id: str) -> dict[str, Any]:
            await asyncio.sleep(0.05)
            return {"spent_usd": 1.0, "turns": 4}

    s = Setup(tmp_path, store=SlowStore())
    s.session.account.add(0.5)  # counted while the base was unknown
    first, second = await asyncio.gather(s.session.account.spent(), s.session.account.spent())
    assert first == second == pytest.approx(1.5)
    ledger = s.session.account.ledger
    assert (ledger.spent_usd, ledger.turns, ledger.unpersisted_usd) == (1.5, 5, 0.0)


# -- connect ----------------------------------------------------------------------------------------------


async def test_a_new_cli_process_starts_while_the_session_spend_is_read(tmp_path: Path) -> None:
    """The first turn needs the stored spend right after the connect: its read overlaps the CLI's start-up
    (a store round trip less on the cold path) and is read once, not again by the turn."""
    order: list[str] = []

    class SlowStateStore:
        gets = 0

        async def get_state(self, session_id: str) -> dict[str, Any]:
            SlowStateStore.gets += 1
            order.append("get_state start")
            await asyncio.sleep(0.2)
            order.append("get_state end")
            return {"spent_usd": 0.25, "turns": 1}

        async def put_state(self, session_id: str, state: dict[str, Any]) -> None:
            order.append("put_state")

    class SlowStartClient:
        def __init__(self, options: Any) -> None:
            pass

        async def connect(self) -> None:
            order.append("connect start")
            await asyncio.sleep(0.2)  # the CLI's start-up
            order.append("connect end")

        async def disconnect(self) -> None:
            pass

    s = Setup(tmp_path, store=SlowStateStore(), client_factory=SlowStartClient)
    await s.runner.connect(s.session, TurnRequest(prompt="p"))
    assert "get_state start" in order and order.index("get_state start") < order.index("connect end")
    assert await s.session.account.spent() == pytest.approx(0.25)  # the turn's begin phase
    assert SlowStateStore.gets == 1
    await s.accounting.drain()


async def test_a_failed_spend_prefetch_is_read_again_by_the_turn(tmp_path: Path) -> None:
    inner = SqliteSessionStore(tmp_path / "s.db")
    await inner.put_state(SID, {"spent_usd": 1.0, "turns": 4})
    store = FlakyStateStore(inner, fail_gets=1)
    s = Setup(tmp_path, store=store)
    s.session.account.prefetch()
    await s.accounting.drain()
    assert s.session.account.total_usd is None  # unknown after the failed read, not zero
    assert await s.session.account.spent() == pytest.approx(1.0)
    assert [d.get("operation") for d in s.docs() if "SessionStoreErrors" in d] == ["get_state"]


async def test_cancelling_a_connect_disconnects_the_spawned_client(tmp_path: Path) -> None:
    clients: list[Any] = []

    class SlowStartClient:
        def __init__(self, options: Any) -> None:
            self.disconnected = False
            clients.append(self)

        async def connect(self) -> None:
            await asyncio.Event().wait()  # the CLI is spawned and still initialising

        async def disconnect(self) -> None:
            self.disconnected = True

    s = Setup(tmp_path, client_factory=SlowStartClient)
    task = asyncio.create_task(s.runner.connect(s.session, TurnRequest(prompt="p")))
    while not clients:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0)  # the runner is awaiting the client's connect() now
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clients[0].disconnected


# -- denials -------------------------------------------------------------------------------------------------


async def test_denied_calls_count_as_denied_whatever_the_hook_order(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    hooks = s.observer.tools

    def hook_input(tool_use_id: str, command: str = "rm -rf /") -> dict[str, Any]:
        return {
            "session_id": SID,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": tool_use_id,
        }

    with s.observer.turn_span(s.session, TurnRequest(prompt="p")):
        await hooks.pre_tool_use(hook_input("t1"), "t1", None)  # telemetry first, then the policy
        denied = await s.runner.gate.pre_tool_use(hook_input("t1"), "t1", None)
        assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
        await s.runner.gate.pre_tool_use(hook_input("t2"), "t2", None)  # the policy first
        await hooks.pre_tool_use(hook_input("t2"), "t2", None)
        await hooks.pre_tool_use(hook_input("t3"), "t3", None)  # can_use_tool refuses it
        gate = s.runner.gate.can_use_tool_for(SID)
        refusal = await gate("Bash", {"command": "rm -rf /"}, ToolPermissionContext(tool_use_id="t3"))
        assert isinstance(refusal, PermissionResultDeny)
    docs = s.docs()
    assert [d["ToolUseId"] for d in docs] == ["t1", "t2", "t3"]
    assert all(d["ToolDenied"] == [1.0] and d["Tool"] == "Bash" for d in docs)
    assert not any("ToolErrors" in d or "ToolCalls" in d for d in docs)
    assert all(d["SessionId"] == s.session.runtime_session_id for d in docs)
    assert hooks.pending == 0


# -- metadata ----------------------------------------------------------------------------------------------


async def test_request_metadata_goes_on_the_turn_span_and_the_turn_metrics(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    s = Setup(tmp_path, tracing=Tracing(provider.get_tracer("t"), agent="demo"))
    request = TurnRequest(prompt="go", metadata={"ticket": "T-42", "channel": "slack"})
    assert (await s.turn(ScriptedClient(model_call(), result()), request))["type"] == "result"
    (turn_span,) = [span for span in exporter.get_finished_spans() if span.name.startswith("chat ")]
    assert turn_span.attributes is not None
    assert turn_span.attributes["agentkit.metadata.ticket"] == "T-42"
    assert turn_span.attributes["agentkit.metadata.channel"] == "slack"
    (turn_doc,) = [d for d in s.docs() if "Turns" in d]
    assert turn_doc["Metadata"] == {"ticket": "T-42", "channel": "slack"}


# -- long-term memory --------------------------------------------------------------------------------------------


class RecordingMemory:
    def __init__(self) -> None:
        self.turns: list[dict[str, str]] = []

    async def record_turn(
        self, *, actor_id: str, session_id: str, user_text: str, assistant_text: str
    ) -> bool:
        self.turns.append(
            {"actor": actor_id, "session": session_id, "user": user_text, "assistant": assistant_text}
        )
        return True


async def test_a_finished_turn_of_a_known_caller_goes_to_long_term_memory(tmp_path: Path) -> None:
    memory = RecordingMemory()
    s = Setup(tmp_path, memory=memory, actor_id="octocat")
    assert (await s.turn(ScriptedClient(model_call(), result()), TurnRequest(prompt="go")))[
        "type"
    ] == "result"
    await s.accounting.drain()  # the memory write runs in the background, after the reply
    assert memory.turns == [{"actor": "octocat", "session": SID, "user": "go", "assistant": "done"}]


async def test_failed_turns_and_anonymous_callers_leave_no_memory(tmp_path: Path) -> None:
    memory = RecordingMemory()
    s = Setup(tmp_path, memory=memory, actor_id="octocat")
    failed = await s.turn(
        ScriptedClient(model_call(), result(subtype="error_during_execution", is_error=True))
    )
    assert isinstance(failed, Failure) and failed.event["code"] == "execution_error"
    anonymous = Setup(tmp_path, memory=memory)
    assert (await anonymous.turn(ScriptedClient(model_call(), result())))["type"] == "result"
    await s.accounting.drain()
    await anonymous.accounting.drain()
    assert memory.turns == []


# -- the store during a resume ------------------------------------------------------------------------------------


class ThrottledIndex:
    """A SQLite store whose subagent index read (``list_subkeys``) is throttled, as AgentCore Memory's can be."""

    def __init__(self, inner: SqliteSessionStore) -> None:
        self.inner = inner
        self.calls = 0

    async def append(self, key: Any, entries: Any) -> None:
        await self.inner.append(key, entries)

    async def load(self, key: Any) -> Any:
        return await self.inner.load(key)

    async def list_subkeys(self, key: Any) -> list[str]:
        from botocore.exceptions import ClientError

        self.calls += 1
        error = {"Code": "ThrottledException", "Message": "Rate exceeded"}
        raise ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": 429}}, "ListEvents")


async def test_a_throttled_index_read_during_a_resume_is_a_retryable_503_not_a_500(tmp_path: Path) -> None:
    from claude_agent_sdk import project_key_for_directory

    from runtime.errors import SessionStoreError

    s = Setup(tmp_path)
    store = ThrottledIndex(SqliteSessionStore(tmp_path / "store.db"))
    key = {"project_key": project_key_for_directory(s.runner.cwd), "session_id": SID}
    entry = {"type": "user", "uuid": "e1", "sessionId": SID, "message": {"role": "user", "content": "hi"}}
    await store.append(key, [entry])  # the session exists: the next process resumes it
    s.runner.deps.session_store = store  # type: ignore[assignment]
    with pytest.raises(SessionStoreError) as refused:
        await s.runner.connect(s.session, TurnRequest(prompt="go on"))
    assert store.calls == 1
    assert refused.value.http_status == 503 and refused.value.retryable
    assert refused.value.aws_code == "ThrottledException" and "nothing was lost" in refused.value.message
    assert "SessionStoreErrors" in s.out.getvalue()
