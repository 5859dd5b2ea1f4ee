"""What the runtime observes and remembers around a turn, behind one small facade.

It combines the metrics sink (:mod:`runtime.metrics`), spans (:mod:`runtime.tracing`), tool hooks
(:mod:`runtime.tool_hooks`), the price table (:mod:`runtime.costs`), the session's persisted state (its
cumulative spend, via the session store's ``get_state``/``put_state``) and long-term memory
(:mod:`runtime.recall`). :class:`runtime.agent.AgentTurnRunner` calls it; nothing here raises into a turn
except what a caller must see.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from runtime.costs import DEFAULT_PRICES, PriceTable, TurnCost, TurnCostTracker
from runtime.metrics import BaseMetrics, NullMetrics, TurnRecord
from runtime.tool_hooks import ToolTelemetry
from runtime.tracing import Tracing, record_turn_result

logger = logging.getLogger(__name__)


@dataclass
class TurnOutcome:
    """What a finished turn produced (the SDK ``ResultMessage`` plus timings)."""

    result: Any
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
    ) -> None:
        self.metrics = metrics or NullMetrics(namespace="AgentCoreClaudeKit", agent="agentkit")
        self.tracing = tracing or Tracing()
        self.prices = prices
        self.model = model
        self.state_store = state_store
        self.recall = recall
        self.recall_hook_factory = recall_hook_factory
        self.tools = ToolTelemetry(self.metrics, self.tracing)
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
        with (
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
            yield span

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

    def tool_denied(self, tool_name: str) -> None:
        self.tools.record_denied(tool_name)

    def invocation_error(self, code: str) -> None:
        self.metrics.record_event("InvocationErrors", dimensions={"ErrorCode": code})

    def budget_exceeded(self, session: Any, scope: str) -> None:
        self.metrics.record_event(
            "BudgetExceeded", properties={"scope": scope, "session_id": session.runtime_session_id}
        )

    def session_resumed(self, session: Any) -> None:
        self.metrics.record_event("SessionResumed", properties={"session_id": session.runtime_session_id})

    def store_error(self, operation: str, exc: BaseException) -> None:
        logger.warning("session store %s failed: %s", operation, exc)
        self.metrics.record_event("SessionStoreErrors", properties={"operation": operation})

    # -- session spend ------------------------------------------------------------------------------------

    async def session_spend(self, session: Any) -> float:
        """The session's cumulative cost so far (persisted with the session, survives a new microVM)."""
        if self.state_store is None:
            return float(session.spent_usd or 0.0)
        if session.spent_usd is None:
            try:
                state = await self.state_store.get_state(session.claude_session_id) or {}
            except Exception as exc:
                self.store_error("get_state", exc)
                state = {}
            session.spent_usd = float(state.get("spent_usd", 0.0))
        return float(session.spent_usd)

    # -- the end of a turn --------------------------------------------------------------------------------

    async def turn_finished(
        self, session: Any, request: Any, outcome: TurnOutcome, span: Any
    ) -> dict[str, Any]:
        """Price the turn, emit its metrics and span attributes, count the spend; returns the reply figures.

        Persisting happens in :meth:`persist_turn`, after the reply has gone out.
        """
        result = outcome.result
        cost: TurnCost = session.cost_tracker.price(result.model_usage, result.usage)
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
            )
        )
        spent = await self.session_spend(session) + cost.total_cost_usd
        session.spent_usd = spent
        return {
            "cost_usd": round(cost.total_cost_usd, 6),
            "sdk_cost_usd": outcome.sdk_cost_usd,
            "cost_complete": cost.complete,
            "session_cost_usd": round(spent, 6),
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
        if self.state_store is not None:
            try:
                await self.state_store.put_state(
                    session.claude_session_id,
                    {"spent_usd": session.spent_usd, "turns": session.turns_done + 1},
                )
            except Exception as exc:
                self.store_error("put_state", exc)
        if self.recall is not None and session.actor_id is not None and not outcome.result.is_error:
            self._in_background(
                self.recall.record_turn(
                    actor_id=session.actor_id,
                    session_id=session.claude_session_id,
                    user_text=outcome.prompt,
                    assistant_text=outcome.text,
                )
            )

    def _in_background(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)

        def _done(t: asyncio.Task[Any]) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                logger.warning("background memory write failed: %s", t.exception())

        task.add_done_callback(_done)

    async def aclose(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self.metrics.close()
