"""What the runtime observes and remembers around a turn, behind one small facade.

It combines the metrics sink (:mod:`runtime.observe.metrics`), spans (:mod:`runtime.observe.tracing`), tool hooks
(:mod:`runtime.observe.tool_hooks`), the price table (:mod:`runtime.observe.costs`), the session's persisted state (its
cumulative spend, via the session store's ``get_state``/``put_state``) and long-term memory
(:mod:`runtime.store.recall`). :class:`runtime.agent.turn.AgentTurnRunner` calls it; nothing here raises into a turn
except what a caller must see.

Session spend is read lazily from the store (``get_state``) and never overwritten from an unknown base: while
the read fails, ``session.spent_usd`` stays ``None``, the spend of this process accumulates in
``session.unpersisted_usd`` (and turns in ``session.unpersisted_turns``), and ``put_state`` is skipped; the
next successful read folds them in (stored + unpersisted). Writes of one session are serialised and always
write the newest totals, so a write finishing late never replaces a newer one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from runtime.observe.costs import DEFAULT_PRICES, PriceTable, TurnCost, TurnCostTracker, compute_turn_cost
from runtime.observe.metrics import DEFAULT_NAMESPACE, BaseMetrics, NullMetrics, TurnRecord
from runtime.observe.tool_hooks import ToolTelemetry
from runtime.observe.tracing import Tracing, record_turn_result

if TYPE_CHECKING:
    from runtime.observe.budgets import SpendLedger
    from runtime.protocol import TurnFigures

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _attached(ctx: Any) -> Iterator[None]:
    """Make ``ctx`` (the invocation's trace context + ``session.id`` baggage, :mod:`runtime.observe.baggage`)
    current for the spans of a turn; the turn runs on the session's task, not the request's."""
    from opentelemetry import context as otel_context

    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


@dataclass
class TurnOutcome:
    """What a finished turn produced (the SDK ``ResultMessage`` plus timings)."""

    result: Any
    cost: TurnCost  # priced by the agent from the CLI process's cumulative usage
    sdk_cost_usd: float | None
    text: str
    latency_ms: float
    ttft_ms: float | None
    prompt: str
    tools: list[str] = field(default_factory=list)


class Telemetry:
    """Metrics, spans, costs, session spend and long-term memory for turns."""

    def __init__(
        self,
        *,
        metrics: BaseMetrics | None = None,
        tracing: Tracing | None = None,
        prices: PriceTable = DEFAULT_PRICES,
        model: str,
        state_store: Any = None,
        recall: Any = None,
        recall_hook_factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metrics = metrics or NullMetrics(namespace=DEFAULT_NAMESPACE, agent="agentkit")
        self.tracing = tracing or Tracing()
        self.prices = prices
        self.model = model
        self.state_store = state_store
        self.recall = recall
        self.recall_hook_factory = recall_hook_factory
        self.tools = ToolTelemetry(self.metrics, self.tracing, clock=clock)
        self._background: set[asyncio.Task[Any]] = set()

    # -- spans --------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def session_span(
        self, op: Literal["load", "flush", "resume"], *, claude_session_id: str
    ) -> Iterator[Any]:
        """A span around a session-store operation."""
        with self.tracing.session_op(op, session_id=claude_session_id) as s:
            yield s

    @contextlib.contextmanager
    def turn_span(self, session: Any, request: Any) -> Iterator[Any]:
        """The invocation and turn spans; the request's metadata goes on the turn span as
        ``agentkit.metadata.<key>`` attributes."""
        from runtime.observe.baggage import invocation_context

        trace_context = invocation_context(
            getattr(request, "trace_headers", None), session.runtime_session_id
        )
        with (
            _attached(trace_context),
            self.tracing.invocation(
                session_id=session.runtime_session_id, caller=session.actor_id, model=self.model
            ),
            self.tracing.turn(model=self.model, claude_session_id=session.claude_session_id) as span,
            self.tools.bind(
                span,
                claude_session_id=session.claude_session_id,
                session_id=session.runtime_session_id,
                caller=session.actor_id,
            ),
        ):
            metadata = getattr(request, "metadata", None) or {}
            if metadata:
                span.set_attributes({f"agentkit.metadata.{k}": str(v) for k, v in metadata.items()})
            yield span

    @staticmethod
    async def spans_ready(timeout_s: float = 15.0) -> None:
        """Wait (bounded) for the background OpenTelemetry set-up (:mod:`runtime.observe.otel_setup`), so the
        first turns' spans reach the exporter. Free once it is done or when none was started."""
        from runtime.observe import otel_setup

        if not otel_setup.is_ready():
            await asyncio.to_thread(otel_setup.wait_ready, timeout_s)

    def cost_tracker(self) -> TurnCostTracker:
        """A fresh tracker for a new CLI process (its usage counters are cumulative)."""
        return TurnCostTracker(default_model=self.model, table=self.prices)

    # -- hooks --------------------------------------------------------------------------------------------

    def hooks_for(self, session: Any) -> dict[str, list[Any]]:
        hooks = self.tools.hooks()
        if self.recall is not None and self.recall_hook_factory is not None and session.actor_id is not None:
            hooks["UserPromptSubmit"] = [
                self.recall_hook_factory(
                    self.recall, actor_id=session.actor_id, session_id=session.claude_session_id
                )
            ]
        return hooks

    # -- events -------------------------------------------------------------------------------------------

    def tool_denied(
        self, tool_name: str, *, tool_use_id: str | None = None, claude_session_id: str | None = None
    ) -> None:
        """Count a call the policy refused; with ``tool_use_id`` its PreToolUse span is closed as denied."""
        self.tools.record_denied(tool_name, tool_use_id=tool_use_id, claude_session_id=claude_session_id)

    def invocation_error(self, code: str) -> None:
        self.metrics.record_event("InvocationErrors", dimensions={"ErrorCode": code})

    def budget_exceeded(self, session: Any, scope: str) -> None:
        self.metrics.record_event(
            "BudgetExceeded", properties={"scope": scope, "session_id": session.runtime_session_id}
        )

    def session_resumed(self, session: Any) -> None:
        self.metrics.record_event("SessionResumed", properties={"session_id": session.runtime_session_id})

    def client_disconnected(self, session: Any) -> None:
        """The caller left before its turn's reply was complete (the turn was skipped or interrupted)."""
        self.metrics.record_event("Disconnected", properties={"session_id": session.runtime_session_id})

    def store_error(self, operation: str, exc: BaseException) -> None:
        logger.warning("session store %s failed: %s", operation, exc)
        self.metrics.record_event("SessionStoreErrors", properties={"operation": operation})

    # -- session spend ------------------------------------------------------------------------------------

    async def session_spend(self, session: Any) -> float:
        """The session's cumulative cost so far (persisted with the session, survives a new microVM).

        Read from the store on first use. When the read fails (recorded as SessionStoreErrors) the base stays
        unknown and this returns what this process has counted; a later call reads again.
        """
        ledger: SpendLedger = session.spend
        if not ledger.known:
            if self.state_store is None:
                state: dict[str, Any] = {}
            else:
                try:
                    state = await self.state_store.get_state(session.claude_session_id) or {}
                except Exception as exc:
                    self.store_error("get_state", exc)
                    return ledger.so_far()
            ledger.load(state)  # a concurrent read may have loaded it already: then this changes nothing
        return ledger.so_far()

    def add_spend(self, session: Any, usd: float, *, turns: int = 1) -> float:
        """Count ``usd`` (and ``turns``) into the session; returns the spend now known."""
        ledger: SpendLedger = session.spend
        return ledger.add(usd, turns=turns)

    async def persist_spend(self, session: Any) -> None:
        """Write the session's totals (``spent_usd``, ``turns``) to the store. Never raises.

        Skipped while the stored base is unknown (one more read is tried first): writing then would replace
        the stored total with this process's part of it.
        """
        if self.state_store is None:
            return
        ledger: SpendLedger = session.spend
        async with ledger.lock:
            if not ledger.known:
                await self.session_spend(session)
                if not ledger.known:
                    logger.warning(
                        "session %s: stored spend unknown, $%.6f kept in memory until the store answers",
                        session.runtime_session_id,
                        ledger.unpersisted_usd,
                    )
                    return
            try:
                await self.state_store.put_state(session.claude_session_id, ledger.state())
            except Exception as exc:
                self.store_error("put_state", exc)

    def turn_aborted(
        self, session: Any, request: Any, usage: Any, *, latency_ms: float, span: Any = None
    ) -> float:
        """A turn that never reached a result (timeout, crashed CLI, shutdown): price its streamed ``usage``,
        record its tokens and CostUSD (no Turns), count the spend and persist it in the background.
        Returns the cost. Never raises."""
        try:
            cost = compute_turn_cost(None, usage or {}, default_model=self.model, table=self.prices)
            if span is not None:
                record_turn_result(span, cost, subtype="aborted")
            if cost.per_model:
                self.metrics.record_turn(
                    TurnRecord(
                        model=self.model,
                        cost=cost,
                        invocation_latency_ms=latency_ms,
                        session_id=session.runtime_session_id,
                        caller=session.actor_id,
                        claude_session_id=session.claude_session_id,
                        completed=False,
                        metadata=getattr(request, "metadata", None),
                    )
                )
            if cost.total_cost_usd > 0:
                self.add_spend(session, cost.total_cost_usd, turns=0)
                self._in_background(self.persist_spend(session), what="session spend write")
            return float(cost.total_cost_usd)
        except Exception:
            logger.exception("could not count the spend of an aborted turn")
            return 0.0

    # -- the end of a turn --------------------------------------------------------------------------------

    async def turn_finished(self, session: Any, request: Any, outcome: TurnOutcome, span: Any) -> TurnFigures:
        """Price the turn, emit its metrics and span attributes, count the spend; returns the reply figures.

        Persisting happens in :meth:`persist_turn`, after the reply has gone out.
        """
        result = outcome.result
        cost = outcome.cost
        record_turn_result(
            span,
            cost,
            sdk_cost_usd=outcome.sdk_cost_usd,
            num_turns=result.num_turns,
            subtype=result.subtype,
            is_error=result.is_error,
            time_to_first_token_ms=outcome.ttft_ms,
        )
        self.metrics.record_turn(
            TurnRecord(
                model=self.model,
                cost=cost,
                invocation_latency_ms=outcome.latency_ms,
                time_to_first_token_ms=outcome.ttft_ms,
                session_id=session.runtime_session_id,
                caller=session.actor_id,
                claude_session_id=session.claude_session_id,
                sdk_cost_usd=outcome.sdk_cost_usd,
                num_turns=result.num_turns,
                subtype=result.subtype,
                is_error=result.is_error,
                metadata=getattr(request, "metadata", None),
            )
        )
        # The stored base was read (or tried) before the turn; a retry waits for persist_spend, after the reply.
        self.add_spend(session, cost.total_cost_usd)
        # None while the stored base is unknown (the store did not answer): a partial sum would mislead.
        spent = session.spend.spent_usd
        return {
            "cost_usd": round(cost.total_cost_usd, 6),
            "sdk_cost_usd": outcome.sdk_cost_usd,
            "cost_complete": cost.complete,
            "session_cost_usd": round(spent, 6) if spent is not None else None,
            "usage": {
                "input_tokens": cost.input_tokens,
                "output_tokens": cost.output_tokens,
                "cache_read_input_tokens": cost.cache_read_tokens,
                "cache_creation_input_tokens": cost.cache_write_tokens,
            },
        }

    async def persist_turn(self, session: Any, outcome: TurnOutcome) -> None:
        """Save the session's spend (it must outlive the microVM) and feed long-term memory. Never raises.

        Runs after the reply is complete but before the session's next turn (the session actor awaits it).
        """
        await self.persist_spend(session)
        if self.recall is not None and session.actor_id is not None and not outcome.result.is_error:
            self._in_background(
                self.recall.record_turn(
                    actor_id=session.actor_id,
                    session_id=session.claude_session_id,
                    user_text=outcome.prompt,
                    assistant_text=outcome.text,
                )
            )

    def _in_background(self, coro: Any, *, what: str = "memory write") -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)

        def _done(t: asyncio.Task[Any]) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                logger.warning("background %s failed: %s", what, t.exception())

        task.add_done_callback(_done)

    async def drain(self) -> None:
        """Wait for background work (memory and spend writes); call before closing the store."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    async def aclose(self) -> None:
        await self.drain()
        await self.metrics.close()
