"""AgentCore Runtime running our container, with a least-privilege execution role.

The L2 ``Runtime`` always adds broad default statements (logs on every runtime's log group, metrics in the
``bedrock-agentcore`` namespace, workload identity on ``*``...). We hand it
``role.without_policy_updates()`` so those are dropped and write each statement ourselves, scoped to this
runtime.

IAM actions granted to the execution role (resource in brackets):
    bedrock:InvokeModel, bedrock:InvokeModelWithResponseStream  [configured inference profiles + the
        foundation models behind them in the profile's Regions]
    bedrock:GetInferenceProfile [configured profiles]; bedrock:ListInferenceProfiles [* — no resource types]
    aws-marketplace:Subscribe [* with condition aws-marketplace:ProductId in the configured models' products]
    aws-marketplace:ViewSubscriptions [* only]  (first use of a Claude model: see infra/model_access.py)
    logs:CreateLogGroup, logs:DescribeLogStreams, logs:CreateLogStream, logs:PutLogEvents
        [/aws/bedrock-agentcore/runtimes/<runtime_name>-*]
    logs:DescribeLogGroups [* — no resource types in the Service Authorization Reference]
    xray:PutTraceSegments, xray:PutTelemetryRecords, xray:GetSamplingRules, xray:GetSamplingTargets  [* only]
    cloudwatch:PutMetricData  [* with condition cloudwatch:namespace = our namespace]
    bedrock-agentcore:GetWorkloadAccessToken*  [workload identity named after this runtime]
    ecr:BatchGetImage, ecr:GetDownloadUrlForLayer, ecr:BatchCheckLayerAvailability [the image repository]
    ecr:GetAuthorizationToken [* only]
Memory and gateway statements are added by their constructs (``grant_runtime`` / ``grant_invoke``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import aws_cdk as cdk
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import PROFILE_REGIONS, AuthConfig, inference_profile_parts
from infra.model_access import model_access_statements

MODEL_ACTIONS = ("bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream")


def model_invoke_resources(profile_ids: Sequence[str], *, stack: cdk.Stack) -> list[str]:
    """ARNs the runtime may invoke: each inference profile and the foundation models it routes to.

    A ``us.`` profile routes to us-east-1, us-east-2 and us-west-2, so the model ARN is listed in each of
    those Regions. A ``global.`` profile may route anywhere; AWS documents the Region-less
    foundation-model ARN
    (``arn:aws:bedrock:::foundation-model/<id>``) for it, plus the source Region's.
    """
    resources: list[str] = []
    for profile_id in profile_ids:
        geo, model_id = inference_profile_parts(profile_id)
        resources.append(
            f"arn:{stack.partition}:bedrock:{stack.region}:{stack.account}:inference-profile/{profile_id}"
        )
        regions = PROFILE_REGIONS[geo]
        if geo == "global":
            resources.append(f"arn:{stack.partition}:bedrock:::foundation-model/{model_id}")
            regions = (stack.region,)
        resources.extend(
            f"arn:{stack.partition}:bedrock:{region}::foundation-model/{model_id}" for region in regions
        )
    return list(dict.fromkeys(resources))


class AgentRuntime(Construct):
    """The AgentCore Runtime, its per-stage endpoint, log groups and execution role.

    Args:
        runtime_name: ``^[a-zA-Z][a-zA-Z0-9_]{0,47}$``.
        artifact: container image (see ``infra.image_build``).
        image_repository: the ECR repository holding the image (pull is granted on it only).
        environment: container environment variables (``AGENTKIT_*``; never ``AGENTKIT_BEDROCK_ENDPOINT``).
        model_profiles: inference profile ids the agent may call.
        metrics_namespace: the only namespace ``cloudwatch:PutMetricData`` is allowed in.
        auth: IAM (default) or JWT inbound auth.
        vpc / vpc_subnets: run in a VPC when given, else the public network.
        idle_timeout / max_lifetime: runtime session lifecycle.
        log_retention: retention of the APPLICATION_LOGS / USAGE_LOGS groups.
        endpoint_name: name of the ``RuntimeEndpoint`` (the stage).
        request_headers: custom headers allow-listed through to the container (e.g. the actor header).
        marketplace_product_ids: extra foundation model id → AWS Marketplace product id entries (models newer
            than ``infra.model_access.MARKETPLACE_PRODUCT_IDS``).
        platform_version: ``v1`` | ``v2``, always rendered as the Runtime's ``PlatformVersion`` (``V1``/``V2``):
            left unset, CloudFormation gets the service's default, which differs by Region and date.
        session_storage_mount: mount path of AgentCore session storage (Preview), or None for none. The L2
            ``Runtime`` (aws-cdk-lib 2.275) has no property for it, so ``FilesystemConfigurations`` is set on the
            underlying ``CfnRuntime`` (an escape hatch).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        runtime_name: str,
        artifact: agentcore.AgentRuntimeArtifact,
        image_repository: ecr.IRepository,
        environment: Mapping[str, str],
        model_profiles: Sequence[str],
        metrics_namespace: str,
        auth: AuthConfig,
        idle_timeout: cdk.Duration,
        max_lifetime: cdk.Duration,
        log_retention: logs.RetentionDays,
        removal_policy: cdk.RemovalPolicy,
        endpoint_name: str,
        request_headers: Sequence[str] = (),
        marketplace_product_ids: Mapping[str, str] | None = None,
        platform_version: str = "v2",
        session_storage_mount: str | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        if platform_version not in ("v1", "v2"):
            raise ValueError(f"platform_version must be 'v1' or 'v2', not {platform_version!r}")
        if "AGENTKIT_BEDROCK_ENDPOINT" in environment:
            raise ValueError("AGENTKIT_BEDROCK_ENDPOINT is a local test stand-in and must not be deployed")
        stack = cdk.Stack.of(self)
        self.role = iam.Role(
            self,
            "ExecutionRole",
            description=f"AgentCore runtime {runtime_name} (least privilege)",
            assumed_by=iam.ServicePrincipal(
                "bedrock-agentcore.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="bedrock-agentcore", resource="runtime", resource_name=f"{runtime_name}*"
                        )
                    },
                },
            ),
            max_session_duration=cdk.Duration.hours(8),
        )
        self._add_role_statements(
            stack=stack,
            runtime_name=runtime_name,
            model_profiles=model_profiles,
            metrics_namespace=metrics_namespace,
        )
        access, without_product = model_access_statements(
            model_profiles, stack=stack, extra_product_ids=marketplace_product_ids
        )
        for statement in access:
            self.role.add_to_policy(statement)
        if without_product:
            cdk.Annotations.of(self).add_warning_v2(
                "agentkit:marketplaceProductId",
                f"No AWS Marketplace product id known for {', '.join(without_product)}: the runtime may not "
                "subscribe to it on first use. Add it to agentkit.marketplace_product_ids (the model card lists "
                "it), or subscribe once by hand; `agentkit doctor` shows the subscription state.",
            )
        image_repository.grant_pull(self.role)

        self.application_logs = logs.LogGroup(
            self, "ApplicationLogs", retention=log_retention, removal_policy=removal_policy
        )
        self.usage_logs = logs.LogGroup(
            self, "UsageLogs", retention=log_retention, removal_policy=removal_policy
        )
        network = (
            agentcore.RuntimeNetworkConfiguration.using_vpc(self, vpc=vpc, vpc_subnets=vpc_subnets)
            if vpc is not None
            else agentcore.RuntimeNetworkConfiguration.using_public_network()
        )
        self.runtime = agentcore.Runtime(
            self,
            "Runtime",
            runtime_name=runtime_name,
            description="Claude Agent SDK agent (agentcore-claude-kit)",
            agent_runtime_artifact=artifact,
            execution_role=self.role.without_policy_updates(),
            environment_variables=dict(environment),
            authorizer_configuration=self._authorizer(auth),
            network_configuration=network,
            protocol_configuration=agentcore.ProtocolType.HTTP,
            platform_version=agentcore.PlatformVersion.of(platform_version.upper()),
            lifecycle_configuration=agentcore.LifecycleConfiguration(
                idle_runtime_session_timeout=idle_timeout, max_lifetime=max_lifetime
            ),
            request_header_configuration=(
                agentcore.RequestHeaderConfiguration(allowlisted_headers=list(request_headers))
                if request_headers
                else None
            ),
            tracing_enabled=True,
            logging_configs=[
                agentcore.LoggingConfig(
                    log_type=agentcore.LogType.APPLICATION_LOGS,
                    destination=agentcore.LoggingDestination.cloud_watch_logs(self.application_logs),
                ),
                agentcore.LoggingConfig(
                    log_type=agentcore.LogType.USAGE_LOGS,
                    destination=agentcore.LoggingDestination.cloud_watch_logs(self.usage_logs),
                ),
            ],
        )
        if session_storage_mount:
            cfn_runtime = self.runtime.node.default_child
            assert isinstance(cfn_runtime, agentcore.CfnRuntime)
            cfn_runtime.add_property_override(
                "FilesystemConfigurations", [{"SessionStorage": {"MountPath": session_storage_mount}}]
            )
        # The runtime must not be created before its role can pull the image and write logs.
        self.runtime.node.add_dependency(self.role)
        self.endpoint = self.runtime.add_endpoint(endpoint_name, description=f"{endpoint_name} endpoint")

    @staticmethod
    def _authorizer(auth: AuthConfig) -> agentcore.RuntimeAuthorizerConfiguration:
        if auth.mode == "jwt" and auth.jwt is not None:
            return agentcore.RuntimeAuthorizerConfiguration.using_jwt(
                auth.jwt.discovery_url,
                list(auth.jwt.allowed_clients) or None,
                list(auth.jwt.allowed_audience) or None,
            )
        return agentcore.RuntimeAuthorizerConfiguration.using_iam()

    def _add_role_statements(
        self, *, stack: cdk.Stack, runtime_name: str, model_profiles: Sequence[str], metrics_namespace: str
    ) -> None:
        log_group_arn = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"/aws/bedrock-agentcore/runtimes/{runtime_name}-*",
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        statements = [
            iam.PolicyStatement(
                sid="InvokeConfiguredModels",
                actions=list(MODEL_ACTIONS),
                resources=model_invoke_resources(model_profiles, stack=stack),
            ),
            iam.PolicyStatement(
                sid="RuntimeLogGroup",
                actions=["logs:CreateLogGroup", "logs:DescribeLogStreams"],
                resources=[log_group_arn],
            ),
            iam.PolicyStatement(
                sid="RuntimeLogStreams",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[f"{log_group_arn}:log-stream:*"],
            ),
            # No resource types in the Service Authorization Reference: IAM matches it only on "*".
            iam.PolicyStatement(sid="DescribeLogGroups", actions=["logs:DescribeLogGroups"], resources=["*"]),
            iam.PolicyStatement(
                sid="XRayWrite",
                actions=[
                    "xray:PutTraceSegments",
                    "xray:PutTelemetryRecords",
                    "xray:GetSamplingRules",
                    "xray:GetSamplingTargets",
                ],
                resources=["*"],
            ),
            iam.PolicyStatement(
                sid="AgentMetrics",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": metrics_namespace}},
            ),
            iam.PolicyStatement(
                sid="WorkloadAccessToken",
                actions=[
                    "bedrock-agentcore:GetWorkloadAccessToken",
                    "bedrock-agentcore:GetWorkloadAccessTokenForJWT",
                    "bedrock-agentcore:GetWorkloadAccessTokenForUserId",
                ],
                resources=[
                    stack.format_arn(
                        service="bedrock-agentcore",
                        resource="workload-identity-directory",
                        resource_name="default",
                    ),
                    stack.format_arn(
                        service="bedrock-agentcore",
                        resource="workload-identity-directory",
                        resource_name=f"default/workload-identity/{runtime_name}-*",
                    ),
                ],
            ),
        ]
        for statement in statements:
            self.role.add_to_policy(statement)

    @property
    def runtime_arn(self) -> str:
        return self.runtime.agent_runtime_arn

    @property
    def endpoint_arn(self) -> str:
        return self.endpoint.agent_runtime_endpoint_arn
