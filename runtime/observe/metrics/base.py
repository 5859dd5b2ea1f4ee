"""Records, metric documents and the sink base class shared by every metrics sink."""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from runtime.env import DEFAULT_METRICS_NAMESPACE
from runtime.observe.costs import TurnCost

logger = logging.getLogger(__name__)

METRICS_KINDS: tuple[str, ...] = ("emf", "cloudwatch", "off")
DEFAULT_NAMESPACE = DEFAULT_METRICS_NAMESPACE
DIMENSIONS = frozenset({"Agent", "Model", "Tool", "ErrorCode"})
EVENTS = frozenset(
    {
        "ApprovalDecisionSeconds",
        "Approved",
        "ApprovalsRequested",
        "BudgetExceeded",
        "Denied",
        "Disconnected",
        "Expired",
        "InvocationErrors",
        "JobResultsDeadLettered",
        "JobResultsKept",
        "JobsAccepted",
        "JobsInterrupted",
        "MemoryEventsWritten",
        "MemoryRetrievals",
        "SandboxUnavailable",
        "SandboxUnsafe",
        "SessionLimitHit",
        "SessionLimitsUnenforced",
        "SessionResumed",
        "SessionStoreDeadLetters",
        "SessionStoreErrors",
        "SessionStoreLateWrites",
        "Withdrawn",
    }
)

COUNT, MS, NONE = "Count", "Milliseconds", "None"
#: Events whose value is not a count.
EVENT_UNITS = {"ApprovalDecisionSeconds": "Seconds"}
MAX_VALUES_PER_DATUM = 150  # PutMetricData limit on distinct Values per datum


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """What the runtime knows at the end of a turn. ``model`` is the configured inference profile id."""

    model: str
    cost: TurnCost
    invocation_latency_ms: float
    time_to_first_token_ms: float | None = None
    session_id: str | None = None
    caller: str | None = None
    claude_session_id: str | None = None
    sdk_cost_usd: float | None = None
    num_turns: int | None = None
    subtype: str | None = None
    is_error: bool = False
    completed: bool = True  # False: the turn never reached a result (timeout, crash); its spend still counts
    metadata: Mapping[str, str] | None = None  # the request's metadata (a property, never a dimension)


@dataclass(frozen=True, slots=True)
class ToolRecord:
    """One tool call. ``latency_ms`` is None for a denied call."""

    tool: str
    outcome: Literal["ok", "error", "denied"]
    latency_ms: float | None = None
    session_id: str | None = None
    tool_use_id: str | None = None
    caller: str | None = None


@dataclass(slots=True)
class MetricDoc:
    """One dimension set's worth of metrics plus free-form properties (an EMF document)."""

    dimensions: dict[str, str]
    metrics: list[tuple[str, str, float]]  # (name, unit, value)
    properties: dict[str, Any] = field(default_factory=dict)
    timestamp: float = 0.0  # epoch seconds


TURN_COST_MARKER = "agentkit.turn_cost"


def turn_cost_line(record: TurnRecord) -> str:
    """The per-turn log line the dashboard's "top sessions and callers by cost" Logs Insights query reads.

    ``agentkit.turn_cost session="<id>" caller="<actor>" cost_usd=<usd> model="<profile>" completed=<bool>``;
    strings are JSON-quoted (so a caller with spaces or quotes parses), an unknown caller is ``"-"``.
    """
    return (
        f"{TURN_COST_MARKER} session={json.dumps(record.session_id or '-')} "
        f"caller={json.dumps(record.caller or '-')} cost_usd={record.cost.total_cost_usd:.6f} "
        f"model={json.dumps(record.model)} completed={'true' if record.completed else 'false'}"
    )


def _finite(value: float | None) -> bool:
    return value is not None and not isinstance(value, bool) and math.isfinite(value)


class BaseMetrics:
    """Turns records into :class:`MetricDoc` s and hands them to :meth:`_emit`. Subclasses are the sinks."""

    def __init__(self, *, namespace: str, agent: str, now: Callable[[], float] = time.time) -> None:
        if not namespace or not agent:
            raise ValueError("metrics need a non-empty namespace and agent name")
        self.namespace = namespace
        self.agent = agent
        self._now = now
        self.stats: collections.Counter[str] = collections.Counter()

    # --- record builders -----------------------------------------------------------------------------------
    def turn_docs(self, record: TurnRecord) -> list[MetricDoc]:
        """The documents one turn produces (one per model, turn-level metrics on ``record.model``)."""
        ts = self._now()
        docs: dict[str, MetricDoc] = {}
        for model, mc in record.cost.per_model.items():
            metrics: list[tuple[str, str, float]] = []
            if mc.cost_usd is not None:
                metrics.append(("CostUSD", NONE, mc.cost_usd))
            metrics += [
                ("InputTokens", COUNT, mc.input_tokens),
                ("OutputTokens", COUNT, mc.output_tokens),
                ("CacheReadTokens", COUNT, mc.cache_read_tokens),
                ("CacheWriteTokens", COUNT, mc.cache_write_tokens),
            ]
            docs[model] = MetricDoc({"Agent": self.agent, "Model": model}, metrics, timestamp=ts)
        main = docs.setdefault(
            record.model, MetricDoc({"Agent": self.agent, "Model": record.model}, [], timestamp=ts)
        )
        if record.completed:  # an aborted turn adds its tokens and cost, not a turn or a latency
            main.metrics.append(("Turns", COUNT, 1))
            if _finite(record.invocation_latency_ms):
                main.metrics.append(("InvocationLatencyMs", MS, record.invocation_latency_ms))
            if _finite(record.time_to_first_token_ms):
                main.metrics.append(("TimeToFirstTokenMs", MS, record.time_to_first_token_ms))  # type: ignore[arg-type]
        props: dict[str, Any] = {
            "SessionId": record.session_id,
            "Caller": record.caller,
            "ClaudeSessionId": record.claude_session_id,
            "SdkCostUSD": record.sdk_cost_usd,
            "TurnCostUSD": record.cost.total_cost_usd,
            "NumTurns": record.num_turns,
            "Subtype": record.subtype,
            "IsError": record.is_error,
            "PricesAsOf": record.cost.prices_as_of,
            "UnknownModels": list(record.cost.unknown_models) or None,
            "Completed": None if record.completed else False,
            "Metadata": dict(record.metadata) if record.metadata else None,
        }
        main.properties = {k: v for k, v in props.items() if v is not None}
        return [doc for doc in docs.values() if doc.metrics]

    def tool_doc(self, record: ToolRecord) -> MetricDoc:
        """The document one tool call produces."""
        if record.outcome == "denied":
            metrics: list[tuple[str, str, float]] = [("ToolDenied", COUNT, 1)]
        else:
            metrics = [("ToolCalls", COUNT, 1), ("ToolErrors", COUNT, 1 if record.outcome == "error" else 0)]
            if _finite(record.latency_ms):
                metrics.append(("ToolLatencyMs", MS, record.latency_ms))  # type: ignore[arg-type]
        props = {"SessionId": record.session_id, "ToolUseId": record.tool_use_id, "Caller": record.caller}
        return MetricDoc(
            {"Agent": self.agent, "Tool": record.tool or "unknown"},
            metrics,
            {k: v for k, v in props.items() if v is not None},
            timestamp=self._now(),
        )

    def event_doc(
        self,
        name: str,
        *,
        dimensions: Mapping[str, str] | None = None,
        value: float = 1,
        properties: Mapping[str, Any] | None = None,
    ) -> MetricDoc:
        """The document for one event. Raises ValueError for an unknown event or a disallowed dimension."""
        if name not in EVENTS:
            raise ValueError(f"unknown metric event {name!r}; expected one of {sorted(EVENTS)}")
        dims = dict(dimensions or {})
        bad = set(dims) - (DIMENSIONS - {"Agent"})
        if bad:
            raise ValueError(
                f"dimension(s) {sorted(bad)} not allowed on {name}: dimensions must stay low-cardinality "
                f"({sorted(DIMENSIONS - {'Agent'})}); put ids in properties instead"
            )
        return MetricDoc(
            {"Agent": self.agent, **{k: str(v) for k, v in dims.items()}},
            [(name, EVENT_UNITS.get(name, COUNT), float(value))],
            {k: v for k, v in (properties or {}).items() if v is not None},
            timestamp=self._now(),
        )

    # --- public API ----------------------------------------------------------------------------------------
    def record_turn(self, record: TurnRecord) -> None:
        """Record a finished turn (tokens and cost per model, latency, TTFT) and log its cost line. Never raises."""
        self._safe_emit(lambda: self.turn_docs(record))
        with contextlib.suppress(Exception):
            logger.info("%s", turn_cost_line(record))

    def record_tool(self, record: ToolRecord) -> None:
        """Record one tool call or denial. Never raises."""
        self._safe_emit(lambda: [self.tool_doc(record)])

    def record_event(
        self,
        name: str,
        *,
        dimensions: Mapping[str, str] | None = None,
        value: float = 1,
        properties: Mapping[str, Any] | None = None,
    ) -> None:
        """Count an event (BudgetExceeded, Disconnected, InvocationErrors, SessionResumed, SessionStoreErrors).

        Raises:
            ValueError: unknown event name or a dimension outside Model/Tool/ErrorCode (a programming error).
        """
        doc = self.event_doc(name, dimensions=dimensions, value=value, properties=properties)
        self._safe_emit(lambda: [doc])

    async def flush(self) -> None:
        """Deliver anything buffered. A no-op for unbuffered sinks."""

    async def close(self) -> None:
        """Flush and release the sink."""
        await self.flush()

    def _safe_emit(self, build: Callable[[], Iterable[MetricDoc]]) -> None:
        try:
            self._emit_all(list(build()))
        except Exception:
            self.stats["emit_errors"] += 1
            logger.exception("metrics: could not record; the turn is unaffected")

    def _emit_all(self, docs: list[MetricDoc]) -> None:
        for doc in docs:
            self._emit(doc)

    def _emit(self, doc: MetricDoc) -> None:
        raise NotImplementedError
