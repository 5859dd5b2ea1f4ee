"""The agent: SDK options from the agent definition, and one turn from prompt to events.

Imports ``claude_agent_sdk`` (about a second); the server imports this module lazily, after ``/ping`` is up.

A turn:
1. (first turn in this process) connect, with the options of :mod:`runtime.agent.options`: ``resume`` when the store holds the transcript, else ``session_id``;
2. stream the prompt as one stream-json user message (never a string: string prompts close stdin and break
   SDK MCP tools and hooks);
3. translate SDK messages to events (``text``, ``tool_use``, ``tool_result``); sending the prompt and
   reading the reply both run within the turn timeout;
4. on the ``ResultMessage``: cost from the price table, metrics, the session's cumulative spend, long-term
   memory, and the ``result`` event. A turn that never gets there (timeout, crashed CLI, shutdown) still
   counts what its model calls cost, priced from the streamed usage.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    CLIConnectionError,
    ProcessError,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    project_key_for_directory,
)
from claude_agent_sdk.types import CanUseToolShadowedWarning

from runtime.agent.client_state import AgentClientState, ClientLimits
from runtime.agent.definition import AgentDefinitionSpec
from runtime.agent.disconnect import interrupt_on_disconnect, skip_if_abandoned
from runtime.agent.options import build_options
from runtime.agent.turn_stream import (
    CLIGone,
    PrefetchedStore,
    TurnState,
    discard_client,
    guarded,
    prompt_stream,
    settle_task,
    sum_usage,
)
from runtime.errors import (
    AgentProcessError,
    BudgetExceeded,
    ClientDisconnected,
    SessionStoreError,
    TurnTimeout,
)
from runtime.guard.gate import PermissionGate
from runtime.guard.policy import PermissionPolicy
from runtime.observe.budgets import BudgetPolicy, error_for_result
from runtime.observe.costs import compute_turn_cost
from runtime.observe.telemetry import Telemetry, TurnOutcome
from runtime.protocol import Emit, Failure, summarize
from runtime.sessions import TurnRequest, WarmSession
from runtime.settings import Settings

logger = logging.getLogger(__name__)

#: The CLI process's --max-budget-usd is this many invocation budgets (or the session budget, if larger).
PROCESS_BUDGET_FACTOR = 10

# Pre-allowed tools skip can_use_tool by design: the PreToolUse policy hook gates them instead.
warnings.filterwarnings("ignore", category=CanUseToolShadowedWarning)


@dataclass
class AgentDeps:
    """Everything a turn needs from outside, injected (tests pass their own)."""

    settings: Settings
    definition: AgentDefinitionSpec
    policy: PermissionPolicy
    telemetry: Telemetry
    budgets: BudgetPolicy
    session_store: Any = None
    extra_mcp_servers: dict[str, Any] | None = None
    #: Builds the SDK client for a connect (tests pass a scripted one).
    client_factory: Callable[[ClaudeAgentOptions], ClaudeSDKClient] = ClaudeSDKClient
    #: Monotonic seconds, for latencies and time to first token (the one clock of the runtime, from wiring).
    clock: Callable[[], float] = time.monotonic


def client_state(session: WarmSession) -> AgentClientState:
    """The agent's state of the session's current client (set by :meth:`AgentTurnRunner.connect`)."""
    state = session.client_state
    if not isinstance(state, AgentClientState):
        raise RuntimeError(f"session {session.runtime_session_id} has no connected client")
    return state


class AgentTurnRunner:
    """Implements :class:`runtime.sessions.TurnRunner` with the real Claude Agent SDK."""

    def __init__(self, deps: AgentDeps) -> None:
        self.deps = deps
        self.settings = deps.settings
        self.clock = deps.clock
        self.cwd = deps.settings.resolved_workspace
        self.project_key = project_key_for_directory(self.cwd)
        self.gate = PermissionGate(deps.policy, deps.telemetry)

    # -- limits -----------------------------------------------------------------------------------------------

    def limits_for(self, request: TurnRequest) -> ClientLimits:
        """The CLI flags for a request: ``(--max-turns, --max-budget-usd)``.

        ``--max-turns`` counts per turn, so it is the invocation's limit. ``--max-budget-usd`` counts the CLI
        *process's* cumulative cost (measured with the real CLI), so on a warm client it cannot be the
        invocation budget: it is a process-wide backstop (:meth:`process_budget`), and the invocation budget
        is enforced by :meth:`run_turn` from the streamed usage.

        Raises:
            InvalidRequest: the request asks for more than the configured ceilings (it may only lower them).
        """
        limits = self.deps.budgets.effective_limits(request.max_turns, request.max_budget_usd)
        return limits.max_turns, self.process_budget()

    def process_budget(self) -> float | None:
        """The CLI process's cumulative budget: room for many invocations, a backstop against runaways."""
        budgets = self.deps.budgets
        if budgets.max_budget_usd is None:
            return None
        return round(
            max(budgets.max_budget_usd * PROCESS_BUDGET_FACTOR, budgets.session_budget_usd or 0.0), 6
        )

    def check_request(self, request: TurnRequest) -> None:
        """Validate a request before it is queued (so a bad one never disturbs the warm client)."""
        self.limits_for(request)

    def wants_reconnect(self, session: WarmSession, request: TurnRequest) -> bool:
        flags = self.limits_for(request)
        state = client_state(session)
        if state.limits != flags:  # a request that lowers max_turns needs a CLI started with it
            return True
        # A process close to its cumulative budget is replaced (resuming the session) so that this
        # invocation still has its full budget.
        invocation = self.deps.budgets.effective_limits(
            request.max_turns, request.max_budget_usd
        ).max_budget_usd
        cap = flags[1]
        return cap is not None and invocation is not None and state.sdk_cost_baseline + invocation > cap

    # -- connect ----------------------------------------------------------------------------------------------

    async def connect(self, session: WarmSession, request: TurnRequest) -> ClaudeSDKClient:
        started = self.clock()
        store = self.deps.session_store
        sid = session.claude_session_id
        key = {"project_key": self.project_key, "session_id": sid}
        entries = None
        if store is not None:
            with self.deps.telemetry.session_span("load", claude_session_id=sid):
                try:
                    entries = await store.load(key)
                except Exception as exc:
                    self.deps.telemetry.store_error("load", exc)
                    raise SessionStoreError(
                        f"the session store could not load session {session.runtime_session_id}: {exc}. "
                        "Retry shortly; nothing was lost."
                    ) from exc
        local = self.settings.resolved_claude_config_dir / "projects" / self.project_key / f"{sid}.jsonl"
        resume = bool(entries) or local.exists()
        limits = self.limits_for(request)
        options = self.build_options(
            session,
            limits=limits,
            resume=resume,
            store=PrefetchedStore(store, key, entries) if store is not None and entries else store,
        )
        client = self.deps.client_factory(options)
        try:
            await asyncio.wait_for(client.connect(), timeout=self.settings.turn_timeout_s)
        except TimeoutError:
            await discard_client(client)
            raise TurnTimeout(
                f"the Claude Code CLI did not start within {self.settings.turn_timeout_s:.0f} s; retry the invocation"
            ) from None
        except (CLIConnectionError, ProcessError, OSError) as exc:
            await discard_client(client)
            raise AgentProcessError(
                f"could not start the Claude Code CLI ({exc}). Check AGENTKIT_CLI_PATH and the runtime logs."
            ) from exc
        except BaseException:  # cancelled (shutdown) or anything else: never leave a spawned CLI behind
            await discard_client(client)
            raise
        # A new CLI process counts usage and cost from zero.
        session.client_state = AgentClientState(
            cost_tracker=self.deps.telemetry.cost_tracker(), limits=limits, resumed=resume
        )
        if resume:
            self.deps.telemetry.session_resumed(session)
        logger.info(
            "connected session %s (claude %s, resume=%s) in %.0f ms",
            session.runtime_session_id,
            sid,
            resume,
            (self.clock() - started) * 1000,
        )
        return client

    def build_options(
        self, session: WarmSession, *, limits: ClientLimits, resume: bool, store: Any
    ) -> ClaudeAgentOptions:
        return build_options(
            settings=self.settings,
            definition=self.deps.definition,
            cwd=self.cwd,
            claude_session_id=session.claude_session_id,
            hooks=self.deps.telemetry.hooks_for(session),
            pre_tool_gate=self.gate.pre_tool_use,
            can_use_tool=self.gate.can_use_tool_for(session.claude_session_id),
            limits=limits,
            resume=resume,
            store=store,
            extra_mcp_servers=self.deps.extra_mcp_servers,
        )

    # -- one turn -----------------------------------------------------------------------------------------------

    async def run_turn(
        self, session: WarmSession, client: ClaudeSDKClient, request: TurnRequest, emit: Emit
    ) -> Awaitable[None]:
        """Run one turn, emitting its events; returns the post-turn work (persistence) to run after the reply."""
        telemetry = self.deps.telemetry
        skip_if_abandoned(request, telemetry, session)
        try:
            spent = await telemetry.session_spend(session)
            limits = self.deps.budgets.effective_limits(
                request.max_turns, request.max_budget_usd, session_spent_usd=spent
            )
        except BudgetExceeded:
            telemetry.invocation_error("budget_exceeded")
            telemetry.budget_exceeded(session, "session")
            raise
        await telemetry.spans_ready()  # first turns: the background OpenTelemetry set-up (runtime.prewarm)
        started = self.clock()
        state = TurnState(started=started, clock=self.clock, client=client, budget=limits.max_budget_usd)
        with telemetry.turn_span(session, request) as span:
            prompt_uuid = str(uuid.uuid4())
            result: ResultMessage | None = None
            try:
                async with (
                    asyncio.timeout(self.settings.turn_timeout_s),
                    interrupt_on_disconnect(request, state, telemetry, session) as gone,
                ):
                    try:
                        await client.query(
                            prompt_stream(request.prompt, session.claude_session_id, prompt_uuid)
                        )
                    except (CLIConnectionError, ProcessError) as exc:
                        raise CLIGone(str(exc) or type(exc).__name__) from exc
                    result = await self._consume(client, state, emit)
            except TimeoutError:
                self._count_aborted(session, request, state, span)
                telemetry.invocation_error("turn_timeout")
                raise TurnTimeout(
                    f"the turn did not finish within {self.settings.turn_timeout_s:.0f} s and was stopped. "
                    "The session stays usable: send the next turn, or narrow the task."
                ) from None
            except CLIGone as exc:
                self._count_aborted(session, request, state, span)
                telemetry.invocation_error("agent_process_error")
                raise AgentProcessError(
                    f"the Claude Code CLI exited before finishing the turn ({exc.reason}). The session "
                    "reconnects on the next invocation; retry it."
                ) from None
            except asyncio.CancelledError:  # shutdown: what the turn spent so far still counts
                self._count_aborted(session, request, state, span)
                raise
            finally:
                await settle_task(state.interrupt_task, grace_s=2.0 if result is not None else 0.0)
            if result is None:  # unreachable: guarded raises when the stream ends without a result
                raise AgentProcessError("the turn ended without a result; retry the invocation")
            # The CLI reports total_cost_usd (like modelUsage) cumulatively per process: keep the difference.
            process = client_state(session)
            outcome = TurnOutcome(
                result=result,
                cost=process.cost_tracker.price(result.model_usage, result.usage),
                sdk_cost_usd=process.sdk_cost(result.total_cost_usd),
                text=result.result if result.result is not None else "".join(state.text),
                latency_ms=(self.clock() - started) * 1000,
                ttft_ms=state.ttft_ms,
                tools=state.tool_names_used,
                prompt=request.prompt,
            )
            figures = await telemetry.turn_finished(session, request, outcome, span)
        error = error_for_result(
            result.subtype,
            is_error=result.is_error,
            errors=result.errors,
            api_error_status=result.api_error_status,
        )
        if error is None and state.mirror_failed and self.settings.store_strict:
            error = SessionStoreError(
                "the answer could not be saved to the session store in time (AGENTKIT_STORE_STRICT), so it is not "
                "acknowledged; it is kept on this microVM and may still reach the session. Retry the invocation"
            )
        if gone.fired:
            error = ClientDisconnected("the caller disconnected; the turn was interrupted")
        elif state.budget_hit:
            error = BudgetExceeded(
                f"the invocation reached its max_budget_usd of ${state.budget:.4f} (spent ${state.running_cost:.4f})"
                " and was stopped; raise max_budget_usd (up to AGENTKIT_MAX_BUDGET_USD) or narrow the task"
            )
        if error is not None:
            # The turn ended but failed: report it with what it cost. The CLI process stays usable.
            if error.code == "budget_exceeded":
                telemetry.budget_exceeded(session, "invocation")
            telemetry.invocation_error(error.code)
            detail = "" if result.subtype != "success" else f" {outcome.text}"
            if error.code == "model_error":
                detail += " Retry later; if it persists, check AGENTKIT_MODEL and your Bedrock quotas."
            await emit(
                Failure(
                    {
                        "type": "error",
                        "code": error.code,
                        "message": f"{error.message}.{detail}".rstrip(),
                        "partial": {**figures, "subtype": result.subtype},
                    },
                    error.http_status,
                )
            )
            return telemetry.persist_turn(session, outcome)
        await emit(
            {
                "type": "result",
                "session_id": session.runtime_session_id,
                "claude_session_id": result.session_id or session.claude_session_id,
                "text": outcome.text,
                "subtype": result.subtype,
                "num_turns": result.num_turns,
                "duration_ms": result.duration_ms,
                "resumed": process.resumed and session.client_turns == 0,
                **figures,
            }
        )
        return telemetry.persist_turn(session, outcome)

    async def _consume(self, client: Any, state: TurnState, emit: Emit) -> ResultMessage:
        """Translate the turn's messages into events until its ``ResultMessage``."""
        async for message in guarded(client.receive_response()):
            if isinstance(message, ResultMessage):
                return message
            await self._translate(message, state, emit)
        raise CLIGone("the output stream ended without a result")  # guarded raises first

    def _count_aborted(self, session: WarmSession, request: TurnRequest, state: TurnState, span: Any) -> None:
        """Count the spend of a turn that ends without a result (the CLI reports nothing for it)."""
        usages = state.usages + ([state.call_usage] if state.call_usage else [])
        if usages:
            cost = self.deps.telemetry.turn_aborted(
                session,
                request,
                sum_usage(usages),
                latency_ms=(self.clock() - state.started) * 1000,
                span=span,
            )
            logger.info("session %s: aborted turn cost $%.6f", session.runtime_session_id, cost)

    async def _count_call(self, event: dict[str, Any], state: TurnState) -> None:
        """Price each model call as it completes; interrupt the turn once it is over its budget.

        The interrupt runs as its own task while the messages keep being consumed: awaiting it here could
        stall, because the SDK reads the interrupt's answer only after the messages before it are taken.
        """
        if event["type"] == "message_start":
            state.call_usage = dict((event.get("message") or {}).get("usage") or {})
            return
        usage = {**state.call_usage, **(event.get("usage") or {})}
        state.call_usage = {}
        state.usages.append(usage)
        state.running_cost += compute_turn_cost(
            None, usage, default_model=self.settings.model, table=self.deps.telemetry.prices
        ).total_cost_usd
        if state.budget is not None and state.running_cost >= state.budget and not state.budget_hit:
            state.budget_hit = True
            logger.info(
                "invocation budget $%.4f reached ($%.4f); interrupting", state.budget, state.running_cost
            )
            state.interrupt_task = asyncio.create_task(state.client.interrupt(), name="turn-interrupt")

    async def _translate(self, message: Any, state: TurnState, emit: Emit) -> None:
        if isinstance(message, StreamEvent):
            event = message.event
            if event.get("type") in ("message_start", "message_delta"):
                await self._count_call(event, state)
            elif event.get("type") == "content_block_delta":
                delta = event.get("delta") or {}
                if delta.get("type") == "text_delta" and delta.get("text"):
                    state.streamed = True
                    state.mark_first_token()
                    await emit({"type": "text", "text": delta["text"]})
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextBlock):
                    state.text.append(block.text)
                    if not state.streamed and block.text:
                        state.mark_first_token()
                        await emit({"type": "text", "text": block.text})
                elif isinstance(block, ToolUseBlock):
                    state.tools[block.id] = block.name
                    state.tool_names_used.append(block.name)
                    await emit(
                        {
                            "type": "tool_use",
                            "id": block.id,
                            "name": block.name,
                            "input_summary": summarize(block.input),
                        }
                    )
            state.streamed = False
        elif isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    await emit(
                        {
                            "type": "tool_result",
                            "id": block.tool_use_id,
                            "name": state.tools.get(block.tool_use_id, ""),
                            "ok": not bool(block.is_error),
                            "summary": summarize(block.content),
                        }
                    )
        elif isinstance(message, SystemMessage) and message.subtype == "mirror_error":
            state.mirror_failed = True
            self.deps.telemetry.store_error("append", RuntimeError(str(message.data)))
            recover = getattr(self.deps.session_store, "recover_from_transcript", None)
            if recover is not None:  # the SDK dropped the batch: re-read it from the CLI's local transcript
                recover(message.data.get("key"), self.settings.resolved_claude_config_dir / "projects")
