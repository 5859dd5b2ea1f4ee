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
  BudgetExceeded, Disconnected, InvocationErrors (``ErrorCode``), SessionResumed, SessionStoreErrors,
  SessionStoreDeadLetters, SessionStoreLateWrites, JobsAccepted (an asynchronous job queued), JobResultsKept (a
  job's result SQS did not take at once: it waits in the outbox, :mod:`runtime.jobs.service`),
  JobResultsDeadLettered (a job's result SQS refused for good), JobsInterrupted (a job an earlier process accepted
  and did not finish, reported ``interrupted``); for tool calls that wait for a person (:mod:`runtime.approvals`),
  dimension ``Tool``: ApprovalsRequested, Approved, Denied, Expired, Withdrawn (taken back unanswered: its job was
  stopped) and ApprovalDecisionSeconds (Seconds: from the request to its answer).

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

import os
import time
from collections.abc import Callable
from typing import Any, TextIO

from runtime.observe.metrics.base import (
    DEFAULT_NAMESPACE,
    DIMENSIONS,
    EVENTS,
    METRICS_KINDS,
    TURN_COST_MARKER,
    BaseMetrics,
    MetricDoc,
    ToolRecord,
    TurnRecord,
    turn_cost_line,
)
from runtime.observe.metrics.cloudwatch import CloudWatchMetrics
from runtime.observe.metrics.emf import EmfMetrics
from runtime.observe.metrics.null import NullMetrics

__all__ = [
    "DEFAULT_NAMESPACE",
    "DIMENSIONS",
    "EVENTS",
    "METRICS_KINDS",
    "TURN_COST_MARKER",
    "BaseMetrics",
    "CloudWatchMetrics",
    "EmfMetrics",
    "MetricDoc",
    "NullMetrics",
    "ToolRecord",
    "TurnRecord",
    "make_metrics",
    "turn_cost_line",
]


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

    ``cloudwatch_client`` defaults to :func:`runtime.aws.cloudwatch_client` (its endpoint honours
    ``AWS_ENDPOINT_URL_CLOUDWATCH``). ``cloudwatch_options`` go to
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
            from runtime.aws import cloudwatch_client as build_client

            cloudwatch_client = build_client(
                os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
            )
        return CloudWatchMetrics(
            namespace=namespace, agent=agent, client=cloudwatch_client, now=now, **cloudwatch_options
        )
    raise ValueError(f"AGENTKIT_METRICS must be one of {', '.join(METRICS_KINDS)}; got {kind!r}")
