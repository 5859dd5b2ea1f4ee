"""``agentkit doctor --probe-sandbox`` (operator-only): does the OS sandbox work inside AgentCore?

Runs the runtime's own probe (``python -m runtime.guard.probe``, one JSON line) inside a live session's microVM
through ``InvokeAgentRuntimeCommand``, as the image's user (uid 10001: the command API runs commands as root, so
the command drops to that user with ``setpriv`` first; the image's Python is ``/usr/local/bin/python`` and the
runtime lives in ``/app``), and reports whether user namespaces are available, the exact error, and what the
runtime will do (sandboxed commands, or command tools off).

The kit's stack denies the command APIs to every principal but ``command_access.break_glass_principal`` (a
resource policy on the runtime and its endpoint): run this with that role's credentials. The reply is an event
stream (botocore ``bedrock-agentcore`` model, ``InvokeAgentRuntimeCommandStreamOutput``): ``chunk`` events with
``contentStart``, ``contentDelta`` (``stdout`` / ``stderr``) and ``contentStop`` (``exitCode``, ``status``).

IAM actions: ``bedrock-agentcore:InvokeAgentRuntimeCommand`` on the runtime and its endpoint (and the break-glass
exception in the runtime's resource policy); ``cloudformation:DescribeStacks`` with ``--stack``.
"""

from __future__ import annotations

import argparse
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from agentkit.context import Context
from agentkit.errors import AgentkitError, ExitCode
from agentkit.targets import add_target_options, resolve_target

PROBE_UID = 10001
PROBE_MODULE = "runtime.guard.probe"
DEFAULT_TIMEOUT_S = 120


def probe_command(
    *, app_dir: str = "/app", python: str = "/usr/local/bin/python", uid: int = PROBE_UID
) -> str:
    """The shell command sent to the microVM: the probe as ``uid`` (dropping from root), from ``app_dir``."""
    run = f"{python} -m {PROBE_MODULE}"
    return (
        f'cd {app_dir} && if [ "$(id -u)" = 0 ]; then '
        f"exec setpriv --reuid={uid} --regid={uid} --clear-groups {run}; else exec {run}; fi"
    )


@dataclass
class ProbeResult:
    """What came back: the stream's output, how the command ended, and the parsed verdict (None if none)."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    status: str | None = None
    verdict: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)


def read_stream(events: Any) -> ProbeResult:
    """Collect an ``InvokeAgentRuntimeCommand`` event stream (botocore raises ``EventStreamError`` on an error
    event while iterating)."""
    result = ProbeResult()
    stdout, stderr = [], []
    for event in events:
        chunk = event.get("chunk") or {}
        delta = chunk.get("contentDelta")
        if delta:
            stdout.append(delta.get("stdout") or "")
            stderr.append(delta.get("stderr") or "")
        stop = chunk.get("contentStop")
        if stop:
            result.exit_code, result.status = stop.get("exitCode"), stop.get("status")
    result.stdout, result.stderr = "".join(stdout), "".join(stderr)
    for line in reversed(result.stdout.splitlines()):
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict) and parsed.get("probe") == "sandbox":
            result.verdict = parsed
            break
    if result.verdict is None:
        result.problems.append("the probe printed no verdict (is this the kit's image?)")
    if result.status not in (None, "COMPLETED") or result.exit_code not in (0, None):
        result.problems.append(f"the command ended {result.status} with exit code {result.exit_code}")
    return result


def run_probe(
    client: Any,
    *,
    runtime_arn: str,
    qualifier: str | None,
    session_id: str,
    timeout_s: int = DEFAULT_TIMEOUT_S,
) -> ProbeResult:
    """Run the probe in ``session_id`` and read its stream.

    Raises:
        AgentkitError: the installed boto3 predates ``InvokeAgentRuntimeCommand`` (exit 2, says to upgrade).
        botocore ClientError: e.g. ``AccessDeniedException`` (not the break-glass role), ``ResourceNotFoundException``.
    """
    kwargs: dict[str, Any] = {
        "agentRuntimeArn": runtime_arn,
        "runtimeSessionId": session_id,
        "contentType": "application/json",
        "accept": "application/vnd.amazon.eventstream",
        "body": {"command": probe_command(), "timeout": timeout_s},
    }
    if qualifier:
        kwargs["qualifier"] = qualifier
    if not hasattr(client, "invoke_agent_runtime_command"):
        # Newer than the client's boto3 floor: only this operator-only command needs it, so the floor stays.
        raise AgentkitError(
            "--probe-sandbox needs a boto3 that knows InvokeAgentRuntimeCommand: pip install -U boto3",
            exit_code=ExitCode.USAGE,
        )
    response = client.invoke_agent_runtime_command(**kwargs)
    return read_stream(response["stream"])


def describe(result: ProbeResult) -> str:
    """The human report: one line per fact."""
    v = result.verdict or {}
    lines = []
    if v:
        userns = {True: "available", False: "NOT available", None: "unknown (no unshare)"}[
            v.get("user_namespaces")
        ]
        lines += [
            f"ran as uid {v.get('uid')}",
            f"user namespaces: {userns}" + (f" ({v['userns_error']})" if v.get("userns_error") else ""),
            f"sandbox (bubblewrap): {'works' if v.get('sandbox_available') else 'does NOT work'}"
            + (f": {v['error']}" if v.get("error") else ""),
            f"AGENTKIT_SANDBOX={v.get('sandbox_setting')}: the runtime runs {v.get('runtime_will')}",
        ]
    lines += [f"problem: {p}" for p in result.problems]
    if result.stderr.strip():
        lines.append("stderr: " + result.stderr.strip()[-500:])
    return "\n".join(lines)


def add_probe_arguments(parser: argparse.ArgumentParser) -> None:
    """``--probe-sandbox`` and what it needs (the runtime target, a session)."""
    parser.add_argument(
        "--probe-sandbox",
        action="store_true",
        help="operator-only: run the runtime's sandbox probe inside a live AgentCore session "
        "(needs the break-glass role; see docs/platform-security.md)",
    )
    add_target_options(parser, local=False)
    parser.add_argument(
        "--session-id",
        metavar="ID",
        help="runtime session to run in (default: a new id; if AgentCore wants a live session, pass one that "
        "`agentkit invoke` started)",
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    """``agentkit doctor --probe-sandbox``: exit 0 when the sandbox works, 1 when it does not, 4 on AWS errors."""
    from botocore.exceptions import BotoCoreError, ClientError

    target, _stack = resolve_target(args, ctx)
    session_id = args.session_id or f"agentkit-probe-{uuid.uuid4()}"
    client = ctx.aws.client("bedrock-agentcore", region=target.region)
    try:
        result = run_probe(
            client, runtime_arn=target.runtime_arn, qualifier=target.qualifier, session_id=session_id
        )
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        hint = (
            " — the runtime's resource policy denies the command APIs to all but "
            "command_access.break_glass_principal: use that role's credentials"
            if code == "AccessDeniedException"
            else ""
        )
        raise AgentkitError(
            f"InvokeAgentRuntimeCommand: {exc}{hint}", exit_code=ExitCode.AWS_ERROR, code=code
        ) from exc
    except BotoCoreError as exc:
        raise AgentkitError(f"InvokeAgentRuntimeCommand: {exc}", exit_code=ExitCode.AWS_ERROR) from exc
    data = {
        "session_id": session_id,
        "runtime_arn": target.runtime_arn,
        "qualifier": target.qualifier,
        "verdict": result.verdict,
        "exit_code": result.exit_code,
        "status": result.status,
        "problems": result.problems,
    }
    ctx.emit(data, lambda: describe(result))
    works = bool(result.verdict and result.verdict.get("sandbox_available")) and not result.problems
    return int(ExitCode.OK) if works else 1
