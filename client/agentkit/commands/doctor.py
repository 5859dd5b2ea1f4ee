"""``agentkit doctor``: check an AWS account before the first ``cdk deploy`` (the checks: :mod:`agentkit.doctor`).

Registered like every other command, with the global ``--region``/``--profile``/``--output`` options; AWS
clients come from the command's :class:`~agentkit.aws.Aws`. ``python -m agentkit.doctor`` (``make preflight``)
runs the same checks standalone, with a boto3 session of its own.

IAM actions: those listed in :mod:`agentkit.doctor`, all read-only. ``--probe-sandbox`` (operator-only) is a
different job, in :mod:`agentkit.sandbox_probe`: it runs a command inside a live session of a deployed runtime.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ProfileNotFound

from agentkit.aws import Aws, make_session
from agentkit.context import Context
from agentkit.doctor import CheckResult, DoctorConfigError, load_doctor_config, run_checks
from agentkit.doctor.core import FIXES
from agentkit.errors import AgentkitError

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
    parser.add_argument(
        "--region",
        help="Region to check (else agentkit.region, AWS_REGION, AWS_DEFAULT_REGION, the profile's)",
    )
    parser.add_argument("--profile", help="AWS named profile")
    parser.add_argument("--output", choices=("text", "json"), default="text", help="output format (text)")


def report(results: Sequence[CheckResult], *, as_json: bool) -> str:
    """The report: one line per check and a verdict, or (``as_json``) one JSON document with the same."""
    failed = [r.name for r in results if r.status == "fail"]
    skipped = [r.name for r in results if r.status == "skip"]
    if as_json:
        document = {
            "ready": not failed,
            "blocking": failed,
            "skipped": skipped,
            "checks": [r.as_dict() for r in results],
        }
        return json.dumps(document, indent=2, ensure_ascii=False)
    lines = [r.line() for r in results]
    if skipped:
        reasons = sorted({r.detail.removeprefix("not run: ") for r in results if r.status == "skip"})
        lines.append(f"{len(skipped)} check(s) skipped ({'; '.join(reasons)}): {', '.join(skipped)}")
    lines.append(
        f"{len(failed)} check(s) block the deploy: {', '.join(failed)}" if failed else "ready to deploy"
    )
    return "\n".join(lines)


def execute(
    args: argparse.Namespace,
    *,
    session_factory: Callable[..., Any] | None = None,
    out: Any = None,
    err: Any = None,
    output: str = "text",
    env: Mapping[str, str] | None = None,
    **check_options: Any,
) -> int:
    """Run the checks and print the report (``output`` ``text`` or ``json``).

    ``session_factory`` builds the session the checks use (default ``boto3.Session``, imported only here:
    registering ``doctor`` must not load boto3 into every ``agentkit`` start). ``env`` is read for
    ``AWS_REGION``/``AWS_DEFAULT_REGION`` (default ``os.environ``); ``check_options`` go to
    :func:`~agentkit.doctor.run_checks` (the docker runner, the clock).
    """
    out, err = out or sys.stdout, err or sys.stderr
    try:
        config = load_doctor_config(args.cdk_json, args.stage, ignore=args.ignore)
    except DoctorConfigError as exc:
        print(f"agentkit doctor: {exc}", file=err)
        return 2
    profile = getattr(args, "profile", None)
    if session_factory is None:
        import boto3

        session_factory = boto3.Session
    try:
        session = session_factory(profile_name=profile) if profile else session_factory()
    except ProfileNotFound as exc:
        print(f"agentkit doctor: {exc} -> {FIXES['profile']}", file=err)
        return 2
    results = run_checks(
        session, config, env=env, explicit_region=getattr(args, "region", None), **check_options
    )
    print(report(results, as_json=output == "json"), file=out)
    return 1 if any(r.status == "fail" for r in results) else 0


class _ContextSession:
    """What the checks need of a boto3 session (``region_name``, ``client``), over the command's
    :class:`~agentkit.aws.Aws`: ``agentkit doctor`` then uses the profile and the client factory the CLI was
    given. ``region_name`` is the profile's own Region, the last in the doctor's order."""

    def __init__(self, aws: Aws) -> None:
        self._aws = aws
        try:
            self.region_name: str | None = make_session(region=None, profile=aws.profile).region_name
        except BotoCoreError:
            self.region_name = None

    def client(self, service: str, region_name: str | None = None) -> Any:
        try:
            return self._aws.client(service, region=region_name)
        except AgentkitError as exc:  # let the checks read the botocore failure (its kind picks the fix)
            if isinstance(exc.__cause__, BotoCoreError):
                raise exc.__cause__ from None
            raise


def run(args: argparse.Namespace, ctx: Context) -> int:
    """``agentkit doctor``: the checks with the command's AWS access, printed to the command's streams in the
    command's output format. ``--probe-sandbox`` is the operator-only probe (:mod:`agentkit.sandbox_probe`)."""
    if getattr(args, "probe_sandbox", False):
        from agentkit import sandbox_probe

        return sandbox_probe.run(args, ctx)
    return execute(
        args,
        session_factory=lambda **_: _ContextSession(ctx.aws),
        out=ctx.stdout,
        err=ctx.stderr,
        output=ctx.output,
        env=ctx.env,
    )


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
    args = parser.parse_args(argv)
    return execute(args, output=args.output)
