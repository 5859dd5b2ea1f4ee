"""The fix-job part of the issue webhook (:class:`infra.webhook.construct.IssueWebhook`): the runtime's events queue, the
reporter Lambda that consumes it, and the extra grants fix jobs need.

Fix jobs run as asynchronous jobs of the runtime: the worker hands the turn over and returns; the runtime sends
progress and one result per job to the **events queue** (``AGENTKIT_JOB_EVENTS_QUEUE_URL``, SSE, TLS only, with a
DLQ); the **reporter** (``webhook.reporter.handler``) edits the progress comment and opens the draft pull/merge request;
the **sweeper** (``webhook.sweeper.handler``, on a schedule: ``infra/webhook/sweep.py``) ends the jobs whose result
never came by their deadline, and expires the approvals nobody answered in time.

IAM, least privilege:

* worker — ``bedrock-agentcore:StopRuntimeSession`` on the runtime ARN and its endpoint (``/agent stop``; the
  Service Authorization Reference lists the ``runtime`` and ``runtime-endpoint`` resource types for it);
  ``s3:PutObject`` on ``<bucket>/<stage>/jobs/*`` (snapshots over the inline cap) when a workspace bucket is set;
* reporter — consume the events queue; ``dynamodb:GetItem/UpdateItem`` on the table for ``reply#*`` keys;
  ``secretsmanager:GetSecretValue`` on the token secrets (and the read token secrets:
  ``infra/webhook/secrets.py``); ``s3:GetObject`` on ``<bucket>/jobs/*`` (patches too
  large for a message, where the runtime puts them);
* the runtime's role — ``sqs:SendMessage`` on the events queue (``infra/job_events.py``, granted by the stack).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs

from infra import nag
from infra.job_events import CONSUMER_TIMEOUT, RETENTION
from runtime.jobs.protocol import SQS_MAX_MESSAGE_BYTES
from webhook.repo import DEFAULT_LIMITS, SnapshotLimits
from webhook.settings import ENV, SERVICE_NAMES

if TYPE_CHECKING:
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_secretsmanager as secretsmanager
    from constructs import Construct

    from infra.webhook.props import Checked, WebhookProps
    from infra.workspaces import WorkspaceBucket
    from webhook.settings import Lambda

#: The reporter edits a comment and opens a pull request per result: a few API calls, well under this. The job
#: events queue's visibility timeout is six times it (``infra/job_events.py``'s ``consumer_timeout``).
REPORTER_TIMEOUT = CONSUMER_TIMEOUT
#: The reporter's peak memory for the largest patch the runtime sends (``AGENTKIT_WORKSPACE_MAX_PATCH_BYTES``, 20 MiB),
#: measured by ``benchmarks/fix_scale.py --files 5000 --mb 46 --changed 1000 --rewrite``: 222 MiB with the reporter's
#: own imports (72 MiB, boto3 included) for a 19.4 MiB patch rewriting 1,000 files on GitHub — the patch text, its
#: parsed lines, the files' old and new bytes and the commit's JSON. The repository itself adds a few MiB whatever its
#: size (the reporter keeps the bytes of the files its patch reads only).
REPORTER_PEAK_MIB = 222
#: Half again over that peak for what the benchmark does not hold (GitLab's base64 actions, the Lambda runtime's own
#: client): Lambda's 256 MiB would leave 34 MiB.
REPORTER_MEMORY_MIB = 512
#: How long a result being reported blocks its duplicate (reporter/``webhook.fix.jobs`` ``JOB_LEASE_SECONDS``): longer than a
#: reporter can run.
JOB_LEASE_SECONDS = 300


class FixHost(Protocol):
    """What the fix-job part uses of the webhook construct (:class:`infra.webhook.construct.IssueWebhook`), named here so
    this module does not import the construct that composes it."""

    job_events_queue: sqs.IQueue
    worker: lambda_.Function
    reporter: lambda_.Function
    lambda_base: Any
    table: dynamodb.Table
    secrets: dict[str, tuple[secretsmanager.ISecret, secretsmanager.ISecret]]

    def function(self, *args: Any, **kwargs: Any) -> lambda_.Function: ...

    def grant_secrets(self, function: Lambda, fn: lambda_.Function) -> None: ...


def snapshot_spool_storage(limits: SnapshotLimits = DEFAULT_LIMITS) -> cdk.Size:
    """The worker's ``/tmp`` (Lambda ephemeral storage) for one streamed snapshot at a time: the tracker's
    archive as downloaded, the files' contents spooled and the snapshot written (``webhook/repo/snapshot.py``'s
    caps), with half again to spare; never below Lambda's default of 512 MiB."""
    need = limits.max_download_bytes + limits.max_unpacked_bytes + limits.max_archive_bytes
    return cdk.Size.mebibytes(max(512, math.ceil(need * 1.5 / (1024 * 1024))))


def archive_spool_storage(limits: SnapshotLimits = DEFAULT_LIMITS) -> cdk.Size:
    """The reporter's ``/tmp``: the tracker's archive as downloaded (it reads its patch's files from there,
    ``webhook/repo/snapshot.py``'s ``read_view``), half again to spare; never below Lambda's default of 512 MiB."""
    return cdk.Size.mebibytes(max(512, math.ceil(limits.max_download_bytes * 1.5 / (1024 * 1024))))


def fix_environment(checked: Checked, workspaces: WorkspaceBucket | None) -> dict[str, str]:
    """The fix-job settings the worker and the reporter share (``WORKSPACE_S3_URI`` with a workspace bucket)."""
    env = dict(checked.fix_env)
    if workspaces is not None:
        env[ENV["workspace_s3_uri"]] = workspaces.uri
    return env


def add_fix_jobs(
    scope: Construct,
    hook: FixHost,
    props: WebhookProps,
    *,
    runtime_arn: str,
    tracker_env: dict[str, str],
    fix_env: dict[str, str],
    job_events_queue: sqs.IQueue | None,
    workspaces: WorkspaceBucket | None,
) -> None:
    """Create (or take) the events queue and the reporter; grant the worker stop and snapshot upload. ``scope`` is
    the construct a queue is created in and ``hook`` what is read and set on it (both the webhook construct)."""
    if job_events_queue is None:
        # A webhook outside the kit's stack gets its own queue (the stack passes infra/job_events.py's, whose
        # output would clash between two webhooks of one stack): the same properties, for this reporter.
        dead = sqs.Queue(
            scope,
            "JobEventsDeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=RETENTION,
            max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
            removal_policy=props.removal_policy,
        )
        job_events_queue = sqs.Queue(
            scope,
            "JobEvents",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=cdk.Duration.seconds(6 * int(REPORTER_TIMEOUT.to_seconds())),
            retention_period=RETENTION,
            max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
            dead_letter_queue=sqs.DeadLetterQueue(queue=dead, max_receive_count=5),
            removal_policy=props.removal_policy,
        )
    hook.job_events_queue = job_events_queue
    hook.worker.add_to_role_policy(
        iam.PolicyStatement(
            actions=["bedrock-agentcore:StopRuntimeSession"],
            resources=[
                runtime_arn,
                f"{runtime_arn}/runtime-endpoint/{props.runtime_endpoint_name or 'DEFAULT'}",
            ],
        )
    )
    base = hook.lambda_base
    environment: dict[str, Any] = {
        **base.environment,
        **tracker_env,
        **fix_env,
        ENV["service_name"]: SERVICE_NAMES["reporter"],
        ENV["idempotency_table"]: hook.table.table_name,
        ENV["job_lease_seconds"]: str(JOB_LEASE_SECONDS),
    }
    hook.reporter = hook.function(
        "Reporter",
        base,
        props,
        handler="webhook.reporter.handler",
        timeout=REPORTER_TIMEOUT,
        description="Issue webhook reporter: fix job progress and results onto the issue, the draft pull request",
        environment=environment,
        ephemeral_storage=archive_spool_storage(),
        memory_size=REPORTER_MEMORY_MIB,
    )
    hook.reporter.add_event_source(
        event_sources.SqsEventSource(job_events_queue, batch_size=1, report_batch_item_failures=True)
    )
    # The tokens (the push, the pull/merge request) and the read tokens (the bot's comments).
    hook.grant_secrets("reporter", hook.reporter)
    hook.reporter.add_to_role_policy(
        iam.PolicyStatement(
            actions=["dynamodb:GetItem", "dynamodb:UpdateItem"],
            resources=[hook.table.table_arn],
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["reply#*"]}},
        )
    )
    if workspaces is not None:
        bucket = workspaces.bucket
        hook.worker.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject"], resources=[bucket.arn_for_objects(f"{workspaces.prefix}jobs/*")]
            )
        )
        assert hook.reporter.role is not None and hook.worker.role is not None
        workspaces.grant_read_job_patches(hook.reporter.role)
        bucket_id = cdk.Stack.of(hook).get_logical_id(bucket.node.default_child)  # type: ignore[arg-type]
        nag.acknowledge(
            hook.worker.role,
            [
                nag.iam5(
                    f"<{bucket_id}.Arn>/{workspaces.prefix}jobs/*",
                    "Each fix job's snapshot gets its own key under the stage's jobs/ prefix.",
                )
            ],
        )
