"""``agentkit sessions stop``: the kill switch for one runtime session. ``agentkit sessions pending``: the tool calls
waiting for a person's approval, across the deployment's sessions (docs/approvals.md).

Pending approvals are read from the deployment's AgentCore Memory (``--memory-id``, or the ``MemoryId`` output of
``--stack`` / ``$AGENTKIT_STACK``): the runtime lists each request there while it waits (actorId
``agentkit-approvals``, sessionId ``pending``; no session is woken to list them). Expired ones are left out. Answer
one with ``agentkit approve|deny SESSION_ID APPROVAL_ID``.

``--withdraw APPROVAL_ID`` (repeatable) first takes the session's waiting approvals back (``{"withdraw": …}``, an
invocation that starts no turn; docs/approvals.md), so nobody can approve the call after the stop; an approval that
expired or was withdrawn before counts as done, any other refusal is reported (exit 2) after the session is stopped:
a refused withdraw never keeps the kill switch from working.

AWS: ``StopRuntimeSession`` ends the session's microVM (retried on throttling: it is idempotent).
Stopping a session that is not running (already stopped, expired, never started) exits 0 and says so, so a
pipeline's clean-up step can run it unconditionally. Local
(``--local URL``): the runtime's ``POST /stopruntimesession`` ends the running and queued turns and closes
the session's Claude process; the transcript stays in the store.

IAM actions: ``bedrock-agentcore:StopRuntimeSession``, ``bedrock-agentcore:InvokeAgentRuntime`` (``--withdraw``),
``bedrock-agentcore:ListEvents`` (``pending``),
``cloudformation:DescribeStacks`` (``--stack``).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from agentkit.context import Context
from agentkit.errors import AgentkitError, ExitCode, aws_error, usage_error
from agentkit.printer import approval_card
from agentkit.stack import describe_stack, region_of_runtime_arn
from agentkit.targets import add_target_options, resolve_target, stack_name
from agentkit.transport import (
    InvocationRequest,
    SessionNotRunning,
    invoke_agentcore,
    invoke_config,
    invoke_local,
    retry_config,
    stop_local_session,
    stop_session,
    validate_session_id,
)


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    sessions = subparsers.add_parser(
        "sessions", parents=[common], help="manage runtime sessions", description="Manage runtime sessions."
    )
    sessions.set_defaults(usage_parser=sessions, handler=lambda args, ctx: _help(sessions, ctx))
    commands = sessions.add_subparsers(dest="session_command", metavar="{stop,pending}")
    stop = commands.add_parser(
        "stop",
        parents=[common],
        help="stop a runtime session now (the kill switch)",
        description="Stop a runtime session now: its running turn ends and its microVM (or, locally, its "
        "Claude process) is released. The transcript is kept, so the session can be resumed.",
    )
    stop.add_argument("session_id", metavar="SESSION_ID")
    stop.add_argument(
        "--withdraw",
        metavar="APPROVAL_ID",
        action="append",
        default=[],
        help="first withdraw this waiting approval of the session, so nobody can approve it after the stop "
        "(repeatable; `sessions pending --session ID` lists them)",
    )
    stop.add_argument("--by", metavar="NAME", help="who withdraws, for the record (default: $USER)")
    add_target_options(stop, local=True)
    stop.set_defaults(handler=run_stop, usage_parser=stop)
    pending = commands.add_parser(
        "pending",
        parents=[common],
        help="list the tool calls waiting for a person's approval",
        description="List the tool calls waiting for a person's approval, in every session of the deployment "
        "(read from its AgentCore Memory), oldest first.",
    )
    where = pending.add_mutually_exclusive_group()
    where.add_argument("--memory-id", metavar="ID", help="the deployment's AgentCore Memory id")
    where.add_argument("--stack", metavar="NAME", help="read the Memory id from this stack's MemoryId output")
    pending.add_argument("--session", metavar="ID", help="only this runtime session's requests")
    pending.set_defaults(handler=run_pending, usage_parser=pending)


def _help(parser: argparse.ArgumentParser, ctx: Context) -> int:
    parser.print_help(ctx.stdout)
    return int(ExitCode.OK)


#: Approval ids (runtime.protocol.APPROVAL_ID_RE).
APPROVAL_ID_RE = re.compile(r"^apv-[0-9a-f]{20}$")
#: A withdraw refused with these leaves nothing to answer either: expired, or withdrawn before (AgentCore relays
#: only the status, 410, for both).
GONE_CODES = frozenset({"approval_expired", "approval_withdrawn", "http_410"})


def run_stop(args: argparse.Namespace, ctx: Context) -> int:
    session_id = validate_session_id(args.session_id)
    bad = [a for a in args.withdraw if not APPROVAL_ID_RE.match(a)]
    if bad:
        raise usage_error(
            f"not an approval id: {bad[0]!r} (apv- and 20 hex digits, as the waiting result showed)"
        )
    withdrawn: list[dict[str, Any]] = []
    refused: AgentkitError | None = None
    try:
        if args.local:
            if args.qualifier or ctx.aws.explicit_region or ctx.aws.profile:
                raise usage_error("--qualifier, --region and --profile apply to AWS targets, not --local")
            where: dict[str, Any] = {"local": args.local}
            send = lambda request: invoke_local(args.local, request, timeout=60.0)  # noqa: E731
            refused = _withdraw(args, ctx, session_id, send, withdrawn)
            status = stop_local_session(args.local, session_id=session_id)
        else:
            target, _stack = resolve_target(args, ctx)
            where = {"runtime_arn": target.runtime_arn, "qualifier": target.qualifier}
            if args.withdraw:
                invoker = ctx.aws.client(
                    "bedrock-agentcore", region=target.region, config=invoke_config(read_timeout=60.0)
                )
                send = lambda request: invoke_agentcore(  # noqa: E731
                    invoker,
                    request,
                    runtime_arn=target.runtime_arn,
                    qualifier=target.qualifier,
                    sleep=ctx.sleep,
                )
                refused = _withdraw(args, ctx, session_id, send, withdrawn)
            client = ctx.aws.client("bedrock-agentcore", region=target.region, config=retry_config())
            status = stop_session(
                client, runtime_arn=target.runtime_arn, session_id=session_id, qualifier=target.qualifier
            )
    except SessionNotRunning as not_running:
        # Idempotent, so a pipeline's clean-up step can always run it: the session is in the state asked for.
        detail = f": {not_running.detail}" if not_running.detail else ""
        ctx.emit(
            {
                "session_id": session_id,
                "stopped": False,
                "already_stopped": True,
                "detail": not_running.detail,
                **where,
                **({"withdrawn": withdrawn} if args.withdraw else {}),
            },
            f"session {session_id} was not running (already stopped, expired or never started){detail}",
        )
        return _refused(refused, ctx)
    ctx.emit(
        {
            "session_id": session_id,
            "stopped": True,
            "status": status,
            **where,
            **({"withdrawn": withdrawn} if args.withdraw else {}),
        },
        f"stopped session {session_id} (HTTP {status})",
    )
    return _refused(refused, ctx)


def _withdraw(
    args: argparse.Namespace,
    ctx: Context,
    session_id: str,
    send: Any,
    withdrawn: list[dict[str, Any]],
) -> AgentkitError | None:
    """Withdraw each ``--withdraw`` id on the session (``send``: an invocation transport); what each became goes
    to ``withdrawn``. Returns the first refusal that leaves a request answerable (None: none did)."""
    spec: dict[str, str] = {"reason": "the session was stopped with agentkit sessions stop"}
    by = args.by or ctx.env.get("USER")
    if by:
        spec["by"] = by[:256]
    first: AgentkitError | None = None
    for approval_id in dict.fromkeys(args.withdraw):
        request = InvocationRequest(
            prompt=None, session_id=session_id, stream=False, answer={"withdraw": {"id": approval_id, **spec}}
        )
        try:
            [reply] = list(send(request))
            withdrawn.append({"id": approval_id, "status": str(reply.get("approval", {}).get("status"))})
            ctx.progress(f"withdrew approval {approval_id}")
        except AgentkitError as exc:
            if exc.code in GONE_CODES:  # nothing can answer it: the state asked for
                withdrawn.append({"id": approval_id, "status": "gone", "code": exc.code})
                ctx.progress(f"approval {approval_id} was not waiting any more ({exc.code})")
                continue
            withdrawn.append({"id": approval_id, "status": "refused", "code": exc.code})
            first = first or exc
    return first


def _refused(refused: AgentkitError | None, ctx: Context) -> int:
    """The session is stopped either way; a withdraw the runtime refused is reported after it (exit 2 or its own)."""
    if refused is None:
        return int(ExitCode.OK)
    raise AgentkitError(
        f"the session was stopped, but an approval was not withdrawn: {refused}",
        exit_code=refused.exit_code,
        code=refused.code or "withdraw_refused",
    )


#: Where the runtime lists pending approvals (runtime.approvals.index).
INDEX_ACTOR_ID = "agentkit-approvals"
INDEX_SESSION_ID = "pending"


def run_pending(args: argparse.Namespace, ctx: Context) -> int:
    memory_id, region = args.memory_id, ctx.aws.explicit_region
    if not memory_id:
        name = stack_name(args, ctx)
        if not name:
            raise usage_error("pass --memory-id ID or --stack NAME (or set $AGENTKIT_STACK)")
        stack = describe_stack(ctx.aws.client("cloudformation"), stack_name=name)
        memory_id = stack.outputs.get("MemoryId")
        if not memory_id:
            raise usage_error(f"stack {name} has no MemoryId output")
        arn = stack.outputs.get("RuntimeArn")
        region = region or (region_of_runtime_arn(arn) if arn else None)
    client = ctx.aws.client("bedrock-agentcore", region=region, config=retry_config())
    now = ctx.now().timestamp()
    cards = [c for c in _listed(client, memory_id) if float(c.get("expires_at") or 0) > now]
    if args.session:
        cards = [c for c in cards if c.get("session_id") == args.session]
    cards.sort(key=lambda c: float(c.get("created_at") or 0))

    def text() -> str:
        if not cards:
            return "no tool calls are waiting for approval"
        return "\n".join(approval_card(c, str(c.get("session_id") or "")) for c in cards)

    ctx.emit({"pending": cards, "memory_id": memory_id}, text)
    return int(ExitCode.OK)


def _listed(client: Any, memory_id: str) -> list[dict[str, Any]]:
    """Every card in the index (deduplicated by approval id), following ``nextToken``."""
    from botocore.exceptions import BotoCoreError, ClientError

    cards: dict[str, dict[str, Any]] = {}
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {
            "memoryId": memory_id,
            "actorId": INDEX_ACTOR_ID,
            "sessionId": INDEX_SESSION_ID,
            "includePayloads": True,
        }
        if token:
            kwargs["nextToken"] = token
        try:
            page = client.list_events(**kwargs)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return list(cards.values())  # nothing was ever listed
            raise aws_error(exc, action="ListEvents", iam_action="bedrock-agentcore:ListEvents") from exc
        except BotoCoreError as exc:
            raise aws_error(exc, action="ListEvents", iam_action="bedrock-agentcore:ListEvents") from exc
        for event in page.get("events", []):
            for item in event.get("payload") or []:
                blob = item.get("blob")
                if isinstance(blob, dict) and blob.get("k") == "approval" and isinstance(blob.get("d"), dict):
                    cards[str(blob["d"].get("id"))] = blob["d"]
        token = page.get("nextToken")
        if not token:
            return list(cards.values())
