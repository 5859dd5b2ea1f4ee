"""Gather :class:`~agentkit.report.model.ReportData` for a deployed agent from CloudWatch.

Metrics (``GetMetricData``): cost and tokens per hour and model, turns, turn latency and time-to-first-token
p50/p90 (CloudWatch's percentiles, per model, highest shown), tool calls/errors/denials per tool, invocation
errors per error code.
Sessions and the per-turn table: EMF lines in the runtime's log group (present when the stage's
``metrics_sink`` is ``emf``); only the turns' main documents are read (the filter is ``TurnCostUSD``), so a
turn that used two models shows its main model's tokens.
Waterfall: span records in ``aws/spans`` (CloudWatch Transaction Search), first those carrying the session
id, then every span of their traces.

Cost in parts per day: model, the runtime's compute and Memory (:mod:`agentkit.data.agentcore_usage`); the
webhook's pull requests, patches and stops per tracker (:mod:`agentkit.report.delivery`); tool calls that waited for
a person's approval, per tool (:mod:`agentkit.report.approvals`).

IAM actions: ``cloudwatch:ListMetrics``, ``cloudwatch:GetMetricData``, ``logs:FilterLogEvents``.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from agentkit.data import agentcore_usage as acu
from agentkit.data import cloudwatch as cw
from agentkit.data import names, prices
from agentkit.data.bill import Memory, combine
from agentkit.data.emf import parse_emf_lines
from agentkit.data.spans import Span, parse_span_lines
from agentkit.data.usage import totals
from agentkit.report import approvals, delivery
from agentkit.report.model import ReportData, TurnRow, daily_model_cost, pick_trace, top_sessions, turn_rows

SPANS_LOG_GROUP = "aws/spans"  # CloudWatch Transaction Search destination
MAX_TRACES = 3


def _messages(
    logs: Any, *, group: str, start: dt.datetime, end: dt.datetime, pattern: str, limit: int
) -> list[str]:
    """Messages of ``group`` matching ``pattern``; [] when the group does not exist."""
    from botocore.exceptions import ClientError

    kwargs: dict[str, Any] = {
        "logGroupName": group,
        "startTime": int(start.timestamp() * 1000),
        "endTime": int(end.timestamp() * 1000),
        "filterPattern": pattern,
    }
    out: list[str] = []
    try:
        for page in logs.get_paginator("filter_log_events").paginate(**kwargs):
            out += [str(e.get("message", "")) for e in page.get("events", [])]
            if len(out) >= limit:
                break
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return []
        raise
    return out[:limit]


def gather(
    *,
    cloudwatch: Any,
    logs: Any | None,
    namespace: str,
    agent: str,
    start: dt.datetime,
    end: dt.datetime,
    log_group: str | None,
    session: str | None,
    title: str,
    generated: dt.datetime,
    runtime_arn: str | None = None,
    region: str | None = None,
) -> ReportData:
    """Report data for ``agent`` between ``start`` and ``end``; with ``runtime_arn`` the cost in parts adds the
    runtime's compute (:mod:`agentkit.data.agentcore_usage`), priced for ``region``.

    Raises:
        botocore.exceptions.ClientError / BotoCoreError: CloudWatch refused a metrics call.
    """
    notes: list[str] = []
    hourly = cw.cost_rows(cloudwatch, namespace=namespace, agent=agent, start=start, end=end, period="hour")
    _cost, tokens = totals(hourly)
    latency_models = cw.list_dimension_values(
        cloudwatch, namespace=namespace, agent=agent, metric=names.LATENCY, dimension=names.MODEL
    )
    pct = cw.percentiles(
        cloudwatch, namespace=namespace, agent=agent, start=start, end=end, models=latency_models
    )
    span_s = cw.window_period(start, end)
    turn_queries = [cw.Query(names.TURNS, ((names.MODEL, m),), "Sum", span_s) for m in latency_models]
    turn_data = cw.get_metric_data(
        cloudwatch, turn_queries, namespace=namespace, agent=agent, start=start, end=end
    )
    turns = int(sum(v for points in turn_data.values() for _, v in points))
    tools = cw.tool_totals(cloudwatch, namespace=namespace, agent=agent, start=start, end=end)
    errors = cw.error_totals(cloudwatch, namespace=namespace, agent=agent, start=start, end=end)

    sessions = []
    rows: list[TurnRow] = []
    turn_count = 0
    spans: list[Span] = []
    if logs is not None and log_group:
        lines = _messages(
            logs,
            group=log_group,
            start=start,
            end=end,
            pattern=json.dumps(names.PROP_TURN_COST),
            limit=50_000,
        )
        samples = [s for s in parse_emf_lines(lines).samples if s.dimensions.get(names.AGENT) == agent]
        sessions = top_sessions(samples)
        rows, turn_count = turn_rows(samples)
        if not sessions:
            notes.append(
                f"no per-turn EMF lines in {log_group}: per-session cost needs the stage's metrics_sink "
                "'emf' (sessions are never metric dimensions)"
            )
    wanted = session or (sessions[0].session_id if sessions else None)
    if logs is not None and wanted:
        first = parse_span_lines(
            _messages(
                logs, group=SPANS_LOG_GROUP, start=start, end=end, pattern=json.dumps(wanted), limit=2000
            )
        )
        traces = sorted({s.trace_id for s in first})[:MAX_TRACES]
        spans = list(first)
        for trace_id in traces:
            spans += parse_span_lines(
                _messages(
                    logs,
                    group=SPANS_LOG_GROUP,
                    start=start,
                    end=end,
                    pattern=json.dumps(trace_id),
                    limit=2000,
                )
            )
        spans = list({s.span_id: s for s in spans}.values())
        if not spans:
            notes.append(
                f"no spans for session {wanted} in {SPANS_LOG_GROUP}: enable CloudWatch Transaction Search "
                "(one-time, see docs/deploy.md)"
            )
    trace_session, trace = pick_trace(spans, sessions, wanted)
    day_end = end.replace(hour=0, minute=0, second=0, microsecond=0) + dt.timedelta(days=1)
    compute = None
    if runtime_arn:
        got = acu.compute_per_period(cloudwatch, runtime_arn=runtime_arn, start=start, end=day_end)
        compute = {(day, "all"): used for day, used in got.items()}
    else:
        notes.append("no --stack/--runtime-arn: the runtime's compute is not in the cost breakdown")
    used = acu.memory_per_period(cloudwatch, namespace=namespace, agent=agent, start=start, end=day_end)
    parts = combine(
        model=daily_model_cost(hourly),
        compute=compute,
        memory={(day, "all"): Memory(events, retrievals) for day, (events, retrievals) in used.items()},
        prices=prices.agentcore_prices(region)[0],
    )
    return ReportData(
        title=title,
        source=f"CloudWatch {namespace} Agent={agent}",
        generated=generated,
        start=start,
        end=end,
        hourly=hourly,
        tokens=tokens,
        latency=pct[names.LATENCY],
        ttft=pct[names.TTFT],
        turns=turns,
        tools=tools,
        sessions=sessions,
        trace_session=trace_session,
        trace=trace,
        notes=notes,
        errors=errors,
        turn_rows=rows,
        turns_listed_of=turn_count,
        parts=parts,
        prices_region=region,
        delivery=delivery.from_cloudwatch(cloudwatch, namespace=namespace, start=start, end=day_end),
        approvals=approvals.from_cloudwatch(
            cloudwatch, namespace=namespace, agent=agent, start=start, end=day_end
        ),
    )
