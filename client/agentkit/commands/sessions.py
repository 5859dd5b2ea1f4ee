"""``agentkit sessions stop``: the kill switch for one runtime session.

AWS: ``StopRuntimeSession`` ends the session's microVM (retried on throttling: it is idempotent).
Stopping a session that is not running (already stopped, expired, never started) exits 0 and says so, so a
pipeline's clean-up step can run it unconditionally. Local
(``--local URL``): the runtime's ``POST /stopruntimesession`` ends the running and queued turns and closes
the session's Claude process; the transcript stays in the store.

IAM actions: ``bedrock-agentcore:StopRuntimeSession``, ``cloudformation:DescribeStacks`` (``--stack``).
"""

from __future__ import annotations

import argparse
from typing import Any

from agentkit.context import Context
from agentkit.errors import ExitCode, usage_error
from agentkit.targets import add_target_options, resolve_target
from agentkit.transport import (
    SessionNotRunning,
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
    commands = sessions.add_subparsers(dest="session_command", metavar="{stop}")
    stop = commands.add_parser(
        "stop",
        parents=[common],
        help="stop a runtime session now (the kill switch)",
        description="Stop a runtime session now: its running turn ends and its microVM (or, locally, its "
        "Claude process) is released. The transcript is kept, so the session can be resumed.",
    )
    stop.add_argument("session_id", metavar="SESSION_ID")
    add_target_options(stop, local=True)
    stop.set_defaults(handler=run_stop, usage_parser=stop)


def _help(parser: argparse.ArgumentParser, ctx: Context) -> int:
    parser.print_help(ctx.stdout)
    return int(ExitCode.OK)


def run_stop(args: argparse.Namespace, ctx: Context) -> int:
    session_id = validate_session_id(args.session_id)
    try:
        if args.local:
            if args.qualifier or ctx.aws.explicit_region or ctx.aws.profile:
                raise usage_error("--qualifier, --region and --profile apply to AWS targets, not --local")
            where: dict[str, Any] = {"local": args.local}
            status = stop_local_session(args.local, session_id=session_id)
        else:
            target, _stack = resolve_target(args, ctx)
            where = {"runtime_arn": target.runtime_arn, "qualifier": target.qualifier}
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
            },
            f"session {session_id} was not running (already stopped, expired or never started){detail}",
        )
        return int(ExitCode.OK)
    ctx.emit(
        {"session_id": session_id, "stopped": True, "status": status, **where},
        f"stopped session {session_id} (HTTP {status})",
    )
    return int(ExitCode.OK)
