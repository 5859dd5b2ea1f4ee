"""The one stack: composes image, memory, runtime, gateway, observability (+ optional webhook / CI access).

Runtime container environment (names from :mod:`runtime.env`; see DESIGN.md §4): ``AGENTKIT_SESSION_STORE=agentcore://<memory id>``,
``AGENTKIT_METRICS`` (``cloudwatch`` by default), ``AGENTKIT_METRICS_NAMESPACE``, ``AGENTKIT_MODEL``, ``AGENTKIT_AGENT_NAME``,
``AGENTKIT_MEMORY_ID``, ``AGENTKIT_RECALL_NAMESPACES`` (comma-separated, ``{actorId}`` placeholders),
``AGENTKIT_GATEWAY_URL``, ``AGENTKIT_ACTOR_HEADER``, ``AWS_REGION``.
``AGENTKIT_BEDROCK_ENDPOINT`` is never set.

Optional constructs (modules owned by the webhook / CI issue) are composed behind config flags:
``webhook.enabled`` -> ``infra.webhook.GitHubIssueWebhook``; ``github_oidc.enabled`` (+ ``repository``) ->
``infra.ci_access.GitHubOidcInvoker``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import nag
from infra.config import AppConfig
from infra.gateway import AgentGateway
from infra.image_build import image_source
from infra.memory import RECALL_NAMESPACES, AgentMemory
from infra.observability import AgentObservability
from infra.runtime import AgentRuntime
from runtime.env import (
    ENV_ACTOR_HEADER,
    ENV_AGENT_NAME,
    ENV_AGENT_PROFILE,
    ENV_AWS_REGION,
    ENV_GATEWAY_URL,
    ENV_MEMORY_ID,
    ENV_METRICS,
    ENV_METRICS_NAMESPACE,
    ENV_MODEL,
    ENV_RECALL_NAMESPACES,
    ENV_SANDBOX,
    ENV_SESSION_STORE,
    ENV_SMALL_MODEL,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def runtime_environment(
    config: AppConfig, *, memory_id: str, gateway_url: str | None, region: str
) -> dict[str, str]:
    """The container's environment variables for ``config`` (no local-only settings)."""
    env = {
        ENV_SESSION_STORE: f"agentcore://{memory_id}",
        ENV_MEMORY_ID: memory_id,
        ENV_RECALL_NAMESPACES: ",".join(RECALL_NAMESPACES),
        ENV_METRICS: config.metrics_sink,
        ENV_METRICS_NAMESPACE: config.metrics_namespace,
        ENV_MODEL: config.model,
        ENV_AGENT_NAME: config.agent_name,
        ENV_AGENT_PROFILE: config.agent_profile,
        ENV_SANDBOX: config.sandbox,
        ENV_AWS_REGION: region,
    }
    if config.auth.mode == "iam":
        # With IAM inbound auth only our own principals can invoke, so their actor header is trusted. With JWT
        # auth the actor is the token's sub; a header any token holder can set must not name it.
        env[ENV_ACTOR_HEADER] = config.actor_header
    # The CLI's small/fast slot must be a profile the role may invoke: the first extra model, else the main one.
    small = [m for m in config.extra_models if m != config.model]
    env[ENV_SMALL_MODEL] = small[0] if small else config.model
    if gateway_url:
        env[ENV_GATEWAY_URL] = gateway_url
    return env


def webhook_trackers(config: AppConfig) -> tuple[str, ...]:
    """Issue trackers the webhook serves (``webhook.trackers``, default github); none without the webhook."""
    return config.webhook.trackers if config.webhook.enabled else ()


class AgentKitStack(cdk.Stack):
    """Everything one stage of the agent needs. Takes the validated :class:`AppConfig`; reads no context."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AppConfig,
        image_directory: Path = PROJECT_ROOT,
        **kwargs: Any,
    ) -> None:
        # Stack tags are set on the stack itself (feature flag @aws-cdk/core:explicitStackTags): CloudFormation
        # then propagates them to every resource it creates, including ones CDK's tagging cannot reach.
        tags = {"project": config.project_name, "stage": config.stage, **(kwargs.pop("tags", None) or {})}
        super().__init__(scope, construct_id, tags=tags, **kwargs)
        settings = config.settings
        removal = (
            cdk.RemovalPolicy.DESTROY if settings.removal_policy == "destroy" else cdk.RemovalPolicy.RETAIN
        )
        retention = _retention(settings.log_retention_days)

        image = image_source(
            self,
            "Image",
            mode=config.image_build,
            directory=image_directory,
            removal_policy=removal,
            log_retention=retention,
        )
        self.memory = AgentMemory(
            self,
            "Memory",
            name=f"{config.project_name}_{config.stage}_memory",
            event_expiry_days=settings.memory_event_expiry_days,
            customer_managed_key=config.memory.customer_managed_key,
            removal_policy=removal,
        )
        self.gateway: AgentGateway | None = None
        if config.gateway.enabled:
            self.gateway = AgentGateway(
                self,
                "Gateway",
                name=f"{config.project_name}-{config.stage}-tools",
                authorizer=config.gateway.authorizer,
                jwt=config.gateway.jwt,
                invoice_tools=config.gateway.invoices_tool,
                removal_policy=removal,
                log_retention=retention,
            )
        vpc, subnets = _vpc(self, config)
        self.agent = AgentRuntime(
            self,
            "Agent",
            runtime_name=config.runtime_name,
            artifact=image.artifact,
            image_repository=image.repository,
            environment=runtime_environment(
                config,
                memory_id=self.memory.memory_id,
                gateway_url=self.gateway.gateway_url if self.gateway else None,
                region=self.region,
            ),
            model_profiles=config.models,
            metrics_namespace=config.metrics_namespace,
            auth=config.auth,
            idle_timeout=cdk.Duration.minutes(settings.idle_timeout_minutes),
            max_lifetime=cdk.Duration.hours(settings.max_lifetime_hours),
            log_retention=retention,
            removal_policy=removal,
            endpoint_name=config.stage,
            # JWT auth: the Authorization header must be allow-listed to reach the runtime (actor = JWT sub).
            request_headers=[config.actor_header] if config.auth.mode == "iam" else ["Authorization"],
            marketplace_product_ids=config.marketplace_product_ids,
            vpc=vpc,
            vpc_subnets=subnets,
        )
        if image.ready is not None:
            self.agent.runtime.node.add_dependency(image.ready)
        self.memory.grant_runtime(self.agent.role)
        if self.gateway is not None:
            self.gateway.grant_invoke(self.agent.role)
        self.observability = AgentObservability(
            self,
            "Observability",
            runtime=self.agent.runtime,
            endpoint_name=config.stage,  # the endpoint every caller invokes (--qualifier <stage>)
            dashboard_name=f"{config.project_name}-{config.stage}",
            namespace=config.metrics_namespace,
            agent_name=config.agent_name,
            daily_budget_usd=settings.daily_budget_usd,
            error_rate_percent=settings.error_rate_alarm_percent,
            p99_latency_ms=settings.p99_latency_alarm_ms,
            alarm_email=config.observability.alarm_email,
            transaction_search=config.observability.transaction_search,
            trackers=webhook_trackers(config),
        )
        self.optional_constructs = self._compose_optional(config, retention=retention, removal=removal)
        self._outputs(config)
        nag.acknowledge_stack(self)

    def _compose_optional(
        self, config: AppConfig, *, retention: logs.RetentionDays, removal: cdk.RemovalPolicy
    ) -> dict[str, Construct]:
        """Build the webhook / CI-access constructs when their flags are on (modules owned elsewhere)."""
        built: dict[str, Construct] = {}
        if config.webhook.enabled:
            from infra.webhook import GitHubIssueWebhook
            from infra.webhook_trackers import GitLabSettings, JiraSettings

            hook = config.webhook
            webhook = GitHubIssueWebhook(
                self,
                "GitHubWebhook",
                runtime_arn=self.agent.runtime_arn,
                runtime_endpoint_name=config.stage,
                # Secrets are <project>-<stage>/github-*, so stages in one account never share one.
                name_prefix=config.resource_prefix,
                trigger_label=config.webhook.trigger_label,
                trigger_mention=config.webhook.trigger_mention,
                bot_login=config.webhook.bot_login,
                create_secrets=config.webhook.create_secrets,
                allowed_author_associations=config.webhook.allowed_author_associations,
                trackers=hook.trackers,
                github_repository_ids=hook.repository_ids,
                gitlab=GitLabSettings(**hook.gitlab.model_dump()),
                jira=JiraSettings(**{k: v or "" for k, v in hook.jira.model_dump().items()})
                if hook.jira.site_url
                else None,
                actor_header=config.actor_header,
                metrics_namespace=config.metrics_namespace,
                log_retention=retention,
                removal_policy=removal,
            )
            built["webhook"] = webhook
        if config.github_oidc.enabled and config.github_oidc.repository:
            from infra.ci_access import GitHubOidcInvoker

            built["github_oidc"] = GitHubOidcInvoker(
                self,
                "GitHubOidc",
                repository=config.github_oidc.repository,
                runtime_arn=self.agent.runtime_arn,
                create_provider=config.github_oidc.create_provider,
                branches=config.github_oidc.branches,
                environments=config.github_oidc.environments,
                allow_pull_requests=config.github_oidc.allow_pull_requests,
                runtime_endpoint_names=[config.stage],
            )
        return built

    def _outputs(self, config: AppConfig) -> None:
        cdk.CfnOutput(self, "RuntimeArn", value=self.agent.runtime_arn, description="AgentCore runtime ARN")
        cdk.CfnOutput(
            self, "RuntimeEndpointArn", value=self.agent.endpoint_arn, description="Stage endpoint ARN"
        )
        cdk.CfnOutput(self, "MemoryId", value=self.memory.memory_id, description="AgentCore Memory id")
        if self.gateway is not None:
            cdk.CfnOutput(self, "GatewayUrl", value=self.gateway.gateway_url, description="MCP gateway URL")
            if self.gateway.invoices is not None:
                cdk.CfnOutput(
                    self,
                    "InvoicesTableName",
                    value=self.gateway.invoices.table.table_name,
                    description="Load samples: python -m infra.functions.invoices.load_sample_data",
                )
        cdk.CfnOutput(self, "DashboardUrl", value=self.observability.dashboard_url, description="Dashboard")
        cdk.CfnOutput(
            self,
            "InvokeCommand",
            description="Ready-to-paste invocation",
            value=cdk.Fn.join(
                "",
                [
                    "agentkit invoke --runtime-arn ",
                    self.agent.runtime_arn,
                    f" --qualifier {config.stage} --region ",
                    self.region,
                    ' "Analyze my overdue invoices"',
                ],
            ),
        )


_RETENTION = {
    1: "ONE_DAY",
    3: "THREE_DAYS",
    5: "FIVE_DAYS",
    7: "ONE_WEEK",
    14: "TWO_WEEKS",
    30: "ONE_MONTH",
    60: "TWO_MONTHS",
    90: "THREE_MONTHS",
    120: "FOUR_MONTHS",
    150: "FIVE_MONTHS",
    180: "SIX_MONTHS",
    365: "ONE_YEAR",
    400: "THIRTEEN_MONTHS",
    545: "EIGHTEEN_MONTHS",
    731: "TWO_YEARS",
    1827: "FIVE_YEARS",
    3653: "TEN_YEARS",
}


def _retention(days: int) -> logs.RetentionDays:
    if days not in _RETENTION:
        raise ValueError(f"log retention {days} days is not a CloudWatch retention value")
    return logs.RetentionDays[_RETENTION[days]]


def _vpc(scope: Construct, config: AppConfig) -> tuple[ec2.IVpc | None, ec2.SubnetSelection | None]:
    network = config.network
    if network.mode != "vpc" or network.vpc_id is None:
        return None, None
    vpc = ec2.Vpc.from_vpc_attributes(
        scope, "Vpc", vpc_id=network.vpc_id, availability_zones=list(network.availability_zones)
    )
    subnets = [
        ec2.Subnet.from_subnet_attributes(scope, f"Subnet{i}", subnet_id=sid, availability_zone=az)
        for i, (sid, az) in enumerate(zip(network.subnet_ids, network.availability_zones, strict=True))
    ]
    return vpc, ec2.SubnetSelection(subnets=subnets)
