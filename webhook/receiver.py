"""Webhook receiver Lambda (Function URL, auth NONE): verify, decide, enqueue once — for every tracker.

One Function URL, one path per enabled tracker: ``POST /github`` (also the bare ``POST /``, kept for
webhooks configured before there were paths), ``POST /gitlab``, ``POST /jira``. A path of a tracker that
is not enabled (``TRACKERS``) answers 404. Each adapter verifies its tracker's signature or token
before anything else is touched (:mod:`trackers`). Responses (JSON ``{"status"|"error", ...}``):
200 ``pong``; 202 ``queued`` / ``duplicate`` / ``ignored``; 400 malformed JSON, wrong payload shape,
missing event headers or a stale signed timestamp; 401 bad or missing signature/token; 404 unknown
path; 413 body over ``MAX_BODY_BYTES``; 415 not ``application/json``; 500 misconfiguration; 502 the
tracker's API (GitLab members) could not be asked.

Accepted deliveries become one SQS message (an :class:`trackers.AgentTask` as JSON). Enqueueing is
idempotent on the sha256 of the raw, signature-verified body (Powertools Idempotency, DynamoDB) — not
on a delivery header, which no tracker signs: a captured body replayed under a new delivery id, or a
tracker's "Redeliver", does not start a second agent run. The delivery id is kept in the logs and the
task; the body hash travels in the task as ``idempotency_key`` (the worker stores its finished reply
under it). Nothing touches DynamoDB or SQS before the request is verified.

Environment: the variables :mod:`webhook.settings` declares for the receiver (``QUEUE_URL``,
``IDEMPOTENCY_TABLE``, ``TRACKERS``, the trackers' webhook secret names and trigger settings, …).

IAM: ``sqs:SendMessage`` on the queue; ``dynamodb:GetItem/PutItem/UpdateItem/DeleteItem`` on the table;
``secretsmanager:GetSecretValue`` on the enabled trackers' webhook secrets (and the GitLab token, for the
members API); X-Ray put.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response, content_types
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
from botocore.exceptions import BotoCoreError, ClientError

from webhook import wiring
from webhook.errors import NotFoundError, WebhookError
from webhook.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS, ENV, SERVICE_NAMES, WebhookSettings
from webhook.trackers import AgentTask, InboundRequest, IssueTracker
from webhook.webhook_metrics import TrackerMetrics

SERVICE = os.environ.get(ENV["service_name"]) or SERVICE_NAMES["receiver"]
logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = TrackerMetrics(service=SERVICE)

#: The bare URL answers as GitHub: webhooks created before per-tracker paths keep working.
ROOT_TRACKER = "github"


@dataclass
class ReceiverDeps:
    """Everything the receiver talks to; built from the environment or injected by tests."""

    trackers: Mapping[str, IssueTracker]
    sqs: Any
    queue_url: str
    persistence: BasePersistenceLayer
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS


def _require(settings: WebhookSettings, field: str) -> str:
    value = str(getattr(settings, field))
    if not value:
        raise RuntimeError(f"environment variable {ENV[field]} is required")
    return value


def check_secrets(trackers: Mapping[str, IssueTracker]) -> list[str]:
    """Validate every enabled tracker's webhook secret at start-up; log and return the problems.

    A blank secret, a GitLab ``whsec_`` without a key or a secret with a newline around it would
    otherwise fail (or disable) every check silently. The trackers still answer, each request with a
    500 ``misconfigured`` naming the problem, so one bad secret does not take the others down.
    """
    problems = []
    for name, tracker in trackers.items():
        try:
            tracker.check_webhook_secret()
        except WebhookError as exc:
            problems.append(f"{name}: {exc.message}")
            logger.error("webhook secret unusable", extra={"tracker": name, "reason": exc.message})
    return problems


def deps_from_env() -> ReceiverDeps:
    s = WebhookSettings.from_env(os.environ)
    built = wiring.build_trackers("receiver", env=s, secrets_client=boto3.client("secretsmanager"))
    check_secrets(built)
    return ReceiverDeps(
        trackers=built,
        sqs=boto3.client("sqs"),
        queue_url=_require(s, "queue_url"),
        persistence=DynamoDBPersistenceLayer(table_name=_require(s, "idempotency_table")),
        idempotency_ttl_seconds=s.idempotency_ttl_seconds,
    )


def _text_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Header values as valid text: a lone surrogate (which a Lambda event's JSON can carry, ``"\\ud800"``)
    becomes ``?``, so a token or signature holding one fails its comparison (401) instead of the encoding
    that precedes it."""
    return {
        str(k).encode("utf-8", "replace").decode("utf-8"): str(v).encode("utf-8", "replace").decode("utf-8")
        for k, v in (headers or {}).items()
    }


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

    def receive(name: str) -> Response:
        tracker = deps.trackers.get(name)
        if tracker is None:
            raise NotFoundError(
                f"tracker {name!r} is not enabled here (enabled: {', '.join(sorted(deps.trackers))})"
            )
        event = app.current_event
        raw = event.body or ""
        try:
            body = base64.b64decode(raw, validate=True) if event.is_base64_encoded else raw.encode("utf-8")
        except (binascii.Error, ValueError, UnicodeEncodeError):
            metrics.emit("WebhookRejected", name)
            logger.warning("webhook rejected", extra={"tracker": name, "code": "bad_body", "status": 400})
            return _json(
                400, {"error": "bad_body", "message": "the body is not valid base64 (or not UTF-8 text)"}
            )
        try:
            decision = tracker.parse_request(InboundRequest.create(_text_headers(event.headers), body))
        except WebhookError as exc:
            metrics.emit("WebhookRejected", name)
            log = logger.error if exc.http_status >= 500 else logger.warning
            log(
                "webhook rejected",
                extra={"tracker": name, "code": exc.code, "status": exc.http_status, "reason": exc.message},
            )
            return _json(exc.http_status, {"error": exc.code, "message": exc.message})
        if decision.kind == "ping":
            return _json(200, {"status": "pong"})
        if decision.kind == "ignored" or decision.task is None:
            metrics.emit("WebhookIgnored", name)
            logger.info("webhook ignored", extra={"tracker": name, "reason": decision.reason})
            return _json(202, {"status": "ignored", "reason": decision.reason})
        # parse_request verified the request over exactly these bytes. The worker keys its stored reply
        # on the same hash (task.idempotency_key).
        body_sha256 = hashlib.sha256(body).hexdigest()
        task = decision.task.model_copy(update={"idempotency_key": body_sha256})
        context = {
            "tracker": name,
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
        except (ClientError, BotoCoreError, IdempotencyPersistenceLayerError) as exc:
            # The queue or the idempotency table is unreachable: nothing was queued, and the delivery's record
            # was not kept (Powertools deletes an in-progress record when the function raises), so the
            # tracker's redelivery (GitLab retries a 5xx; GitHub's "Redeliver") is queued once it is back.
            metrics.emit("WebhookUnavailable", name)
            logger.error("could not enqueue", extra={**context, "error": type(exc).__name__})
            return _json(
                503,
                {
                    "error": "unavailable",
                    "message": "the task queue or its table is unavailable; retry later",
                },
            )
        if result.get("replayed"):
            metrics.emit("WebhookDuplicate", name)
            logger.info("delivery replayed; not enqueued again", extra=context)
            return _json(202, {"status": "duplicate", "delivery_id": task.delivery_id})
        metrics.emit("WebhookAccepted", name)
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

    @app.exception_handler(WebhookError)
    def on_webhook_error(exc: WebhookError) -> Response:  # unknown path, misconfiguration outside an adapter
        logger.warning(
            "webhook refused", extra={"code": exc.code, "status": exc.http_status, "reason": exc.message}
        )
        return _json(exc.http_status, {"error": exc.code, "message": exc.message})

    @app.post("/")
    @tracer.capture_method
    def receive_root() -> Response:
        return receive(ROOT_TRACKER)

    @app.post("/<name>")
    @tracer.capture_method
    def receive_tracker(name: str) -> Response:
        return receive(name.lower())

    @app.exception_handler(Exception)
    def on_unexpected(exc: Exception) -> Response:  # every answer is JSON, also for a bug
        logger.exception("unexpected error", extra={"error": type(exc).__name__})
        return _json(500, {"error": "internal", "message": "internal error; nothing was queued"})

    @app.not_found
    def not_found(_exc: Exception) -> Response:
        return _json(404, {"error": "not_found", "message": "POST /github, /gitlab or /jira"})

    return app, config


_wired: tuple[LambdaFunctionUrlResolver, IdempotencyConfig] | None = None


def configure(deps: ReceiverDeps | None) -> None:
    """Install ``deps`` (tests) or reset to lazily building them from the environment (``None``)."""
    global _wired
    _wired = build_app(deps) if deps is not None else None


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _wired
    if _wired is None:
        _wired = build_app(deps_from_env())
    app, config = _wired
    config.register_lambda_context(context)
    return app.resolve(event, context)
