"""Issue webhook for GitHub, GitLab and Jira Cloud: Function URL receiver → SQS (+DLQ) → worker → AgentCore
runtime → a reply on the issue.

Resources: receiver Lambda with one Function URL (auth NONE: no tracker can SigV4-sign, so each adapter
verifies its tracker's signature or token in code) and one path per tracker (``/github`` — also the bare
URL —, ``/gitlab``, ``/jira``), an SSE + TLS-only SQS queue with a DLQ, a worker Lambda fed by the queue
(partial batch failures), a DynamoDB idempotency table (PITR, TTL), two Secrets Manager secrets per
enabled tracker (webhook secret, API token; ``infra/webhook/secrets.py``, ``infra/webhook/trackers.py``), log groups with retention; for fix
jobs (``/agent fix``) a reporter Lambda on the runtime's job events queue and a scheduled sweeper that ends jobs
whose result never came (``infra/webhook/fix.py``, ``infra/webhook/sweep.py``, which also list the grants fix jobs
add).

Lambda code is the top-level ``webhook`` package, shipped as a plain asset holding that folder and the AWS SDK
it pins in ``webhook/requirements.txt`` (boto3/botocore >= 1.40.46, the first with ``StopRuntimeSession``),
copied from the synthesizing environment (``infra/webhook/asset.py``: no Docker, no pip at synth); the
Lambda runtime's own SDK is not relied on. Powertools comes from the public Powertools layer: its ARN is read at
deploy time from the public SSM parameter ``/aws/service/powertools/python/<arch>/<python>/<version>`` (synth
stays offline), or set ``WebhookProps.powertools_layer_arn``.

Settings: one :class:`WebhookProps` (``WebhookProps.from_config`` reads them from the app config). Secrets are
named ``<name_prefix>/<tracker>-webhook-secret`` and ``<name_prefix>/<tracker>-token``; the stack's
``name_prefix`` is ``<project>-<stage>``, so stages in one account never share a secret.

Timeouts: the worker Lambda runs up to 14 minutes by default, its ``InvokeAgentRuntime`` read timeout
is the Lambda timeout minus 60 s (13 minutes) and must exceed the runtime's turn timeout
(``AGENTKIT_TURN_TIMEOUT``, 600 s by default; ``WebhookProps.runtime_turn_timeout``); the queue's visibility timeout
is six times the Lambda timeout, as AWS recommends for SQS event sources.

IAM (least privilege): receiver — ``sqs:SendMessage`` on the queue, ``dynamodb:GetItem/PutItem/
UpdateItem/DeleteItem`` on the table, ``secretsmanager:GetSecretValue`` on the enabled trackers' webhook
secrets (plus a GitLab token: the members API decides who may trigger; with ``read_tokens`` the read-only members
token);
worker — ``bedrock-agentcore:InvokeAgentRuntime`` and ``InvokeAgentRuntimeForUser`` (it names the tracker user as
the runtime user id) on the runtime ARN and its endpoint,
``secretsmanager:GetSecretValue`` on the enabled trackers' token secrets only (with ``read_tokens`` the read
tokens, never the tokens that push: ``infra/webhook/secrets.py``), ``dynamodb:GetItem/PutItem/UpdateItem`` on the
table for ``reply#*`` keys only (``dynamodb:LeadingKeys``: its stored replies, never the receiver's
records), SQS consume on the queue; both — write to
their own log group, X-Ray put.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

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

from infra import nag
from infra.functions import PYTHON_RUNTIME
from infra.webhook.asset import package_code
from infra.webhook.fix import add_fix_jobs, fix_environment, snapshot_spool_storage
from infra.webhook.props import WebhookProps, check
from infra.webhook.secrets import add_tracker_secrets, grant_secrets, secret_env
from infra.webhook.sweep import add_sweeper
from infra.webhook.trackers import TRACKER_OUTPUTS, TRACKER_SECRETS
from webhook.settings import ENV, SERVICE_NAMES, Lambda
from webhook.trackers.registry import REGISTRY

if TYPE_CHECKING:
    from infra.webhook.secrets import ReadTokens
    from infra.workspaces import WorkspaceBucket

#: SQS keeps a message at most this long, also after it moved to the DLQ (the enqueue time is kept).
DEAD_LETTER_RETENTION = cdk.Duration.days(14)


def powertools_layer_parameter(
    *, runtime: lambda_.Runtime, architecture: lambda_.Architecture, version: str
) -> str:
    """Public SSM parameter holding the Powertools layer ARN for this runtime/architecture/version."""
    return f"/aws/service/powertools/python/{architecture.name}/{runtime.name}/{version}"


class _LambdaBase(NamedTuple):
    """What the receiver and the worker share: runtime, architecture, Powertools layer, code, environment."""

    runtime: lambda_.Runtime
    architecture: lambda_.Architecture
    layer: lambda_.ILayerVersion
    code: lambda_.Code
    environment: dict[str, str]


class IssueWebhook(Construct):
    """Receive issue events from GitHub, GitLab and/or Jira Cloud, run the agent, answer on the issue.

    ``runtime_arn`` is the AgentCore runtime the worker invokes; everything else is in ``props``
    (:class:`~infra.webhook.props.WebhookProps`). Raises ``ValueError`` on invalid props
    (:func:`infra.webhook.props.check`).

    Attributes: ``url`` (the Function URL; GitHub also answers on it bare), ``tracker_urls`` (name → URL
    with the tracker's path), ``queue``, ``dead_letter_queue``, ``table``, ``receiver``, ``worker``,
    ``secrets`` (name → ``(webhook secret, token secret)``), and for GitHub ``webhook_secret`` and
    ``token_secret``.

    The construct ids below are part of the logical ids of the resources (``WebhookSecret``, ``Tasks``,
    ``Idempotency``, ``Receiver``, ...): a new id makes CloudFormation replace the resource, losing a secret's
    value or the queued jobs, so they stay as first deployed. Resources are created part by part in this
    order (secrets, queue, receiver, worker, outputs), which is also their order in the template.

    Fix jobs (``infra/webhook/fix.py``): ``job_events_queue`` is the queue the runtime sends job events to
    (created here as ``JobEvents`` when not given; attribute ``job_events_queue``), consumed by ``reporter``;
    ``workspaces`` the stage's snapshot bucket (large snapshots, large patches).
    """

    reporter: lambda_.Function
    sweeper: lambda_.Function
    job_events_queue: sqs.IQueue
    secrets: dict[str, tuple[secretsmanager.ISecret, secretsmanager.ISecret]]

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        runtime_arn: str,
        props: WebhookProps | None = None,
        job_events_queue: sqs.IQueue | None = None,
        workspaces: WorkspaceBucket | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        props = props or WebhookProps()
        checked = check(props)
        self._warn_unpinned(props, checked.trackers)
        self.secrets, secret_refs, read = add_tracker_secrets(self, props, checked.trackers)
        #: name → {"read" | "members": secret}, with read tokens on
        self.read_token_secrets = {
            name: {kind: secret for kind, (secret, _) in kinds.items()} for name, kinds in read.items()
        }
        self._read_tokens = read
        if "github" in self.secrets:
            self.webhook_secret, self.token_secret = self.secrets["github"]
        self._queue(props, checked.worker_timeout)
        base = self.lambda_base = self._lambda_base(props)
        self._receiver(props, base, {**checked.receiver_env, **secret_env(secret_refs, read, "receiver")})
        fix_env = fix_environment(checked, workspaces)
        self._worker(
            props,
            base,
            {**checked.worker_env, **secret_env(secret_refs, read, "worker"), **fix_env},
            runtime_arn=runtime_arn,
            timeout=checked.worker_timeout,
            read_timeout=checked.read_timeout,
        )
        # Fix jobs: the runtime's events queue (taken, or created here) and the reporter consuming it.
        add_fix_jobs(
            self,
            self,
            props,
            runtime_arn=runtime_arn,
            tracker_env={**checked.worker_env, **secret_env(secret_refs, read, "reporter")},
            fix_env=fix_env,
            job_events_queue=job_events_queue,
            workspaces=workspaces,
        )
        # Fix jobs whose result never comes (a microVM lost with its disk): ended at their deadline.
        add_sweeper(
            self, self, props, tracker_env={**checked.worker_env, **secret_env(secret_refs, read, "sweeper")}
        )
        self._outputs(secret_refs, read)

    def _warn_unpinned(self, props: WebhookProps, trackers: Sequence[str]) -> None:
        """The receiver answers only pinned repositories and projects (an event of any other is ignored before it
        costs anything), so a tracker without ids answers nothing: say so at synth, not by silence."""
        unpinned = {
            "github": (
                "webhook.repository_ids",
                props.github.repository_ids,
                "gh api repos/OWNER/REPO --jq .id",
            ),
            "gitlab": (
                "webhook.gitlab.project_ids",
                props.gitlab.project_ids,
                "the project's Settings > General",
            ),
        }
        for tracker in trackers:
            key, ids, where = unpinned.get(tracker, ("", (1,), ""))
            if not ids:
                cdk.Annotations.of(self).add_warning_v2(
                    f"agentkit:webhook-unpinned-{tracker}",
                    f"{key} is empty, so the {tracker} webhook answers no event: list the numeric ids to serve "
                    f"({where}).",
                )

    # ------------------------------------------------------------------ queue + DLQ + idempotency table
    def _queue(self, props: WebhookProps, worker_timeout: cdk.Duration) -> None:
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=DEAD_LETTER_RETENTION,
            removal_policy=props.removal_policy,
        )
        self.queue = sqs.Queue(
            self,
            "Tasks",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # Six times the worker's timeout, as AWS recommends for SQS event sources (at most 12 hours).
            visibility_timeout=cdk.Duration.seconds(min(6 * worker_timeout.to_seconds(), 43_200)),
            retention_period=cdk.Duration.days(4),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=props.max_receive_count
            ),
            removal_policy=props.removal_policy,
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
            removal_policy=props.removal_policy,
        )

    # ------------------------------------------------------------------ what both functions share
    def _lambda_base(self, props: WebhookProps) -> _LambdaBase:
        runtime = props.python_runtime or PYTHON_RUNTIME
        arch = props.architecture or lambda_.Architecture.ARM_64
        layer_arn = props.powertools_layer_arn or ssm.StringParameter.value_for_string_parameter(
            self,
            powertools_layer_parameter(runtime=runtime, architecture=arch, version=props.powertools_version),
        )
        return _LambdaBase(
            runtime=runtime,
            architecture=arch,
            layer=lambda_.LayerVersion.from_layer_version_arn(self, "PowertoolsLayer", layer_arn),
            code=package_code(),
            environment={ENV["metrics_namespace"]: props.metrics_namespace, ENV["log_level"]: "INFO"},
        )

    # ------------------------------------------------------------------ receiver
    def _receiver(self, props: WebhookProps, base: _LambdaBase, tracker_env: dict[str, str]) -> None:
        """The public Function URL: verifies the tracker's signature, enqueues each delivery once."""
        self.receiver = self._function(
            "Receiver",
            base,
            props,
            handler="webhook.receiver.handler",
            timeout=cdk.Duration.seconds(15),
            description="Issue webhook receiver: verify the tracker's signature, enqueue once per delivery",
            environment={
                **base.environment,
                **tracker_env,
                ENV["service_name"]: SERVICE_NAMES["receiver"],
                ENV["queue_url"]: self.queue.queue_url,
                ENV["idempotency_table"]: self.table.table_name,
                ENV["max_body_bytes"]: str(props.max_body_bytes),
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
        # The webhook secrets; a GitLab token too (a webhook carries no role: the members API decides who may
        # trigger): with read tokens on, the read-only members token, never one that can write.
        self.grant_secrets("receiver", self.receiver)
        self.function_url = self.receiver.add_function_url(auth_type=lambda_.FunctionUrlAuthType.NONE)
        self.url = self.function_url.url
        # The Function URL ends with "/": the tracker's path is appended to it (self.secrets: one per tracker).
        self.tracker_urls = {name: cdk.Fn.join("", [self.url, name]) for name in self.secrets}

    # ------------------------------------------------------------------ worker
    def _worker(
        self,
        props: WebhookProps,
        base: _LambdaBase,
        tracker_env: dict[str, str],
        *,
        runtime_arn: str,
        timeout: cdk.Duration,
        read_timeout: int,
    ) -> None:
        """Fed by the queue one job at a time: invokes the runtime, posts the answer on the issue."""
        environment = {
            **base.environment,
            ENV["service_name"]: SERVICE_NAMES["worker"],
            **tracker_env,
            ENV["agent_runtime_arn"]: runtime_arn,
            ENV["actor_header"]: props.actor_header,
            ENV["invoke_read_timeout_seconds"]: str(read_timeout),
            # Stored replies (replies.py) outlive every redelivery, DLQ redrives included.
            ENV["idempotency_table"]: self.table.table_name,
            ENV["reply_ttl_seconds"]: str(int(DEAD_LETTER_RETENTION.to_seconds())),
        }
        if props.runtime_endpoint_name:
            environment[ENV["agent_runtime_qualifier"]] = props.runtime_endpoint_name
        self.worker = self._function(
            "Worker",
            base,
            props,
            handler="webhook.worker.handler",
            timeout=timeout,
            description="Issue webhook worker: invoke the AgentCore runtime, post the answer on the issue",
            environment=environment,
            ephemeral_storage=snapshot_spool_storage(),
        )
        self.worker.add_event_source(
            event_sources.SqsEventSource(
                self.queue,
                batch_size=1,
                report_batch_item_failures=True,
                max_concurrency=props.max_concurrency,
            )
        )
        self.worker.add_to_role_policy(
            iam.PolicyStatement(
                # ForUser: the worker names the tracker user as the runtime user id, the actor the runtime
                # accepts only from callers holding this permission (runtime/identity.py).
                actions=[
                    "bedrock-agentcore:InvokeAgentRuntime",
                    "bedrock-agentcore:InvokeAgentRuntimeForUser",
                ],
                # Exactly the endpoint this worker calls (the unqualified call goes to DEFAULT).
                resources=[
                    runtime_arn,
                    f"{runtime_arn}/runtime-endpoint/{props.runtime_endpoint_name or 'DEFAULT'}",
                ],
            )
        )
        self.grant_secrets("worker", self.worker)
        self.worker.add_to_role_policy(
            iam.PolicyStatement(
                actions=["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
                resources=[self.table.table_arn],
                # Only the worker's own items (id "reply#<key>"), not the receiver's idempotency records.
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["reply#*"]}},
            )
        )

    # ------------------------------------------------------------------ outputs
    def grant_secrets(self, function: Lambda, fn: lambda_.Function) -> None:
        """``secretsmanager:GetSecretValue`` on exactly the secrets ``function`` reads
        (:func:`infra.webhook.secrets.reads`)."""
        grant_secrets(self.secrets, self._read_tokens, function, fn)

    def _outputs(self, secret_refs: dict[str, tuple[str, str]], read: ReadTokens) -> None:
        """Stack outputs: their logical ids are the documented names, without a path hash."""
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
        for name, kinds in read.items():
            title, entry = TRACKER_SECRETS[name].title, REGISTRY[name]
            if "read" in kinds:
                self._output(
                    entry.read_token_output, kinds["read"][1], f"Secret holding the {title} read token"
                )
            if "members" in kinds:
                self._output(
                    entry.members_token_output,
                    kinds["members"][1],
                    f"Secret holding the {title} members token",
                )

    def _output(self, name: str, value: str, description: str) -> None:
        """A stack output named ``name``; a second webhook in the same stack prefixes its construct id."""
        stack = cdk.Stack.of(self)
        output_id = name if stack.node.try_find_child(name) is None else f"{self.node.id}{name}"
        cdk.CfnOutput(stack, output_id, value=value, description=description)

    # ------------------------------------------------------------------ one Lambda function
    def function(self, *args: Any, **kwargs: Any) -> lambda_.Function:
        """:meth:`_function` for the parts built in sibling modules (``infra/webhook/fix.py``)."""
        return self._function(*args, **kwargs)

    def _function(
        self,
        construct_id: str,
        base: _LambdaBase,
        props: WebhookProps,
        *,
        handler: str,
        timeout: cdk.Duration,
        description: str,
        environment: dict[str, str],
        ephemeral_storage: cdk.Size | None = None,
        memory_size: int = 256,
    ) -> lambda_.Function:
        """A function with its own log group and role (no AWSLambdaBasicExecutionRole) and active tracing."""
        log_group = logs.LogGroup(
            self, f"{construct_id}Logs", retention=props.log_retention, removal_policy=props.removal_policy
        )
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
        nag.acknowledge(
            xray,
            [nag.iam5("*", "X-Ray PutTraceSegments/PutTelemetryRecords have no resource-level permissions.")],
        )
        fn = lambda_.Function(
            self,
            construct_id,
            runtime=base.runtime,
            architecture=base.architecture,
            handler=handler,
            code=base.code,
            layers=[base.layer],
            role=role,
            timeout=timeout,
            memory_size=memory_size,
            ephemeral_storage_size=ephemeral_storage,
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
