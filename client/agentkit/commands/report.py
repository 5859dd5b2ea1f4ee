"""``agentkit report``: write one self-contained HTML report (cost, tokens, latency, tools, sessions, trace).

Local: ``--emf FILE`` (and ``--spans FILE`` for the waterfall), the files a local run writes
(``AGENTKIT_EMF_FILE``, ``AGENTKIT_SPANS_FILE``; ``make demo`` writes both). Deployed: CloudWatch metrics of
the last ``--days``, plus the runtime's log group (``--stack`` / ``--runtime-arn``) for sessions and
``aws/spans`` for the waterfall.

IAM actions (deployed): see :mod:`agentkit.report.cloudwatch`; ``cloudformation:DescribeStacks`` with
``--stack``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
from pathlib import Path
from typing import Any

from agentkit.commands.cost import MAX_DAYS, add_metric_options, namespace_and_agent
from agentkit.context import Context
from agentkit.data.emf import read_emf_file
from agentkit.data.spans import read_span_file
from agentkit.data.usage import for_agent
from agentkit.env import ENV_AGENT_NAME, ENV_RUNTIME_ARN, ENV_STACK
from agentkit.errors import AgentkitError, ExitCode, aws_error, usage_error
from agentkit.report import approvals, delivery
from agentkit.report import cloudwatch as cw_report
from agentkit.report.html import render
from agentkit.report.model import ReportData, from_samples, summary
from agentkit.stack import runtime_log_group
from agentkit.targets import add_target_options, resolve_target

DEFAULT_OUT = "agentkit-report.html"


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "report",
        parents=[common],
        help="write a self-contained HTML report of cost, tokens, latency, tools, sessions and a trace",
        description="Write one self-contained HTML file (no script, no network) from a local run's EMF and "
        "span files, or from CloudWatch for a deployed agent.",
    )
    parser.add_argument("--emf", metavar="FILE", help="a local run's EMF file (AGENTKIT_EMF_FILE)")
    parser.add_argument("--spans", metavar="FILE", help="a local run's span file (AGENTKIT_SPANS_FILE)")
    add_target_options(parser, local=False)
    parser.add_argument("--days", type=int, default=7, help="CloudWatch: days to cover, counting today (7)")
    add_metric_options(parser)
    parser.add_argument(
        "--session", metavar="ID", help="the session whose trace to draw (default: the costliest)"
    )
    parser.add_argument("--out", "-o", default=DEFAULT_OUT, help=f"where to write the HTML ({DEFAULT_OUT})")
    parser.add_argument("--title", default="agentkit report", help="page title")
    parser.set_defaults(handler=run, usage_parser=parser)


def run(args: argparse.Namespace, ctx: Context) -> int:
    now = ctx.now()
    if args.emf or args.spans:
        if args.runtime_arn or args.stack:
            raise usage_error(
                "--emf/--spans read local files; --runtime-arn/--stack read CloudWatch: pick one"
            )
        data = _local(args, ctx, now)
    else:
        data = _deployed(args, ctx, now)
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(render(data), encoding="utf-8")
        os.replace(tmp, out)
    except OSError as exc:
        raise usage_error(f"cannot write the report to {out}: {exc}") from exc
    ctx.emit({"path": str(out.resolve()), **summary(data)}, str(out.resolve()))
    return int(ExitCode.OK)


def _local(args: argparse.Namespace, ctx: Context, now: dt.datetime) -> ReportData:
    agent = args.agent or ctx.env.get(ENV_AGENT_NAME)
    everything = read_emf_file(args.emf).samples if args.emf else []
    samples = for_agent(everything, agent)
    spans = read_span_file(args.spans) if args.spans else []
    source = " + ".join(str(p) for p in (args.emf, args.spans) if p)
    data = from_samples(
        samples,
        spans,
        title=args.title,
        source=source,
        generated=now,
        session=args.session,
        region=ctx.aws.region,
    )
    data.delivery = delivery.from_samples(everything)  # the webhook's documents have no Agent dimension
    data.approvals = approvals.from_samples(samples)
    if not args.emf:
        data.notes.append("no EMF file given (--emf): cost, tokens, latency and tools are empty")
    if not args.spans:
        data.notes.append("no span file given (--spans): the trace waterfall is empty")
    return data


def _deployed(args: argparse.Namespace, ctx: Context, now: dt.datetime) -> ReportData:
    from botocore.exceptions import BotoCoreError, ClientError

    if not 1 <= args.days <= MAX_DAYS:
        raise usage_error(f"--days must be between 1 and {MAX_DAYS}")
    namespace, agent = namespace_and_agent(args, ctx)
    start = (now - dt.timedelta(days=args.days - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    log_group, region, logs, runtime_arn = None, ctx.aws.region, None, None
    if args.runtime_arn or args.stack or ctx.env.get(ENV_RUNTIME_ARN) or ctx.env.get(ENV_STACK):
        target, _stack = resolve_target(args, ctx)
        log_group, region = runtime_log_group(target.runtime_id, target.endpoint), target.region
        logs = ctx.aws.client("logs", region=region)
        runtime_arn = target.runtime_arn
    try:
        data = cw_report.gather(
            cloudwatch=ctx.aws.client("cloudwatch", region=region),
            logs=logs,
            namespace=namespace,
            agent=agent,
            start=start,
            end=now,
            log_group=log_group,
            session=args.session,
            title=args.title,
            generated=now,
            runtime_arn=runtime_arn,
            region=region,
        )
    except AgentkitError:
        raise
    except (ClientError, BotoCoreError) as exc:
        raise aws_error(
            exc,
            action="reading metrics and logs for the report",
            iam_action="cloudwatch:ListMetrics, cloudwatch:GetMetricData and logs:FilterLogEvents",
        ) from exc
    if logs is None:
        data.notes.append(
            "no --stack/--runtime-arn: per-session cost and the trace waterfall need the runtime's logs"
        )
    return data
