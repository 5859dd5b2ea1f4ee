"""What the report shows, gathered from local files or from CloudWatch into one :class:`ReportData`.

Local (``make demo``): the EMF file (cost, tokens, latency, time to first token, tools, sessions) and the
span file (the waterfall). CloudWatch (a deployed stack): ``GetMetricData`` for cost, tokens, percentiles
and tools; EMF lines in the runtime's log group for per-session cost when the stage writes EMF (sessions are
never metric dimensions); the ``aws/spans`` log group (Transaction Search) for the waterfall.

IAM actions (CloudWatch path): ``cloudwatch:ListMetrics``, ``cloudwatch:GetMetricData``,
``logs:FilterLogEvents`` on the runtime's log group and on ``aws/spans``.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.data import names, prices
from agentkit.data import usage as u
from agentkit.data.bill import Breakdown, Slot, combine, memory_by_session, per_period
from agentkit.data.emf import Sample
from agentkit.data.spans import Span, session_trace, sessions_with_spans
from agentkit.report.approvals import Approvals
from agentkit.report.delivery import Delivery

TOP_SESSIONS = 10
#: Turns the per-turn table lists (the latest ones; the JSON summary says how many there were).
TURN_ROWS = 50
#: What the turn latency measures, wherever it is shown: the runtime starts the clock once the session is
#: connected (runtime/agent/turn.py, phase "begin"), so a session's first turn in a process looks faster here
#: than its caller saw it.
LATENCY_NOTE = (
    "turn latency runs from sending the prompt to the result; it excludes waiting in the session's queue and "
    "connecting or resuming the session (starting the CLI, loading the transcript)"
)


@dataclass(frozen=True)
class TurnRow:
    """One turn as the per-turn table shows it (from its EMF documents)."""

    time: dt.datetime
    session_id: str | None
    models: tuple[str, ...]
    cost_usd: float
    latency_ms: float | None
    ttft_ms: float | None
    tokens: dict[str, float]

    def as_json(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "session_id": self.session_id,
            "models": list(self.models),
            "cost_usd": self.cost_usd,
            "latency_ms": self.latency_ms,
            "time_to_first_token_ms": self.ttft_ms,
            "tokens": self.tokens,
        }


@dataclass(frozen=True)
class SessionCost:
    session_id: str
    cost_usd: float
    turns: int
    actor: str | None


@dataclass
class ReportData:
    """Everything the HTML shows. Percentiles are nearest-rank (local) or CloudWatch's (deployed)."""

    title: str
    source: str
    generated: dt.datetime
    start: dt.datetime | None
    end: dt.datetime | None
    hourly: list[u.CostRow]  # cost per hour and model
    tokens: dict[str, float]  # input / output / cache_read / cache_write
    latency: dict[str, float | None]  # p50, p90 (turn latency, ms)
    ttft: dict[str, float | None]  # p50, p90 (time to first token, ms)
    turns: int
    tools: dict[str, dict[str, float]]  # tool -> calls / errors / denied
    sessions: list[SessionCost]
    trace_session: str | None
    trace: list[tuple[int, Span]]
    notes: list[str] = field(default_factory=list)
    errors: dict[str, float] = field(default_factory=dict)  # InvocationErrors by ErrorCode
    turn_rows: list[TurnRow] = field(default_factory=list)  # the latest TURN_ROWS turns, oldest first
    turns_listed_of: int = 0  # how many turns the documents held (turn_rows may show fewer)
    parts: list[Breakdown] = field(default_factory=list)  # per day: model + compute + memory
    prices_region: str | None = None  # whose AgentCore prices priced ``parts``
    delivery: Delivery = field(default_factory=Delivery)  # the webhook's pull requests, patches, stops
    approvals: Approvals = field(default_factory=Approvals)  # tool calls that waited for a person, per tool

    @property
    def total_cost(self) -> float:
        return sum(r.cost_usd for r in self.hourly)

    @property
    def cache_hit_rate(self) -> float | None:
        return u.cache_hit_rate(self.tokens)


def daily_model_cost(hourly: Sequence[u.CostRow]) -> dict[Slot, float]:
    """Model cost per UTC day (key ``all``) from the hourly rows."""
    out: dict[Slot, float] = defaultdict(float)
    for row in hourly:
        out[(u.align(row.start, "day"), "all")] += row.cost_usd
    return dict(out)


def top_sessions(samples: Sequence[Sample], limit: int = TOP_SESSIONS) -> list[SessionCost]:
    """Sessions by cost (descending), from the turns' ``TurnCostUSD`` / ``SessionId`` / ``Caller``."""
    cost: dict[str, float] = defaultdict(float)
    turns: dict[str, int] = defaultdict(int)
    actor: dict[str, str | None] = {}
    for s in samples:
        session = s.properties.get(names.PROP_SESSION)
        if names.PROP_TURN_COST not in s.properties or not session:
            continue
        cost[str(session)] += float(s.properties[names.PROP_TURN_COST])
        turns[str(session)] += 1
        actor.setdefault(str(session), s.properties.get(names.PROP_CALLER))
    ranked = sorted(cost, key=lambda k: (-cost[k], k))[:limit]
    return [SessionCost(k, cost[k], turns[k], actor.get(k)) for k in ranked]


def _single(sample: Sample, metric: str) -> float | None:
    return sample.total(metric) if sample.metrics.get(metric) else None


def _worked(doc: Sample) -> bool:
    return any(doc.total(metric) for metric in names.TOKEN_TYPES)


def turn_rows(samples: Sequence[Sample], limit: int = TURN_ROWS) -> tuple[list[TurnRow], int]:
    """The latest ``limit`` turns (oldest first) and how many turns there were, from the turns' EMF documents.

    Time, session, cost, latency and time to first token come from the turn's main document; models and tokens
    from all of its documents (one per model)."""
    rows = []
    for owner, group in u.turns(samples):
        tokens = u.empty_tokens()
        for doc in group:
            for metric, short in names.TOKEN_TYPES.items():
                tokens[short] += doc.total(metric)
        # the models that did the work (tokens counted); the turn's own model when none did
        used = [d.dimensions.get(names.MODEL) for d in sorted(group, key=lambda d: d is not owner)]
        used = [
            m for m, d in zip(used, sorted(group, key=lambda d: d is not owner), strict=True) if _worked(d)
        ]
        models = used or [owner.dimensions.get(names.MODEL)]
        session = owner.properties.get(names.PROP_SESSION)
        rows.append(
            TurnRow(
                time=owner.timestamp,
                session_id=str(session) if session else None,
                models=tuple(dict.fromkeys(m for m in models if m)),
                cost_usd=float(owner.properties.get(names.PROP_TURN_COST) or 0.0),
                latency_ms=_single(owner, names.LATENCY),
                ttft_ms=_single(owner, names.TTFT),
                tokens=tokens,
            )
        )
    return rows[-limit:] if limit else rows, len(rows)


def pick_trace(
    spans: Sequence[Span], sessions: Sequence[SessionCost], wanted: str | None
) -> tuple[str | None, list[tuple[int, Span]]]:
    """The session whose trace to draw: ``wanted``, else the costliest session with spans, else the latest."""
    with_spans = sessions_with_spans(spans)
    if wanted:
        chosen: str | None = wanted
    else:
        chosen = next((s.session_id for s in sessions if s.session_id in with_spans), None)
        chosen = chosen or (with_spans[0] if with_spans else None)
    return chosen, (session_trace(spans, chosen) if chosen else [])


def from_samples(
    samples: Sequence[Sample],
    spans: Sequence[Span],
    *,
    title: str,
    source: str,
    generated: dt.datetime,
    session: str | None = None,
    region: str | None = None,
) -> ReportData:
    """Report data from EMF documents and spans (the local path; also used for EMF read from logs). Cost in
    parts: model and Memory from the documents (a local run has no AgentCore compute: not measured)."""
    hourly = u.cost_rows(samples, by="model", period="hour")
    _cost, tokens = u.totals(hourly)
    latency = u.metric_values(samples, names.LATENCY)
    ttft = u.metric_values(samples, names.TTFT)
    sessions = top_sessions(samples)
    trace_session, trace = pick_trace(spans, sessions, session)
    rows, turn_count = turn_rows(samples)
    times = [s.timestamp for s in samples] + [sp.start for sp in spans]
    notes = []
    if session and not trace:
        notes.append(f"no spans for session {session}")
    return ReportData(
        title=title,
        source=source,
        generated=generated,
        start=min(times) if times else None,
        end=max(times) if times else None,
        hourly=hourly,
        tokens=tokens,
        latency={"p50": u.percentile(latency, 50), "p90": u.percentile(latency, 90)},
        ttft={"p50": u.percentile(ttft, 50), "p90": u.percentile(ttft, 90)},
        turns=int(sum(s.total(names.TURNS) for s in samples)),
        tools=u.tool_stats(samples),
        sessions=sessions,
        trace_session=trace_session,
        trace=trace,
        notes=notes,
        errors=u.error_counts(samples),
        turn_rows=rows,
        turns_listed_of=turn_count,
        parts=per_period(
            combine(
                model=daily_model_cost(hourly),
                compute=None,
                memory=memory_by_session(samples, "day") or None,  # none: no AgentCore Memory (SQLite)
                prices=prices.agentcore_prices(region)[0],
            ),
            "day",
        ),
        prices_region=region,
    )


def summary(data: ReportData) -> dict[str, Any]:
    """The report's figures as JSON (``agentkit report --output json`` prints this with the path)."""
    return {
        "title": data.title,
        "source": data.source,
        "start": data.start,
        "end": data.end,
        "total_cost_usd": data.total_cost,
        "turns": data.turns,
        "tokens": data.tokens,
        "cache_hit_rate": data.cache_hit_rate,
        "latency_ms": data.latency,
        "latency_note": LATENCY_NOTE,
        "time_to_first_token_ms": data.ttft,
        "errors": data.errors,
        "turn_table": [row.as_json() for row in data.turn_rows],
        "turn_table_of": data.turns_listed_of,
        "tools": data.tools,
        "top_sessions": [s.__dict__ for s in data.sessions],
        "trace_session": data.trace_session,
        "trace_spans": len(data.trace),
        "notes": data.notes,
        "cost_parts": [b.as_dict() for b in data.parts],
        "prices": prices.describe(data.prices_region),
        "delivery": data.delivery.as_json(),
        "approvals": data.approvals.as_json(),
    }
