"""cdk-nag (v3 validation-plugin API) wiring and every acknowledgement, each with its reason.

Acknowledgements are attached to the narrowest construct they concern, so a new resource elsewhere that trips
the same rule is still reported. ``synth`` fails on any unacknowledged AwsSolutions finding.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import aws_cdk as cdk
from aws_cdk import aws_bedrockagentcore as agentcore
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

from infra.config import inference_profile_parts
from infra.runtime import AgentRuntime

Ack = tuple[str, str]


def add_checks(app: cdk.App) -> None:
    """Register AwsSolutions checks as a validation plugin on ``app`` (runs at ``app.synth()``)."""
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))


def acknowledge(scope: IConstruct, acks: Iterable[Ack]) -> None:
    """Acknowledge ``(rule id, reason)`` pairs on ``scope`` and its children."""
    for rule_id, reason in acks:
        if len(reason) < 20:
            raise ValueError(f"acknowledgement {rule_id} needs a real reason, got {reason!r}")
        cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=rule_id, reason=reason))


def iam5(resource: str, reason: str) -> Ack:
    return (f"AwsSolutions::AwsSolutions-IAM5[Resource::{resource}]", reason)


def iam5_action(action: str, reason: str) -> Ack:
    return (f"AwsSolutions::AwsSolutions-IAM5[Action::{action}]", reason)


XRAY_STAR = "X-Ray PutTraceSegments/PutTelemetryRecords/GetSampling* support no resource-level permissions."
ECR_TOKEN_STAR = (
    "ecr:GetAuthorizationToken supports no resource-level permissions; pulls are scoped to one repo."
)
METRICS_STAR = (
    "cloudwatch:PutMetricData supports no resource-level permissions; the statement is conditioned on "
    "cloudwatch:namespace equal to the agent's namespace."
)
RUNTIME_LOGS = (
    "AgentCore names the runtime's log group /aws/bedrock-agentcore/runtimes/<runtime id>-<endpoint>; the id "
    "gets a random suffix at creation, so the ARN is scoped to this runtime's name prefix with a wildcard "
    "suffix."
)
MARKETPLACE_STAR = (
    "aws-marketplace:Subscribe/Unsubscribe/ViewSubscriptions have no resource types: Subscribe and Unsubscribe "
    "are conditioned on the configured models' product ids (aws-marketplace:ProductId); ViewSubscriptions only "
    "reads."
)
LIST_CALLS = (
    "bedrock:ListInferenceProfiles (the Claude Code CLI lists the system profiles at start) and "
    "logs:DescribeLogGroups are list calls with no resource types in the Service Authorization Reference: "
    "IAM matches them only on '*' (tests/infra/test_iam_sar.py)."
)
MODELS_THROUGH_PROFILES = (
    "A cross-Region inference profile routes to the model in Regions AWS chooses and may change: the model's "
    "ARN is allowed in every Region, only under bedrock:InferenceProfileArn equal to the configured profiles "
    "(AWS's pattern for cross-Region inference; infra/runtime.py model_invoke_statements)."
)
WORKLOAD_IDENTITY = (
    "The runtime's workload identity is created by AgentCore as <runtime name>-<suffix>; "
    "scoped to that prefix."
)
IMAGE_URI_TOKEN = (
    "Info only: the image URI holds the asset's repository and tag tokens, known at deploy time, so the L2 "
    "cannot check its format at synth."
)


FUNCTION_VERSIONS = (
    "The L2 gateway target grants lambda:InvokeFunction on the function and its versions/aliases (<arn>:*); "
    "that is one function of ours."
)
MEMORY_KEY = (
    "The L2 Memory grants its service role the KMS data-key/re-encrypt action families on our one key only."
)
CODEBUILD_DEFAULTS = (
    "CodeBuild's default log-group and report-group grants are scoped to this project's name; the suffix is "
    "created per build."
)
CODEBUILD_KMS = (
    "The build project produces no artifacts (it pushes to ECR, which encrypts at rest) and its logs hold no "
    "secrets; the AWS-managed S3/CodeBuild encryption is sufficient."
)


def _logical_id(stack: cdk.Stack, construct: IConstruct) -> str:
    """The logical id of ``construct``'s CloudFormation resource (its default child)."""
    return stack.get_logical_id(cast(cdk.CfnElement, construct.node.default_child))


def _as_nag_renders(value: str, pseudo: str) -> str:
    """cdk-nag prints unresolved pseudo parameters (env-agnostic stacks) as ``<AWS::Name>``."""
    return f"<AWS::{pseudo}>" if cdk.Token.is_unresolved(value) else value


def _default_resource(construct: IConstruct) -> cdk.CfnElement:
    """The CloudFormation resource behind an L2 construct."""
    child = construct.node.default_child
    if not isinstance(child, cdk.CfnElement):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource as its default child")
    return child


def acknowledge_gateway_tools(stack: cdk.Stack, gateway: IConstruct) -> None:
    """What every Lambda tool behind the gateway has in common, acknowledged per tool: any construct directly under
    the gateway with a ``Function`` and a ``Role`` child (the sample's ``InvoiceTools``, each agent directory target
    of :mod:`infra.agent_tools`, or a team's own construct built the same way). Anything else such a tool's role is
    granted is still reported."""
    for tool in gateway.node.children:
        function = tool.node.try_find_child("Function")
        role = tool.node.try_find_child("Role")
        if function is None or role is None:
            continue
        function_id = _logical_id(stack, function)
        acknowledge(
            gateway.node.find_child("ServiceRole"), [iam5(f"<{function_id}.Arn>:*", FUNCTION_VERSIONS)]
        )
        acknowledge(role, [iam5("*", XRAY_STAR)])


def acknowledge_stack(stack: cdk.Stack) -> None:
    """Attach every acknowledgement to its construct in ``stack`` (constructs looked up by path)."""
    region = _as_nag_renders(stack.region, "Region")
    account = _as_nag_renders(stack.account, "AccountId")
    # A stack with a known Region renders a literal partition (feature flag @aws-cdk/core:enablePartitionLiterals).
    partition = _as_nag_renders(stack.partition, "Partition")
    logs_prefix = f"arn:{partition}:logs:{region}:{account}:log-group"
    agent = stack.node.try_find_child("Agent")
    if agent is not None:
        name = cast(agentcore.Runtime, agent.node.find_child("Runtime")).agent_runtime_name
        runtime_logs = f"{logs_prefix}:/aws/bedrock-agentcore/runtimes/{name}-*"
        acknowledge(
            agent.node.find_child("Runtime"),
            [("Annotation::aws-cdk-lib.aws-bedrockagentcore:containerUriValidationSkipped", IMAGE_URI_TOKEN)],
        )
        acknowledge(
            agent.node.find_child("ExecutionRole"),
            [
                iam5("*", f"{XRAY_STAR} {ECR_TOKEN_STAR} {METRICS_STAR} {MARKETPLACE_STAR} {LIST_CALLS}"),
                iam5(runtime_logs, RUNTIME_LOGS),
                *(
                    iam5(f"arn:{partition}:bedrock:*::foundation-model/{model}", MODELS_THROUGH_PROFILES)
                    for model in dict.fromkeys(
                        inference_profile_parts(p)[1] for p in cast(AgentRuntime, agent).model_profiles
                    )
                ),
                iam5(f"{runtime_logs}:log-stream:*", RUNTIME_LOGS),
                iam5(
                    f"arn:{partition}:bedrock-agentcore:{region}:{account}:workload-identity-directory"
                    f"/default/workload-identity/{name}-*",
                    WORKLOAD_IDENTITY,
                ),
            ],
        )
    gateway = stack.node.try_find_child("Gateway")
    if gateway is not None:
        acknowledge_gateway_tools(stack, gateway)
    memory = stack.node.try_find_child("Memory")
    if memory is not None and memory.node.try_find_child("Key") is not None:
        acknowledge(
            memory.node.find_child("Memory").node.find_child("ServiceRole"),
            [iam5_action("kms:ReEncrypt*", MEMORY_KEY), iam5_action("kms:GenerateDataKey*", MEMORY_KEY)],
        )
    image = stack.node.try_find_child("Image")
    if image is not None and image.node.try_find_child("Project") is not None:
        project = image.node.find_child("Project")
        project_id = _logical_id(stack, project)
        acknowledge(
            project,
            [
                iam5(f"{logs_prefix}:/aws/codebuild/<{project_id}>:*", CODEBUILD_DEFAULTS),
                iam5(
                    f"arn:{partition}:codebuild:{region}:{account}:report-group/<{project_id}>-*",
                    CODEBUILD_DEFAULTS,
                ),
                iam5("*", ECR_TOKEN_STAR),
                ("AwsSolutions::AwsSolutions-CB4", CODEBUILD_KMS),
            ],
        )
