"""``agentkit``: invoke and operate an AgentCore Claude agent from a terminal or a pipeline.

Synopsis::

    agentkit [--version] [--region R] [--profile P] [--output text|json] COMMAND ...
    agentkit invoke [PROMPT|-] [--prompt-file F] [--session ID | --session-key KEY] [--final]
                    [--runtime-arn ARN | --stack NAME | --local URL] [--qualifier Q] [--no-stream]
                    [--workspace DIR [--apply] [--patch-file F]] ...
    agentkit sessions stop SESSION_ID (--runtime-arn ARN | --stack NAME | --local URL) [--qualifier Q]
    agentkit sessions pending [--memory-id ID | --stack NAME] [--session ID]
    agentkit approve SESSION_ID APPROVAL_ID [--by NAME] [--note TEXT] (--runtime-arn ARN | --stack NAME | --local URL)
    agentkit deny    SESSION_ID APPROVAL_ID [--by NAME] [--reason TEXT] (...)
    agentkit status  [--runtime-arn ARN | --stack NAME] [--qualifier Q]
    agentkit logs    [--runtime-arn ARN | --stack NAME] [--since 1h] [--session ID] [--level error]
    agentkit cost    [--days N] [--hourly] [--by model|session|actor] [--budget USD] [--local FILE]
    agentkit report  [--emf FILE --spans FILE | --stack NAME ...] [--out report.html]
    agentkit doctor  [--stage dev] [--cdk-json cdk.json] [--ignore CHECK]

``--region``, ``--profile`` and ``--output`` go before or after the command, as with the AWS CLI.

Exit codes: 0 success · 1 agent error (error result, runtime unreachable, bad reply) · 2 usage error (bad
arguments, empty prompt, request rejected as invalid) · 3 budget exceeded · 4 AWS/transport error
(no region, credentials, access denied, throttled after retries, stack not found, read timeout or
connection lost after the request was sent) · 5 the turn waits for a person's approval · 130 interrupted. No traceback reaches the user
(``AGENTKIT_DEBUG=1`` prints one for an unexpected error).

Commands: each module of :data:`COMMANDS` has ``register(subparsers, common)``, which adds its sub-parser with
the global options as a parent and sets ``handler(args, ctx) -> int`` and ``usage_parser``.

Env vars: see :mod:`agentkit.env`. IAM actions: see each command's module.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from agentkit import __version__
from agentkit.aws import Aws, ClientFactory, boto3_client_factory
from agentkit.commands import approvals, cost, doctor, invoke, logs, report, sessions, status
from agentkit.context import OUTPUT_FORMATS, Context
from agentkit.env import ENV_DEBUG
from agentkit.errors import AgentkitError, ExitCode, aws_error

#: The commands, in help order.
COMMANDS = (invoke, approvals, sessions, status, logs, cost, report, doctor)


def _common_options() -> argparse.ArgumentParser:
    """``--region``/``--profile``/``--output``, accepted before and after the command. Defaults are
    suppressed so a sub-command's parser never overwrites a value given before the command."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("global options")
    group.add_argument(
        "--region",
        default=argparse.SUPPRESS,
        help="AWS region (else AWS_REGION, AWS_DEFAULT_REGION, the profile)",
    )
    group.add_argument("--profile", default=argparse.SUPPRESS, help="AWS profile (else AWS_PROFILE)")
    group.add_argument(
        "--output", choices=OUTPUT_FORMATS, default=argparse.SUPPRESS, help="output format (text)"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    """The ``agentkit`` argument parser, extensions included."""
    common = _common_options()
    parser = argparse.ArgumentParser(
        prog="agentkit",
        description="Invoke and operate an AgentCore Claude agent: a deployed one (AWS) or a local runtime.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"agentkit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(subparsers, common)
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    client_factory: ClientFactory = boto3_client_factory,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    env: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run ``agentkit`` and return its exit code (see the module docstring).

    Args:
        argv: arguments without the program name (default ``sys.argv[1:]``).
        client_factory: builds boto3 clients (the only place they are made).
        sleep: used between throttling retries.
        now: the clock (``cost``, ``logs``, ``status``, ``report``).
        env: the environment (default ``os.environ``).
        stdout, stderr, stdin: streams (default the process's, looked up at call time).
    """
    out, err = stdout or sys.stdout, stderr or sys.stderr
    parser = build_parser()
    try:  # argparse prints help/version to stdout and errors to stderr: the streams given here
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args, extra = parser.parse_known_args(argv)
            if extra:  # reported by the sub-command's parser, with its usage line
                (getattr(args, "usage_parser", None) or parser).error(
                    f"unrecognized arguments: {' '.join(extra)}"
                )
    except SystemExit as exc:  # argparse printed usage and the message (or help / version)
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help(out)
        return int(ExitCode.OK)
    environ = os.environ if env is None else env
    ctx = Context(
        stdout=out,
        stderr=err,
        stdin=stdin or sys.stdin,
        aws=Aws(
            region=getattr(args, "region", None),
            profile=getattr(args, "profile", None),
            factory=client_factory,
            env=environ,
        ),
        output=getattr(args, "output", "text"),
        env=environ,
        sleep=sleep,
        now=now,
    )
    usage_parser: argparse.ArgumentParser = getattr(args, "usage_parser", None) or parser
    try:
        return int(args.handler(args, ctx))
    except AgentkitError as exc:
        if exc.exit_code == ExitCode.USAGE and exc.code == "":
            usage_parser.print_usage(err)
            print(f"{usage_parser.prog}: error: {exc.message}", file=err)
        else:
            print(f"agentkit: error: {exc.message}", file=err)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("agentkit: interrupted", file=err)
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # `agentkit logs | head`: the reader left; not an error of ours
        _silence_stdout()
        return int(ExitCode.OK)
    except Exception as exc:
        from botocore.exceptions import BotoCoreError, ClientError

        if isinstance(exc, BotoCoreError | ClientError):
            error = aws_error(exc, action=str(args.command))
            print(f"agentkit: error: {error.message}", file=err)
            return int(error.exit_code)
        if environ.get(ENV_DEBUG) == "1":
            traceback.print_exc(file=err)
        print(
            f"agentkit: internal error: {type(exc).__name__}: {exc} "
            f"(set {ENV_DEBUG}=1 for the traceback, and please report it)",
            file=err,
        )
        return int(ExitCode.AGENT_ERROR)


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
