"""Target options shared by the commands that talk to one runtime, and their resolution.

``--runtime-arn ARN`` > ``--stack NAME`` > ``--local URL`` (where the command supports it) >
``$AGENTKIT_RUNTIME_ARN`` > ``$AGENTKIT_STACK``. With ``--stack`` the stage endpoint comes from the stack's
outputs (:func:`agentkit.stack.target_from_stack`); ``--qualifier`` wins over it.

IAM actions: ``cloudformation:DescribeStacks`` (``--stack``).
"""

from __future__ import annotations

import argparse

from agentkit.context import Context
from agentkit.env import ENV_RUNTIME_ARN, ENV_STACK
from agentkit.errors import usage_error
from agentkit.stack import StackInfo, Target, describe_stack, region_of_runtime_arn, target_from_stack


def add_target_options(parser: argparse.ArgumentParser, *, local: bool) -> None:
    """``--runtime-arn`` | ``--stack`` [| ``--local``], and ``--qualifier``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--runtime-arn", metavar="ARN", help=f"runtime ARN (${ENV_RUNTIME_ARN})")
    group.add_argument(
        "--stack",
        metavar="NAME",
        help=f"read the runtime ARN and stage endpoint from this stack (${ENV_STACK})",
    )
    if local:
        group.add_argument("--local", metavar="URL", help="a local runtime, e.g. http://127.0.0.1:8080")
    parser.add_argument(
        "--qualifier",
        metavar="Q",
        help="runtime endpoint name (AWS only; default: the stack's stage endpoint, else DEFAULT)",
    )


def stack_name(args: argparse.Namespace, ctx: Context) -> str | None:
    """``--stack``, else ``$AGENTKIT_STACK`` when no other target was given."""
    if getattr(args, "stack", None):
        return str(args.stack)
    if getattr(args, "runtime_arn", None) or getattr(args, "local", None) or ctx.env.get(ENV_RUNTIME_ARN):
        return None
    return ctx.env.get(ENV_STACK) or None


def resolve_target(args: argparse.Namespace, ctx: Context) -> tuple[Target, StackInfo | None]:
    """The AWS runtime to call and, when it came from a stack, the stack.

    Raises:
        AgentkitError: no target (2), a bad ARN (2), stack problems (2 or 4).
    """
    stack: StackInfo | None = None
    arn: str | None = getattr(args, "runtime_arn", None)
    qualifier: str | None = None
    name = None if arn else stack_name(args, ctx)
    if name:
        stack = describe_stack(ctx.aws.client("cloudformation"), stack_name=name)
        arn, qualifier = target_from_stack(stack)
    arn = arn or ctx.env.get(ENV_RUNTIME_ARN)
    if not arn:
        local = " | --local URL" if hasattr(args, "local") else ""
        raise usage_error(
            f"no target: pass --runtime-arn ARN | --stack NAME{local} (or set ${ENV_RUNTIME_ARN} or ${ENV_STACK})"
        )
    region = ctx.aws.explicit_region or region_of_runtime_arn(arn)
    return Target(
        runtime_arn=arn, qualifier=getattr(args, "qualifier", None) or qualifier, region=region
    ), stack
