"""One turn, top to bottom: read this module first.

A turn is one invocation on a warm session: a prompt in, events out. The session's task runs it
(:mod:`runtime.sessions`) on the session's CLI process (:mod:`runtime.agent.process`, connected by
:mod:`runtime.agent.runner`), in four phases:

1. **begin**: a turn whose caller already left is skipped; the session's spend is read from its account
   (:mod:`runtime.accounting`) and this invocation's budget fixed (:mod:`runtime.agent.budget_policy`); the
   invocation and turn spans open (:mod:`runtime.observe.observer`). Long-term memory is recalled by the CLI's
   ``UserPromptSubmit`` hook as the prompt arrives (set up at connect).
2. **stream**: the prompt goes out as one stream-json user message (never a string: string prompts close stdin
   and break SDK MCP tools and hooks); SDK messages become ``text`` / ``tool_use`` / ``tool_result`` events;
   each model call is priced as it completes, and the turn is interrupted once it is over its budget or its
   caller leaves (``request.abandoned``, set by the HTTP edge); the running cost goes to ``request.on_cost`` (an
   asynchronous job's progress). Sending and reading both run within the turn timeout.
3. **settle**: a turn the permission gate stopped because a call waits for a person's approval
   (:mod:`runtime.approvals`) ends with subtype ``awaiting_approval`` and the request's card as ``approval`` (no
   patch: the work is not done). Otherwise, in a session that works on a workspace snapshot, the workspace's change becomes the result's
   ``patch`` and ``changed_files`` (:mod:`runtime.workspace`); the ``ResultMessage`` becomes the ``result`` event,
   or an error that reports what the turn cost; its cost is recorded and added to the session's spend. A turn that never gets there (timeout, crashed CLI,
   shutdown) still counts what its model calls cost, priced from the streamed usage.
4. **persist**: after the reply (the session runs it before its next turn), the session's spend goes to the
   store and the exchange to long-term memory.

Imports ``claude_agent_sdk``. Environment variables: none read here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    CLIConnectionError,
    Message,
    ProcessError,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from opentelemetry.trace import Span

from runtime.agent.budget_policy import BudgetPolicy
from runtime.agent.process import CliProcess
from runtime.agent.results import error_for_result
from runtime.agent.silence import SilenceWatch
from runtime.agent.stream import CLIGone, guarded, prompt_stream, settle_task, sum_usage
from runtime.approvals import Approvals, TurnBinding
from runtime.config.settings import Settings
from runtime.errors import (
    AgentKitError,
    AgentProcessError,
    BudgetExceeded,
    ClientDisconnected,
    SessionStoreError,
    TurnTimeout,
)
from runtime.guard import resources
from runtime.observe.costs import compute_turn_cost
from runtime.observe.observer import Observer
from runtime.observe.prices import PriceTable
from runtime.protocol import AWAITING_APPROVAL, Emit, Failure, ResultEvent, TurnFigures, TurnItem, summarize
from runtime.sessions import WarmSession
from runtime.turn_request import TurnRequest
from runtime.workspace import Changes

logger = logging.getLogger(__name__)

#: The session's workspace change against its snapshot, or None when it works on none (the runner's).
WorkspaceChanges = Callable[[WarmSession[CliProcess], float | None], Awaitable[Changes | None]]
#: Keeps the work of a turn paused for approval with the session (runtime.workspace.paused), within the time given.
KeepPausedWork = Callable[[WarmSession[CliProcess], float], Awaitable[None]]
#: The least time the patch gets after a turn that used (nearly) all of its own: a small repository's patch takes
#: well under a second, and a git blocked on what the agent left behind still ends within it.
MIN_PATCH_TIME_S = 15.0

#: How long a turn that got its result waits for its interrupt to be answered before cancelling it.
INTERRUPT_GRACE_S = 2.0


class Turn:
    """One invocation on a warm session. Its fields are the turn's progress; its methods are the phases."""

    def __init__(
        self,
        *,
        session: WarmSession[CliProcess],
        process: CliProcess,
        request: TurnRequest,
        emit: Emit,
        settings: Settings,
        budgets: BudgetPolicy,
        observer: Observer,
        prices: PriceTable,
        clock: Callable[[], float],
        workspace_changes: WorkspaceChanges | None = None,
        keep_paused_work: KeepPausedWork | None = None,
        store: Any = None,
        approvals: Approvals | None = None,
    ) -> None:
        self.session, self.process, self.request, self.emit = session, process, request, emit
        self.approvals = approvals
        # what the approvals need to know about this turn; its ``paused`` is set when a call waits
        self.binding = TurnBinding(
            runtime_session_id=session.runtime_session_id,
            cost_so_far=lambda: (self.session.account.total_usd or 0.0) + self.running_cost,
            job_id=request.job_id,
        )
        self.workspace_changes = workspace_changes
        self.keep_paused_work = keep_paused_work
        self.store = store  # the session store, for recovering a batch the SDK gave up (mirror_error)
        self.settings, self.budgets, self.observer = settings, budgets, observer
        self.prices, self.clock = prices, clock
        self.started = 0.0
        self.budget: float | None = None  # this invocation's max_budget_usd (capped by the session budget)
        # stream
        self.text: list[str] = []  # the assistant's text blocks (the answer when the result carries none)
        self.streamed = False  # the current assistant message's text already went out as deltas
        self.ttft_ms: float | None = None
        self.tool_names: dict[str, str] = {}  # tool_use id → tool name, for tool_result events
        self.call_usage: dict[str, Any] = {}  # usage of the model call under way (from its message_start)
        self.usages: list[dict[str, Any]] = []  # usage of each finished model call
        self.running_cost = 0.0  # priced per model call from the streamed usage
        self.budget_hit = False
        self.mirror_failed = False  # the SDK reported a transcript batch it could not store
        self.abandoned = False  # the caller left while the turn ran
        self.interrupt_task: asyncio.Task[None] | None = None
        self.model_error: str | None = None  # the SDK's error kind of a failed model call, once one came
        # settle
        self.answer = ""

    async def run(self) -> Awaitable[None]:
        """The phases in order; returns the persist phase, for the session to run after the reply."""
        await self.begin()
        with self.observer.turn_span(self.session, self.request) as span:
            result = await self.stream(span)
            changes = await self.changes(result)
            reply = self.settle(result, span, changes)
        await self.emit(reply)
        return self.persist(result)

    # -- 1. begin -----------------------------------------------------------------------------------------------

    async def begin(self) -> None:
        """Raises :class:`ClientDisconnected` when the caller already left, :class:`BudgetExceeded` when the
        session spent its budget, :class:`~runtime.errors.InvalidRequest` for limits above the ceilings."""
        sid = self.session.runtime_session_id
        if self.request.abandoned.is_set():
            self.observer.client_disconnected(sid)
            logger.info("session %s: caller left before its turn started; skipped", sid)
            raise ClientDisconnected("the caller disconnected before the turn started")
        try:
            spent = await self.session.account.spent()
            limits = self.budgets.effective_limits(
                self.request.max_turns, self.request.max_budget_usd, session_spent_usd=spent
            )
        except BudgetExceeded:
            self.observer.invocation_error("budget_exceeded")
            self.observer.budget_exceeded(sid, "session")
            raise
        self.budget = limits.max_budget_usd
        # The first turns wait for the background OpenTelemetry set-up (runtime.process.prewarm), so their spans export.
        await self.observer.spans_ready()
        self.started = self.clock()

    # -- 2. stream ----------------------------------------------------------------------------------------------

    async def stream(self, span: Span) -> ResultMessage:
        """Send the prompt and emit the reply's events until its ``ResultMessage``.

        Raises:
            TurnTimeout: the turn did not finish within ``AGENTKIT_TURN_TIMEOUT`` (or the request's own timeout).
            AgentProcessError: the CLI exited or closed its output before the result.
        """
        client = self.process.client
        result: ResultMessage | None = None
        timeout_s = self.request.timeout_s or self.settings.turn_timeout_s
        approvals = (
            self.approvals.bind(self.session.claude_session_id, self.binding)
            if self.approvals is not None
            else contextlib.nullcontext()
        )
        silence = SilenceWatch(
            after_s=self.settings.model_silence_warn_s,
            session=self.session.runtime_session_id,
            clock=self.clock,
        )
        try:
            async with asyncio.timeout(timeout_s), self._interrupt_when_abandoned(), silence.watching():
                with approvals:
                    try:
                        await client.query(prompt_stream(self.request.prompt, self.session.claude_session_id))
                    except (CLIConnectionError, ProcessError) as exc:
                        raise CLIGone(str(exc) or type(exc).__name__) from exc
                    async for message in guarded(client.receive_response()):
                        silence.heard(
                            waiting_on_tool=isinstance(message, AssistantMessage)
                            and any(isinstance(block, ToolUseBlock) for block in message.content)
                        )
                        if isinstance(message, ResultMessage):
                            result = message
                            break
                        await self._translate(message)
        except TimeoutError:
            self._count_aborted(span)
            self.observer.invocation_error("turn_timeout")
            raise TurnTimeout(
                f"the turn did not finish within {timeout_s:.0f} s and was stopped. "
                "The session stays usable: send the next turn, or narrow the task."
            ) from None
        except CLIGone as exc:
            self._count_aborted(span)
            self.observer.invocation_error("agent_process_error")
            raise AgentProcessError(
                f"the Claude Code CLI exited before finishing the turn ({exc.reason}).{self._limit_hit()} The "
                "session reconnects on the next invocation; retry it."
            ) from None
        except asyncio.CancelledError:  # shutdown: what the turn spent so far still counts
            self._count_aborted(span)
            raise
        finally:
            await settle_task(self.interrupt_task, grace_s=INTERRUPT_GRACE_S if result is not None else 0.0)
        if result is None:  # unreachable: guarded raises when the stream ends without a result
            raise AgentProcessError("the turn ended without a result; retry the invocation")
        return result

    def _limit_hit(self) -> str:
        """Why the CLI died, when its session hit its memory limit: the kernel's out-of-memory killer picks the
        largest process of the session's cgroup, which is the CLI itself when many smaller processes fill it."""
        found = resources.limit_hits_of(self.session.claude_session_id)
        if found is None or "memory" not in found[0]:
            return ""
        hits, limits = found
        for limit, times in hits.items():
            value = limits.memory_mb if limit == "memory" else limits.processes
            self.observer.session_limit_hit(
                self.session.runtime_session_id,
                limit,
                times,
                enforcement=limits.enforcement,
                limit_value=value,
            )
        return (
            f" The session's memory limit ({limits.memory_mb} MiB for the agent and all its commands) was reached "
            "and the system ended the agent's own process: use less memory in commands."
        )

    async def _translate(self, message: Message) -> None:
        """One SDK message → the events it means (and the pricing of each finished model call)."""
        if isinstance(message, StreamEvent):
            event = message.event
            if event.get("type") in ("message_start", "message_delta"):
                self._count_call(event)
            elif event.get("type") == "content_block_delta":
                delta = event.get("delta") or {}
                if delta.get("type") == "text_delta" and delta.get("text"):
                    self.streamed = True
                    self._mark_first_token()
                    await self.emit({"type": "text", "text": delta["text"]})
        elif isinstance(message, AssistantMessage):
            if message.error is not None:
                # A failed model call: the CLI makes up an assistant message ("API Error: …", model
                # "<synthetic>") and then sends an error result with the same text. That text is the error's,
                # not the answer's: it goes out in the error event (settle), never as a text event.
                self.model_error = message.error
                return
            for block in message.content:
                if isinstance(block, TextBlock):
                    self.text.append(block.text)
                    if not self.streamed and block.text:
                        self._mark_first_token()
                        await self.emit({"type": "text", "text": block.text})
                elif isinstance(block, ToolUseBlock):
                    self.tool_names[block.id] = block.name
                    await self.emit(
                        {
                            "type": "tool_use",
                            "id": block.id,
                            "name": block.name,
                            "input_summary": summarize(block.input),
                        }
                    )
            self.streamed = False
        elif isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    await self.emit(
                        {
                            "type": "tool_result",
                            "id": block.tool_use_id,
                            "name": self.tool_names.get(block.tool_use_id, ""),
                            "ok": not bool(block.is_error),
                            "summary": summarize(block.content),
                        }
                    )
        elif isinstance(message, SystemMessage) and message.subtype == "mirror_error":
            self.mirror_failed = True
            self.observer.store_error("append", RuntimeError(str(message.data)))
            recover = getattr(self.store, "recover_from_transcript", None)
            if recover is not None:  # the SDK dropped the batch: re-read it from the CLI's local transcript
                recover(message.data.get("key"), self.settings.resolved_claude_config_dir / "projects")
        elif isinstance(message, SystemMessage) and message.subtype == "api_retry":
            self._log_retry(message.data)

    def _count_call(self, event: dict[str, Any]) -> None:
        """Price each model call as it completes; interrupt the turn once it is over its budget."""
        if event["type"] == "message_start":
            self.call_usage = dict((event.get("message") or {}).get("usage") or {})
            return
        usage = {**self.call_usage, **(event.get("usage") or {})}
        self.call_usage = {}
        self.usages.append(usage)
        self.running_cost += compute_turn_cost(
            None, usage, default_model=self.settings.model, table=self.prices
        ).total_cost_usd
        self._tell_cost(self.running_cost)
        if self.budget is not None and self.running_cost >= self.budget and not self.budget_hit:
            self.budget_hit = True
            logger.info(
                "invocation budget $%.4f reached ($%.4f); interrupting", self.budget, self.running_cost
            )
            self._interrupt()

    @contextlib.asynccontextmanager
    async def _interrupt_when_abandoned(self) -> AsyncIterator[None]:
        """While the body runs: when the caller leaves (the HTTP edge sets ``request.abandoned``), interrupt
        the turn. The CLI then ends it with an interrupted result at its next step; its spend is counted as
        usual and the warm client stays connected for the next turn."""

        async def watch() -> None:
            await self.request.abandoned.wait()
            self.abandoned = True
            self.observer.client_disconnected(self.session.runtime_session_id)
            logger.info(
                "session %s: caller disconnected mid-turn; interrupting", self.session.runtime_session_id
            )
            self._interrupt()

        task = asyncio.create_task(watch(), name="turn-disconnect-watch")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _interrupt(self) -> None:
        """Ask the CLI to stop the turn, once. The request runs as its own task while the messages keep being
        consumed: awaiting it here could stall, because the SDK reads the interrupt's answer only after the
        messages before it are taken."""
        if self.interrupt_task is None:
            self.interrupt_task = asyncio.create_task(self.process.client.interrupt(), name="turn-interrupt")

    def _log_retry(self, data: dict[str, Any]) -> None:
        """A model call failed and the CLI retries it: say so now. With Bedrock unreachable the CLI retries for
        minutes before its error result, and nothing else shows in the log meanwhile."""
        delay = data.get("retry_delay_ms")
        logger.warning(
            "session %s: model call failed (HTTP %s %s); the CLI retries (attempt %s of %s) in %s",
            self.session.runtime_session_id,
            data.get("error_status") or "-",
            data.get("error") or "error",
            data.get("attempt", "?"),
            data.get("max_retries", "?"),
            f"{delay / 1000:.1f} s" if isinstance(delay, int | float) else "a moment",
        )

    def _tell_cost(self, usd: float) -> None:
        """Pass the turn's cost so far to whoever asked (an asynchronous job's progress); never raises."""
        if self.request.on_cost is not None:
            try:
                self.request.on_cost(usd)
            except Exception:
                logger.exception("the turn's cost listener failed")

    def _mark_first_token(self) -> None:
        if self.ttft_ms is None:
            self.ttft_ms = (self.clock() - self.started) * 1000

    def _count_aborted(self, span: Span) -> None:
        """Count the spend of a turn that ends without a result (the CLI reports nothing for it): price its
        streamed usage, record it, add it to the session and persist it in the background. Never raises."""
        usages = self.usages + ([self.call_usage] if self.call_usage else [])
        if not usages:
            return
        try:
            cost = compute_turn_cost(
                None, sum_usage(usages), default_model=self.settings.model, table=self.prices
            )
            latency_ms = (self.clock() - self.started) * 1000
            self.observer.turn_aborted(span, self.session, self.request, cost=cost, latency_ms=latency_ms)
            self._tell_cost(cost.total_cost_usd)
            if cost.total_cost_usd > 0:
                self.session.account.add(cost.total_cost_usd, turns=0)
                self.session.account.persist_soon()
        except Exception:
            logger.exception("could not count the spend of an aborted turn")
            return
        logger.info(
            "session %s: aborted turn cost $%.6f", self.session.runtime_session_id, cost.total_cost_usd
        )

    # -- 3. settle ----------------------------------------------------------------------------------------------

    async def changes(self, result: ResultMessage) -> Changes | AgentKitError | None:
        """The workspace's change for a successful turn of a session that works on a snapshot; an error (patch
        too large, git failed) is returned, so the turn still settles its cost. A turn paused for approval returns
        none (its work is not done) but keeps its work with the session, for a microVM that takes the answer."""
        if self.workspace_changes is None or self._error_for(result) is not None:
            return None
        # git runs in the turn's time: what is left of the turn's timeout, never less than MIN_PATCH_TIME_S
        timeout_s = self.request.timeout_s or self.settings.turn_timeout_s
        left = max(MIN_PATCH_TIME_S, timeout_s - (self.clock() - self.started))
        if self.binding.paused:
            if self.keep_paused_work is not None:
                await self.keep_paused_work(self.session, left)
            return None
        try:
            return await self.workspace_changes(self.session, left)
        except AgentKitError as exc:
            logger.warning("session %s: no patch: %s", self.session.runtime_session_id, exc.message)
            return exc

    def settle(
        self, result: ResultMessage, span: Span, changes: Changes | AgentKitError | None = None
    ) -> TurnItem:
        """The result event (with the workspace's patch when there is one), or a :class:`Failure` that reports
        what the turn cost. Records the turn and adds its cost to the session's spend."""
        session, process = self.session, self.process
        # The CLI counts usage and total_cost_usd per process: the process prices this turn's difference.
        sdk_cost = process.sdk_cost(result.total_cost_usd)
        # A model the kit cannot price (a subagent's, a fallback's) is charged at the CLI's own figure.
        cost = process.cost_tracker.price(result.model_usage, result.usage, reported_total=sdk_cost)
        self.answer = result.result if result.result is not None else "".join(self.text)
        self.observer.turn_finished(
            span,
            session,
            self.request,
            result,
            cost=cost,
            sdk_cost_usd=sdk_cost,
            latency_ms=(self.clock() - self.started) * 1000,
            ttft_ms=self.ttft_ms,
        )
        # The stored base was read (or tried) in begin; a retry waits for persist, after the reply.
        session.account.add(cost.total_cost_usd)
        total = session.account.total_usd  # None while the stored base is unknown
        figures: TurnFigures = {
            "cost_usd": round(cost.total_cost_usd, 6),
            "sdk_cost_usd": sdk_cost,
            "cost_complete": cost.complete,
            "session_cost_usd": round(total, 6) if total is not None else None,
            "usage": {
                "input_tokens": cost.input_tokens,
                "output_tokens": cost.output_tokens,
                "cache_read_input_tokens": cost.cache_read_tokens,
                "cache_creation_input_tokens": cost.cache_write_tokens,
            },
        }
        error = self._error_for(result)
        if error is None and isinstance(changes, AgentKitError):
            error = changes
        if error is None:
            reply: ResultEvent = {
                "type": "result",
                "session_id": session.runtime_session_id,
                "claude_session_id": result.session_id or session.claude_session_id,
                "text": self.answer,
                "subtype": result.subtype,
                "num_turns": result.num_turns,
                "duration_ms": result.duration_ms,
                "resumed": process.resumed and session.client_turns == 0,
                # the conversation had earlier turns (warm, or restored from the store): a caller who meant to
                # continue one sees a mistyped session id start a new one
                "continued": process.resumed or session.client_turns > 0,
                **figures,
            }
            if self.binding.paused is not None:
                reply["subtype"] = AWAITING_APPROVAL
                reply["approval"] = self.binding.paused.card()
            if isinstance(changes, Changes):
                reply["patch"] = changes.patch
                reply["changed_files"] = changes.changed_files
                reply["withheld_files"] = changes.withheld_files
            return reply
        # The turn ended but failed: report it with what it cost. The CLI process stays usable.
        if error.code == "budget_exceeded":
            self.observer.budget_exceeded(session.runtime_session_id, "invocation")
        self.observer.invocation_error(error.code)
        detail = "" if result.subtype != "success" or not self.answer else f" {self.answer.rstrip('.')}."
        if error.code == "model_error":
            detail += " Retry later; if it persists, check AGENTKIT_MODEL and your Bedrock quotas."
        return Failure(
            {
                "type": "error",
                "code": error.code,
                "message": f"{error.message.rstrip('.')}.{detail}".rstrip(),
                "partial": {**figures, "subtype": result.subtype},
            },
            error.http_status,
        )

    def _error_for(self, result: ResultMessage) -> AgentKitError | None:
        """What went wrong, if anything: the caller left, the invocation budget ran out, or the result says."""
        if self.abandoned:
            return ClientDisconnected("the caller disconnected; the turn was interrupted")
        if self.budget_hit:
            return BudgetExceeded(
                f"the invocation reached its max_budget_usd of ${self.budget:.4f} (spent ${self.running_cost:.4f})"
                " and was stopped; raise max_budget_usd (up to AGENTKIT_MAX_BUDGET_USD) or narrow the task"
            )
        error = error_for_result(
            result.subtype,
            is_error=result.is_error,
            errors=result.errors,
            api_error_status=result.api_error_status,
        )
        if error is None and self.mirror_failed and self.settings.store_strict:
            return SessionStoreError(
                "the answer could not be saved to the session store in time (AGENTKIT_STORE_STRICT), so it is not "
                "acknowledged; it is kept on this microVM and may still reach the session. Retry the invocation"
            )
        return error

    # -- 4. persist ---------------------------------------------------------------------------------------------

    async def persist(self, result: ResultMessage) -> None:
        """Save the session's spend (it must outlive the microVM) and feed long-term memory. Never raises."""
        await self.session.account.persist()
        if not result.is_error:
            self.session.account.remember(prompt=self.request.prompt, answer=self.answer)
