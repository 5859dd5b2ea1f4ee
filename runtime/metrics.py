"""Metrics facade: one recorder API, three sinks chosen by ``AGENTKIT_METRICS`` (emf | cloudwatch | off).

Metric set (namespace from ``AGENTKIT_METRICS_NAMESPACE``, default ``AgentCoreClaudeKit``):

* per turn, dimensions ``[Agent, Model]`` and the roll-up ``[Agent]``: CostUSD, InputTokens, OutputTokens,
  CacheReadTokens, CacheWriteTokens (one set per model used in the turn; CostUSD omitted for an unpriced
  model), Turns (1 per completed turn), InvocationLatencyMs, TimeToFirstTokenMs (on the turn's configured
  model). A turn that never reached a result (timeout, crash) still records its tokens and CostUSD, with
  the property ``Completed: false`` and no Turns or latency.
* per tool call, dimensions ``[Agent, Tool]`` and ``[Agent]``: ToolCalls, ToolErrors (0 or 1), ToolLatencyMs;
  ToolDenied for a call the permission policy refused (it is not counted in ToolCalls).
* events via :meth:`BaseMetrics.record_event`, dimensions ``[Agent, <given>]`` and ``[Agent]``:
  BudgetExceeded, InvocationErrors (``ErrorCode``), SessionResumed, SessionStoreErrors.

Dimensions are restricted to the low-cardinality names in :data:`DIMENSIONS`; session id, caller, Claude
session id and the SDK's own cost go in as EMF properties (``emf``) or log fields (``cloudwatch``), never
dimensions. Every recorded turn also logs one INFO line (:func:`turn_cost_line`: session, caller, cost) that the
dashboard's Logs Insights table sums (every sink but ``off``).

Sinks never raise into a turn: serialisation or delivery failures are logged and counted in ``stats``.

Environment variables: none read here (the caller passes ``kind``/``namespace``/``agent`` from settings).
IAM: ``cloudwatch:PutMetricData`` for the ``cloudwatch`` sink (condition ``cloudwatch:namespace``); none for
``emf`` (the log pipeline turns EMF lines into metrics).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import json
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TextIO

from runtime.costs import TurnCost

logger = logging.getLogger(__name__)

MetricsKind = Literal["emf", "cloudwatch", "off"]
METRICS_KINDS: tuple[str, ...] = ("emf", "cloudwatch", "off")
DEFAULT_NAMESPACE = "AgentCoreClaudeKit"
DIMENSIONS = frozenset({"Agent", "Model", "Tool", "ErrorCode"})
EVENTS = frozenset({"BudgetExceeded", "InvocationErrors", "SessionResumed", "SessionStoreErrors"})

COUNT, MS, NONE = "Count", "Milliseconds", "None"
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


class Metrics(Protocol):
    """What the runtime calls. Implementations never raise from ``record_*``."""

    def record_turn(self, record: TurnRecord) -> None: ...
    def record_tool(self, record: ToolRecord) -> None: ...
    def record_event(
        self,
        name: str,
        *,
        dimensions: Mapping[str, str] | None = None,
        value: float = 1,
        properties: Mapping[str, Any] | None = None,
    ) -> None: ...
    async def close(self) -> None: ...


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
            [(name, COUNT, float(value))],
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
        """Count an event (BudgetExceeded, InvocationErrors, SessionResumed, SessionStoreErrors).

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


class NullMetrics(BaseMetrics):
    """``off``: builds nothing, sends nothing."""

    def __init__(self, *, namespace: str = DEFAULT_NAMESPACE, agent: str = "agentkit") -> None:
        super().__init__(namespace=namespace, agent=agent)

    def record_turn(self, record: TurnRecord) -> None:
        return None

    def record_tool(self, record: ToolRecord) -> None:
        return None

    def record_event(self, name: str, **kwargs: Any) -> None:
        self.event_doc(name, **kwargs)  # same validation as the real sinks, then nothing

    def _emit(self, doc: MetricDoc) -> None:
        return None


class EmfMetrics(BaseMetrics):
    """``emf``: one CloudWatch Embedded Metric Format JSON line per document, written by Powertools'
    non-singleton provider (``EphemeralMetrics``) to ``stream`` (default: the current ``sys.stdout``).

    Each line carries the primary dimension set and the ``[Agent]`` roll-up.
    """

    def __init__(
        self,
        *,
        namespace: str,
        agent: str,
        stream: TextIO | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(namespace=namespace, agent=agent, now=now)
        from aws_lambda_powertools.metrics import EphemeralMetrics

        # One non-singleton provider per sink, cleared before each document (guarded by the lock): same
        # output as a fresh EphemeralMetrics per document, without its construction cost.
        self._emf = EphemeralMetrics(namespace=namespace)
        self._emf.service = None  # type: ignore[assignment]  # no implicit "service" dimension from the env
        self._stream = stream
        self._lock = threading.Lock()

    def serialize(self, doc: MetricDoc) -> dict[str, Any]:
        """The EMF object for ``doc`` (Powertools schema: ``_aws`` + dimension, property and metric keys)."""
        with self._lock:
            return self._serialize_locked(doc)

    def _serialize_locked(self, doc: MetricDoc) -> dict[str, Any]:
        emf = self._emf
        emf.clear_metrics()
        for dim_name, dim_value in doc.dimensions.items():
            emf.add_dimension(name=dim_name, value=dim_value)
        if set(doc.dimensions) != {"Agent"}:
            emf.add_dimensions(Agent=self.agent)
        for name, unit, value in doc.metrics:
            emf.add_metric(name=name, unit=unit, value=value)
        for key, value in doc.properties.items():
            emf.add_metadata(key=key, value=value)
        emf.set_timestamp(int(doc.timestamp * 1000))
        return dict(emf.serialize_metric_set())

    def _emit(self, doc: MetricDoc) -> None:
        self._emit_all([doc])

    def _emit_all(self, docs: list[MetricDoc]) -> None:
        # one write and one flush per record, however many documents it produced
        stream = self._stream or sys.stdout
        with self._lock:
            text = "".join(
                json.dumps(self._serialize_locked(d), separators=(",", ":"), default=str) + "\n" for d in docs
            )
            stream.write(text)
            stream.flush()
        self.stats["emitted"] += len(docs)


class CloudWatchMetrics(BaseMetrics):
    """``cloudwatch``: ``PutMetricData`` from a background asyncio task.

    ``record_*`` append to a bounded in-memory buffer and return at once: when the buffer holds
    ``max_queue`` samples, new ones are dropped and counted (``stats["dropped"]``). Samples of one metric,
    dimension set and minute are sent as one datum with ``Values``/``Counts`` (percentiles still work), so
    the payload stays small. The sender task starts on the first record made inside a running event loop,
    wakes every ``flush_interval_s`` (or when ``batch_size`` series are waiting), and sends up to
    ``batch_size`` datums per call in a worker thread. A failed call is logged and
    counted (``stats["failed_batches"]``, ``stats["failed_samples"]``); its datums are not retried beyond the
    client's own retry policy. Session id and caller are logged at DEBUG, never sent as dimensions.

    IAM: ``cloudwatch:PutMetricData``.
    """

    def __init__(
        self,
        *,
        namespace: str,
        agent: str,
        client: Any,
        max_queue: int = 10_000,
        batch_size: int = 500,
        flush_interval_s: float = 1.0,
        now: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(namespace=namespace, agent=agent, now=now)
        if max_queue < 1 or not 1 <= batch_size <= 1000 or flush_interval_s <= 0:
            raise ValueError("need max_queue >= 1, 1 <= batch_size <= 1000 and flush_interval_s > 0")
        self._client = client
        self._max_queue = max_queue
        self._batch_size = batch_size
        self._interval = flush_interval_s
        # (name, unit, dimensions, minute) → {value: count}; insertion-ordered
        self._buffer: dict[tuple[str, str, tuple[tuple[str, str], ...], int], dict[float, int]] = {}
        self._pending = 0
        self._lock = threading.Lock()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._closing = False

    @property
    def pending(self) -> int:
        """Samples buffered and not yet sent."""
        return self._pending

    def samples(self, doc: MetricDoc) -> list[tuple[str, str, tuple[tuple[str, str], ...], float]]:
        """(name, unit, dimensions, value) for ``doc``: its dimension set plus the ``[Agent]`` roll-up."""
        dim_sets = [tuple(doc.dimensions.items())]
        if set(doc.dimensions) != {"Agent"}:
            dim_sets.append((("Agent", self.agent),))
        return [(name, unit, dims, float(value)) for dims in dim_sets for name, unit, value in doc.metrics]

    def _emit(self, doc: MetricDoc) -> None:
        samples = self.samples(doc)
        if self._closing:
            self.stats["dropped"] += len(samples)
            return
        if doc.properties:
            logger.debug("metrics %s %s", doc.dimensions, doc.properties)
        minute = int(doc.timestamp // 60 * 60)
        with self._lock:
            accepted = samples[: max(self._max_queue - self._pending, 0)]
            for name, unit, dims, value in accepted:
                series = self._buffer.setdefault((name, unit, dims, minute), {})
                series[value] = series.get(value, 0) + 1
            self._pending += len(accepted)
            full = len(self._buffer) >= self._batch_size
        if len(accepted) < len(samples):
            self.stats["dropped"] += len(samples) - len(accepted)
        self._ensure_sender(wake=full)

    def _ensure_sender(self, *, wake: bool) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        alive = self._task is not None and not self._task.done()
        if alive and self._loop is not None and not self._loop.is_closed():
            if wake and self._wake is not None:
                if loop is self._loop:
                    self._wake.set()
                elif not self._loop.is_closed():
                    self._loop.call_soon_threadsafe(self._wake.set)
            return
        if loop is None:
            return  # no loop here: the buffer waits for flush()/close() or a record made inside a loop
        self._loop = loop
        self._wake = asyncio.Event()
        self._task = loop.create_task(self._run(), name="agentkit-metrics-sender")

    async def _run(self) -> None:
        assert self._wake is not None
        while not self._closing:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._interval)
            self._wake.clear()
            await self._drain()

    def _take(self) -> tuple[list[dict[str, Any]], int]:
        """Up to ``batch_size`` datums (``Values``/``Counts``, ≤ 150 distinct values each) and their sample count."""
        batch: list[dict[str, Any]] = []
        taken = 0
        with self._lock:
            while self._buffer and len(batch) < self._batch_size:
                key = next(iter(self._buffer))
                (name, unit, dims, minute), series = key, self._buffer.pop(key)
                items = list(series.items())
                for i in range(0, len(items), MAX_VALUES_PER_DATUM):
                    chunk = items[i : i + MAX_VALUES_PER_DATUM]
                    batch.append(
                        {
                            "MetricName": name,
                            "Dimensions": [{"Name": k, "Value": v} for k, v in dims],
                            "Timestamp": dt.datetime.fromtimestamp(minute, tz=dt.UTC),
                            "Values": [v for v, _ in chunk],
                            "Counts": [float(c) for _, c in chunk],
                            "Unit": unit,
                        }
                    )
                    taken += sum(c for _, c in chunk)
            self._pending -= taken
        return batch, taken

    async def _drain(self) -> None:
        while True:
            batch, samples = self._take()
            if not batch:
                return
            await asyncio.to_thread(self._send, batch, samples)

    def _send(self, batch: list[dict[str, Any]], samples: int) -> None:
        try:
            self._client.put_metric_data(Namespace=self.namespace, MetricData=batch)
        except Exception as exc:
            self.stats["failed_batches"] += 1
            self.stats["failed_samples"] += samples
            logger.warning("metrics: PutMetricData failed (%d samples dropped): %s", samples, exc)
        else:
            self.stats["sent"] += samples
            self.stats["datums"] += len(batch)

    async def flush(self) -> None:
        """Send everything buffered now (in this loop). Never raises."""
        await self._drain()

    async def close(self) -> None:
        """Stop the sender task and send what is left. Records made afterwards are dropped and counted."""
        self._closing = True
        task = self._task
        if task is not None and not task.done():
            if self._wake is not None and self._loop is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._wake.set)
            if self._loop is asyncio.get_running_loop():
                await asyncio.gather(task, return_exceptions=True)
        await self._drain()


def make_metrics(
    kind: str,
    *,
    namespace: str = DEFAULT_NAMESPACE,
    agent: str,
    cloudwatch_client: Any = None,
    emf_stream: TextIO | None = None,
    now: Callable[[], float] = time.time,
    **cloudwatch_options: Any,
) -> BaseMetrics:
    """Build the sink named by ``kind`` (the value of ``AGENTKIT_METRICS``).

    ``cloudwatch_client`` defaults to ``boto3.client("cloudwatch")`` with standard retries and short timeouts
    (its endpoint honours ``AWS_ENDPOINT_URL_CLOUDWATCH``). ``cloudwatch_options`` go to
    :class:`CloudWatchMetrics` (``max_queue``, ``batch_size``, ``flush_interval_s``).

    Raises:
        ValueError: ``kind`` is not one of ``emf``, ``cloudwatch``, ``off``; empty namespace or agent.
    """
    normalized = (kind or "").strip().lower()
    if normalized == "off":
        return NullMetrics(namespace=namespace, agent=agent)
    if normalized == "emf":
        return EmfMetrics(namespace=namespace, agent=agent, stream=emf_stream, now=now)
    if normalized == "cloudwatch":
        if cloudwatch_client is None:
            import boto3
            from botocore.config import Config

            cloudwatch_client = boto3.client(
                "cloudwatch",
                region_name=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
                config=Config(
                    retries={"mode": "standard", "max_attempts": 3}, connect_timeout=2, read_timeout=5
                ),
            )
        return CloudWatchMetrics(
            namespace=namespace, agent=agent, client=cloudwatch_client, now=now, **cloudwatch_options
        )
    raise ValueError(f"AGENTKIT_METRICS must be one of {', '.join(METRICS_KINDS)}; got {kind!r}")
