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

from agentkit.data import names
from agentkit.data import usage as u
from agentkit.data.emf import Sample
from agentkit.data.spans import Span, session_trace, sessions_with_spans

TOP_SESSIONS = 10


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

    @property
    def total_cost(self) -> float:
        return sum(r.cost_usd for r in self.hourly)

    @property
    def cache_hit_rate(self) -> float | None:
        return u.cache_hit_rate(self.tokens)


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
) -> ReportData:
    """Report data from EMF documents and spans (the local path; also used for EMF read from logs)."""
    hourly = u.cost_rows(samples, by="model", period="hour")
    _cost, tokens = u.totals(hourly)
    latency = u.metric_values(samples, names.LATENCY)
    ttft = u.metric_values(samples, names.TTFT)
    sessions = top_sessions(samples)
    trace_session, trace = pick_trace(spans, sessions, session)
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
        "time_to_first_token_ms": data.ttft,
        "tools": data.tools,
        "top_sessions": [s.__dict__ for s in data.sessions],
        "trace_session": data.trace_session,
        "trace_spans": len(data.trace),
        "notes": data.notes,
    }
