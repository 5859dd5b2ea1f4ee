"""AgentCore Runtime running our container, with a least-privilege execution role.

The L2 ``Runtime`` always adds broad default statements (logs on every runtime's log group, metrics in the
``bedrock-agentcore`` namespace, workload identity on ``*``...). We hand it
``role.without_policy_updates()`` so those are dropped and write each statement ourselves, scoped to this
runtime.

IAM actions granted to the execution role (resource in brackets):
    bedrock:InvokeModel, bedrock:InvokeModelWithResponseStream  [configured inference profiles; the foundation
        models behind them in any Region, only under bedrock:InferenceProfileArn = those profiles]
    bedrock:GetInferenceProfile [configured profiles]; bedrock:ListInferenceProfiles [* — no resource types]
    aws-marketplace:Subscribe [* with condition aws-marketplace:ProductId in the configured models' products]
    aws-marketplace:ViewSubscriptions [* only]  (first use of a Claude model: see infra/model_access.py)
    logs:CreateLogGroup, logs:DescribeLogStreams, logs:CreateLogStream, logs:PutLogEvents
        [/aws/bedrock-agentcore/runtimes/<runtime_name>-*]
    logs:DescribeLogGroups [* — no resource types in the Service Authorization Reference]
    xray:PutTraceSegments, xray:PutTelemetryRecords, xray:GetSamplingRules, xray:GetSamplingTargets  [* only]
    cloudwatch:PutMetricData  [* with condition cloudwatch:namespace = our namespace]
    bedrock-agentcore:GetWorkloadAccessToken (+ ForJWT under JWT inbound auth)  [workload identity named after
        this runtime]. Never ForUserId: with it the runtime could mint a token for any user id it chose.
    ecr:BatchGetImage, ecr:GetDownloadUrlForLayer, ecr:BatchCheckLayerAvailability [the image repository]
    ecr:GetAuthorizationToken [* only]
Memory and gateway statements are added by their constructs (``grant_runtime`` / ``grant_invoke``).

The runtime and its endpoint carry a resource policy denying the command APIs (``infra.command_access``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import aws_cdk as cdk
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import lifecycle
from infra.command_access import CommandShellLock
from infra.config import AppConfig, AuthConfig, NetworkConfig, inference_profile_parts
from infra.image_build import ImageSource
from infra.model_access import model_access_statements
from infra.runtime_mmds import RequireMMDSv2
from infra.trust import agentcore_principal

MODEL_ACTIONS = ("bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream")


def model_invoke_statements(profile_ids: Sequence[str], *, stack: cdk.Stack) -> list[iam.PolicyStatement]:
    """Invoke the configured inference profiles, and their foundation models only through those profiles.

    AWS's pattern for cross-Region inference ("Securing Amazon Bedrock cross-Region inference: Geographic and
    global", AWS Machine Learning blog; the ``bedrock:InferenceProfileArn`` condition key is listed for
    ``InvokeModel`` in the Service Authorization Reference): one statement on the profile ARNs, one on the
    foundation model's ARN in every Region (``bedrock:*::foundation-model/<id>``, plus the Region-less ARN a
    ``global.`` profile routes to) that holds only when the request came through one of those profiles. Which
    Regions a profile routes to is AWS's to change; no copy of it is kept here (``agentkit doctor`` compares
    GetInferenceProfile's answer with these ARNs).
    """
    profiles: list[str] = []
    models: list[str] = []
    for profile_id in profile_ids:
        geo, model_id = inference_profile_parts(profile_id)
        profiles.append(
            f"arn:{stack.partition}:bedrock:{stack.region}:{stack.account}:inference-profile/{profile_id}"
        )
        models.append(f"arn:{stack.partition}:bedrock:*::foundation-model/{model_id}")
        if geo == "global":
            models.append(f"arn:{stack.partition}:bedrock:::foundation-model/{model_id}")
    profiles = list(dict.fromkeys(profiles))
    return [
        iam.PolicyStatement(sid="InvokeConfiguredProfiles", actions=list(MODEL_ACTIONS), resources=profiles),
        iam.PolicyStatement(
            sid="InvokeModelsThroughConfiguredProfiles",
            actions=list(MODEL_ACTIONS),
            resources=list(dict.fromkeys(models)),
            conditions={"StringEquals": {"bedrock:InferenceProfileArn": profiles}},
        ),
    ]


class AgentRuntime(Construct):
    """The AgentCore Runtime, its per-stage endpoint, log groups and execution role.

    Args:
        config: the validated app config. Read here: ``runtime_name``; ``models`` (the inference profiles the
            role may invoke) and ``marketplace_product_ids`` (foundation model id → AWS Marketplace product id,
            for models newer than ``infra.model_access.MARKETPLACE_PRODUCT_IDS``); ``metrics_namespace`` (the
            only namespace ``cloudwatch:PutMetricData`` is allowed in); ``auth`` (IAM or JWT inbound auth) and
            ``actor_header`` (allow-listed through to the container under IAM auth); ``network`` (a VPC when
            ``mode`` is ``vpc``, else the public network); ``stage`` (the endpoint's name); the stage's
            ``idle_timeout_minutes`` / ``max_lifetime_hours`` (session lifecycle), ``log_retention_days`` and
            ``removal_policy`` (the APPLICATION_LOGS / USAGE_LOGS groups); ``platform_version`` (always rendered
            as the Runtime's ``PlatformVersion``) and ``session_storage_mount`` (AgentCore session storage, or
            None).
        image: the container image (see ``infra.image_build``); pull is granted on its repository only, and
            the runtime waits for ``image.ready`` when the image is built during the deploy.
        environment: container environment variables (``AGENTKIT_*``; never ``AGENTKIT_BEDROCK_ENDPOINT``).

    Raises:
        ValueError: ``environment`` sets ``AGENTKIT_BEDROCK_ENDPOINT``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AppConfig,
        image: ImageSource,
        environment: Mapping[str, str],
    ) -> None:
        super().__init__(scope, construct_id)
        if "AGENTKIT_BEDROCK_ENDPOINT" in environment:
            raise ValueError("AGENTKIT_BEDROCK_ENDPOINT is a local test stand-in and must not be deployed")
        stack = cdk.Stack.of(self)
        runtime_name, settings = config.runtime_name, config.settings
        self.model_profiles = config.models
        self.role = iam.Role(
            self,
            "ExecutionRole",
            description=f"AgentCore runtime {runtime_name} (least privilege)",
            assumed_by=agentcore_principal(self, resource="runtime", name=runtime_name),
            max_session_duration=cdk.Duration.hours(8),
        )
        self._add_role_statements(
            stack=stack,
            runtime_name=runtime_name,
            model_profiles=config.models,
            metrics_namespace=config.metrics_namespace,
            jwt_auth=config.auth.mode == "jwt",
        )
        access, without_product = model_access_statements(
            config.models, stack=stack, extra_product_ids=config.marketplace_product_ids
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
        image.repository.grant_pull(self.role)

        retention, removal = lifecycle.log_retention(settings), lifecycle.removal_policy(settings)
        self.application_logs = logs.LogGroup(
            self, "ApplicationLogs", retention=retention, removal_policy=removal
        )
        self.usage_logs = logs.LogGroup(self, "UsageLogs", retention=retention, removal_policy=removal)
        # IAM inbound auth: only our own principals invoke, so their actor header is let through. JWT auth: the
        # Authorization header must reach the container (the actor is the token's sub).
        request_headers = [config.actor_header] if config.auth.mode == "iam" else ["Authorization"]
        self.runtime = agentcore.Runtime(
            self,
            "Runtime",
            runtime_name=runtime_name,
            description="Claude Agent SDK agent (agentcore-claude-kit)",
            agent_runtime_artifact=image.artifact,
            execution_role=self.role.without_policy_updates(),
            environment_variables=dict(environment),
            authorizer_configuration=self._authorizer(config.auth),
            network_configuration=self._network(config.network),
            protocol_configuration=agentcore.ProtocolType.HTTP,
            # Always rendered: left unset, CloudFormation gets the service's default, which differs by Region and
            # date (docs/platform.md).
            platform_version=agentcore.PlatformVersion.of(config.platform_version.upper()),
            lifecycle_configuration=agentcore.LifecycleConfiguration(
                idle_runtime_session_timeout=cdk.Duration.minutes(settings.idle_timeout_minutes),
                max_lifetime=cdk.Duration.hours(settings.max_lifetime_hours),
            ),
            request_header_configuration=agentcore.RequestHeaderConfiguration(
                allowlisted_headers=request_headers
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
        if config.session_storage_mount:
            # The L2 Runtime (aws-cdk-lib 2.275) has no property for AgentCore session storage (Preview), so
            # FilesystemConfigurations is set on the underlying CfnRuntime (an escape hatch).
            cfn_runtime = self.runtime.node.default_child
            assert isinstance(cfn_runtime, agentcore.CfnRuntime)
            cfn_runtime.add_property_override(
                "FilesystemConfigurations", [{"SessionStorage": {"MountPath": config.session_storage_mount}}]
            )
        # The runtime must not be created before its role can pull the image and write logs.
        self.runtime.node.add_dependency(self.role)
        # The endpoint is named after the stage: every caller invokes it (--qualifier <stage>).
        self.endpoint = self.runtime.add_endpoint(config.stage, description=f"{config.stage} endpoint")
        if image.ready is not None:  # an image built during the deploy (image_build codebuild)
            self.runtime.node.add_dependency(image.ready)
        self.require_mmdsv2 = RequireMMDSv2(
            self,
            "RequireMMDSv2",
            runtime=self.runtime,
            endpoint=self.endpoint,
            endpoint_name=config.stage,
            runtime_role=self.role,
            log_retention=retention,
            removal_policy=removal,
        )
        self.command_lock = CommandShellLock(
            self,
            "CommandShellLock",
            runtime_arn=self.runtime.agent_runtime_arn,
            endpoint_arn=self.endpoint.agent_runtime_endpoint_arn,
            break_glass_principal=config.command_access.break_glass_principal,
        )

    def _network(self, network: NetworkConfig) -> agentcore.RuntimeNetworkConfiguration:
        """The given VPC and subnets (imported by id, so synth needs no lookup), else the public network."""
        if network.mode != "vpc" or network.vpc_id is None:
            return agentcore.RuntimeNetworkConfiguration.using_public_network()
        vpc = ec2.Vpc.from_vpc_attributes(
            self, "Vpc", vpc_id=network.vpc_id, availability_zones=list(network.availability_zones)
        )
        subnets = [
            ec2.Subnet.from_subnet_attributes(self, f"Subnet{i}", subnet_id=sid, availability_zone=az)
            for i, (sid, az) in enumerate(zip(network.subnet_ids, network.availability_zones, strict=True))
        ]
        return agentcore.RuntimeNetworkConfiguration.using_vpc(
            self, vpc=vpc, vpc_subnets=ec2.SubnetSelection(subnets=subnets)
        )

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
        self,
        *,
        stack: cdk.Stack,
        runtime_name: str,
        model_profiles: Sequence[str],
        metrics_namespace: str,
        jwt_auth: bool,
    ) -> None:
        log_group_arn = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"/aws/bedrock-agentcore/runtimes/{runtime_name}-*",
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        statements = [
            *model_invoke_statements(model_profiles, stack=stack),
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
                # The runtime exchanges a caller's JWT only under JWT inbound auth; it never names a user id
                # itself (ForUserId would let it mint a token for any user).
                actions=[
                    "bedrock-agentcore:GetWorkloadAccessToken",
                    *(["bedrock-agentcore:GetWorkloadAccessTokenForJWT"] if jwt_auth else []),
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
