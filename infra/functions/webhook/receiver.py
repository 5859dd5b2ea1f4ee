"""Webhook receiver Lambda (Function URL, auth NONE): verify, decide, enqueue once.

``POST /`` with a GitHub webhook delivery. Responses (JSON ``{"status"|"error", ...}``):
200 ``ping``; 202 ``queued`` / ``duplicate`` / ``ignored``; 400 malformed JSON, wrong payload shape
or missing ``X-GitHub-Event`` / ``X-GitHub-Delivery``; 401 bad or missing ``X-Hub-Signature-256``;
413 body over ``MAX_BODY_BYTES``; 415 not ``application/json``; 500 misconfiguration.

Accepted deliveries become one SQS message (an :class:`trackers.AgentTask` as JSON). Enqueueing is
idempotent on the sha256 of the raw, signature-verified body (Powertools Idempotency, DynamoDB) —
not on ``X-GitHub-Delivery``, which is not covered by the signature: a captured signed body replayed
with a new delivery id, or GitHub's "Redeliver", does not start a second agent run. The delivery id
is kept in the logs and the task; the body hash travels in the task as ``idempotency_key`` (the
worker stores its finished reply under it). Nothing touches DynamoDB or SQS before the signature is verified.

Environment:
  QUEUE_URL                 SQS queue for accepted tasks (required)
  IDEMPOTENCY_TABLE         DynamoDB table (partition key ``id``, TTL ``expiration``) (required)
  WEBHOOK_SECRET_NAME       Secrets Manager name/ARN of the webhook secret (required)
  TRIGGER_LABEL             label that triggers the agent (default ``agent``; empty disables)
  TRIGGER_MENTION           mention in a comment that triggers it (default ``/agent``; empty disables)
  BOT_LOGIN                 login of the account that posts replies (its comments are ignored)
  ALLOWED_ASSOCIATIONS      comma-separated ``author_association`` values whose mentions trigger the
                            agent (default ``OWNER,MEMBER,COLLABORATOR``; ``*`` = anyone)
  MAX_BODY_BYTES            default 1048576
  IDEMPOTENCY_TTL_SECONDS   how long a body hash is remembered (default 7 days)
  SECRET_MAX_AGE_SECONDS    secret cache lifetime (default 300)
  POWERTOOLS_SERVICE_NAME / POWERTOOLS_METRICS_NAMESPACE / LOG_LEVEL  (Powertools)

IAM: ``sqs:SendMessage`` on the queue; ``dynamodb:GetItem/PutItem/UpdateItem/DeleteItem`` on the
table; ``secretsmanager:GetSecretValue`` on the webhook secret; X-Ray put (tracing).
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response, content_types
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
from aws_lambda_powertools.utilities.parameters import SecretsProvider
from trackers import (
    DEFAULT_ALLOWED_ASSOCIATIONS,
    DEFAULT_MAX_BODY_BYTES,
    AgentTask,
    GitHubTracker,
    InboundRequest,
    IssueTracker,
    WebhookError,
)

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "github-webhook")
logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(
    namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "AgentCoreClaudeKit"), service=SERVICE
)

DEFAULT_IDEMPOTENCY_TTL_SECONDS = 7 * 24 * 3600


@dataclass
class ReceiverDeps:
    """Everything the receiver talks to; built from the environment or injected by tests."""

    tracker: IssueTracker
    sqs: Any
    queue_url: str
    persistence: BasePersistenceLayer
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS


def _require(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise RuntimeError(f"environment variable {name} is required")
    return value


def build_tracker(*, secrets_client: Any = None) -> IssueTracker:
    """The tracker adapter for the inbound side (GitHub; see trackers.py for adding others)."""
    provider = SecretsProvider(boto3_client=secrets_client or boto3.client("secretsmanager"))
    secret_name = _require("WEBHOOK_SECRET_NAME")
    max_age = int(os.environ.get("SECRET_MAX_AGE_SECONDS", "300"))
    return GitHubTracker(
        webhook_secret=lambda: str(provider.get(secret_name, max_age=max_age) or ""),
        trigger_label=os.environ.get("TRIGGER_LABEL", "agent"),
        trigger_mention=os.environ.get("TRIGGER_MENTION", "/agent"),
        bot_login=os.environ.get("BOT_LOGIN", ""),
        allowed_associations=os.environ.get(
            "ALLOWED_ASSOCIATIONS", ",".join(sorted(DEFAULT_ALLOWED_ASSOCIATIONS))
        ),
        max_body_bytes=int(os.environ.get("MAX_BODY_BYTES", str(DEFAULT_MAX_BODY_BYTES))),
    )


def deps_from_env() -> ReceiverDeps:
    return ReceiverDeps(
        tracker=build_tracker(),
        sqs=boto3.client("sqs"),
        queue_url=_require("QUEUE_URL"),
        persistence=DynamoDBPersistenceLayer(table_name=_require("IDEMPOTENCY_TABLE")),
        idempotency_ttl_seconds=int(
            os.environ.get("IDEMPOTENCY_TTL_SECONDS", str(DEFAULT_IDEMPOTENCY_TTL_SECONDS))
        ),
    )


def _json(status: int, body: dict[str, Any]) -> Response:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def build_app(deps: ReceiverDeps) -> tuple[LambdaFunctionUrlResolver, IdempotencyConfig]:
    """Wire the resolver to ``deps``. Returns the app and the idempotency config (for the Lambda context)."""
    app = LambdaFunctionUrlResolver()
    config = IdempotencyConfig(
        event_key_jmespath="body_sha256",
        raise_on_no_idempotency_key=True,
        expires_after_seconds=deps.idempotency_ttl_seconds,
        # Called only when a stored result is returned instead of running enqueue() again.
        response_hook=lambda response, _record: {**response, "replayed": True},
    )

    @idempotent_function(data_keyword_argument="request", persistence_store=deps.persistence, config=config)
    def enqueue(*, request: dict[str, Any]) -> dict[str, Any]:
        """``request``: ``{"body_sha256": <hex of the verified raw body>, "task": <AgentTask dict>}``."""
        parsed = AgentTask.model_validate(request["task"])
        sent = deps.sqs.send_message(
            QueueUrl=deps.queue_url,
            MessageBody=parsed.model_dump_json(),
            MessageAttributes={
                "delivery_id": {"DataType": "String", "StringValue": parsed.delivery_id},
                "tracker": {"DataType": "String", "StringValue": parsed.tracker},
            },
        )
        return {"message_id": sent["MessageId"]}

    @app.exception_handler(WebhookError)
    def on_webhook_error(exc: WebhookError) -> Response:
        metrics.add_metric(name="WebhookRejected", unit=MetricUnit.Count, value=1)
        log = logger.error if exc.http_status >= 500 else logger.warning
        log("webhook rejected", extra={"code": exc.code, "status": exc.http_status, "reason": exc.message})
        return _json(exc.http_status, {"error": exc.code, "message": exc.message})

    @app.post("/")
    @tracer.capture_method
    def receive() -> Response:
        event = app.current_event
        raw = event.body or ""
        body = base64.b64decode(raw) if event.is_base64_encoded else raw.encode("utf-8")
        decision = deps.tracker.parse_request(InboundRequest.create(dict(event.headers), body))
        if decision.kind == "ping":
            return _json(200, {"status": "pong"})
        if decision.kind == "ignored" or decision.task is None:
            metrics.add_metric(name="WebhookIgnored", unit=MetricUnit.Count, value=1)
            logger.info("webhook ignored", extra={"reason": decision.reason})
            return _json(202, {"status": "ignored", "reason": decision.reason})
        # parse_request verified the signature over exactly these bytes. The worker keys its stored
        # reply on the same hash (task.idempotency_key).
        body_sha256 = hashlib.sha256(body).hexdigest()
        task = decision.task.model_copy(update={"idempotency_key": body_sha256})
        context = {
            "delivery_id": task.delivery_id,
            "body_sha256": body_sha256,
            "repository": task.repository,
            "issue": task.issue_number,
        }
        try:
            result = enqueue(request={"body_sha256": body_sha256, "task": task.model_dump()})
        except IdempotencyAlreadyInProgressError:
            logger.info("delivery already being enqueued", extra=context)
            return _json(202, {"status": "duplicate", "delivery_id": task.delivery_id})
        if result.get("replayed"):
            metrics.add_metric(name="WebhookDuplicate", unit=MetricUnit.Count, value=1)
            logger.info("delivery replayed; not enqueued again", extra=context)
            return _json(202, {"status": "duplicate", "delivery_id": task.delivery_id})
        metrics.add_metric(name="WebhookAccepted", unit=MetricUnit.Count, value=1)
        logger.info("webhook queued", extra={**context, "message_id": result["message_id"]})
        return _json(
            202,
            {
                "status": "queued",
                "delivery_id": task.delivery_id,
                "message_id": result["message_id"],
                "session_id": task.runtime_session_id,
            },
        )

    return app, config


_wired: tuple[LambdaFunctionUrlResolver, IdempotencyConfig] | None = None


def configure(deps: ReceiverDeps | None) -> None:
    """Install ``deps`` (tests) or reset to lazily building them from the environment (``None``)."""
    global _wired
    _wired = build_app(deps) if deps is not None else None


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _wired
    if _wired is None:
        _wired = build_app(deps_from_env())
    app, config = _wired
    config.register_lambda_context(context)
    return app.resolve(event, context)
