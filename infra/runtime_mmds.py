"""``RequireMMDSv2``: after every create or update of the runtime, a custom resource sets
``metadataConfiguration.requireMMDSV2`` through ``UpdateAgentRuntime`` (CloudFormation has no property for it:
the handler's docstring, ``infra/functions/runtime_mmds/index.py``, says why and how).

IAM of the function: ``bedrock-agentcore:GetAgentRuntime`` and ``UpdateAgentRuntime`` on the runtime,
``UpdateAgentRuntimeEndpoint`` on its endpoints, ``iam:PassRole`` on the runtime's role only (to
bedrock-agentcore.amazonaws.com), its own log stream.

Code: the handler's folder plus the boto3/botocore its ``requirements.txt`` pins (``metadataConfiguration`` is
recent; the Lambda runtime's own boto3 may predate it), bundled at synth (``infra/functions/sdk_bundle.py``).
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct
from packaging.requirements import Requirement

from infra.functions import PYTHON_RUNTIME
from infra.functions.sdk_bundle import REQUIREMENTS_NAME, code_with_sdk, read_requirements

HANDLER_DIR = Path(__file__).resolve().parent / "functions" / "runtime_mmds"
#: The handler's pinned SDK (``boto3>=…``), read by the bundler; not shipped.
REQUIREMENTS = HANDLER_DIR / REQUIREMENTS_NAME
#: The one service the handler builds a client for; botocore's other models stay out of the asset.
SERVICES = ("bedrock-agentcore-control",)


def pinned() -> list[Requirement]:
    """The requirements of the handler's ``requirements.txt``."""
    return read_requirements(REQUIREMENTS)


class RequireMMDSv2(Construct):
    """Custom resource ``Custom::RuntimeRequireMMDSv2`` for ``runtime`` and its ``endpoint``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        runtime: agentcore.Runtime,
        endpoint: agentcore.RuntimeEndpoint,
        endpoint_name: str,
        runtime_role: iam.IRole,
        log_retention: logs.RetentionDays,
        removal_policy: cdk.RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        log_group = logs.LogGroup(self, "Logs", retention=log_retention, removal_policy=removal_policy)
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Sets requireMMDSV2 on the AgentCore runtime after CloudFormation creates or updates it",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["bedrock-agentcore:GetAgentRuntime", "bedrock-agentcore:UpdateAgentRuntime"],
                resources=[runtime.agent_runtime_arn],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["bedrock-agentcore:UpdateAgentRuntimeEndpoint"],
                resources=[runtime.agent_runtime_arn, endpoint.agent_runtime_endpoint_arn],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[runtime_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "bedrock-agentcore.amazonaws.com"}},
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn]
            )
        )
        function = lambda_.Function(
            self,
            "Function",
            description="Requires MMDSv2 on the AgentCore runtime (no CloudFormation property exists for it)",
            runtime=PYTHON_RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler="index.handler",
            code=code_with_sdk(
                HANDLER_DIR, services=SERVICES, needed_by="the MMDSv2 custom resource's Lambda"
            ),
            role=role,
            log_group=log_group,
            timeout=cdk.Duration.seconds(120),
        )
        self.resource = cdk.CustomResource(
            self,
            "Resource",
            service_token=function.function_arn,
            resource_type="Custom::RuntimeRequireMMDSv2",
            properties={
                "AgentRuntimeId": runtime.agent_runtime_id,
                "EndpointName": endpoint_name,
                # A new runtime version (every CloudFormation update of the runtime) is a property change: the
                # resource runs again and sets MMDSv2 on it.
                "RuntimeVersion": runtime.agent_runtime_version,
            },
        )
        self.resource.node.add_dependency(role)
        self.resource.node.add_dependency(endpoint)
