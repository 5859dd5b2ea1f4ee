"""Webhook metrics with a ``Tracker`` dimension (``github`` | ``gitlab`` | ``jira``), as EMF lines.

Every metric carries the dimensions ``service`` (``POWERTOOLS_SERVICE_NAME``) and ``Tracker``, in the
namespace ``POWERTOOLS_METRICS_NAMESPACE`` (the stack's metrics namespace). Each one is written at once
with Powertools' ``single_metric``, so records of different trackers in one batch never share a
dimension set. CloudWatch turns the EMF lines of the Lambda's log into metrics (no API call).

Names: receiver ``WebhookAccepted``, ``WebhookRejected``, ``WebhookIgnored``, ``WebhookDuplicate``;
worker ``IssueReplies``, ``IssueTurnErrors``, ``IssueCostUSD``, ``IssueReplyStoreErrors``,
``IssueReplyDuplicate``, ``IssueReplyReposted``, ``IssueReplyUnconfirmed``.
"""

from __future__ import annotations

import os

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from webhook.settings import WebhookSettings

TRACKER_DIMENSION = "Tracker"


class TrackerMetrics:
    """Emits one metric per call with ``service`` and ``Tracker`` dimensions."""

    def __init__(self, *, service: str, namespace: str | None = None) -> None:
        self.service = service
        self.namespace = namespace or WebhookSettings.from_env(os.environ).metrics_namespace

    def emit(self, name: str, tracker: str, value: float = 1, unit: MetricUnit = MetricUnit.Count) -> None:
        with single_metric(
            name=name,
            unit=unit,
            value=value,
            namespace=self.namespace,
            default_dimensions={"service": self.service, TRACKER_DIMENSION: tracker},
        ):
            pass
