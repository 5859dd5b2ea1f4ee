"""The one stack: composes image, memory, runtime, gateway, observability (+ optional webhook / CI access).

Runtime container environment (names from :mod:`runtime.env`): ``AGENTKIT_SESSION_STORE=agentcore://<memory id>``,
``AGENTKIT_METRICS`` (``cloudwatch`` by default), ``AGENTKIT_METRICS_NAMESPACE``, ``AGENTKIT_MODEL``, ``AGENTKIT_AGENT_NAME``,
``AGENTKIT_MEMORY_ID``, ``AGENTKIT_RECALL_NAMESPACES`` (comma-separated, ``{actorId}`` placeholders),
``AGENTKIT_GATEWAY_URL``, ``AGENTKIT_ACTOR_HEADER``, ``AWS_REGION``, ``AGENTKIT_PLATFORM_VERSION`` (always), and with
session storage ``CLAUDE_CONFIG_DIR`` / ``AGENTKIT_WORKSPACE`` under its mount, with ``workspace_bucket``
``AGENTKIT_WORKSPACE_S3_URI`` (``infra.workspaces``), with the webhook ``AGENTKIT_JOB_EVENTS_QUEUE_URL`` (the job events
queue, ``infra.job_events``, created for the webhook to consume) and ``AGENTKIT_JOB_TIMEOUT`` (the session's maximum
lifetime less :data:`JOB_RESULT_MARGIN_S`), with the bucket too ``AGENTKIT_WORKSPACE_BUCKET``.
``AGENTKIT_BEDROCK_ENDPOINT`` is never set.

Constructs take their config: image, memory, gateway, runtime and observability read the validated
:class:`AppConfig`; the optional front doors, usable in any stack, take one props object each, which
``from_config`` builds from the app config. They are composed behind config flags: ``webhook.enabled`` ->
``infra.webhook.construct.IssueWebhook``; ``github_oidc.enabled`` (+ ``repository``) -> ``infra.ci_access.GitHubOidcInvoker``.

Construct ids (``Image``, ``Memory``, ``Gateway``, ``Agent``, ``Observability``, ``GitHubWebhook``,
``GitHubOidc``) are part of the logical id of every resource below them: a new id makes CloudFormation replace
those resources (the memory and its events, log groups, secrets, queues), so they stay as first deployed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from infra import lifecycle, nag
from infra.config import AppConfig
from infra.gateway import AgentGateway
from infra.image_build import image_source
from infra.image_context import stage_image_context
from infra.job_events import JobEvents
from infra.memory import RECALL_NAMESPACES, AgentMemory
from infra.observability import AgentObservability
from infra.regions import RegionCheck
from infra.runtime import AgentRuntime
from infra.workspaces import WorkspaceBucket
from runtime.env import (
    ENV_ACTOR_HEADER,
    ENV_AGENT_NAME,
    ENV_AGENT_PROFILE,
    ENV_APPROVALS,
    ENV_AWS_REGION,
    ENV_BEDROCK_PROJECT,
    ENV_CLAUDE_CONFIG_DIR,
    ENV_FALLBACK_MODEL,
    ENV_GATEWAY_URL,
    ENV_JOB_EVENTS_QUEUE_URL,
    ENV_JOB_TIMEOUT,
    ENV_MEMORY_ID,
    ENV_METRICS,
    ENV_METRICS_NAMESPACE,
    ENV_MODEL,
    ENV_PLATFORM_VERSION,
    ENV_PRICES,
    ENV_RECALL_NAMESPACES,
    ENV_SANDBOX,
    ENV_SESSION_STORE,
    ENV_SMALL_MODEL,
    ENV_STAGE,
    ENV_WORKSPACE,
    ENV_WORKSPACE_ALLOW_PROTECTED,
    ENV_WORKSPACE_BUCKET,
    ENV_WORKSPACE_S3_URI,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
#: Seconds a job's turn leaves of the session's maximum lifetime: time to send its result before the microVM ends.
JOB_RESULT_MARGIN_S = 300


def _outdir(scope: Construct) -> str:
    """The cloud assembly directory of ``scope``'s app (where the staged image context goes)."""
    stage = cdk.Stage.of(scope)
    if stage is None:
        raise ValueError(f"{scope.node.path} is not in a CDK app")
    return stage.outdir


def runtime_environment(
    config: AppConfig,
    *,
    memory_id: str,
    gateway_url: str | None,
    region: str,
    workspace_s3_uri: str | None = None,
    job_events_queue_url: str | None = None,
    job_patch_bucket: str | None = None,
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
        ENV_PLATFORM_VERSION: config.platform_version,
        ENV_STAGE: config.stage,
    }
    if config.session_storage_mount:
        # The warm cache on session storage: the CLI's config dir (its session files) and the workspace. The state
        # dir (SQLite, spool, CLI tmp, sandbox sockets) stays on the microVM's disk: session storage replicates
        # asynchronously and has no flock or UNIX sockets (docs/platform.md).
        mount = config.session_storage_mount.rstrip("/")
        env[ENV_CLAUDE_CONFIG_DIR] = f"{mount}/claude"
        env[ENV_WORKSPACE] = f"{mount}/workspace"
    if config.auth.mode == "iam":
        # With IAM inbound auth only our own principals can invoke, so their actor header is trusted. With JWT
        # auth the actor is the token's sub; a header any token holder can set must not name it.
        env[ENV_ACTOR_HEADER] = config.actor_header
    # The CLI's small/fast slot must be a profile the role may invoke: the first extra model, else the main one.
    small = [m for m in config.extra_models if m != config.model]
    env[ENV_SMALL_MODEL] = small[0] if small else config.model
    # "off" when null: the runtime's default fallback would otherwise be a profile the role may not invoke.
    env[ENV_FALLBACK_MODEL] = config.fallback_model or "off"
    if config.prices:
        env[ENV_PRICES] = json.dumps(config.prices, sort_keys=True)
    if config.settings.bedrock_project:
        env[ENV_BEDROCK_PROJECT] = config.settings.bedrock_project
    if gateway_url:
        env[ENV_GATEWAY_URL] = gateway_url
    if config.settings.approvals is not None:
        env[ENV_APPROVALS] = config.settings.approvals.model_dump_json(exclude_defaults=True)
    if config.allow_protected_paths:
        env[ENV_WORKSPACE_ALLOW_PROTECTED] = ",".join(config.allow_protected_paths)
    if workspace_s3_uri:
        env[ENV_WORKSPACE_S3_URI] = workspace_s3_uri
    if job_events_queue_url:
        env[ENV_JOB_EVENTS_QUEUE_URL] = job_events_queue_url
        # AgentCore ends a session's microVM at its maximum lifetime: a job's turn ends a margin before, so its result
        # (turn_timeout, with its cost) is still sent. Earlier turns of the session use part of that lifetime too.
        lifetime_s = config.settings.max_lifetime_hours * 3600
        env[ENV_JOB_TIMEOUT] = str(max(60, lifetime_s - JOB_RESULT_MARGIN_S))
        if job_patch_bucket:
            env[ENV_WORKSPACE_BUCKET] = job_patch_bucket
    return env


class AgentKitStack(cdk.Stack):
    """Everything one stage of the agent needs. Takes the validated :class:`AppConfig`; reads no context."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AppConfig,
        image_directory: Path | None = None,
        **kwargs: Any,
    ) -> None:
        # Stack tags are set on the stack itself (feature flag @aws-cdk/core:explicitStackTags): CloudFormation
        # then propagates them to every resource it creates, including ones CDK's tagging cannot reach.
        tags = {"project": config.project_name, "stage": config.stage, **(kwargs.pop("tags", None) or {})}
        super().__init__(scope, construct_id, tags=tags, **kwargs)
        if (
            image_directory is None
        ):  # the kit's runtime files and the stage's agent directory (infra.image_context)
            image_directory = stage_image_context(
                kit_root=PROJECT_ROOT,
                agent_dir=config.agent.path,
                dest=Path(_outdir(self)) / f"image-context.{construct_id}",
            )
        # Every resource type the stack ends up with must exist in the deploy Region: checked when synth validates.
        self.node.add_validation(RegionCheck(self, config.deploy_region))
        image = image_source(self, "Image", config=config, directory=image_directory)
        self.memory = AgentMemory(self, "Memory", config=config)
        self.gateway = AgentGateway(self, "Gateway", config=config) if config.gateway.enabled else None
        self.workspaces = (
            WorkspaceBucket(
                self,
                "Workspaces",
                stage=config.stage,
                removal_policy=lifecycle.removal_policy(config.settings),
            )
            if config.workspace_bucket
            else None
        )
        # Jobs report through a queue the webhook consumes: created with the webhook (its only consumer in the kit),
        # before the runtime, whose environment names it. A stack without the webhook refuses "async" requests.
        self.job_events = (
            JobEvents(
                self,
                "JobEvents",
                consumer_timeout=_webhook_worker_timeout(config),
                removal_policy=lifecycle.removal_policy(config.settings),
            )
            if config.webhook.enabled
            else None
        )
        self.agent = AgentRuntime(
            self,
            "Agent",
            config=config,
            image=image,
            environment=runtime_environment(
                config,
                memory_id=self.memory.memory_id,
                gateway_url=self.gateway.gateway_url if self.gateway else None,
                region=self.region,
                workspace_s3_uri=self.workspaces.uri if self.workspaces else None,
                job_events_queue_url=self.job_events.queue_url if self.job_events else None,
                job_patch_bucket=self.workspaces.bucket.bucket_name if self.workspaces else None,
            ),
        )
        if self.workspaces is not None:
            self.workspaces.grant_read(self.agent.role)
        if self.job_events is not None:
            self.job_events.grant_send(self.agent.role)
            if self.workspaces is not None:
                self.workspaces.grant_put_job_patches(self.agent.role)
        self.memory.grant_runtime(self.agent.role)
        if self.gateway is not None:
            self.gateway.grant_invoke(self.agent.role)
        self.observability = AgentObservability(
            self, "Observability", config=config, runtime=self.agent.runtime
        )
        self.optional_constructs = self._compose_optional(config)
        if self.job_events is not None:
            self.observability.alarm_on_dead_letters(
                "JobEventsDeadLettersAlarm", self.job_events.dead_letter_queue, what="Runtime job events"
            )
        self._outputs(config)
        nag.acknowledge_stack(self)

    def _compose_optional(self, config: AppConfig) -> dict[str, Construct]:
        """Build the webhook / CI-access constructs when their flags are on."""
        built: dict[str, Construct] = {}
        if config.webhook.enabled:
            from infra.webhook.construct import IssueWebhook
            from infra.webhook.props import WebhookProps
            from webhook.settings import SERVICE_NAMES

            # "GitHubWebhook" (the GitHub-only release's name) prefixes the logical id of every resource of the
            # webhook: a new id would make CloudFormation replace its secrets, queues and idempotency table.
            webhook = built["webhook"] = IssueWebhook(
                self,
                "GitHubWebhook",
                runtime_arn=self.agent.runtime_arn,
                props=WebhookProps.from_config(config),
                job_events_queue=self.job_events.queue if self.job_events else None,
                workspaces=self.workspaces,
            )
            self.observability.alarm_on_dead_letters(
                "WebhookDeadLettersAlarm", webhook.dead_letter_queue, what="Webhook tasks"
            )
            self.observability.alarm_on_results_after_timeout(
                "WebhookResultsAfterTimeoutAlarm", config.webhook.trackers, service=SERVICE_NAMES["reporter"]
            )
        if config.github_oidc.enabled and config.github_oidc.repository:
            from infra.ci_access import GitHubOidcInvoker, OidcInvokerProps

            built["github_oidc"] = GitHubOidcInvoker(
                self,
                "GitHubOidc",
                runtime_arn=self.agent.runtime_arn,
                props=OidcInvokerProps.from_config(config),
            )
        oidc = built.get("github_oidc")
        if self.workspaces is not None and oidc is not None:
            self.workspaces.grant_upload(oidc.role)  # type: ignore[attr-defined]
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
            "UsageLogGroup",
            value=self.agent.usage_logs.log_group_name,
            description="The runtime's USAGE_LOGS: vCPU-hours and GB-hours per session (agentkit cost --by session)",
        )
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


def _webhook_worker_timeout(config: AppConfig) -> cdk.Duration:
    """The webhook worker's timeout: the longest any of the webhook's functions takes, so either may consume the job
    events (Lambda refuses an SQS event source whose visibility timeout is shorter than the function's timeout)."""
    from infra.webhook.props import DEFAULT_WORKER_TIMEOUT, WebhookProps

    return WebhookProps.from_config(config).worker_timeout or DEFAULT_WORKER_TIMEOUT
