"""The metrics the dashboard and alarms read, and the dashboard's widgets.

Three sources, each queried only with a metric name + dimension set its emitter really writes
(``tests/infra/test_metric_contract.py`` checks this against the runtime's metrics module):

* the agent's own metrics (namespace from config, ``runtime/observe/metrics/__init__.py``): every document is written with its
  own dimension set (``Agent``+``Model``, ``Agent``+``Tool``, ``Agent``+``ErrorCode``) **and** the ``Agent``
  roll-up. Totals read the roll-up (:func:`agent_metric`); breakdowns use ``SEARCH`` on the detailed set, so
  every model and tool shows up without being listed here.
* AgentCore's runtime metrics, namespace ``AWS/Bedrock-AgentCore`` (:func:`runtime_metric`): Invocations,
  Throttles, SystemErrors, UserErrors, Latency, SessionCount ("AgentCore generated runtime observability
  data", https://docs.aws.amazon.com/bedrock-agentcore/latest/devguide/observability-runtime-metrics.html).
  They carry ``Operation=InvokeAgentRuntime``, ``Resource=<runtime ARN>`` and ``Name=<runtime name>::<endpoint
  name>`` (the same Operation/Resource/Name triple AgentCore documents for its gateway metrics,
  https://docs.aws.amazon.com/bedrock-agentcore/latest/devguide/gateway-advanced-observability-metrics.html;
  the runtime's shape as aws-cdk-lib's ``Runtime.metric*`` helpers write it, aws/aws-cdk#38486). Those helpers
  hard-code the ``DEFAULT`` endpoint, which nobody here calls: every caller uses the stage's endpoint, so the
  metrics are built for it.
* AgentCore's billed compute, same namespace, a different shape (:func:`compute_metric`): ``CPUUsed-vCPUHours``
  and ``MemoryUsed-GBHours`` with the dimension sets ``Service``; ``Service, Resource``; ``Service, Resource,
  Name`` where ``Service`` is ``AgentCore.Runtime``, ``Resource`` the runtime ARN and ``Name``
  ``<runtime>::<endpoint>`` (same page, "Resource usage metrics and logs"; no ``Operation``). The dashboard reads
  ``Service, Resource``: the whole runtime, every endpoint, as the bill counts it. They "may be delayed by up to
  60 minutes". Priced with the kit's price table (``runtime/observe/prices.py``) in :func:`cost_parts`, beside
  the model's ``CostUSD`` and the Memory calls the runtime counts (``MemoryEventsWritten``,
  ``MemoryRetrievals``).
* the webhook's metrics (same namespace, Powertools EMF): ``IssueCostUSD`` … with dimensions ``Tracker`` and
  ``service``; plotted per configured tracker.

The per-session / per-caller cost table is a Logs Insights query over the runtime's stdout log group
(``/aws/bedrock-agentcore/runtimes/<runtime id>-<endpoint>``, "View observability data", CloudWatch user
guide) and the ``agentkit.turn_cost`` line ``runtime/observe/metrics/__init__.py`` logs for every turn.

Spend today and this month use metric math on the hourly cost (``FILL``, ``DATE``/``MONTH``, ``DIFF``,
``RUNNING_SUM``, ``IF``; CloudWatch "Using metric math"): a running count of calendar boundaries marks the
hours of the current UTC day / month, and the widget shows the last value of the running sum over them.
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw

from runtime.observe.prices import AgentCorePrices

AGENTCORE_NAMESPACE = "AWS/Bedrock-AgentCore"
INVOKE_OPERATION = "InvokeAgentRuntime"
RUNTIME_METRICS = (
    "Invocations",
    "Throttles",
    "SystemErrors",
    "UserErrors",
    "Latency",
    "SessionCount",
)
#: What AgentCore bills the runtime for: active vCPU-hours and peak-memory GB-hours (pricing: per second of CPU
#: used and of peak memory so far, 128 MB minimum; runtime/observe/prices.py).
COMPUTE_METRICS = ("CPUUsed-vCPUHours", "MemoryUsed-GBHours")
COMPUTE_SERVICE = "AgentCore.Runtime"
MEMORY_USAGE_METRICS = ("MemoryEventsWritten", "MemoryRetrievals")  # runtime/session_store/agentcore/ids.py
FIVE_MINUTES = cdk.Duration.minutes(5)
HOUR = cdk.Duration.hours(1)
DAY = cdk.Duration.days(1)
TOKEN_METRICS = ("InputTokens", "OutputTokens", "CacheReadTokens", "CacheWriteTokens")
TURN_COST_MARKER = "agentkit.turn_cost"  # runtime/observe/metrics/__init__.py: TURN_COST_MARKER
#: The Logs Insights regex for the runtime's per-turn cost line (Logs Insights' named-group syntax).
TURN_COST_PATTERN = (
    r'/agentkit\.turn_cost session="(?<session>(?:[^"\\]|\\.)*)" '
    r'caller="(?<caller>(?:[^"\\]|\\.)*)" cost_usd=(?<cost>[0-9.]+)/'
)


def runtime_metric(
    name: str,
    *,
    runtime_name: str,
    runtime_arn: str,
    endpoint: str,
    statistic: str,
    period: cdk.Duration = FIVE_MINUTES,
    label: str | None = None,
) -> cw.Metric:
    """An AgentCore runtime metric of the ``endpoint`` the callers use (see module docstring)."""
    if name not in RUNTIME_METRICS:
        raise ValueError(f"{name!r} is not an AgentCore runtime metric ({', '.join(RUNTIME_METRICS)})")
    return cw.Metric(
        namespace=AGENTCORE_NAMESPACE,
        metric_name=name,
        dimensions_map={
            "Operation": INVOKE_OPERATION,
            "Name": f"{runtime_name}::{endpoint}",
            "Resource": runtime_arn,
        },
        statistic=statistic,
        period=period,
        label=label,
    )


def compute_metric(
    name: str,
    *,
    runtime_arn: str,
    statistic: str = "Sum",
    period: cdk.Duration = DAY,
    label: str | None = None,
) -> cw.Metric:
    """A billed-compute metric of the whole runtime (dimensions ``Service``, ``Resource``; module docstring)."""
    if name not in COMPUTE_METRICS:
        raise ValueError(f"{name!r} is not an AgentCore compute metric ({', '.join(COMPUTE_METRICS)})")
    return cw.Metric(
        namespace=AGENTCORE_NAMESPACE,
        metric_name=name,
        dimensions_map={"Service": COMPUTE_SERVICE, "Resource": runtime_arn},
        statistic=statistic,
        period=period,
        label=label or name,
    )


def cost_parts(
    *,
    model: cw.IMetric,
    compute: Sequence[cw.IMetric],
    memory: Sequence[cw.IMetric],
    prices: AgentCorePrices,
    period: cdk.Duration = DAY,
) -> dict[str, cw.MathExpression]:
    """USD per period of each part and their total: ``model`` (``CostUSD``), ``compute`` (vCPU-hours, GB-hours)
    and ``memory`` (events written, retrievals), the last two priced with ``prices``; a missing point is 0."""
    cpu, gb = compute
    events, retrievals = memory
    parts = {
        "model": cw.MathExpression(
            expression="FILL(m, 0)", using_metrics={"m": model}, label="model", period=period
        ),
        "compute": cw.MathExpression(
            expression=f"FILL(cpu, 0) * {prices.vcpu_hour!r} + FILL(gb, 0) * {prices.gb_hour!r}",
            using_metrics={"cpu": cpu, "gb": gb},
            label="Runtime compute",
            period=period,
        ),
        "memory": cw.MathExpression(
            expression=f"FILL(ev, 0) * {prices.memory_event!r} + FILL(rt, 0) * {prices.memory_retrieval!r}",
            using_metrics={"ev": events, "rt": retrievals},
            label="Memory",
            period=period,
        ),
    }
    parts["total"] = cw.MathExpression(
        expression="mo + co + me",
        using_metrics={"mo": parts["model"], "co": parts["compute"], "me": parts["memory"]},
        label="total",
        period=period,
    )
    return parts


def agent_metric(
    namespace: str, agent: str, name: str, *, statistic: str, period: cdk.Duration, label: str | None = None
) -> cw.Metric:
    """The ``Agent`` roll-up of one of the agent's metrics (every document is also written to it)."""
    return cw.Metric(
        namespace=namespace,
        metric_name=name,
        dimensions_map={"Agent": agent},
        statistic=statistic,
        period=period,
        label=label or name,
    )


def search(
    namespace: str,
    dimensions: Sequence[str],
    metric: str,
    filters: dict[str, str],
    *,
    statistic: str,
    period: cdk.Duration,
    label: str = "",
) -> cw.MathExpression:
    """``SEARCH`` over exactly one dimension set (the schema ``{ns,dims}`` matches no other set)."""
    terms = " ".join([f'MetricName="{metric}"', *(f'{k}="{v}"' for k, v in filters.items())])
    schema = ",".join([namespace, *dimensions])
    return cw.MathExpression(
        expression=f"SEARCH('{{{schema}}} {terms}', '{statistic}', {int(period.to_seconds())})",
        label=label,
        period=period,
    )


def calendar_spend(
    hourly_cost: cw.IMetric, unit: str, daily_budget_usd: float
) -> tuple[cw.IMetric, cw.IMetric]:
    """``(spend so far, budget so far)`` in the current UTC ``unit`` (``DATE``: day, ``MONTH``: month).

    Both are time series whose last value is the figure: the running sum of the hours after the last
    ``unit`` boundary, and the budget prorated over those hours.
    """
    if unit not in ("DATE", "MONTH"):
        raise ValueError("unit is DATE (a UTC day) or MONTH")
    key = unit.lower()
    filled = cw.MathExpression(expression="FILL(h, 0)", using_metrics={"h": hourly_cost}, period=HOUR)
    boundaries = cw.MathExpression(
        expression=f"RUNNING_SUM(IF(DIFF({unit}(hf)) != 0, 1, 0))", using_metrics={"hf": filled}, period=HOUR
    )
    current = "bn == MAX(bn)"
    spend = cw.MathExpression(
        expression=f"RUNNING_SUM(IF({current}, hf, 0))",
        using_metrics={"hf": filled, "bn": boundaries},
        label="today (UTC) USD" if key == "date" else "this month (UTC) USD",
        period=HOUR,
    )
    budget = cw.MathExpression(
        expression=f"RUNNING_SUM(IF({current}, 1, 0)) * {daily_budget_usd} / 24",
        using_metrics={"bn": boundaries},
        label="budget so far USD",
        period=HOUR,
    )
    return spend, budget


def cost_table_query(limit: int = 20) -> list[str]:
    """Logs Insights lines: the top sessions and callers by summed turn cost."""
    return [
        "fields @timestamp, @message",
        f"filter @message like /{TURN_COST_MARKER.replace('.', '[.]')} /",
        f"parse @message {TURN_COST_PATTERN}",
        "stats sum(cost) as cost_usd, count(*) as turns by session, caller",
        "sort cost_usd desc",
        f"limit {limit}",
    ]
