"""``agentkit approve`` / ``agentkit deny``: answer a tool call that waits for a person's approval.

Synopsis::

    agentkit approve SESSION_ID APPROVAL_ID [--by NAME] [--note TEXT] (--runtime-arn ARN | --stack NAME | --local URL)
    agentkit deny    SESSION_ID APPROVAL_ID [--by NAME] [--reason TEXT] (...)

The answer is an invocation of the session (``{"approve": {...}}`` / ``{"deny": {...}}``, docs/approvals.md): the
runtime records it and runs the session's next turn, whose events are printed as ``agentkit invoke`` prints them.
Approved, exactly the call that waited may run, once; denied, the agent is told the reason and goes on without it.
An approval already answered, expired or of another session is refused (exit 2, the runtime's error code).

IAM actions: ``bedrock-agentcore:InvokeAgentRuntime`` (the same permission that invokes the agent: whoever may
invoke it may answer its approvals), ``cloudformation:DescribeStacks`` (``--stack``).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from typing import Any

from agentkit.context import Context
from agentkit.errors import AgentkitError, ExitCode, usage_error
from agentkit.printer import EventPrinter
from agentkit.targets import add_target_options, resolve_target
from agentkit.transport import (
    InvocationRequest,
    invoke_agentcore,
    invoke_config,
    invoke_local,
    validate_session_id,
)

APPROVAL_ID_RE = re.compile(r"^apv-[0-9a-f]{20}$")
MAX_TEXT = 2000


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    for name, helptext in (
        ("approve", "approve a tool call that waits: exactly that call runs, once"),
        ("deny", "deny a tool call that waits: the agent is told why and goes on without it"),
    ):
        parser = subparsers.add_parser(
            name, parents=[common], help=helptext, description=helptext[0].upper() + helptext[1:] + "."
        )
        parser.add_argument("session_id", metavar="SESSION_ID")
        parser.add_argument(
            "approval_id", metavar="APPROVAL_ID", help="the apv-… id the waiting result showed"
        )
        parser.add_argument("--by", metavar="NAME", help="who answers, for the record (default: $USER)")
        if name == "approve":
            parser.add_argument("--note", metavar="TEXT", help="a note the agent is given with the approval")
        else:
            parser.add_argument("--reason", metavar="TEXT", help="why: the agent is told")
        add_target_options(parser, local=True)
        parser.add_argument(
            "--json", action="store_true", help="same as --output json: one JSON event per line"
        )
        parser.add_argument("--timeout", type=float, default=900.0, help="read timeout, seconds (900)")
        parser.set_defaults(handler=run, usage_parser=parser, approved=name == "approve")


def run(args: argparse.Namespace, ctx: Context) -> int:
    session_id = validate_session_id(args.session_id)
    if not APPROVAL_ID_RE.match(args.approval_id):
        raise usage_error(
            f"not an approval id: {args.approval_id!r} (apv- and 20 hex digits, as the waiting result showed)"
        )
    if args.local and (args.qualifier or ctx.aws.explicit_region or ctx.aws.profile):
        raise usage_error("--qualifier, --region and --profile apply to AWS targets, not --local")
    spec: dict[str, str] = {"id": args.approval_id}
    by = args.by or ctx.env.get("USER")
    if by:
        spec["by"] = by[:256]
    text = args.note if args.approved else args.reason
    if text is not None:
        if not text.strip() or len(text) > MAX_TEXT:
            raise usage_error(f"--{'note' if args.approved else 'reason'} must be 1-{MAX_TEXT} characters")
        spec["note" if args.approved else "reason"] = text
    request = InvocationRequest(
        prompt=None, session_id=session_id, answer={"approve" if args.approved else "deny": spec}
    )
    events: Iterator[dict[str, Any]]
    if args.local:
        events = invoke_local(args.local, request, timeout=args.timeout)
    else:
        target, _stack = resolve_target(args, ctx)
        client = ctx.aws.client(
            "bedrock-agentcore", region=target.region, config=invoke_config(read_timeout=args.timeout)
        )
        events = invoke_agentcore(
            client, request, runtime_arn=target.runtime_arn, qualifier=target.qualifier, sleep=ctx.sleep
        )
    ctx.progress(f"session: {session_id}")
    printer = EventPrinter(stdout=ctx.stdout, stderr=ctx.stderr, json_lines=ctx.json or args.json)
    try:
        for event in events:
            printer.handle(event)
    except AgentkitError:
        printer.end_line()
        raise
    except KeyboardInterrupt:
        printer.end_line()
        return int(ExitCode.INTERRUPTED)
    return int(printer.finish())
