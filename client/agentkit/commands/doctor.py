"""``agentkit doctor``: check an AWS account before the first ``cdk deploy`` (the checks: :mod:`agentkit.doctor`).

Registered like every other command, with the global ``--region``/``--profile``/``--output`` options; AWS
clients come from the command's :class:`~agentkit.aws.Aws`. ``python -m agentkit.doctor`` (``make preflight``)
runs the same checks standalone, with a boto3 session of its own.

IAM actions: those listed in :mod:`agentkit.doctor`, all read-only. ``--probe-sandbox`` (operator-only) is a
different job, in :mod:`agentkit.sandbox_probe`: it runs a command inside a live session of a deployed runtime.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentkit.aws import Aws
from agentkit.context import Context
from agentkit.doctor import DoctorConfig, DoctorConfigError, load_doctor_config, run_checks

DESCRIPTION = "Check an AWS account before the first cdk deploy, one line per check."


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``doctor`` itself (``--region``/``--profile`` come from the ``agentkit`` global options,
    or from :func:`main` when run standalone)."""
    parser.add_argument("--stage", default="dev", help="stage in cdk.json (default dev)")
    parser.add_argument(
        "--cdk-json", type=Path, default=Path("cdk.json"), help="path to cdk.json (default ./cdk.json)"
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CHECK",
        help="report this check's failure as a warning",
    )


def _add_aws_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--region", help="Region to check (default agentkit.region, then the AWS profile's)")
    parser.add_argument("--profile", help="AWS named profile")


def execute(
    args: argparse.Namespace,
    *,
    session_factory: Callable[..., Any] | None = None,
    out: Any = None,
    err: Any = None,
) -> int:
    """``session_factory`` builds the session the checks use (default ``boto3.Session``, imported only here:
    registering ``doctor`` must not load boto3 into every ``agentkit`` start)."""
    out = out or sys.stdout
    try:
        config = load_doctor_config(args.cdk_json, args.stage, ignore=args.ignore)
    except DoctorConfigError as exc:
        print(f"agentkit doctor: {exc}", file=err or sys.stderr)
        return 2
    region, profile = getattr(args, "region", None), getattr(args, "profile", None)
    if region:
        config = DoctorConfig(**{**config.__dict__, "region": region})
    if session_factory is None:
        import boto3

        session_factory = boto3.Session
    session = session_factory(profile_name=profile) if profile else session_factory()
    results = run_checks(session, config)
    for result in results:
        print(result.line(), file=out)
    failed = [r.name for r in results if r.status == "fail"]
    print(
        f"{len(failed)} check(s) block the deploy: {', '.join(failed)}" if failed else "ready to deploy",
        file=out,
    )
    return 1 if failed else 0


class _ContextSession:
    """What the checks need of a boto3 session (``region_name``, ``client``), over the command's
    :class:`~agentkit.aws.Aws`: ``agentkit doctor`` then resolves region and profile like every other command
    and uses the client factory the CLI was given."""

    def __init__(self, aws: Aws) -> None:
        self._aws = aws
        self.region_name = aws.region

    def client(self, service: str, region_name: str | None = None) -> Any:
        return self._aws.client(service, region=region_name)


def run(args: argparse.Namespace, ctx: Context) -> int:
    """``agentkit doctor``: the checks with the command's AWS access, printed to the command's streams."""
    if getattr(args, "probe_sandbox", False):
        from agentkit import sandbox_probe

        return sandbox_probe.run(args, ctx)
    return execute(args, session_factory=lambda **_: _ContextSession(ctx.aws), out=ctx.stdout, err=ctx.stderr)


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``doctor`` to the ``agentkit`` command, with the global options like every other command."""
    parser = subparsers.add_parser(
        "doctor",
        parents=[common],
        help="check an AWS account before cdk deploy",
        description=DESCRIPTION,
    )
    _add_arguments(parser)
    from agentkit.sandbox_probe import add_probe_arguments

    add_probe_arguments(parser)
    parser.set_defaults(handler=run, usage_parser=parser)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentkit.doctor``: the same checks without the rest of the client."""
    parser = argparse.ArgumentParser(prog="agentkit doctor", description=DESCRIPTION)
    _add_arguments(parser)
    _add_aws_options(parser)
    return execute(parser.parse_args(argv))
