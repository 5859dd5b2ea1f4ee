"""Where job events go: SQS ``SendMessage`` (and S3 ``PutObject`` for a patch too large for a message).

Both take an injected boto3 client (:mod:`runtime.aws` builds them with botocore's ``standard`` retry mode: a
throttling error, a 5xx or a connection error is retried with exponential backoff and jitter, a bounded number
of times; ``botocore/retries/standard.py``). A send that still fails raises :class:`EventsUnavailable`; the
caller keeps a result on disk and sends it again later (:mod:`runtime.jobs.outbox`).

A FIFO queue (URL ending ``.fifo``) gets the job id as ``MessageGroupId`` and ``<job id>:<seq>`` as
``MessageDeduplicationId``: one job's events stay in order and a re-sent one is dropped within SQS's five-minute
deduplication interval. A standard queue gets neither (SQS refuses them there).

IAM: ``sqs:SendMessage`` on the queue (plus ``kms:GenerateDataKey``/``kms:Decrypt`` on its key if it uses a
customer-managed KMS key; the stack's queue uses SQS-managed encryption, which needs none); ``s3:PutObject`` on
``<bucket>/jobs/*``.
"""

from __future__ import annotations

import logging
from typing import Any

from runtime.jobs.protocol import JobMessage, encode_message

logger = logging.getLogger(__name__)


#: SQS errors that refuse the message itself: sending the same body again can never succeed. ``InvalidMessageContents``
#: is ``SendMessage``'s own (botocore's SQS model 2012-11-05, ``SendMessage.errors``: "characters outside the allowed
#: set"); the others are the common parameter errors of AWS query/JSON APIs (a body over the queue's
#: ``MaximumMessageSize`` is ``InvalidParameterValue``). Every other error (throttling, 5xx, a connection error, a
#: missing queue, KMS or access errors) concerns the queue or the account: it heals when SQS or its configuration
#: does, so such a message is retried.
PERMANENT_CODES = frozenset(
    {
        "InvalidMessageContents",
        "InvalidParameterValue",
        "InvalidParameterCombination",
        "MissingParameter",
        "ValidationError",
        "UnsupportedOperation",
    }
)


class EventsUnavailable(Exception):
    """SQS (or S3) did not take the message after the client's retries.

    ``permanent``: SQS refused this message itself (:data:`PERMANENT_CODES`); sending it again cannot succeed.
    """

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


def error_code(exc: BaseException) -> str | None:
    """The AWS error code of a botocore ``ClientError`` (None for any other exception)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return code if isinstance(code, str) else None


class SqsEvents:
    """Sends job messages to one queue.

    Args:
        client: a boto3 SQS client (retries configured on it).
        queue_url: ``AGENTKIT_JOB_EVENTS_QUEUE_URL``.
    """

    def __init__(self, *, client: Any, queue_url: str) -> None:
        self.client = client
        self.queue_url = queue_url
        self.fifo = queue_url.endswith(".fifo")

    def send(self, message: JobMessage) -> None:
        """Send one message (blocking; run it in a thread). Raises :class:`EventsUnavailable`."""
        params: dict[str, Any] = {"QueueUrl": self.queue_url, "MessageBody": encode_message(message)}
        if self.fifo:
            params["MessageGroupId"] = message["job_id"]
            params["MessageDeduplicationId"] = f"{message['job_id']}:{message['seq']}"
        try:
            self.client.send_message(**params)
        except Exception as exc:  # botocore's ClientError, EndpointConnectionError, ...: all mean "not sent"
            raise EventsUnavailable(
                f"{type(exc).__name__}: {exc}", permanent=error_code(exc) in PERMANENT_CODES
            ) from exc


class S3Patches:
    """Puts job patches in the workspace bucket (``AGENTKIT_WORKSPACE_BUCKET``)."""

    def __init__(self, *, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    def put(self, key: str, data: bytes) -> str:
        """Put ``data`` under ``key``; returns its ``s3://`` URI. Raises :class:`EventsUnavailable`."""
        try:
            self.client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=data,
                ContentType="text/x-diff; charset=utf-8",
            )
        except Exception as exc:
            raise EventsUnavailable(f"S3 PutObject failed: {type(exc).__name__}: {exc}") from exc
        return f"s3://{self.bucket}/{key}"
