"""What the runtime observes around a turn: metrics and spans, nothing else.

It combines the metrics sink (:mod:`runtime.observe.metrics`), spans (:mod:`runtime.observe.tracing`) and the tool
hooks (:mod:`runtime.observe.tool_hooks`). It records what it is told: prices come priced
(:mod:`runtime.observe.costs`, by the turn), spend and long-term memory belong to the session's account
(:mod:`runtime.accounting`). Nothing here raises into a turn.

Environment variables: none (the sink and tracer are built by :mod:`runtime.wiring`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal, Protocol

from opentelemetry.context import Context
from opentelemetry.trace import Span

from runtime.observe.costs import TurnCost
from runtime.observe.metrics import DEFAULT_NAMESPACE, BaseMetrics, NullMetrics, TurnRecord
from runtime.observe.tool_hooks import ToolTelemetry
from runtime.observe.tracing import Tracing, record_turn_result

if TYPE_CHECKING:
    from claude_agent_sdk import HookMatcher

    from runtime.approvals.records import ApprovalRecord

logger = logging.getLogger(__name__)
#: Approval events made by a person (or a stopped job's front end), whose ``by`` is recorded.
DECIDED = ("approved", "denied", "withdrawn")


class ObservedSession(Protocol):
    """Who a turn belongs to (:class:`runtime.sessions.WarmSession` has these)."""

    @property
    def runtime_session_id(self) -> str: ...

    @property
    def claude_session_id(self) -> str: ...

    @property
    def actor_id(self) -> str | None: ...


class ObservedRequest(Protocol):
    """What of a request goes on its spans and metrics (:class:`runtime.sessions.TurnRequest` has these)."""

    @property
    def metadata(self) -> Mapping[str, str]: ...

    @property
    def trace_headers(self) -> Mapping[str, str] | None: ...


class TurnResult(Protocol):
    """The parts of the SDK's ``ResultMessage`` that are recorded."""

    @property
    def num_turns(self) -> int: ...

    @property
    def subtype(self) -> str: ...

    @property
    def is_error(self) -> bool: ...


@contextlib.contextmanager
def _attached(ctx: Context) -> Iterator[None]:
    """Make ``ctx`` (the invocation's trace context + ``session.id`` baggage, :mod:`runtime.observe.baggage`)
    current for the spans of a turn; the turn runs on the session's task, not the request's."""
    from opentelemetry import context as otel_context

    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


class Observer:
    """Metrics and spans for turns, tool calls and the session events around them.

    Args:
        metrics: the metrics sink (default: none).
        tracing: the span factory (default: the OpenTelemetry API's global tracer).
        model: the configured inference profile id (a span attribute and the turn metrics' ``Model``).
        clock: monotonic seconds for tool latencies.
    """

    def __init__(
        self,
        *,
        metrics: BaseMetrics | None = None,
        tracing: Tracing | None = None,
        model: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metrics = metrics or NullMetrics(namespace=DEFAULT_NAMESPACE, agent="agentkit")
        self.tracing = tracing or Tracing()
        self.model = model
        self.tools = ToolTelemetry(self.metrics, self.tracing, clock=clock)

    def tool_hooks(self) -> dict[str, list[HookMatcher]]:
        """The SDK hooks that time, count and trace every tool call (``PreToolUse``, ``PostToolUse``, ...)."""
        return self.tools.hooks()

    # -- spans --------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def session_span(
        self, op: Literal["load", "flush", "resume"], *, claude_session_id: str
    ) -> Iterator[Span]:
        """A span around a session-store operation."""
        with self.tracing.session_op(op, session_id=claude_session_id) as s:
            yield s

    @contextlib.contextmanager
    def turn_span(self, session: ObservedSession, request: ObservedRequest) -> Iterator[Span]:
        """The invocation and turn spans (tool spans nest in the turn span); the request's metadata goes on the
        turn span as ``agentkit.metadata.<key>`` attributes."""
        from runtime.observe.baggage import invocation_context

        trace_context = invocation_context(request.trace_headers, session.runtime_session_id)
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
            if request.metadata:
                span.set_attributes({f"agentkit.metadata.{k}": str(v) for k, v in request.metadata.items()})
            yield span

    @staticmethod
    async def spans_ready(timeout_s: float = 15.0) -> None:
        """Wait (bounded) for the background OpenTelemetry set-up (:mod:`runtime.observe.otel_setup`), so the
        first turns' spans reach the exporter. Free once it is done or when none was started."""
        from runtime.observe import otel_setup

        if not otel_setup.is_ready():
            await asyncio.to_thread(otel_setup.wait_ready, timeout_s)

    # -- a turn's end -------------------------------------------------------------------------------------

    def turn_finished(
        self,
        span: Span,
        session: ObservedSession,
        request: ObservedRequest,
        result: TurnResult,
        *,
        cost: TurnCost,
        sdk_cost_usd: float | None,
        latency_ms: float,
        ttft_ms: float | None,
    ) -> None:
        """A turn that reached its ``ResultMessage``: usage, cost and outcome on its span and in its metrics."""
        record_turn_result(
            span,
            cost,
            sdk_cost_usd=sdk_cost_usd,
            num_turns=result.num_turns,
            subtype=result.subtype,
            is_error=result.is_error,
            time_to_first_token_ms=ttft_ms,
        )
        self.metrics.record_turn(
            TurnRecord(
                model=self.model,
                cost=cost,
                invocation_latency_ms=latency_ms,
                time_to_first_token_ms=ttft_ms,
                session_id=session.runtime_session_id,
                caller=session.actor_id,
                claude_session_id=session.claude_session_id,
                sdk_cost_usd=sdk_cost_usd,
                num_turns=result.num_turns,
                subtype=result.subtype,
                is_error=result.is_error,
                metadata=request.metadata,
            )
        )

    def turn_aborted(
        self,
        span: Span,
        session: ObservedSession,
        request: ObservedRequest,
        *,
        cost: TurnCost,
        latency_ms: float,
    ) -> None:
        """A turn that never reached a result (timeout, crashed CLI, shutdown), priced from its streamed usage:
        its tokens and CostUSD (no Turns), and ``aborted`` on its span."""
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
                    metadata=request.metadata,
                )
            )

    # -- events -------------------------------------------------------------------------------------------

    def tool_denied(
        self, tool_name: str, *, tool_use_id: str | None = None, claude_session_id: str | None = None
    ) -> None:
        """Count a call the policy refused; with ``tool_use_id`` its PreToolUse span is closed as denied."""
        self.tools.record_denied(tool_name, tool_use_id=tool_use_id, claude_session_id=claude_session_id)

    def invocation_error(self, code: str) -> None:
        self.metrics.record_event("InvocationErrors", dimensions={"ErrorCode": code})

    def budget_exceeded(self, runtime_session_id: str, scope: Literal["session", "invocation"]) -> None:
        self.metrics.record_event(
            "BudgetExceeded", properties={"scope": scope, "session_id": runtime_session_id}
        )

    def session_resumed(self, runtime_session_id: str) -> None:
        self.metrics.record_event("SessionResumed", properties={"session_id": runtime_session_id})

    def client_disconnected(self, runtime_session_id: str) -> None:
        """The caller left before its turn's reply was complete (the turn was skipped or interrupted)."""
        self.metrics.record_event("Disconnected", properties={"session_id": runtime_session_id})

    def session_limit_hit(
        self, runtime_session_id: str, limit: str, times: int, *, enforcement: str, limit_value: int
    ) -> None:
        """A command of the session hit its memory or process limit (``runtime.guard.limit_hook``)."""
        logger.warning(
            "session %s hit its %s limit (%d, enforced by %s) %d time(s): the command was stopped, the session goes on",
            runtime_session_id,
            limit,
            limit_value,
            enforcement,
            times,
        )
        self.metrics.record_event(
            "SessionLimitHit",
            value=times,
            properties={"limit": limit, "session_id": runtime_session_id, "enforcement": enforcement},
        )

    def approval(self, event: str, record: ApprovalRecord, *, wait_s: float | None = None) -> None:
        """A tool call's approval was requested, approved, denied, used, expired or withdrawn
        (:mod:`runtime.approvals`): a log line, a span on the session and, except for ``used``, a metric (with the
        time to decision for an answer).
        Never raises."""
        try:
            logger.info(
                "approval %s %s: session %s, tool %s, rule %s%s",
                record.id,
                event,
                record.session_id or record.claude_session_id,
                record.tool,
                record.rule,
                f", by {record.decided_by}" if event in DECIDED and record.decided_by else "",
            )
            props = {
                "session_id": record.session_id or None,
                "approval_id": record.id,
                "rule": record.rule,
                "job_id": record.job_id,
                "by": record.decided_by if event in DECIDED else None,
            }
            name = {
                "requested": "ApprovalsRequested",
                "approved": "Approved",
                "denied": "Denied",
                "expired": "Expired",
                "withdrawn": "Withdrawn",
            }.get(event)
            if name is not None:
                self.metrics.record_event(name, dimensions={"Tool": record.tool}, properties=props)
            if wait_s is not None:
                self.metrics.record_event(
                    "ApprovalDecisionSeconds",
                    value=wait_s,
                    dimensions={"Tool": record.tool},
                    properties=props,
                )
            self.tracing.approval_event(
                event,
                {
                    "session.id": record.session_id or None,
                    "gen_ai.conversation.id": record.session_id or None,
                    "agentkit.claude_session_id": record.claude_session_id,
                    "agentkit.approval.id": record.id,
                    "agentkit.approval.tool": record.tool,
                    "agentkit.approval.rule": record.rule,
                    "agentkit.approval.input_hash": record.input_hash,
                    "agentkit.approval.by": props["by"],
                    "agentkit.approval.job_id": record.job_id,
                    "agentkit.approval.wait_s": wait_s,
                },
            )
        except Exception:
            logger.exception("could not record approval event %s", event)

    def store_error(self, operation: str, exc: BaseException) -> None:
        logger.warning("session store %s failed: %s", operation, exc)
        self.metrics.record_event("SessionStoreErrors", properties={"operation": operation})

    async def aclose(self) -> None:
        await self.metrics.close()
