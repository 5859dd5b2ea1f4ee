"""The fix-job sweeper of the webhook (:class:`infra.webhook.construct.IssueWebhook`): a scheduled Lambda
(``webhook.sweeper.handler``) that ends fix jobs with no result past their deadline and tells the issue.

A rule of the default EventBridge bus invokes it every ``WebhookProps.sweep_interval`` (15 minutes by default; a
sweep is idempotent, two overlapping runs change each job once). Its settings: ``JOB_DEADLINE_SECONDS``
(``WebhookProps.job_deadline``), the trackers' token secret names and API URLs (it edits the progress comment).

IAM, least privilege: ``dynamodb:Scan`` on the table, only with ``Select=SPECIFIC_ATTRIBUTES`` and only the
attributes the sweep reads (:data:`webhook.fix.jobs.SCAN_ATTRIBUTES`: no stored reply's text, no receiver
record's data; the ``dynamodb:Attributes`` / ``dynamodb:Select`` condition keys, as in IAM's example "Amazon
DynamoDB: Allows access to specific attributes"); ``dynamodb:GetItem/UpdateItem`` for ``reply#*`` keys only;
``secretsmanager:GetSecretValue`` on the enabled trackers' token secrets (the read tokens with ``read_tokens``). No
PutItem, no DeleteItem, no queue, no runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam

from webhook.fix.jobs import SCAN_ATTRIBUTES
from webhook.settings import DEFAULT_JOB_DEADLINE_SECONDS, ENV, SERVICE_NAMES, Lambda, WebhookSettings

if TYPE_CHECKING:
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_secretsmanager as secretsmanager
    from constructs import Construct

    from infra.webhook.props import WebhookProps


class SweepHost(Protocol):
    """What the sweeper uses of the webhook construct (:class:`infra.webhook.construct.IssueWebhook`)."""

    sweeper: lambda_.Function
    lambda_base: Any
    table: dynamodb.Table
    secrets: dict[str, tuple[secretsmanager.ISecret, secretsmanager.ISecret]]

    def function(self, *args: Any, **kwargs: Any) -> lambda_.Function: ...

    def grant_secrets(self, function: Lambda, fn: lambda_.Function) -> None: ...


#: A sweep reads a bounded Scan and edits a few comments: well under this.
SWEEPER_TIMEOUT = cdk.Duration.minutes(5)


def job_deadline_seconds(props: WebhookProps) -> int:
    """``JOB_DEADLINE_SECONDS`` of ``props``. Raises ``ValueError`` below the settings' floor."""
    seconds = int(props.job_deadline.to_seconds()) if props.job_deadline else DEFAULT_JOB_DEADLINE_SECONDS
    floor = WebhookSettings.model_fields["job_deadline_seconds"].metadata[0].ge
    if seconds < floor:
        raise ValueError(f"job_deadline must be at least {floor} s")
    if not 60 <= props.sweep_interval.to_seconds() <= 24 * 3600:
        raise ValueError("sweep_interval must be between 1 minute and 1 day")
    return seconds


def add_sweeper(
    scope: Construct, hook: SweepHost, props: WebhookProps, *, tracker_env: dict[str, str]
) -> None:
    """Create the sweeper Lambda, its schedule and its grants on ``hook`` (the webhook construct)."""
    base = hook.lambda_base
    fn: lambda_.Function = hook.function(
        "Sweeper",
        base,
        props,
        handler="webhook.sweeper.handler",
        timeout=SWEEPER_TIMEOUT,
        description="Issue webhook sweeper: end fix jobs with no result past their deadline, say so on the issue",
        environment={
            **base.environment,
            **tracker_env,
            ENV["service_name"]: SERVICE_NAMES["sweeper"],
            ENV["idempotency_table"]: hook.table.table_name,
            ENV["job_deadline_seconds"]: str(job_deadline_seconds(props)),
        },
    )
    hook.sweeper = fn
    events.Rule(
        scope,
        "SweepSchedule",
        description="Sweep the issue webhook's fix jobs past their deadline",
        schedule=events.Schedule.rate(props.sweep_interval),
        targets=[targets.LambdaFunction(fn)],
    )
    # The tokens it edits comments with: the read tokens when there are (never a token that pushes).
    hook.grant_secrets("sweeper", fn)
    fn.add_to_role_policy(
        iam.PolicyStatement(
            actions=["dynamodb:GetItem", "dynamodb:UpdateItem"],
            resources=[hook.table.table_arn],
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["reply#*"]}},
        )
    )
    fn.add_to_role_policy(
        iam.PolicyStatement(
            actions=["dynamodb:Scan"],
            resources=[hook.table.table_arn],
            conditions={
                "ForAllValues:StringEquals": {"dynamodb:Attributes": list(SCAN_ATTRIBUTES)},
                "StringEquals": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"},
            },
        )
    )
