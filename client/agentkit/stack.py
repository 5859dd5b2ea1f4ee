"""Where a deployed agent is: runtime ARN, stage endpoint and resources, from a CloudFormation stack.

The kit's stack exports ``RuntimeArn``, ``RuntimeEndpointArn`` (the stage endpoint) and ``InvokeCommand``
(a ready-to-paste ``agentkit invoke … --qualifier <stage>``) among its outputs (``infra/stack.py``). A call
through ``--stack`` uses the stage endpoint, as ``InvokeCommand`` does, never the ``DEFAULT`` one.

ARN formats (botocore model ``bedrock-agentcore-control``, shape ``AgentRuntimeEndpointArn``):
``arn:aws:bedrock-agentcore:<region>:<account>:runtime/<id>`` and ``…:runtime/<id>/runtime-endpoint/<name>``.

IAM actions: ``cloudformation:DescribeStacks``, ``cloudformation:ListStackResources`` (alarms, log groups).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agentkit.errors import AgentkitError, ExitCode, aws_error, usage_error

RUNTIME_ARN_RE = re.compile(
    r"arn:aws[a-z-]*:bedrock-agentcore:([a-z0-9-]+):(\d{12}):runtime/([A-Za-z0-9_-]+)"
)
ENDPOINT_ARN_RE = re.compile(
    r"(arn:aws[a-z-]*:bedrock-agentcore:[a-z0-9-]+:\d{12}:runtime/[A-Za-z0-9_-]+)/runtime-endpoint/([A-Za-z0-9_]+)"
)
_QUALIFIER_IN_COMMAND_RE = re.compile(r"--qualifier\s+([A-Za-z][A-Za-z0-9_]*)")
DEFAULT_ENDPOINT = "DEFAULT"


@dataclass(frozen=True)
class Target:
    """A deployed runtime to call: its ARN, the endpoint (``None`` = AgentCore's ``DEFAULT``), the region."""

    runtime_arn: str
    qualifier: str | None
    region: str

    @property
    def runtime_id(self) -> str:
        return runtime_id_of(self.runtime_arn)

    @property
    def endpoint(self) -> str:
        return self.qualifier or DEFAULT_ENDPOINT


@dataclass(frozen=True)
class StackInfo:
    """The parts of ``DescribeStacks`` the client uses."""

    name: str
    status: str
    outputs: dict[str, str] = field(default_factory=dict)
    export_names: dict[str, str] = field(default_factory=dict)  # output key → export name


def parse_runtime_arn(arn: str) -> tuple[str, str, str]:
    """``(region, account, runtime id)`` of a runtime ARN; a usage error if ``arn`` is not one."""
    match = RUNTIME_ARN_RE.fullmatch(arn)
    if not match:
        raise usage_error(
            f"not an AgentCore runtime ARN: {arn!r} (expected arn:aws:bedrock-agentcore:<region>:<account>:runtime/<id>)"
        )
    return match.group(1), match.group(2), match.group(3)


def region_of_runtime_arn(arn: str) -> str:
    """The region inside a runtime ARN (usage error if it is not one)."""
    return parse_runtime_arn(arn)[0]


def runtime_id_of(arn: str) -> str:
    """The runtime id inside a runtime ARN (usage error if it is not one)."""
    return parse_runtime_arn(arn)[2]


def runtime_log_group(runtime_id: str, endpoint: str | None) -> str:
    """The log group AgentCore writes a runtime endpoint's stdout/stderr to.

    Source: aws-cdk-lib ``IBedrockAgentRuntime.applicationLogGroup`` ("located at
    ``/aws/bedrock-agentcore/runtimes/{agentRuntimeId}-DEFAULT``" for the default endpoint), and the
    execution role's log-group resource ``/aws/bedrock-agentcore/runtimes/<name>-*`` in ``infra/runtime.py``.
    """
    return f"/aws/bedrock-agentcore/runtimes/{runtime_id}-{endpoint or DEFAULT_ENDPOINT}"


def describe_stack(cloudformation: Any, *, stack_name: str) -> StackInfo:
    """Read a stack's status and outputs.

    Raises:
        AgentkitError: stack missing (4, with the likely fix) or unreadable (4).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        if "does not exist" in str(exc.response.get("Error", {}).get("Message", "")):
            raise AgentkitError(
                f"stack {stack_name!r} not found (check the name, --region and the account)",
                exit_code=ExitCode.AWS_ERROR,
                code="StackNotFound",
            ) from exc
        raise aws_error(exc, action="DescribeStacks", iam_action="cloudformation:DescribeStacks") from exc
    except BotoCoreError as exc:
        raise aws_error(exc, action="DescribeStacks") from exc
    if not stacks:
        raise AgentkitError(
            f"stack {stack_name!r} not found", exit_code=ExitCode.AWS_ERROR, code="StackNotFound"
        )
    stack = stacks[0]
    outputs = {str(o.get("OutputKey", "")): str(o.get("OutputValue", "")) for o in stack.get("Outputs", [])}
    exports = {
        str(o.get("OutputKey", "")): str(o["ExportName"])
        for o in stack.get("Outputs", [])
        if o.get("ExportName")
    }
    return StackInfo(
        name=stack_name, status=str(stack.get("StackStatus", "?")), outputs=outputs, export_names=exports
    )


def target_from_stack(stack: StackInfo) -> tuple[str, str | None]:
    """The runtime ARN and the stage endpoint name among a stack's outputs.

    The ARN: the output keyed exactly ``RuntimeArn``, else the one output whose key or export name contains
    ``RuntimeArn`` and whose value is a runtime ARN. The endpoint: the name inside ``RuntimeEndpointArn``
    (when it belongs to that runtime), else the ``--qualifier`` of ``InvokeCommand``, else ``None``.

    Raises:
        AgentkitError: no or several candidate ARNs (2).
    """
    candidates = {
        key: value
        for key, value in stack.outputs.items()
        if ("runtimearn" in key.lower() or "runtimearn" in stack.export_names.get(key, "").lower())
        and RUNTIME_ARN_RE.fullmatch(value)
    }
    chosen = {"RuntimeArn": candidates["RuntimeArn"]} if "RuntimeArn" in candidates else candidates
    if len(chosen) != 1:
        keys = ", ".join(stack.outputs) or "none"
        what = "no output" if not chosen else "several outputs"
        raise usage_error(
            f"stack {stack.name!r} has {what} with a runtime ARN under a key containing 'RuntimeArn' "
            f"(outputs: {keys}); pass --runtime-arn instead"
        )
    arn = next(iter(chosen.values()))
    return arn, _stage_endpoint(stack, arn)


def _stage_endpoint(stack: StackInfo, runtime_arn: str) -> str | None:
    for key, value in stack.outputs.items():
        match = ENDPOINT_ARN_RE.fullmatch(value)
        if "endpoint" in key.lower() and match and match.group(1) == runtime_arn:
            return match.group(2)
    command = stack.outputs.get("InvokeCommand", "")
    match = _QUALIFIER_IN_COMMAND_RE.search(command)
    return match.group(1) if match else None


def stack_resources(cloudformation: Any, *, stack_name: str, resource_type: str) -> list[str]:
    """Physical ids of a stack's resources of one type (paged ``ListStackResources``).

    Raises:
        AgentkitError: the call failed (4).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    ids: list[str] = []
    kwargs: dict[str, Any] = {"StackName": stack_name}
    try:
        for page in cloudformation.get_paginator("list_stack_resources").paginate(**kwargs):
            ids += [
                str(r["PhysicalResourceId"])
                for r in page.get("StackResourceSummaries", [])
                if r.get("ResourceType") == resource_type and r.get("PhysicalResourceId")
            ]
        return ids
    except (ClientError, BotoCoreError) as exc:
        raise aws_error(
            exc, action="ListStackResources", iam_action="cloudformation:ListStackResources"
        ) from exc
