"""Tool calls that waited for a person's approval, per tool: requested, approved, denied, expired, withdrawn, and the
mean time from request to answer.

The runtime counts them as events with the dimension ``Tool`` (``ApprovalsRequested``, ``Approved``, ``Denied``,
``Expired``, ``Withdrawn`` (taken back unanswered: its job was stopped); ``ApprovalDecisionSeconds`` is the time to
each answer, unit Seconds; docs/approvals.md). Read from EMF documents (a local run) or CloudWatch (a deployed
agent); none in the window leaves :class:`Approvals` empty.

IAM actions: ``cloudwatch:ListMetrics``, ``cloudwatch:GetMetricData``.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentkit.data import names
from agentkit.data.cloudwatch import Query, get_metric_data, list_dimension_values, window_period
from agentkit.data.emf import Sample

#: metric → the short name a tool's row uses
METRICS: dict[str, str] = dict(
    zip(
        names.APPROVAL_METRICS,
        ("requested", "approved", "denied", "expired", "withdrawn", "decision_seconds"),
        strict=True,
    )
)


@dataclass
class Approvals:
    """Per tool: sums over the window of each of :data:`METRICS`' short names."""

    tools: dict[str, dict[str, float]] = field(default_factory=dict)

    def mean_decision_s(self, tool: str) -> float | None:
        """Mean seconds from request to answer for ``tool`` (None when none was answered)."""
        row = self.tools.get(tool, {})
        answered = row.get("approved", 0.0) + row.get("denied", 0.0)
        return row.get("decision_seconds", 0.0) / answered if answered else None

    def as_json(self) -> dict[str, Any]:
        return {
            t: {**row, "mean_decision_s": self.mean_decision_s(t)} for t, row in sorted(self.tools.items())
        }


def _empty() -> dict[str, float]:
    return dict.fromkeys(METRICS.values(), 0.0)


def from_samples(samples: Iterable[Sample]) -> Approvals:
    """From the runtime's EMF documents."""
    rows: dict[str, dict[str, float]] = defaultdict(_empty)
    for s in samples:
        tool = s.dimensions.get(names.TOOL)
        if tool is None:
            continue
        for metric, short in METRICS.items():
            if metric in s.metrics:
                rows[tool][short] += s.total(metric)
    return Approvals(dict(rows))


def from_cloudwatch(
    cloudwatch: Any, *, namespace: str, agent: str, start: dt.datetime, end: dt.datetime
) -> Approvals:
    """Sums over ``start``..``end`` per tool (dimension set {Agent, Tool}).

    Raises:
        botocore.exceptions.ClientError: CloudWatch refused a call.
    """
    tools = sorted(
        set(
            list_dimension_values(
                cloudwatch,
                namespace=namespace,
                agent=agent,
                metric="ApprovalsRequested",
                dimension=names.TOOL,
            )
        )
    )
    span = window_period(start, end)
    queries = [Query(metric, ((names.TOOL, tool),), "Sum", span) for tool in tools for metric in METRICS]
    data = get_metric_data(cloudwatch, queries, namespace=namespace, agent=agent, start=start, end=end)
    rows: dict[str, dict[str, float]] = {tool: _empty() for tool in tools}
    for query, points in data.items():
        rows[query.dimensions[0][1]][METRICS[query.metric]] += sum(v for _, v in points)
    return Approvals(rows)
