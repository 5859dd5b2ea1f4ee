"""``agentkit logs``: the runtime's CloudWatch Logs, filtered by time, session and level.

The log group is the one AgentCore writes the endpoint's stdout/stderr to
(``/aws/bedrock-agentcore/runtimes/<runtime id>-<endpoint>``, :func:`agentkit.stack.runtime_log_group`),
or ``--log-group``.

IAM actions: ``logs:FilterLogEvents``; ``cloudformation:DescribeStacks`` with ``--stack``.
"""

from __future__ import annotations

import argparse
from typing import Any

from agentkit.context import Context
from agentkit.data.logs import LEVELS, LogEvent, filter_events, parse_since
from agentkit.errors import AgentkitError, ExitCode, aws_error, usage_error
from agentkit.stack import runtime_log_group
from agentkit.targets import add_target_options, resolve_target


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "logs",
        parents=[common],
        help="the runtime's CloudWatch Logs",
        description="Print the runtime's CloudWatch Logs (oldest first), filtered by time, session and level.",
    )
    add_target_options(parser, local=False)
    parser.add_argument("--since", default="1h", help="how far back: 30m, 1h, 2d, 1w or an ISO time (1h)")
    parser.add_argument("--session", metavar="ID", help="only lines that mention this runtime session id")
    parser.add_argument("--level", choices=tuple(LEVELS), help="only lines at this level or above")
    parser.add_argument("--limit", type=int, default=1000, help="print at most this many events (1000)")
    parser.add_argument("--log-group", metavar="NAME", help="read this log group instead of the runtime's")
    parser.set_defaults(handler=run, usage_parser=parser)


def log_group_for(args: argparse.Namespace, ctx: Context) -> tuple[str, str | None]:
    """The log group to read and the region of the runtime (None when ``--log-group`` was given alone)."""
    if getattr(args, "log_group", None) and not (args.runtime_arn or args.stack):
        return str(args.log_group), None
    target, _stack = resolve_target(args, ctx)
    return args.log_group or runtime_log_group(target.runtime_id, target.endpoint), target.region


def read_events(
    ctx: Context, *, log_group: str, region: str | None, **filters: Any
) -> tuple[list[LogEvent], bool]:
    """:func:`filter_events` with AWS errors mapped to clear ones (a missing group says why it may be)."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = ctx.aws.client("logs", region=region)
    try:
        return filter_events(client, log_group=log_group, **filters)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            raise AgentkitError(
                f"log group {log_group} not found: AgentCore creates it at the endpoint's first invocation; "
                "check --qualifier (the stage endpoint) and --region, or pass --log-group",
                exit_code=ExitCode.AWS_ERROR,
                code="ResourceNotFoundException",
            ) from exc
        raise aws_error(
            exc, action="FilterLogEvents", iam_action=f"logs:FilterLogEvents on {log_group}"
        ) from exc
    except BotoCoreError as exc:
        raise aws_error(exc, action="FilterLogEvents") from exc


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.limit < 1:
        raise usage_error("--limit must be >= 1")
    now = ctx.now()
    start = parse_since(args.since, now=now)
    if start >= now:
        raise usage_error("--since must be in the past")
    group, region = log_group_for(args, ctx)
    events, more = read_events(
        ctx,
        log_group=group,
        region=region,
        start=start,
        session=args.session,
        level=args.level,
        limit=args.limit,
    )
    data = {"log_group": group, "since": start, "events": [e.as_dict() for e in events], "truncated": more}

    def text() -> str:
        lines = [f"{e.timestamp:%Y-%m-%dT%H:%M:%S}Z  {e.message}" for e in events]
        if not lines:
            lines = [f"no matching events in {group} since {start:%Y-%m-%dT%H:%M:%S}Z"]
        return "\n".join(lines)

    ctx.emit(data, text)
    if more:
        ctx.progress(f"agentkit: showing the first {args.limit} events; narrow --since or raise --limit")
    return int(ExitCode.OK)
