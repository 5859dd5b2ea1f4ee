"""``agentkit cost``: what the agent spent, per day or hour, by model, session or actor, against the budget.

Sources: CloudWatch metrics (default; ``--by model``, or ``--by session`` from the runtime's logs), or
``--local FILE``, the EMF file a local run writes (``AGENTKIT_EMF_FILE``; every ``--by``). Tokens are shown by
type (input, output, cache read, cache write). Then the cost in parts, per period and (``--by session``) per
session: model tokens (the runtime's ``CostUSD``), AgentCore Runtime compute (vCPU-hours and GB-hours from the
runtime's vended metrics per period, from its ``USAGE_LOGS`` per session; needs the runtime: ``--stack``,
``--runtime-arn`` or ``$AGENTKIT_RUNTIME_ARN``) and AgentCore Memory (the events and retrievals the runtime
counted), priced with the kit's dated price table (:mod:`agentkit.data.prices`, the date and source are printed).
A part that was not measured shows ``n/a`` and adds nothing. What each source covers: docs/observability.md.

The daily budget is ``--budget`` > ``$AGENTKIT_DAILY_BUDGET_USD`` > the threshold of the stack's daily cost
alarm (``--stack``); today's spend is the *total* of the measured parts. Over the budget the command exits 3
(budget exceeded) after printing the table, so CI can gate on it.

IAM actions: ``cloudwatch:ListMetrics``, ``cloudwatch:GetMetricData``; with ``--stack`` also
``cloudformation:DescribeStacks``, ``cloudformation:ListStackResources`` and ``cloudwatch:DescribeAlarms``; with
``--by session`` also ``logs:StartQuery`` and ``logs:GetQueryResults``.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from agentkit.commands.cost_parts import RuntimeRef, cloudwatch_parts, format_parts, local_parts, runtime_ref
from agentkit.context import Context, table
from agentkit.data import cloudwatch as cw
from agentkit.data import prices
from agentkit.data.emf import read_emf_file
from agentkit.data.usage import By, CostRow, Period, align, cost_rows, for_agent, totals
from agentkit.env import (
    DEFAULT_AGENT,
    DEFAULT_NAMESPACE,
    ENV_AGENT_NAME,
    ENV_DAILY_BUDGET_USD,
    ENV_METRICS_NAMESPACE,
    ENV_RUNTIME_ARN,
    ENV_STACK,
)
from agentkit.errors import ExitCode, aws_error, usage_error
from agentkit.stack import stack_resources

MAX_DAYS = 455  # CloudWatch keeps 1-hour data points 455 days


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "cost",
        parents=[common],
        help="cost and tokens per day or hour, by model, session or actor",
        description="Cost and tokens per day (or hour) by model, session or actor, and spend against the "
        "daily budget. From CloudWatch, or from a local run's EMF file with --local.",
    )
    parser.add_argument("--days", type=int, default=7, help="days to report, counting today (7)")
    parser.add_argument("--hourly", action="store_true", help="one row per hour instead of per day")
    parser.add_argument(
        "--by", choices=("model", "session", "actor"), default="model", help="group by (model)"
    )
    parser.add_argument("--local", metavar="FILE", help="read a local run's EMF file instead of CloudWatch")
    parser.add_argument("--budget", type=float, metavar="USD", help=f"daily budget (${ENV_DAILY_BUDGET_USD})")
    parser.add_argument(
        "--stack",
        metavar="NAME",
        help=f"read the runtime and the daily budget (its cost alarm) from this stack (${ENV_STACK})",
    )
    parser.add_argument(
        "--runtime-arn", metavar="ARN", help=f"the runtime whose compute to add (${ENV_RUNTIME_ARN})"
    )
    parser.add_argument("--qualifier", metavar="Q", help="its endpoint, for --by session (the stack's stage)")
    parser.add_argument(
        "--usage-log-group", metavar="NAME", help="its USAGE_LOGS log group, for --by session (the stack's)"
    )
    add_metric_options(parser)
    parser.set_defaults(handler=run, usage_parser=parser)


def add_metric_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", default=None, help=f"metric namespace (${ENV_METRICS_NAMESPACE})")
    parser.add_argument("--agent", default=None, help=f"Agent dimension (${ENV_AGENT_NAME})")


def namespace_and_agent(args: argparse.Namespace, ctx: Context) -> tuple[str, str]:
    namespace = args.namespace or ctx.env.get(ENV_METRICS_NAMESPACE) or DEFAULT_NAMESPACE
    agent = args.agent or ctx.env.get(ENV_AGENT_NAME) or DEFAULT_AGENT
    return namespace, agent


def run(args: argparse.Namespace, ctx: Context) -> int:
    if not 1 <= args.days <= MAX_DAYS:
        raise usage_error(
            f"--days must be between 1 and {MAX_DAYS} (CloudWatch keeps hourly data {MAX_DAYS} days)"
        )
    if args.budget is not None and args.budget <= 0:
        raise usage_error("--budget must be > 0")
    period: Period = "hour" if args.hourly else "day"
    by: By = args.by
    namespace, agent = namespace_and_agent(args, ctx)
    end = ctx.now()
    start = align(end - dt.timedelta(days=args.days - 1), "day")
    runtime: RuntimeRef | None = None
    if args.local:
        samples = for_agent(read_emf_file(args.local).samples, args.agent or ctx.env.get(ENV_AGENT_NAME))
        rows = cost_rows(samples, by=by, period=period, start=start, end=end + dt.timedelta(microseconds=1))
        source = args.local
        region = ctx.aws.region
        totals_rows, session_rows = local_parts(samples, rows, by=by, period=period, region=region)
    else:
        runtime = runtime_ref(args, ctx)
        if by == "actor" or (by == "session" and (runtime is None or runtime.usage_log_group is None)):
            raise usage_error(
                f"--by {by} needs per-turn records: sessions and actors are not CloudWatch metric dimensions. "
                "Use --local FILE (a local run's EMF file), --by session with --stack (the runtime's logs), "
                "or the dashboard's top-sessions table"
            )
        region = runtime.region if runtime else ctx.aws.region
        client = ctx.aws.client("cloudwatch", region=region)
        model_rows = _cloudwatch_rows(
            client, namespace=namespace, agent=agent, start=start, end=end, period=period
        )
        rows = model_rows if by == "model" else []  # per session, the runtime's logs give no tokens
        totals_rows, session_rows = cloudwatch_parts(
            ctx,
            client,
            model_rows,
            runtime=runtime,
            by=by,
            namespace=namespace,
            agent=agent,
            start=start,
            end=end,
            period=period,
        )
        source = f"CloudWatch {namespace} Agent={agent}" + (f", runtime {runtime.arn}" if runtime else "")
    budget = _budget(args, ctx)
    today = align(end, "day")
    spent_today = sum(b.total_usd for b in totals_rows if align(b.start, "day") == today)
    cost_total, tokens_total = totals(rows)
    data = {
        "source": source,
        "period": period,
        "by": by,
        "start": start,
        "end": end,
        "rows": [r.as_dict() for r in rows],
        "model_total_usd": cost_total,
        "total_usd": sum(b.total_usd for b in totals_rows),
        "tokens": tokens_total,
        "parts": [b.as_dict() for b in totals_rows],
        "sessions": [b.as_dict() for b in session_rows],
        "prices": prices.describe(region),
        "budget": {
            "daily_usd": budget,
            "today_usd": spent_today,
            "used_percent": (100 * spent_today / budget) if budget else None,
        },
    }

    def text() -> str:
        model_table = format_cost(rows, period=period, by=by, budget=None, spent_today=0.0) if rows else ""
        parts = format_parts(totals_rows, session_rows, period=period, region=region)
        lines = [line for line in (model_table, parts) if line]
        if budget:
            lines.append(
                f"today: ${spent_today:.4f} of the ${budget:.2f} daily budget "
                f"({100 * spent_today / budget:.1f} %), model + compute + memory"
            )
        return "\n\n".join(lines)

    ctx.emit(data, text)
    if budget and spent_today > budget:
        # A pipeline gates on the exit code: over budget is exit 3, as for an invocation stopped by its cap.
        ctx.progress(
            f"agentkit: today's spend ${spent_today:.4f} is over the ${budget:.2f} daily budget "
            f"({100 * spent_today / budget:.0f} %)"
        )
        return int(ExitCode.BUDGET_EXCEEDED)
    return int(ExitCode.OK)


def _cloudwatch_rows(client: Any, **kwargs: Any) -> list[CostRow]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return cw.cost_rows(client, **kwargs)
    except (ClientError, BotoCoreError) as exc:
        raise aws_error(
            exc,
            action="reading cost metrics",
            iam_action="cloudwatch:ListMetrics and cloudwatch:GetMetricData",
        ) from exc


def _budget(args: argparse.Namespace, ctx: Context) -> float | None:
    if args.budget is not None:
        return float(args.budget)
    if ctx.env.get(ENV_DAILY_BUDGET_USD):
        try:
            return float(ctx.env[ENV_DAILY_BUDGET_USD])
        except ValueError:
            raise usage_error(
                f"${ENV_DAILY_BUDGET_USD} is not a number: {ctx.env[ENV_DAILY_BUDGET_USD]!r}"
            ) from None
    stack = args.stack or ctx.env.get(ENV_STACK)
    if not stack:
        return None
    return budget_from_stack(ctx, stack)


def budget_from_stack(ctx: Context, stack: str) -> float | None:
    """The threshold of the stack's daily cost alarm (the one on ``CostUSD``), or None."""
    for alarm in stack_alarms(ctx, stack):
        metrics = [
            q.get("MetricStat", {}).get("Metric", {}).get("MetricName") for q in alarm.get("Metrics", [])
        ]
        if alarm.get("MetricName") == "CostUSD" or "CostUSD" in metrics:
            return float(alarm["Threshold"])
    return None


def stack_alarms(ctx: Context, stack: str) -> list[dict[str, Any]]:
    """The metric alarms of ``stack``: its ``AWS::CloudWatch::Alarm`` resources (``ListStackResources``),
    described (``DescribeAlarms``); [] when it has none.

    Raises:
        AgentkitError: either call failed (4).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    names = stack_resources(
        ctx.aws.client("cloudformation"), stack_name=stack, resource_type="AWS::CloudWatch::Alarm"
    )
    if not names:
        return []
    try:
        return describe_alarms(ctx.aws.client("cloudwatch"), names)
    except (ClientError, BotoCoreError) as exc:
        raise aws_error(exc, action="DescribeAlarms", iam_action="cloudwatch:DescribeAlarms") from exc


def describe_alarms(cloudwatch: Any, alarm_names: list[str]) -> list[dict[str, Any]]:
    """``DescribeAlarms`` for up to any number of names (100 per call, paged)."""
    found: list[dict[str, Any]] = []
    for offset in range(0, len(alarm_names), 100):
        kwargs: dict[str, Any] = {
            "AlarmNames": alarm_names[offset : offset + 100],
            "AlarmTypes": ["MetricAlarm"],
        }
        for page in cloudwatch.get_paginator("describe_alarms").paginate(**kwargs):
            found += page.get("MetricAlarms", [])
    return found


def format_cost(
    rows: list[CostRow], *, period: Period, by: By, budget: float | None, spent_today: float
) -> str:
    """The text table: one line per period and key with tokens by type, a subtotal per period, the total,
    then today's spend against the budget."""
    if not rows:
        lines = ["No cost data for this agent and period."]
    else:
        fmt = "%Y-%m-%d" if period == "day" else "%Y-%m-%d %H:00"
        body: list[list[Any]] = []
        by_start: dict[dt.datetime, list[CostRow]] = {}
        for row in rows:
            by_start.setdefault(row.start, []).append(row)
        for start, group in by_start.items():
            for row in group:
                body.append([start.strftime(fmt), row.key, f"{row.cost_usd:.4f}", *_token_cells(row.tokens)])
            if len(group) > 1:
                sub_cost, sub_tokens = totals(group)
                body.append(["", "(period total)", f"{sub_cost:.4f}", *_token_cells(sub_tokens)])
        cost_total, tokens_total = totals(rows)
        body.append(["total", "", f"{cost_total:.4f}", *_token_cells(tokens_total)])
        headers = ["period", by, "cost (USD)", "input", "output", "cache read", "cache write"]
        lines = [table(headers, body, align="llrrrrr")]
    if budget:
        lines.append(
            f"today: ${spent_today:.4f} of the ${budget:.2f} daily budget ({100 * spent_today / budget:.1f} %)"
        )
    return "\n".join(lines)


def _token_cells(tokens: dict[str, float]) -> list[str]:
    return [f"{tokens.get(k, 0.0):,.0f}" for k in ("input", "output", "cache_read", "cache_write")]
