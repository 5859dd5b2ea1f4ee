"""``agentkit cost``: read CostUSD back from CloudWatch and print cost per period and per model.

Reads the ``CostUSD`` metric with dimensions ``[Agent, Model]`` (written by :mod:`runtime.metrics`) using
``ListMetrics`` (to discover the models) and ``GetMetricData`` with the ``Sum`` statistic. CloudWatch keeps
metrics with no new data listable for two weeks; older periods still return data when the model is named via
``models=``.

IAM: ``cloudwatch:ListMetrics``, ``cloudwatch:GetMetricData``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

PERIODS: dict[str, int] = {"hour": 3600, "day": 86400}
MAX_QUERIES = 500  # GetMetricData limit per request


@dataclass(frozen=True, slots=True, order=True)
class CostRow:
    """Cost of one model in one period (``start`` is the period start, UTC)."""

    start: dt.datetime
    model: str
    cost_usd: float


def _utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def _align(value: dt.datetime, period: str) -> dt.datetime:
    value = _utc(value).replace(minute=0, second=0, microsecond=0)
    return value.replace(hour=0) if period == "day" else value


def list_models(*, cloudwatch_client: Any, namespace: str, agent: str) -> list[str]:
    """Model dimension values that have CostUSD for ``agent`` (paged ``ListMetrics``)."""
    models: set[str] = set()
    kwargs: dict[str, Any] = {
        "Namespace": namespace,
        "MetricName": "CostUSD",
        "Dimensions": [{"Name": "Agent", "Value": agent}],
    }
    while True:
        page = cloudwatch_client.list_metrics(**kwargs)
        for metric in page.get("Metrics", []):
            dims = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
            if set(dims) == {"Agent", "Model"} and dims["Agent"] == agent:
                models.add(dims["Model"])
        token = page.get("NextToken")
        if not token:
            return sorted(models)
        kwargs["NextToken"] = token


def cost_report(
    *,
    cloudwatch_client: Any,
    namespace: str,
    agent: str,
    start: dt.datetime,
    end: dt.datetime,
    period: Literal["day", "hour"] = "day",
    models: Sequence[str] | None = None,
) -> list[CostRow]:
    """Cost per ``period`` and model between ``start`` and ``end`` (naive datetimes are UTC), sorted by time.

    ``start`` is aligned down to the period boundary. Periods with no data are omitted.

    Raises:
        ValueError: unknown ``period`` or ``end`` not after ``start``.
        botocore.exceptions.ClientError: CloudWatch refused the call (e.g. missing IAM permission).
    """
    if period not in PERIODS:
        raise ValueError(f"period must be one of {sorted(PERIODS)}, got {period!r}")
    start, end = _align(start, period), _utc(end)
    if end <= start:
        raise ValueError("end must be after start")
    names = (
        list(models)
        if models is not None
        else list_models(cloudwatch_client=cloudwatch_client, namespace=namespace, agent=agent)
    )
    rows: list[CostRow] = []
    for offset in range(0, len(names), MAX_QUERIES):
        chunk = names[offset : offset + MAX_QUERIES]
        queries = [
            {
                "Id": f"m{i}",
                "Label": model,
                "MetricStat": {
                    "Metric": {
                        "Namespace": namespace,
                        "MetricName": "CostUSD",
                        "Dimensions": [{"Name": "Agent", "Value": agent}, {"Name": "Model", "Value": model}],
                    },
                    "Period": PERIODS[period],
                    "Stat": "Sum",
                },
                "ReturnData": True,
            }
            for i, model in enumerate(chunk)
        ]
        kwargs: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
        while True:
            page = cloudwatch_client.get_metric_data(**kwargs)
            for result in page.get("MetricDataResults", []):
                model = chunk[int(result["Id"][1:])]
                for ts, value in zip(result.get("Timestamps", []), result.get("Values", []), strict=False):
                    rows.append(CostRow(start=_utc(ts), model=model, cost_usd=float(value)))
            token = page.get("NextToken")
            if not token:
                break
            kwargs["NextToken"] = token
    return _merge(rows)


def _merge(rows: Iterable[CostRow]) -> list[CostRow]:
    totals: dict[tuple[dt.datetime, str], float] = {}
    for row in rows:
        totals[(row.start, row.model)] = totals.get((row.start, row.model), 0.0) + row.cost_usd
    return sorted(CostRow(start=s, model=m, cost_usd=c) for (s, m), c in totals.items())


def format_table(rows: Sequence[CostRow], *, period: Literal["day", "hour"] = "day") -> str:
    """A plain-text table: one line per period and model, a subtotal per period, and a grand total."""
    if not rows:
        return "No CostUSD data for this agent and period."
    fmt = "%Y-%m-%d" if period == "day" else "%Y-%m-%d %H:00"
    width = max(len("model"), *(len(r.model) for r in rows))
    head = f"{'period':<16}  {'model':<{width}}  {'cost (USD)':>12}"
    lines = [head, "-" * len(head)]
    by_start: dict[dt.datetime, list[CostRow]] = {}
    for row in sorted(rows):
        by_start.setdefault(row.start, []).append(row)
    for start, group in by_start.items():
        for row in group:
            lines.append(f"{start.strftime(fmt):<16}  {row.model:<{width}}  {row.cost_usd:>12.4f}")
        if len(group) > 1:
            lines.append(f"{'':<16}  {'(period total)':<{width}}  {sum(r.cost_usd for r in group):>12.4f}")
    lines.append("-" * len(head))
    lines.append(f"{'total':<16}  {'':<{width}}  {sum(r.cost_usd for r in rows):>12.4f}")
    return "\n".join(lines)
