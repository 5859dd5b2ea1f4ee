"""Issue webhook for GitHub, GitLab and Jira Cloud: Function URL receiver → SQS (+DLQ) → worker → AgentCore
runtime → a reply on the issue.

Resources: receiver Lambda with one Function URL (auth NONE: no tracker can SigV4-sign, so each adapter
verifies its tracker's signature or token in code) and one path per tracker (``/github`` — also the bare
URL —, ``/gitlab``, ``/jira``), an SSE + TLS-only SQS queue with a DLQ, a worker Lambda fed by the queue
(partial batch failures), a DynamoDB idempotency table (PITR, TTL), two Secrets Manager secrets per
enabled tracker (webhook secret, API token; see ``infra/webhook_trackers.py``), log groups with retention.

Lambda code lives in ``infra/functions/webhook`` and is shipped as a plain asset (no Docker, no pip
at synth). Powertools comes from the public Powertools layer: its ARN is read at deploy time from
the public SSM parameter ``/aws/service/powertools/python/<arch>/<python>/<version>`` (synth stays
offline), or pass ``powertools_layer_arn``. The Lambda runtime's boto3 must know the
``bedrock-agentcore`` service (boto3 >= 1.39.8; current Lambda Python runtimes ship newer).

Secrets are named ``<name_prefix>/<tracker>-webhook-secret`` and ``<name_prefix>/<tracker>-token``; the
stack passes ``<project>-<stage>`` as ``name_prefix`` so stages in one account never share a secret.

Timeouts: the worker Lambda runs up to 14 minutes by default, its ``InvokeAgentRuntime`` read timeout
is the Lambda timeout minus 60 s (13 minutes) and must exceed the runtime's turn timeout
(``AGENTKIT_TURN_TIMEOUT``, 600 s by default; ``runtime_turn_timeout``); the queue's visibility timeout
is six times the Lambda timeout, as AWS recommends for SQS event sources.

IAM (least privilege): receiver — ``sqs:SendMessage`` on the queue, ``dynamodb:GetItem/PutItem/
UpdateItem/DeleteItem`` on the table, ``secretsmanager:GetSecretValue`` on the enabled trackers' webhook
secrets (plus the GitLab token: the members API decides who may trigger);
worker — ``bedrock-agentcore:InvokeAgentRuntime`` on the runtime ARN and ``<arn>/runtime-endpoint/*``,
``secretsmanager:GetSecretValue`` on the enabled trackers' token secrets only, ``dynamodb:GetItem/PutItem/UpdateItem`` on the
table for ``reply#*`` keys only (``dynamodb:LeadingKeys``: its stored replies, never the receiver's
records), SQS consume on the queue; both — write to
their own log group, X-Ray put.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra.webhook_trackers import (
    GitHubSettings,
    GitLabSettings,
    JiraSettings,
    check_trackers,
    github_env,
    gitlab_env,
    jira_env,
)
from runtime.env import DEFAULT_METRICS_NAMESPACE

FUNCTION_DIR = Path(__file__).resolve().parent / "functions" / "webhook"
DEFAULT_ACTOR_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"
DEFAULT_NAME_PREFIX = "agentkit"
WEBHOOK_SECRET_SUFFIX = "github-webhook-secret"
TOKEN_SECRET_SUFFIX = "github-token"
#: Only these ``author_association`` values may trigger a run by mention unless configured otherwise.
DEFAULT_ALLOWED_ASSOCIATIONS = ("OWNER", "MEMBER", "COLLABORATOR")


class TrackerSecrets(NamedTuple):
    """A tracker's two secrets: its title (descriptions, outputs), their construct ids and the variables
    that name them to the Lambdas (``infra/functions/webhook/wiring.py``)."""

    title: str
    webhook_id: str
    token_id: str
    webhook_var: str
    token_var: str


TRACKER_SECRETS = {
    "github": TrackerSecrets(
        "GitHub", "WebhookSecret", "GitHubToken", "WEBHOOK_SECRET_NAME", "GITHUB_TOKEN_SECRET_NAME"
    ),
    "gitlab": TrackerSecrets(
        "GitLab",
        "GitLabWebhookSecret",
        "GitLabToken",
        "GITLAB_WEBHOOK_SECRET_NAME",
        "GITLAB_TOKEN_SECRET_NAME",
    ),
    "jira": TrackerSecrets(
        "Jira", "JiraWebhookSecret", "JiraToken", "JIRA_WEBHOOK_SECRET_NAME", "JIRA_TOKEN_SECRET_NAME"
    ),
}
#: Stack outputs for the GitLab and Jira adapters (stack scope, these names as ids: no hash suffix).
TRACKER_OUTPUTS = {
    "gitlab": ("GitLabWebhookUrl", "GitLabWebhookSecretName", "GitLabTokenSecretName"),
    "jira": ("JiraWebhookUrl", "JiraWebhookSecretName", "JiraTokenSecretName"),
}
DEFAULT_WORKER_TIMEOUT = cdk.Duration.minutes(14)
#: The runtime's default AGENTKIT_TURN_TIMEOUT (runtime/settings.py).
DEFAULT_RUNTIME_TURN_TIMEOUT = cdk.Duration.seconds(600)
#: Seconds the worker keeps after the read timeout to post the reply.
POST_REPLY_MARGIN_SECONDS = 60
#: SQS keeps a message at most this long, also after it moved to the DLQ (the enqueue time is kept).
DEAD_LETTER_RETENTION = cdk.Duration.days(14)
_NAME_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+=.@-]{0,100}$")
POWERTOOLS_VERSION = "3.37.0"  # keep in step with pyproject's aws-lambda-powertools pin


def powertools_layer_parameter(
    *, runtime: lambda_.Runtime, architecture: lambda_.Architecture, version: str
) -> str:
    """Public SSM parameter holding the Powertools layer ARN for this runtime/architecture/version."""
    return f"/aws/service/powertools/python/{architecture.name}/{runtime.name}/{version}"


def _acknowledge(scope: Construct, rule: str, reason: str) -> None:
    """Acknowledge one cdk-nag (AwsSolutions) finding on ``scope``, with the reason on record."""
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason))


class IssueWebhook(Construct):
    """Receive issue events from GitHub, GitLab and/or Jira Cloud, run the agent, answer on the issue.

    Attributes: ``url`` (the Function URL; GitHub also answers on it bare), ``tracker_urls`` (name → URL
    with the tracker's path), ``queue``, ``dead_letter_queue``, ``table``, ``receiver``, ``worker``,
    ``secrets`` (name → ``(webhook secret, token secret)``), and for GitHub ``webhook_secret`` and
    ``token_secret``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        runtime_arn: str,
        runtime_endpoint_name: str | None = None,
        name_prefix: str = DEFAULT_NAME_PREFIX,
        webhook_secret_name: str | None = None,
        github_token_secret_name: str | None = None,
        create_secrets: bool = True,
        trigger_label: str = "agent",
        trigger_mention: str = "/agent",
        bot_login: str = "",
        allowed_author_associations: Sequence[str] = DEFAULT_ALLOWED_ASSOCIATIONS,
        github_api_url: str = "https://api.github.com",
        actor_header: str = DEFAULT_ACTOR_HEADER,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.DESTROY,
        worker_timeout: cdk.Duration | None = None,
        runtime_turn_timeout: cdk.Duration | None = None,
        max_concurrency: int = 5,
        max_receive_count: int = 3,
        max_body_bytes: int = 1024 * 1024,
        trackers: Sequence[str] = ("github",),
        github_repository_ids: Sequence[int] = (),
        gitlab: GitLabSettings | None = None,
        jira: JiraSettings | None = None,
        metrics_namespace: str = DEFAULT_METRICS_NAMESPACE,
        python_runtime: lambda_.Runtime | None = None,
        architecture: lambda_.Architecture | None = None,
        powertools_layer_arn: str | None = None,
        powertools_version: str = POWERTOOLS_VERSION,
    ) -> None:
        """Raises ``ValueError`` on a bad tracker list, trigger, prefix, association, concurrency or timeout.

        ``trackers`` picks the adapters (``github``, ``gitlab``, ``jira``); ``gitlab`` / ``jira`` hold their
        settings (``jira`` is required with ``"jira"``). The GitHub adapter keeps its flat parameters;
        ``github_repository_ids`` (and ``GitLabSettings.project_ids``) pin the repositories (projects) served
        by immutable id: the receiver ignores every other one before any cost (empty: none is served).
        ``name_prefix`` names the secrets (``<prefix>/<tracker>-webhook-secret``, ``<prefix>/<tracker>-token``)
        unless ``webhook_secret_name`` / ``github_token_secret_name`` are given (GitHub). Mention triggers are
        accepted only from authors whose ``author_association`` is in ``allowed_author_associations``
        (``["*"]`` allows anyone — on a public repository anyone could then start paid runs).
        ``worker_timeout`` (default 14 min) minus 60 s is the invoke read timeout; it must exceed
        ``runtime_turn_timeout`` (default 600 s, the runtime's ``AGENTKIT_TURN_TIMEOUT``).
        """
        super().__init__(scope, construct_id)
        enabled = check_trackers(trackers)
        if "jira" in enabled and jira is None:
            raise ValueError(
                "the 'jira' tracker needs jira=JiraSettings(site_url='https://<site>.atlassian.net')"
            )
        github = GitHubSettings(
            github_api_url,
            trigger_label,
            trigger_mention,
            bot_login,
            allowed_author_associations,
            repository_ids=tuple(github_repository_ids),
        )
        receiver_env, worker_env_extra = {"TRACKERS": ",".join(enabled)}, {"TRACKERS": ",".join(enabled)}
        for name, make in (
            ("github", lambda r: github_env(github, receiver=r)),
            ("gitlab", lambda r: gitlab_env(gitlab or GitLabSettings(), receiver=r)),
            ("jira", lambda r: jira_env(jira, receiver=r) if jira else {}),
        ):
            if name in enabled:
                receiver_env |= make(True)
                worker_env_extra |= make(False)
        if not 2 <= max_concurrency <= 1000:
            raise ValueError("max_concurrency must be between 2 and 1000 (SQS event source limit)")
        if not _NAME_PREFIX.match(name_prefix):
            raise ValueError(f"name_prefix {name_prefix!r} must match {_NAME_PREFIX.pattern}")
        runtime = python_runtime or lambda_.Runtime.PYTHON_3_14
        arch = architecture or lambda_.Architecture.ARM_64
        worker_timeout = worker_timeout or DEFAULT_WORKER_TIMEOUT
        if not 60 <= worker_timeout.to_seconds() <= 900:
            raise ValueError("worker_timeout must be between 1 and 15 minutes")
        read_timeout = int(worker_timeout.to_seconds()) - POST_REPLY_MARGIN_SECONDS
        turn_timeout = (runtime_turn_timeout or DEFAULT_RUNTIME_TURN_TIMEOUT).to_seconds()
        if read_timeout <= turn_timeout:
            raise ValueError(
                f"worker_timeout leaves a read timeout of {read_timeout}s (worker_timeout - "
                f"{POST_REPLY_MARGIN_SECONDS}s), which must exceed the runtime turn timeout of {turn_timeout:.0f}s;"
                " raise worker_timeout or lower AGENTKIT_TURN_TIMEOUT / runtime_turn_timeout"
            )
        webhook_secret_name = webhook_secret_name or f"{name_prefix}/{WEBHOOK_SECRET_SUFFIX}"
        github_token_secret_name = github_token_secret_name or f"{name_prefix}/{TOKEN_SECRET_SUFFIX}"

        # ---- secrets: (webhook secret, token) per enabled tracker
        self.secrets: dict[str, tuple[secretsmanager.ISecret, secretsmanager.ISecret]] = {}
        secret_refs: dict[str, tuple[str, str]] = {}
        names = {
            "github": (webhook_secret_name, github_token_secret_name),
            "gitlab": (f"{name_prefix}/gitlab-webhook-secret", f"{name_prefix}/gitlab-token"),
            "jira": (f"{name_prefix}/jira-webhook-secret", f"{name_prefix}/jira-token"),
        }
        for name in enabled:
            spec = TRACKER_SECRETS[name]
            hook, hook_ref = self._secret(
                spec.webhook_id,
                names[name][0],
                create=create_secrets,
                removal_policy=removal_policy,
                description=f"{spec.title} webhook secret (generated; paste it into the {spec.title} webhook settings).",
            )
            token, token_ref = self._secret(
                spec.token_id,
                names[name][1],
                create=create_secrets,
                removal_policy=removal_policy,
                description=f"{spec.title} API token used to post replies (placeholder; replace with put-secret-value).",
            )
            self.secrets[name] = (hook, token)
            secret_refs[name] = (hook_ref, token_ref)
            receiver_env[spec.webhook_var] = hook_ref
            worker_env_extra[spec.token_var] = token_ref
        if "github" in self.secrets:
            self.webhook_secret, self.token_secret = self.secrets["github"]
        if "gitlab" in secret_refs:  # the receiver asks GitLab's members API who may trigger
            receiver_env[TRACKER_SECRETS["gitlab"].token_var] = secret_refs["gitlab"][1]

        # ---- queue + DLQ + idempotency table
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=DEAD_LETTER_RETENTION,
            removal_policy=removal_policy,
        )
        self.queue = sqs.Queue(
            self,
            "Tasks",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=cdk.Duration.seconds(min(6 * worker_timeout.to_seconds(), 43_200)),
            retention_period=cdk.Duration.days(4),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=max_receive_count
            ),
            removal_policy=removal_policy,
        )
        self.table = dynamodb.Table(
            self,
            "Idempotency",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute="expiration",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            removal_policy=removal_policy,
        )

        # ---- shared Lambda settings
        layer_arn = powertools_layer_arn or ssm.StringParameter.value_for_string_parameter(
            self, powertools_layer_parameter(runtime=runtime, architecture=arch, version=powertools_version)
        )
        powertools = lambda_.LayerVersion.from_layer_version_arn(self, "PowertoolsLayer", layer_arn)
        code = lambda_.Code.from_asset(str(FUNCTION_DIR), exclude=["__pycache__", "*.pyc"])
        common_env = {"POWERTOOLS_METRICS_NAMESPACE": metrics_namespace, "LOG_LEVEL": "INFO"}

        # ---- receiver
        self.receiver = self._function(
            "Receiver",
            handler="receiver.handler",
            code=code,
            runtime=runtime,
            architecture=arch,
            layer=powertools,
            timeout=cdk.Duration.seconds(15),
            log_retention=log_retention,
            removal_policy=removal_policy,
            description="Issue webhook receiver: verify the tracker's signature, enqueue once per delivery",
            environment={
                **common_env,
                **receiver_env,
                "POWERTOOLS_SERVICE_NAME": "github-webhook",
                "QUEUE_URL": self.queue.queue_url,
                "IDEMPOTENCY_TABLE": self.table.table_name,
                "MAX_BODY_BYTES": str(max_body_bytes),
            },
        )
        self.queue.grant_send_messages(self.receiver)
        self.receiver.add_to_role_policy(
            iam.PolicyStatement(
                actions=[
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                ],
                resources=[self.table.table_arn],
            )
        )
        for name, (hook, token) in self.secrets.items():
            hook.grant_read(self.receiver)
            if name == "gitlab":
                token.grant_read(self.receiver)
        self.function_url = self.receiver.add_function_url(auth_type=lambda_.FunctionUrlAuthType.NONE)
        self.url = self.function_url.url
        # The Function URL ends with "/": the tracker's path is appended to it.
        self.tracker_urls = {name: cdk.Fn.join("", [self.url, name]) for name in enabled}

        # ---- worker
        worker_env = {
            **common_env,
            "POWERTOOLS_SERVICE_NAME": "github-webhook-worker",
            **worker_env_extra,
            "AGENT_RUNTIME_ARN": runtime_arn,
            "ACTOR_HEADER": actor_header,
            "INVOKE_READ_TIMEOUT_SECONDS": str(read_timeout),
            # Stored replies (replies.py) outlive every redelivery, DLQ redrives included.
            "IDEMPOTENCY_TABLE": self.table.table_name,
            "REPLY_TTL_SECONDS": str(int(DEAD_LETTER_RETENTION.to_seconds())),
        }
        if runtime_endpoint_name:
            worker_env["AGENT_RUNTIME_QUALIFIER"] = runtime_endpoint_name
        self.worker = self._function(
            "Worker",
            handler="worker.handler",
            code=code,
            runtime=runtime,
            architecture=arch,
            layer=powertools,
            timeout=worker_timeout,
            log_retention=log_retention,
            removal_policy=removal_policy,
            description="Issue webhook worker: invoke the AgentCore runtime, post the answer on the issue",
            environment=worker_env,
        )
        self.worker.add_event_source(
            event_sources.SqsEventSource(
                self.queue, batch_size=1, report_batch_item_failures=True, max_concurrency=max_concurrency
            )
        )
        self.worker.add_to_role_policy(
            iam.PolicyStatement(
                actions=["bedrock-agentcore:InvokeAgentRuntime"],
                # Exactly the endpoint this worker calls (the unqualified call goes to DEFAULT).
                resources=[
                    runtime_arn,
                    f"{runtime_arn}/runtime-endpoint/{runtime_endpoint_name or 'DEFAULT'}",
                ],
            )
        )
        for _hook, token in self.secrets.values():
            token.grant_read(self.worker)
        self.worker.add_to_role_policy(
            iam.PolicyStatement(
                actions=["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
                resources=[self.table.table_arn],
                # Only the worker's own items (id "reply#<key>"), not the receiver's idempotency records.
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["reply#*"]}},
            )
        )

        # Outputs at stack scope: their logical ids are the documented names, without a path hash.
        self._output("WebhookUrl", self.url, "Payload URL for the GitHub webhook")
        if "github" in secret_refs:
            self._output(
                "WebhookSecretName", secret_refs["github"][0], "Secret holding the GitHub webhook secret"
            )
            self._output("GitHubTokenSecretName", secret_refs["github"][1], "Secret holding the GitHub token")
        self._output(
            "DeadLetterQueueUrl", self.dead_letter_queue.queue_url, "Webhook jobs that failed every retry"
        )
        for name, (url_id, hook_id, token_id) in TRACKER_OUTPUTS.items():
            if name not in secret_refs:
                continue
            title = TRACKER_SECRETS[name].title
            self._output(url_id, self.tracker_urls[name], f"{title} webhook URL")
            self._output(hook_id, secret_refs[name][0], f"Secret holding the {title} webhook secret")
            self._output(token_id, secret_refs[name][1], f"Secret holding the {title} API token")

    # ------------------------------------------------------------------ helpers
    def _output(self, name: str, value: str, description: str) -> None:
        """A stack output named ``name``; a second webhook in the same stack prefixes its construct id."""
        stack = cdk.Stack.of(self)
        output_id = name if stack.node.try_find_child(name) is None else f"{self.node.id}{name}"
        cdk.CfnOutput(stack, output_id, value=value, description=description)

    def _secret(
        self,
        construct_id: str,
        name: str,
        *,
        create: bool,
        removal_policy: cdk.RemovalPolicy,
        description: str,
    ) -> tuple[secretsmanager.ISecret, str]:
        if not create:
            secret = secretsmanager.Secret.from_secret_name_v2(self, construct_id, name)
            return secret, name
        created = secretsmanager.Secret(
            self,
            construct_id,
            secret_name=name,
            description=description,
            generate_secret_string=secretsmanager.SecretStringGenerator(
                exclude_punctuation=True, password_length=40
            ),
            removal_policy=removal_policy,
        )
        _acknowledge(
            created,
            "AwsSolutions-SMG4",
            "A tracker's webhook secret or API token cannot be rotated by a rotation Lambda; rotate it in the"
            " tracker and put the new value into this secret (docs/webhook.md).",
        )
        return created, created.secret_arn

    def _function(
        self,
        construct_id: str,
        *,
        handler: str,
        code: lambda_.Code,
        runtime: lambda_.Runtime,
        architecture: lambda_.Architecture,
        layer: lambda_.ILayerVersion,
        timeout: cdk.Duration,
        log_retention: logs.RetentionDays,
        removal_policy: cdk.RemovalPolicy,
        description: str,
        environment: dict[str, str],
    ) -> lambda_.Function:
        log_group = logs.LogGroup(
            self, f"{construct_id}Logs", retention=log_retention, removal_policy=removal_policy
        )
        # Own role without AWSLambdaBasicExecutionRole: logs go only to this function's log group.
        role = iam.Role(
            self,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{construct_id} of the issue webhook",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[log_group.log_group_arn],
            )
        )
        # X-Ray actions have no resource-level permissions. They live in their own policy so the
        # '*' acknowledgement covers exactly them; any other '*' grant on the role is still flagged.
        xray = iam.Policy(
            self,
            f"{construct_id}Tracing",
            roles=[role],
            statements=[
                iam.PolicyStatement(
                    actions=["xray:PutTraceSegments", "xray:PutTelemetryRecords"], resources=["*"]
                )
            ],
        )
        _acknowledge(
            xray,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray PutTraceSegments/PutTelemetryRecords have no resource-level permissions.",
        )
        fn = lambda_.Function(
            self,
            construct_id,
            runtime=runtime,
            architecture=architecture,
            handler=handler,
            code=code,
            layers=[layer],
            role=role,
            timeout=timeout,
            memory_size=256,
            log_group=log_group,
            description=description,
            environment=environment,
        )
        # Active tracing set on the L1 so the L2 does not add its X-Ray '*' statement to the default policy.
        cfn = fn.node.default_child
        assert isinstance(cfn, lambda_.CfnFunction)
        cfn.tracing_config = lambda_.CfnFunction.TracingConfigProperty(mode="Active")
        fn.node.add_dependency(xray)
        return fn


#: The name of the GitHub-only release, kept so existing stacks and imports keep working.
GitHubIssueWebhook = IssueWebhook
