"""Read the runtime's metrics back from CloudWatch: cost and tokens per period and model, latency and
time-to-first-token percentiles, tool calls and errors per tool.

Uses ``ListMetrics`` (to discover the ``Model`` / ``Tool`` dimension values of an agent; CloudWatch lists a
metric for two weeks after its last data point) and ``GetMetricData`` (``Sum`` and ``pNN`` statistics,
paged, at most 500 queries per request). Names come from :mod:`agentkit.data.names`.

IAM actions: ``cloudwatch:ListMetrics``, ``cloudwatch:GetMetricData``.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentkit.data import names
from agentkit.data.usage import CostRow, Period, align, empty_tokens, utc

PERIODS: dict[str, int] = {"hour": 3600, "day": 86400}
MAX_QUERIES = 500  # GetMetricData limit per request


@dataclass(frozen=True)
class Query:
    """One ``GetMetricData`` query: metric, extra dimensions besides ``Agent``, statistic, period (s)."""

    metric: str
    dimensions: tuple[tuple[str, str], ...]
    stat: str
    period: int


def window_period(start: dt.datetime, end: dt.datetime) -> int:
    """A ``GetMetricData`` period (s) covering ``start`` to ``end`` in one data point: the window in whole
    minutes, at least 60 (periods of a minute or more must be multiples of 60)."""
    return max(60, int((utc(end) - utc(start)).total_seconds()) // 60 * 60)


def list_dimension_values(
    cloudwatch: Any, *, namespace: str, agent: str, metric: str, dimension: str
) -> list[str]:
    """Values of ``dimension`` that ``metric`` has for ``agent`` under the dimension set {Agent, dimension}."""
    values: set[str] = set()
    kwargs: dict[str, Any] = {
        "Namespace": namespace,
        "MetricName": metric,
        "Dimensions": [{"Name": names.AGENT, "Value": agent}],
    }
    for page in cloudwatch.get_paginator("list_metrics").paginate(**kwargs):
        for item in page.get("Metrics", []):
            dims = {d["Name"]: d["Value"] for d in item.get("Dimensions", [])}
            if set(dims) == {names.AGENT, dimension} and dims[names.AGENT] == agent:
                values.add(dims[dimension])
    return sorted(values)


def get_metric_data(
    cloudwatch: Any,
    queries: Sequence[Query],
    *,
    namespace: str,
    agent: str | None,
    start: dt.datetime,
    end: dt.datetime,
) -> dict[Query, list[tuple[dt.datetime, float]]]:
    """The data points of each query between ``start`` and ``end`` (sorted by time); each query's dimensions
    are ``Agent=agent`` (unless None: a metric the agent does not write) and its own."""
    results: dict[Query, list[tuple[dt.datetime, float]]] = {q: [] for q in queries}
    unique = list(results)
    for offset in range(0, len(unique), MAX_QUERIES):
        chunk = unique[offset : offset + MAX_QUERIES]
        kwargs: dict[str, Any] = {
            "MetricDataQueries": [
                {
                    "Id": f"q{i}",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": namespace,
                            "MetricName": q.metric,
                            "Dimensions": [
                                *([{"Name": names.AGENT, "Value": agent}] if agent is not None else []),
                                *({"Name": k, "Value": v} for k, v in q.dimensions),
                            ],
                        },
                        "Period": q.period,
                        "Stat": q.stat,
                    },
                    "ReturnData": True,
                }
                for i, q in enumerate(chunk)
            ],
            "StartTime": start,
            "EndTime": end,
        }
        for page in cloudwatch.get_paginator("get_metric_data").paginate(**kwargs):
            for result in page.get("MetricDataResults", []):
                query = chunk[int(result["Id"][1:])]
                points = zip(result.get("Timestamps", []), result.get("Values", []), strict=False)
                results[query] += [(utc(ts), float(value)) for ts, value in points]
    return {q: sorted(points) for q, points in results.items()}


def cost_rows(
    cloudwatch: Any,
    *,
    namespace: str,
    agent: str,
    start: dt.datetime,
    end: dt.datetime,
    period: Period = "day",
    models: Sequence[str] | None = None,
) -> list[CostRow]:
    """Cost and tokens per ``period`` and model between ``start`` (aligned down) and ``end`` (rounded up to
    the end of its period); periods with no data are left out. ``models`` defaults to the models listed for the agent.

    Raises:
        ValueError: unknown ``period`` or ``end`` not after ``start``.
        botocore.exceptions.ClientError: CloudWatch refused a call.
    """
    if period not in PERIODS:
        raise ValueError(f"period must be one of {sorted(PERIODS)}, got {period!r}")
    start, end = align(start, period), utc(end)
    if end <= start:
        raise ValueError("end must be after start")
    if align(end, period) != end:  # include the period in progress (CloudWatch drops one that ends later)
        end = align(end, period) + dt.timedelta(seconds=PERIODS[period])
    chosen = (
        list(models)
        if models is not None
        else list_dimension_values(
            cloudwatch, namespace=namespace, agent=agent, metric=names.COST, dimension=names.MODEL
        )
    )
    queries = [
        Query(metric, ((names.MODEL, model),), "Sum", PERIODS[period])
        for model in chosen
        for metric in (names.COST, *names.TOKEN_METRICS)
    ]
    data = get_metric_data(cloudwatch, queries, namespace=namespace, agent=agent, start=start, end=end)
    cost: dict[tuple[dt.datetime, str], float] = defaultdict(float)
    tokens: dict[tuple[dt.datetime, str], dict[str, float]] = defaultdict(empty_tokens)
    seen: set[tuple[dt.datetime, str]] = set()
    for query, points in data.items():
        model = query.dimensions[0][1]
        for ts, value in points:
            slot = (align(ts, period), model)
            seen.add(slot)
            if query.metric == names.COST:
                cost[slot] += value
            else:
                tokens[slot][names.TOKEN_TYPES[query.metric]] += value
    return sorted(CostRow(start=s[0], key=s[1], cost_usd=cost[s], tokens=dict(tokens[s])) for s in seen)


def percentiles(
    cloudwatch: Any,
    *,
    namespace: str,
    agent: str,
    start: dt.datetime,
    end: dt.datetime,
    metrics: Sequence[str] = (names.LATENCY, names.TTFT),
    stats: Sequence[str] = ("p50", "p90"),
    models: Sequence[str] = (),
) -> dict[str, dict[str, float | None]]:
    """``{metric: {stat: value}}`` over the whole window, per configured model (the runtime records latency
    on the turn's model); the highest value across models is reported for each statistic."""
    span = window_period(start, end)
    queries = [
        Query(m, ((names.MODEL, model),), stat, span) for m in metrics for stat in stats for model in models
    ]
    data = get_metric_data(cloudwatch, queries, namespace=namespace, agent=agent, start=start, end=end)
    out: dict[str, dict[str, float | None]] = {m: dict.fromkeys(stats) for m in metrics}
    for query, points in data.items():
        if points:
            value = max(v for _, v in points)
            current = out[query.metric][query.stat]
            out[query.metric][query.stat] = value if current is None else max(current, value)
    return out


def tool_totals(
    cloudwatch: Any, *, namespace: str, agent: str, start: dt.datetime, end: dt.datetime
) -> dict[str, dict[str, float]]:
    """Per tool: ``calls``, ``errors``, ``denied`` summed over the window (sorted by calls, descending)."""
    tools = list_dimension_values(
        cloudwatch, namespace=namespace, agent=agent, metric=names.TOOL_CALLS, dimension=names.TOOL
    )
    tools = sorted(
        set(tools)
        | set(
            list_dimension_values(
                cloudwatch, namespace=namespace, agent=agent, metric=names.TOOL_DENIED, dimension=names.TOOL
            )
        )
    )
    span = window_period(start, end)
    metrics = {names.TOOL_CALLS: "calls", names.TOOL_ERRORS: "errors", names.TOOL_DENIED: "denied"}
    queries = [Query(m, ((names.TOOL, tool),), "Sum", span) for tool in tools for m in metrics]
    data = get_metric_data(cloudwatch, queries, namespace=namespace, agent=agent, start=start, end=end)
    out: dict[str, dict[str, float]] = {t: {"calls": 0.0, "errors": 0.0, "denied": 0.0} for t in tools}
    for query, points in data.items():
        out[query.dimensions[0][1]][metrics[query.metric]] += sum(v for _, v in points)
    return dict(sorted(out.items(), key=lambda kv: (-kv[1]["calls"], kv[0])))


def error_totals(
    cloudwatch: Any, *, namespace: str, agent: str, start: dt.datetime, end: dt.datetime
) -> dict[str, float]:
    """``InvocationErrors`` per ``ErrorCode`` summed over the window, most frequent first (codes with none in
    the window left out)."""
    codes = list_dimension_values(
        cloudwatch,
        namespace=namespace,
        agent=agent,
        metric=names.INVOCATION_ERRORS,
        dimension=names.ERROR_CODE,
    )
    span = window_period(start, end)
    queries = [Query(names.INVOCATION_ERRORS, ((names.ERROR_CODE, code),), "Sum", span) for code in codes]
    data = get_metric_data(cloudwatch, queries, namespace=namespace, agent=agent, start=start, end=end)
    out = {q.dimensions[0][1]: sum(v for _, v in points) for q, points in data.items()}
    return dict(sorted(((k, v) for k, v in out.items() if v), key=lambda kv: (-kv[1], kv[0])))
