"""What the webhook delivered, per issue tracker: pull requests opened, patches applied, stops, and what a
pull request cost.

The webhook Lambdas write these with Powertools EMF into the stack's metrics namespace (``POWERTOOLS_METRICS_
NAMESPACE``, the same as the runtime's), each with the dimensions ``Tracker`` and ``service``
(``webhook/webhook_metrics.py``): ``PullRequestsOpened``, ``PatchesApplied``, ``Stops`` (counts)
and ``PullRequestCostUSD`` (the cost of the session behind each pull request). The dimension sets are discovered
with ``ListMetrics`` rather than assumed, so a different ``service`` value still reads. Absent metrics (a stack
without the webhook, or before its first pull request) leave :func:`from_cloudwatch` empty, and the report says so.

IAM actions: ``cloudwatch:ListMetrics``, ``cloudwatch:GetMetricData``.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentkit.data.cloudwatch import MAX_QUERIES, window_period
from agentkit.data.emf import Sample
from agentkit.data.usage import utc

TRACKER = "Tracker"
#: metric → the short name a tracker's row uses
METRICS: dict[str, str] = {
    "PullRequestsOpened": "pull_requests",
    "PatchesApplied": "patches",
    "Stops": "stops",
    "PullRequestCostUSD": "pull_request_cost_usd",
}


@dataclass
class Delivery:
    """Per tracker: ``pull_requests``, ``patches``, ``stops``, ``pull_request_cost_usd`` (sums over the window)."""

    trackers: dict[str, dict[str, float]] = field(default_factory=dict)

    def cost_per_pull_request(self, tracker: str) -> float | None:
        """The tracker's pull-request cost over the pull requests it opened (None when it opened none)."""
        row = self.trackers.get(tracker, {})
        opened = row.get("pull_requests", 0.0)
        return row.get("pull_request_cost_usd", 0.0) / opened if opened else None

    def as_json(self) -> dict[str, Any]:
        return {
            t: {**row, "cost_per_pull_request_usd": self.cost_per_pull_request(t)}
            for t, row in sorted(self.trackers.items())
        }


def _empty() -> dict[str, float]:
    return dict.fromkeys(METRICS.values(), 0.0)


def from_samples(samples: Iterable[Sample]) -> Delivery:
    """From EMF documents (e.g. a webhook Lambda's log lines saved to a file)."""
    rows: dict[str, dict[str, float]] = defaultdict(_empty)
    for s in samples:
        tracker = s.dimensions.get(TRACKER)
        if tracker is None:
            continue
        for metric, short in METRICS.items():
            if metric in s.metrics:
                rows[tracker][short] += s.total(metric)
    return Delivery(dict(rows))


def from_cloudwatch(cloudwatch: Any, *, namespace: str, start: dt.datetime, end: dt.datetime) -> Delivery:
    """Sums over ``start``..``end`` per tracker, for every dimension set of these metrics that has ``Tracker``.

    Raises:
        botocore.exceptions.ClientError: CloudWatch refused a call.
    """
    series: list[tuple[str, str, list[dict[str, str]]]] = []  # (metric, tracker, dimensions)
    for metric in METRICS:
        for page in cloudwatch.get_paginator("list_metrics").paginate(Namespace=namespace, MetricName=metric):
            for item in page.get("Metrics", []):
                dims = item.get("Dimensions", [])
                tracker = next((d["Value"] for d in dims if d["Name"] == TRACKER), None)
                if tracker is not None:
                    series.append((metric, tracker, dims))
    rows: dict[str, dict[str, float]] = defaultdict(_empty)
    period = window_period(start, end)
    for offset in range(0, len(series), MAX_QUERIES):
        chunk = series[offset : offset + MAX_QUERIES]
        queries = [
            {
                "Id": f"d{i}",
                "MetricStat": {
                    "Metric": {"Namespace": namespace, "MetricName": metric, "Dimensions": dims},
                    "Period": period,
                    "Stat": "Sum",
                },
                "ReturnData": True,
            }
            for i, (metric, _, dims) in enumerate(chunk)
        ]
        kwargs = {"MetricDataQueries": queries, "StartTime": utc(start), "EndTime": utc(end)}
        for page in cloudwatch.get_paginator("get_metric_data").paginate(**kwargs):
            for result in page.get("MetricDataResults", []):
                metric, tracker, _ = chunk[int(result["Id"][1:])]
                rows[tracker][METRICS[metric]] += sum(float(v) for v in result.get("Values", []))
    return Delivery(dict(rows))
