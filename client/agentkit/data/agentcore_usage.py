"""What AgentCore bills besides model tokens, read back: Runtime compute and Memory usage, per day or session.

* **Compute per day**: the runtime's vended metrics ``CPUUsed-vCPUHours`` and ``MemoryUsed-GBHours``, namespace
  ``AWS/Bedrock-AgentCore``, dimension set ``Service`` (``AgentCore.Runtime``) + ``Resource`` (the runtime ARN):
  the whole runtime, every endpoint ("AgentCore generated runtime observability data", AgentCore developer guide,
  https://docs.aws.amazon.com/bedrock-agentcore/latest/devguide/observability-runtime-metrics.html: dimension
  sets ``Service``; ``Service, Resource``; ``Service, Resource, Name``, at 1-minute resolution, "may be delayed
  by up to 60 minutes").
* **Compute per session**: the runtime's ``USAGE_LOGS`` (same page: one record per session and second with
  ``session.id``, ``agent.runtime.vcpu.hours.used``, ``agent.runtime.memory.gb_hours.used``), summed by a
  CloudWatch Logs Insights query. The page lists the fields flat; delivered records nest them under
  ``attributes`` and ``metrics`` (as published samples of delivered records show), so the query reads both.
* **Model cost per session**: the ``agentkit.turn_cost`` line the runtime logs for every turn (its stdout log
  group ``/aws/bedrock-agentcore/runtimes/<runtime id>-<endpoint>``), as the dashboard's top-sessions table does.
* **Memory per day**: the runtime's own ``MemoryEventsWritten`` and ``MemoryRetrievals`` (namespace and
  ``Agent`` of the agent's metrics): each billed ``CreateEvent`` and ``RetrieveMemoryRecords`` it made.

IAM actions: ``cloudwatch:GetMetricData``; per session also ``logs:StartQuery``, ``logs:GetQueryResults`` on
the two log groups.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentkit.data import names
from agentkit.data.cloudwatch import PERIODS, Query, get_metric_data
from agentkit.data.usage import Period, align, utc
from agentkit.errors import AgentkitError, ExitCode

NAMESPACE = "AWS/Bedrock-AgentCore"
SERVICE = "AgentCore.Runtime"
CPU_METRIC = "CPUUsed-vCPUHours"
MEMORY_METRIC = "MemoryUsed-GBHours"
#: Logs Insights: vCPU-hours and GB-hours per session and day from USAGE_LOGS (nested or flat fields).
USAGE_QUERY = "\n".join(
    [
        "fields coalesce(`attributes.session.id`, `session.id`) as sid,",
        "  coalesce(`metrics.agent.runtime.vcpu.hours.used`, `agent.runtime.vcpu.hours.used`) as vcpu,",
        "  coalesce(`metrics.agent.runtime.memory.gb_hours.used`, `agent.runtime.memory.gb_hours.used`) as gb,",
        "  datefloor(@timestamp, 1d) as day",
        "| filter ispresent(sid)",
        "| stats sum(vcpu) as vcpu_hours, sum(gb) as gb_hours by sid, day",
    ]
)
#: Logs Insights: model cost per session and day from the runtime's turn lines (runtime/observe/metrics).
TURN_COST_QUERY = "\n".join(
    [
        r"filter @message like /agentkit[.]turn_cost /",
        r'| parse @message /agentkit\.turn_cost session="(?<sid>(?:[^"\\]|\\.)*)" '
        r'caller="(?<caller>(?:[^"\\]|\\.)*)" cost_usd=(?<cost>[0-9.]+)/',
        "| fields datefloor(@timestamp, 1d) as day",
        "| stats sum(cost) as cost_usd by sid, day",
    ]
)
MAX_WAIT_S = 120.0


@dataclass(frozen=True)
class Compute:
    """Runtime compute: vCPU-hours and GB-hours."""

    vcpu_hours: float = 0.0
    gb_hours: float = 0.0

    def __add__(self, other: Compute) -> Compute:
        return Compute(self.vcpu_hours + other.vcpu_hours, self.gb_hours + other.gb_hours)


def compute_per_period(
    cloudwatch: Any, *, runtime_arn: str, start: dt.datetime, end: dt.datetime, period: Period = "day"
) -> dict[dt.datetime, Compute]:
    """vCPU-hours and GB-hours of the whole runtime per ``period`` (periods with no data left out).

    Raises:
        botocore.exceptions.ClientError: CloudWatch refused the call.
    """
    seconds = PERIODS[period]
    queries = {
        metric: Query(metric, (("Service", SERVICE), ("Resource", runtime_arn)), "Sum", seconds)
        for metric in (CPU_METRIC, MEMORY_METRIC)
    }
    data = get_metric_data(
        cloudwatch, list(queries.values()), namespace=NAMESPACE, agent=None, start=start, end=end
    )
    out: dict[dt.datetime, Compute] = defaultdict(Compute)
    for metric, query in queries.items():
        for ts, value in data[query]:
            add = Compute(vcpu_hours=value) if metric == CPU_METRIC else Compute(gb_hours=value)
            out[align(ts, period)] += add
    return dict(out)


def memory_per_period(
    cloudwatch: Any,
    *,
    namespace: str,
    agent: str,
    start: dt.datetime,
    end: dt.datetime,
    period: Period = "day",
) -> dict[dt.datetime, tuple[float, float]]:
    """``(events written, retrievals)`` per ``period`` from the runtime's own Memory usage metrics."""
    seconds = PERIODS[period]
    queries = [Query(m, (), "Sum", seconds) for m in (names.MEMORY_EVENTS, names.MEMORY_RETRIEVALS)]
    data = get_metric_data(cloudwatch, queries, namespace=namespace, agent=agent, start=start, end=end)
    out: dict[dt.datetime, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for i, query in enumerate(queries):
        for ts, value in data[query]:
            out[align(ts, period)][i] += value
    return {k: (v[0], v[1]) for k, v in out.items()}


def run_query(
    logs: Any,
    *,
    log_group: str,
    query: str,
    start: dt.datetime,
    end: dt.datetime,
    sleep: Callable[[float], None],
    max_wait_s: float = MAX_WAIT_S,
) -> list[dict[str, str]]:
    """Run a Logs Insights query to completion; each result row as ``{field: value}``.

    Raises:
        AgentkitError: the query failed, was cancelled or did not finish within ``max_wait_s`` (4).
        botocore.exceptions.ClientError: CloudWatch Logs refused a call.
    """
    query_id = logs.start_query(
        logGroupName=log_group,
        startTime=int(utc(start).timestamp()),
        endTime=int(utc(end).timestamp()),
        queryString=query,
    )["queryId"]
    waited, delay = 0.0, 0.5
    while True:
        answer = logs.get_query_results(queryId=query_id)
        status = answer.get("status")
        if status == "Complete":
            return [{f["field"]: f.get("value", "") for f in row} for row in answer.get("results", [])]
        if status in ("Failed", "Cancelled", "Timeout", "Unknown"):
            raise AgentkitError(
                f"the Logs Insights query on {log_group} ended {status}", exit_code=ExitCode.AWS_ERROR
            )
        if waited >= max_wait_s:
            raise AgentkitError(
                f"the Logs Insights query on {log_group} did not finish within {max_wait_s:.0f} s; retry",
                exit_code=ExitCode.AWS_ERROR,
            )
        sleep(delay)
        waited += delay
        delay = min(delay * 2, 5.0)


def _day(value: str) -> dt.datetime:
    # Logs Insights prints timestamps as "2026-11-24 00:00:00.000" (UTC).
    return dt.datetime.strptime(value[:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC)


def _number(value: str | None) -> float:
    try:
        return float(value) if value not in (None, "") else 0.0
    except ValueError:
        return 0.0


def compute_per_session(
    logs: Any, *, log_group: str, start: dt.datetime, end: dt.datetime, sleep: Callable[[float], None]
) -> dict[tuple[dt.datetime, str], Compute]:
    """``{(day, session): Compute}`` from the runtime's USAGE_LOGS (see the module docstring)."""
    rows = run_query(logs, log_group=log_group, query=USAGE_QUERY, start=start, end=end, sleep=sleep)
    out: dict[tuple[dt.datetime, str], Compute] = defaultdict(Compute)
    for row in rows:
        if row.get("sid") and row.get("day"):
            out[(_day(row["day"]), row["sid"])] += Compute(
                _number(row.get("vcpu_hours")), _number(row.get("gb_hours"))
            )
    return dict(out)


def model_cost_per_session(
    logs: Any, *, log_group: str, start: dt.datetime, end: dt.datetime, sleep: Callable[[float], None]
) -> dict[tuple[dt.datetime, str], float]:
    """``{(day, session): USD}`` from the runtime's ``agentkit.turn_cost`` log lines."""
    rows = run_query(logs, log_group=log_group, query=TURN_COST_QUERY, start=start, end=end, sleep=sleep)
    out: dict[tuple[dt.datetime, str], float] = defaultdict(float)
    for row in rows:
        if row.get("sid") is not None and row.get("day"):
            out[(_day(row["day"]), row["sid"])] += _number(row.get("cost_usd"))
    return dict(out)
