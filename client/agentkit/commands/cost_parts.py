"""The parts of ``agentkit cost`` beyond model tokens: which runtime, its compute and Memory, and their table.

Per period (the budget's figure): model from ``CostUSD``, compute from the runtime's vended metrics (when the
runtime is known), Memory from the runtime's ``MemoryEventsWritten`` / ``MemoryRetrievals``. Per session
(``--by session``): from CloudWatch, model from the runtime's turn log lines and compute from its USAGE_LOGS (the
metric sink keeps no per-session Memory counts: ``n/a``); from a local EMF file, model and Memory (a local run has
no AgentCore compute: ``n/a``; nor Memory when it used a SQLite store, which writes no Memory documents). :mod:`agentkit.data.agentcore_usage` says where each figure comes from.

IAM actions: ``cloudformation:DescribeStacks`` (``--stack``), ``cloudwatch:GetMetricData``, and with
``--by session`` ``logs:StartQuery`` and ``logs:GetQueryResults``.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentkit.context import Context, table
from agentkit.data import agentcore_usage as acu
from agentkit.data import prices
from agentkit.data.bill import Breakdown, Memory, Slot, combine, memory_by_session
from agentkit.data.cloudwatch import PERIODS
from agentkit.data.emf import Sample
from agentkit.data.usage import By, CostRow, Period, align
from agentkit.env import ENV_RUNTIME_ARN, ENV_STACK
from agentkit.errors import aws_error
from agentkit.stack import DEFAULT_ENDPOINT, describe_stack, parse_runtime_arn, target_from_stack

ALL = "all"


@dataclass(frozen=True)
class RuntimeRef:
    """The deployed runtime whose compute is added: ARN, region, stage endpoint, USAGE_LOGS group."""

    arn: str
    region: str
    endpoint: str
    usage_log_group: str | None

    @property
    def log_group(self) -> str:
        """The runtime's stdout log group (``/aws/bedrock-agentcore/runtimes/<runtime id>-<endpoint>``)."""
        return f"/aws/bedrock-agentcore/runtimes/{parse_runtime_arn(self.arn)[2]}-{self.endpoint}"


def runtime_ref(args: argparse.Namespace, ctx: Context) -> RuntimeRef | None:
    """``--runtime-arn`` > ``$AGENTKIT_RUNTIME_ARN`` > ``--stack`` > ``$AGENTKIT_STACK`` (outputs ``RuntimeArn``,
    the stage endpoint and ``UsageLogGroup``); None when none is given (compute is then not measured).

    Raises:
        AgentkitError: a bad ARN (2) or an unreadable stack (4).
    """
    arn = args.runtime_arn or ctx.env.get(ENV_RUNTIME_ARN)
    endpoint, usage_group = args.qualifier, args.usage_log_group
    stack_name = None if arn else (args.stack or ctx.env.get(ENV_STACK))
    if stack_name:
        stack = describe_stack(ctx.aws.client("cloudformation"), stack_name=stack_name)
        arn, stage = target_from_stack(stack)
        endpoint = endpoint or stage
        usage_group = usage_group or stack.outputs.get("UsageLogGroup")
    if not arn:
        return None
    region = ctx.aws.explicit_region or parse_runtime_arn(arn)[0]
    return RuntimeRef(
        arn=arn, region=region, endpoint=endpoint or DEFAULT_ENDPOINT, usage_log_group=usage_group
    )


def _by_period(rows: Sequence[CostRow], period: Period) -> dict[Slot, float]:
    out: dict[Slot, float] = defaultdict(float)
    for row in rows:
        out[(align(row.start, period), ALL)] += row.cost_usd
    return dict(out)


def local_parts(
    samples: Sequence[Sample], rows: Sequence[CostRow], *, by: By, period: Period, region: str | None
) -> tuple[list[Breakdown], list[Breakdown]]:
    """``(per period, per session)`` from a local run's EMF documents (compute: not measured)."""
    price, _ = prices.agentcore_prices(region)
    # No Memory document at all: the run used no AgentCore Memory (a SQLite store), so Memory is not measured.
    memory: dict[Slot, Memory] | None = memory_by_session(samples, period) or None
    memory_total: dict[Slot, Memory] | None = None
    if memory is not None:
        memory_total = defaultdict(Memory)
        for (start, _key), used in memory.items():
            memory_total[(start, ALL)] += used
    totals = combine(model=_by_period(rows, period), compute=None, memory=memory_total, prices=price)
    if by != "session":
        return totals, []
    per_session = {(r.start, r.key): r.cost_usd for r in rows}
    return totals, combine(model=per_session, compute=None, memory=memory, prices=price)


def cloudwatch_parts(
    ctx: Context,
    cloudwatch: Any,
    model_rows: Sequence[CostRow],
    *,
    runtime: RuntimeRef | None,
    by: By,
    namespace: str,
    agent: str,
    start: dt.datetime,
    end: dt.datetime,
    period: Period,
) -> tuple[list[Breakdown], list[Breakdown]]:
    """``(per period, per session)`` from CloudWatch metrics and (per session) the runtime's logs.

    Raises:
        AgentkitError: a CloudWatch or CloudWatch Logs call failed (4).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    price, _ = prices.agentcore_prices(runtime.region if runtime else ctx.aws.region)
    until = align(end, period) + dt.timedelta(seconds=PERIODS[period])  # the period in progress too
    try:
        compute = None
        if runtime is not None:
            got = acu.compute_per_period(
                cloudwatch, runtime_arn=runtime.arn, start=start, end=until, period=period
            )
            compute = {(t, ALL): c for t, c in got.items()}
        used = acu.memory_per_period(
            cloudwatch, namespace=namespace, agent=agent, start=start, end=until, period=period
        )
        memory = {(t, ALL): Memory(events, retrievals) for t, (events, retrievals) in used.items()}
        totals = combine(model=_by_period(model_rows, period), compute=compute, memory=memory, prices=price)
        if by != "session" or runtime is None or runtime.usage_log_group is None:
            return totals, []
        logs = ctx.aws.client("logs", region=runtime.region)
        session_compute = acu.compute_per_session(
            logs, log_group=runtime.usage_log_group, start=start, end=until, sleep=ctx.sleep
        )
        session_model = acu.model_cost_per_session(
            logs, log_group=runtime.log_group, start=start, end=until, sleep=ctx.sleep
        )
    except (ClientError, BotoCoreError) as exc:
        raise aws_error(
            exc,
            action="reading the runtime's compute and Memory usage",
            iam_action="cloudwatch:GetMetricData, logs:StartQuery and logs:GetQueryResults",
        ) from exc
    # Per-session rows are per day even with --hourly: the logs are summed per day.
    return totals, combine(model=session_model, compute=session_compute, memory=None, prices=price)


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def format_parts(
    totals: Sequence[Breakdown], sessions: Sequence[Breakdown], *, period: Period, region: str | None
) -> str:
    """The cost-in-parts table (sessions first, then each period's total) and the price table's date and
    source."""
    fmt = "%Y-%m-%d" if period == "day" else "%Y-%m-%d %H:00"
    body: list[list[Any]] = []
    for b in sessions:
        body.append(
            [
                b.start.strftime("%Y-%m-%d"),
                b.key,
                _usd(b.model_usd),
                _usd(b.compute_usd),
                _usd(b.memory_usd),
                f"{b.total_usd:.4f}",
            ]
        )
    for b in totals:
        body.append(
            [
                b.start.strftime(fmt),
                "(period total)" if sessions else ALL,
                _usd(b.model_usd),
                _usd(b.compute_usd),
                _usd(b.memory_usd),
                f"{b.total_usd:.4f}",
            ]
        )
    if not body:
        return prices.footer(region)
    grand = sum(b.total_usd for b in totals)
    body.append(["total", "", "", "", "", f"{grand:.4f}"])
    headers = ["period", "session" if sessions else "sessions", "model", "compute", "memory", "total (USD)"]
    return "\n".join(["Cost in parts", table(headers, body, align="llrrrr"), prices.footer(region)])
