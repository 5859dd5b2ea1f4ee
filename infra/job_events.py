"""The events queue of asynchronous jobs: where the runtime reports a job's progress and its one result.

A turn run as a job (``"async": true``, docs/http-api.md#asynchronous-jobs) answers at once and sends its events to
this queue; the trusted side (the issue webhook) consumes them. Resources: an SQS queue with SQS-managed encryption,
TLS only (``enforceSSL``), messages up to 1 MiB (1,048,576 bytes, SQS's maximum and what the runtime fits a result
into: ``runtime/jobs/protocol.py``), and a dead-letter queue for events its consumer failed on
``max_receive_count`` times (kept 14 days: a redrive can still post them).

IAM: :meth:`JobEvents.grant_send` gives the runtime's role exactly ``sqs:SendMessage`` on the queue (SQS-managed
encryption needs no KMS permission). The consumer's grants (receive, delete) are its own construct's
(``queue.grant_consume_messages``). The runtime learns the queue from ``AGENTKIT_JOB_EVENTS_QUEUE_URL``.

Attributes for the consumer: ``queue`` (``queue_arn`` / ``queue_url``), ``dead_letter_queue``. Output:
``JobEventsDeadLetterQueueUrl``.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from runtime.jobs.protocol import SQS_MAX_MESSAGE_BYTES

#: SQS keeps a message at most this long, also after it moved to the DLQ (the enqueue time is kept): the job
#: patches in S3 live as long (``infra/workspaces.py``), so a redriven result still finds its patch.
RETENTION = cdk.Duration.days(14)
#: How long a consumer may take for one event unless told (the stack passes the webhook worker's timeout).
CONSUMER_TIMEOUT = cdk.Duration.minutes(2)


class JobEvents(Construct):
    """The job events queue and its dead-letter queue.

    Args:
        consumer_timeout: the longest the consumer (a Lambda function's timeout) takes for one message; the
            queue's visibility timeout is six times it, as AWS recommends for SQS event sources (at most 12 h).
        max_receive_count: receives before a message moves to the dead-letter queue.
        removal_policy: the stage's.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        consumer_timeout: cdk.Duration = CONSUMER_TIMEOUT,
        max_receive_count: int = 5,
        removal_policy: cdk.RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=RETENTION,
            max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
            removal_policy=removal_policy,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=cdk.Duration.seconds(min(6 * consumer_timeout.to_seconds(), 43_200)),
            retention_period=RETENTION,
            max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=max_receive_count
            ),
            removal_policy=removal_policy,
        )
        self.queue_arn = self.queue.queue_arn
        self.queue_url = self.queue.queue_url
        cdk.CfnOutput(  # at stack scope: the logical id is the documented name, without a path hash
            cdk.Stack.of(self),
            "JobEventsDeadLetterQueueUrl",
            value=self.dead_letter_queue.queue_url,
            description="Asynchronous job events their consumer failed on (redrive them once it is fixed)",
        )

    def grant_send(self, role: iam.IRole) -> None:
        """``sqs:SendMessage`` on the queue, nothing else (the runtime's role)."""
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[self.queue.queue_arn])
        )
