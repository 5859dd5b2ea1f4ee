"""``agentkit status``: is the agent up? Stack outputs, runtime and endpoint state, alarms, the runtime's
AgentCore metrics (and whether the dashboard's dimensions match them), last errors.

Each part is read on its own: one that cannot be read (access denied, not deployed yet) is reported with
the reason and the fix, the others are still shown, and the exit code is 4.

IAM actions: ``cloudformation:DescribeStacks``, ``cloudformation:ListStackResources``,
``bedrock-agentcore:GetAgentRuntime``, ``bedrock-agentcore:GetAgentRuntimeEndpoint``,
``cloudwatch:DescribeAlarms``, ``cloudwatch:ListMetrics``, ``logs:FilterLogEvents``.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from typing import Any

from agentkit.commands.cost import stack_alarms
from agentkit.commands.logs import read_events
from agentkit.context import Context, table
from agentkit.data.logs import parse_since
from agentkit.errors import AgentkitError, ExitCode, aws_error
from agentkit.stack import runtime_log_group
from agentkit.targets import add_target_options, resolve_target

LAST_ERRORS = 5


QUARANTINE_NOTE = (
    "{status}: the {what} is quarantined (for example by AWS Agent Registry) and cannot be invoked; "
    "see its quarantine in the AgentCore console"
)


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "status",
        parents=[common],
        help="stack outputs, runtime and endpoint state, alarms, last errors",
        description="Show the stack's outputs, the runtime's status and version, the endpoint, the state of "
        "the alarms and the last errors in the runtime's logs.",
    )
    add_target_options(parser, local=False)
    parser.add_argument("--errors-since", default="24h", help="look for errors this far back (24h)")
    parser.set_defaults(handler=run, usage_parser=parser)


def run(args: argparse.Namespace, ctx: Context) -> int:
    target, stack = resolve_target(args, ctx)
    problems: dict[str, str] = {}
    data: dict[str, Any] = {
        "stack": {"name": stack.name, "status": stack.status, "outputs": stack.outputs} if stack else None,
        "runtime_arn": target.runtime_arn,
        "endpoint_name": target.endpoint,
    }
    control = _part(
        problems, "runtime", lambda: ctx.aws.client("bedrock-agentcore-control", region=target.region)
    )
    if control is not None:
        data["runtime"] = _part(problems, "runtime", lambda: _runtime(control, target.runtime_id))
        data["endpoint"] = _part(
            problems, "endpoint", lambda: _endpoint(control, target.runtime_id, target.endpoint)
        )
    if stack is not None:
        data["alarms"] = _part(problems, "alarms", lambda: _alarms(ctx, stack.name))
    runtime_name = (data.get("runtime") or {}).get("agentRuntimeName")
    if runtime_name:
        data["metrics"] = _part(
            problems, "metrics", lambda: _metrics(ctx, target.region, str(runtime_name), target.endpoint)
        )
    group = runtime_log_group(target.runtime_id, target.endpoint)
    since = parse_since(args.errors_since, now=ctx.now())
    data["log_group"] = group
    data["last_errors"] = _part(
        problems, "last_errors", lambda: _last_errors(ctx, group, target.region, since)
    )
    data["problems"] = problems
    ctx.emit(data, lambda: format_status(data))
    for part, message in problems.items():
        ctx.progress(f"agentkit: error: {part}: {message}")
    return int(ExitCode.AWS_ERROR if problems else ExitCode.OK)


def _part(problems: dict[str, str], name: str, read: Callable[[], Any]) -> Any:
    try:
        return read()
    except AgentkitError as exc:
        problems[name] = exc.message
        return None


def _runtime(control: Any, runtime_id: str) -> dict[str, Any]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        got = control.get_agent_runtime(agentRuntimeId=runtime_id)
    except (ClientError, BotoCoreError) as exc:
        raise aws_error(
            exc, action="GetAgentRuntime", iam_action="bedrock-agentcore:GetAgentRuntime"
        ) from exc
    # quarantineStatus (QUARANTINING | QUARANTINED | UNQUARANTINING; botocore 1.44.18 GetAgentRuntimeResponse) is
    # present only while a quarantine applies: a quarantined runtime cannot be invoked.
    keep = (
        "agentRuntimeName",
        "status",
        "agentRuntimeVersion",
        "lastUpdatedAt",
        "failureReason",
        "quarantineStatus",
    )
    runtime = {k: got.get(k) for k in keep if got.get(k) is not None}
    # AgentCore refuses to invoke a runtime without MMDSv2 (`agentkit doctor` prints the command that sets it).
    runtime["requireMMDSV2"] = bool((got.get("metadataConfiguration") or {}).get("requireMMDSV2"))
    return runtime


def _metrics(ctx: Context, region: str, runtime_name: str, endpoint: str) -> dict[str, Any]:
    """The runtime's ``AWS/Bedrock-AgentCore`` metrics and whether the dashboard's dimension set is among them."""
    from botocore.exceptions import BotoCoreError, ClientError

    from agentkit.doctor.deployed import DASHBOARD_DIMENSIONS, dimension_report, runtime_metrics

    try:
        found = runtime_metrics(ctx.aws.client("cloudwatch", region=region), runtime_name)
    except (ClientError, BotoCoreError) as exc:
        raise aws_error(exc, action="ListMetrics", iam_action="cloudwatch:ListMetrics") from exc
    matches, summary = dimension_report(found, runtime_name=runtime_name, endpoint=endpoint)
    return {
        "published": [
            {
                "name": m.get("MetricName"),
                "dimensions": {d["Name"]: d["Value"] for d in m.get("Dimensions", [])},
            }
            for m in found
        ],
        "dashboard_dimensions": f"{'+'.join(DASHBOARD_DIMENSIONS)} with Name={runtime_name}::{endpoint}",
        "dashboard_dimensions_match": matches,
        "summary": summary if found else "none published yet (invoke the agent once)",
    }


def _endpoint(control: Any, runtime_id: str, name: str) -> dict[str, Any]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        got = control.get_agent_runtime_endpoint(agentRuntimeId=runtime_id, endpointName=name)
    except (ClientError, BotoCoreError) as exc:
        raise aws_error(
            exc, action="GetAgentRuntimeEndpoint", iam_action="bedrock-agentcore:GetAgentRuntimeEndpoint"
        ) from exc
    keep = (
        "name",
        "status",
        "liveVersion",
        "targetVersion",
        "lastUpdatedAt",
        "failureReason",
        "quarantineStatus",
    )
    return {k: got.get(k) for k in keep if got.get(k) is not None}


def _alarms(ctx: Context, stack: str) -> list[dict[str, Any]]:
    found = stack_alarms(ctx, stack)
    return [
        {
            "name": a.get("AlarmName"),
            "state": a.get("StateValue"),
            "reason": a.get("StateReason"),
            "description": a.get("AlarmDescription"),
            "since": a.get("StateUpdatedTimestamp"),
        }
        for a in sorted(found, key=lambda a: (a.get("StateValue") != "ALARM", str(a.get("AlarmName"))))
    ]


def _last_errors(ctx: Context, group: str, region: str, since: dt.datetime) -> list[dict[str, Any]]:
    events, _more = read_events(ctx, log_group=group, region=region, start=since, level="error", limit=10_000)
    return [e.as_dict() for e in events[-LAST_ERRORS:]]


def format_status(data: dict[str, Any]) -> str:
    """Human-readable status, one section per part."""
    lines: list[str] = []
    stack = data.get("stack")
    if stack:
        lines.append(f"stack      {stack['name']}  {stack['status']}")
        lines += [f"  {k:<22} {v}" for k, v in sorted(stack["outputs"].items())]
    lines.append(f"runtime    {data['runtime_arn']}")
    runtime = data.get("runtime")
    if runtime:
        lines.append(
            f"  {runtime.get('status', '?')}  version {runtime.get('agentRuntimeVersion', '?')}"
            f"  updated {_when(runtime.get('lastUpdatedAt'))}"
        )
        if runtime.get("failureReason"):
            lines.append(f"  failure: {runtime['failureReason']}")
        if runtime.get("quarantineStatus"):
            lines.append(f"  {QUARANTINE_NOTE.format(what='runtime', status=runtime['quarantineStatus'])}")
        lines.append(
            f"  MMDSv2 required: {'yes' if runtime.get('requireMMDSV2') else 'no (agentkit doctor)'}"
        )
    endpoint = data.get("endpoint")
    lines.append(f"endpoint   {data['endpoint_name']}")
    if endpoint:
        lines.append(
            f"  {endpoint.get('status', '?')}  live version {endpoint.get('liveVersion', '?')}"
            + (f" → {endpoint['targetVersion']}" if endpoint.get("targetVersion") else "")
        )
        if endpoint.get("quarantineStatus"):
            lines.append(f"  {QUARANTINE_NOTE.format(what='endpoint', status=endpoint['quarantineStatus'])}")
    alarms = data.get("alarms")
    if alarms is not None:
        lines.append("alarms")
        rows = [[a["state"], a["name"], (a.get("reason") or "")[:80]] for a in alarms]
        lines += (
            ["  " + line for line in table(["state", "alarm", "reason"], rows).splitlines()]
            if rows
            else ["  none"]
        )
    metrics = data.get("metrics")
    if metrics is not None:
        lines.append("metrics (AWS/Bedrock-AgentCore)")
        lines.append(f"  {metrics['summary']}")
        if metrics["published"]:
            verdict = (
                "yes"
                if metrics["dashboard_dimensions_match"]
                else "NO: its runtime widgets and alarms stay empty"
            )
            lines.append(f"  dashboard reads {metrics['dashboard_dimensions']}: {verdict}")
    errors = data.get("last_errors")
    if errors is not None:
        lines.append(f"last errors ({data['log_group']})")
        lines += [f"  {e['timestamp'][:19]}Z  {e['message'][:200]}" for e in errors] or ["  none"]
    for part, message in data.get("problems", {}).items():
        lines.append(f"{part}: unavailable ({message})")
    return "\n".join(lines)


def _when(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return f"{value.astimezone(dt.UTC):%Y-%m-%d %H:%M}Z"
    return str(value or "?")
