"""Webhook worker Lambda (SQS): run one agent turn per task and post the answer on the issue.

For each SQS record (an :class:`trackers.AgentTask` as JSON) the worker:

1. renders the prompt (:func:`trackers.render_prompt`);
2. calls ``bedrock-agentcore`` ``InvokeAgentRuntime`` with body ``{"prompt": ..., "stream": false}``,
   ``runtimeSessionId`` = ``task.runtime_session_id`` (``gh-`` + sha256("owner/repo#n"), so each issue
   is one continuing conversation), ``qualifier`` = the runtime endpoint when configured, and the actor
   in the custom header ``ACTOR_HEADER`` (default ``X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor``,
   value ``github:owner/repo``), added by a botocore ``before-sign`` hook — the documented way to pass
   custom headers to an AgentCore runtime; the runtime must allow-list that header;
3. posts the answer (with a cost/turns footer and a loop-guard marker) through the tracker adapter.

Retries never re-run a paid turn. The ``bedrock-agentcore`` client makes exactly one attempt
(botocore ``retries={"total_max_attempts": 1}``); the worker itself retries only throttling, in a
bounded loop (``THROTTLE_RETRIES``), because a throttled call never reached the agent. Then:

* *transient* failures where no turn ran — still throttled, ``ServiceQuotaExceededException``,
  ``RetryableConflictException``, 5xx from AgentCore's own service, connect errors, the runtime's
  ``session_busy`` — raise, so Powertools batch processing reports the record in
  ``batchItemFailures``; SQS redelivers it and, after the max receive count, moves it to the DLQ;
* *final* agent errors — an error document in the reply, a ``RuntimeClientError`` (the container
  answered with an error status, e.g. ``budget_exceeded``), a read timeout or a connection lost
  mid-turn — are posted on the issue as a short generic comment with the error code and a request
  id; the details (message, ARNs) go only to the log. The record succeeds: SQS does not retry;
* configuration errors (``AccessDeniedException``, ``ValidationException``, ``ResourceNotFoundException``)
  raise like transient ones, so the tasks wait in the DLQ until the setup is fixed;
* a reply that may have been posted (GitHub never answered the POST) is logged, not retried.

The read timeout (default 780 s) must exceed the runtime's turn timeout (``AGENTKIT_TURN_TIMEOUT``,
default 600 s) and stay below the Lambda timeout (the construct sets 14 minutes).

Environment:
  AGENT_RUNTIME_ARN             runtime ARN (required)
  AGENT_RUNTIME_QUALIFIER       runtime endpoint name (optional; default endpoint when empty)
  GITHUB_TOKEN_SECRET_NAME      Secrets Manager name/ARN of the token (plain string or {"token": ...})
  GITHUB_API_URL                default https://api.github.com
  ACTOR_HEADER                  default X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor (empty: none)
  INVOKE_READ_TIMEOUT_SECONDS   botocore read timeout for the agent turn (default 780)
  THROTTLE_RETRIES              extra attempts after a ThrottlingException (default 2)
  TRIGGER_LABEL / TRIGGER_MENTION  as for the receiver (not used to decide here)
  MAX_PROMPT_CHARS              issue body / comment clip (default 20000)
  SECRET_MAX_AGE_SECONDS        default 300
  POWERTOOLS_SERVICE_NAME / POWERTOOLS_METRICS_NAMESPACE / LOG_LEVEL

IAM: ``bedrock-agentcore:InvokeAgentRuntime`` on the runtime ARN and ``<arn>/runtime-endpoint/*``;
``secretsmanager:GetSecretValue`` on the token secret; ``sqs:ReceiveMessage/DeleteMessage/
GetQueueAttributes/ChangeMessageVisibility`` on the queue (event source); X-Ray put.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import os
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.parameters import SecretsProvider
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from trackers import AgentTask, GitHubTracker, IssueTracker, TrackerApiError, format_reply, render_prompt

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "github-webhook-worker")
logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(
    namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "AgentCoreClaudeKit"), service=SERVICE
)
# Report every failed record (even when all fail) instead of raising: SQS retries exactly those.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

DEFAULT_ACTOR_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"
#: Must exceed the runtime's AGENTKIT_TURN_TIMEOUT (600 s default) and stay below the Lambda timeout.
DEFAULT_READ_TIMEOUT_SECONDS = 780
DEFAULT_THROTTLE_RETRIES = 2
#: Retried in the worker's own loop: the call was refused before any agent work.
THROTTLE_CODES = frozenset({"ThrottlingException", "TooManyRequestsException"})
#: Left to SQS (record fails, redelivered later): no turn ran, or AgentCore's own service failed.
TRANSIENT_CODES = THROTTLE_CODES | {
    "ServiceQuotaExceededException",
    "RetryableConflictException",
    "InternalServerException",
    "ServiceUnavailableException",
}
#: Runtime error codes (runtime/errors.py) that mean "try again later"; every other one is final.
TRANSIENT_RUNTIME_CODES = frozenset({"session_busy", "shutting_down"})
#: Error codes the runtime sends (runtime/errors.py); used when a message carries no JSON ``code``.
KNOWN_RUNTIME_CODES = (
    "budget_exceeded",
    "turn_timeout",
    "prompt_too_large",
    "invalid_session_id",
    "invalid_request",
    "agent_process_error",
    "session_busy",
    "session_store_unavailable",
    "shutting_down",
    "configuration_error",
    "agent_error",
)
_SAFE_CODE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_JSON_CODE = re.compile(r'"code"\s*:\s*"([A-Za-z][A-Za-z0-9_]{0,63})"')
_current_actor: contextvars.ContextVar[str | None] = contextvars.ContextVar("agentkit_actor", default=None)


class RuntimeReplyError(Exception):
    """The runtime answered with something that is neither a result nor an error document."""


class TransientInvokeError(Exception):
    """No turn ran (e.g. the runtime session is busy); the record fails so SQS retries it later."""


@dataclass(frozen=True)
class RuntimeReply:
    text: str = ""
    cost_usd: float | None = None
    num_turns: int | None = None
    session_id: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    request_id: str | None = None


def safe_error_code(code: object) -> str:
    """``code`` if it looks like a runtime error code (lower snake case), else ``agent_error``.

    Only this value reaches the public issue, so nothing else a reply carries can leak there.
    """
    text = str(code or "").strip().lower()
    return text if _SAFE_CODE.match(text) else "agent_error"


def runtime_client_error_code(message: str) -> str:
    """The runtime's error code inside a ``RuntimeClientError`` message (AgentCore relays the body).

    Looks for a JSON ``"code": "..."`` first, then for a known runtime code, else ``runtime_error``.
    """
    match = _JSON_CODE.search(message)
    if match:
        return safe_error_code(match.group(1))
    return next((code for code in KNOWN_RUNTIME_CODES if code in message), "runtime_error")


def _request_id(response: dict[str, Any]) -> str | None:
    meta = response.get("ResponseMetadata") or {}
    return meta.get("RequestId") or (meta.get("HTTPHeaders") or {}).get("x-amzn-requestid")


def agentcore_client_config(*, read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS) -> Config:
    """botocore config for ``InvokeAgentRuntime``: one attempt only (a retry would re-run a paid turn)."""
    return Config(
        read_timeout=read_timeout,
        connect_timeout=10,
        retries={"total_max_attempts": 1, "mode": "standard"},
    )


def parse_reply(body: bytes, content_type: str = "application/json") -> RuntimeReply:
    """Parse the runtime's non-streaming JSON reply (or, defensively, an SSE stream's last event)."""
    text = body.decode("utf-8", errors="replace")
    if "text/event-stream" in content_type:
        events = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
        final = next((e for e in reversed(events) if e.get("type") in ("result", "error")), None)
        if final is None:
            raise RuntimeReplyError("event stream ended without a result or error event")
        doc: Any = final
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RuntimeReplyError(f"runtime reply is not JSON: {text[:200]!r}") from exc
    if not isinstance(doc, dict):
        raise RuntimeReplyError(f"runtime reply is not a JSON object: {text[:200]!r}")
    err = doc.get("error")
    if doc.get("type") == "error" or err:
        if isinstance(err, dict):
            code, message = err.get("code"), err.get("message")
        else:
            code, message = doc.get("code"), doc.get("message") or err
        return RuntimeReply(error_code=str(code or "agent_error"), error_message=str(message or ""))
    if "text" not in doc:
        raise RuntimeReplyError(f"runtime reply has no 'text': keys {sorted(doc)[:10]}")
    cost = doc.get("cost_usd")
    return RuntimeReply(
        text=str(doc.get("text") or ""),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        num_turns=doc.get("num_turns"),
        session_id=doc.get("session_id"),
    )


class AgentRuntimeInvoker:
    """Calls ``InvokeAgentRuntime`` (non-streaming) on an injected ``bedrock-agentcore`` client."""

    def __init__(
        self,
        *,
        client: Any,
        runtime_arn: str,
        qualifier: str | None = None,
        actor_header: str = "",
        throttle_retries: int = DEFAULT_THROTTLE_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``client``: a ``bedrock-agentcore`` client built with :func:`agentcore_client_config`."""
        if throttle_retries < 0:
            raise ValueError("throttle_retries must be >= 0")
        self._client = client
        self.runtime_arn = runtime_arn
        self.qualifier = qualifier or None
        self.actor_header = actor_header
        self.throttle_retries = throttle_retries
        self._sleep = sleep
        client.meta.events.register_first(
            "before-sign.bedrock-agentcore.InvokeAgentRuntime", self._add_actor_header
        )

    def _add_actor_header(self, request: Any, **_: Any) -> None:
        actor = _current_actor.get()
        if actor and self.actor_header:
            request.headers[self.actor_header] = actor

    def invoke(self, *, prompt: str, session_id: str, actor: str | None = None) -> RuntimeReply:
        """One agent turn. Final agent errors come back as a reply with ``error_code`` set.

        Raises:
            TransientInvokeError: the runtime session is busy (no turn ran).
            botocore ClientError / EndpointConnectionError / ConnectTimeoutError: transient or
                configuration errors (the worker lets SQS retry them).
            RuntimeReplyError: a reply of an unknown shape.
        """
        kwargs: dict[str, Any] = {
            "agentRuntimeArn": self.runtime_arn,
            "runtimeSessionId": session_id,
            "contentType": "application/json",
            "accept": "application/json",
            "payload": json.dumps({"prompt": prompt, "stream": False}).encode(),
        }
        if self.qualifier:
            kwargs["qualifier"] = self.qualifier
        attempt = 0
        while True:
            token = _current_actor.set(actor)
            try:
                response = self._client.invoke_agent_runtime(**kwargs)
                break
            except ClientError as exc:
                err = exc.response.get("Error", {})
                code = str(err.get("Code", ""))
                if code in THROTTLE_CODES and attempt < self.throttle_retries:
                    self._sleep(random.uniform(0, min(8.0, 2.0**attempt)))
                    attempt += 1
                    continue
                if code != "RuntimeClientError":
                    raise
                message = str(err.get("Message", ""))
                reply = RuntimeReply(
                    error_code=runtime_client_error_code(message),
                    error_message=message,
                    request_id=_request_id(exc.response),
                )
                if reply.error_code in TRANSIENT_RUNTIME_CODES:
                    raise TransientInvokeError(f"runtime answered {reply.error_code}: {message}") from None
                return reply
            except ReadTimeoutError as exc:
                # The turn may still be running (and is billed): final, never retried.
                return RuntimeReply(error_code="timeout", error_message=str(exc))
            except ConnectionClosedError as exc:
                return RuntimeReply(error_code="connection_lost", error_message=str(exc))
            finally:
                _current_actor.reset(token)
        stream = response["response"]
        try:
            body = stream.read()
        except ReadTimeoutError as exc:
            return RuntimeReply(
                error_code="timeout", error_message=str(exc), request_id=_request_id(response)
            )
        finally:
            stream.close()
        reply = parse_reply(body, response.get("contentType") or "application/json")
        return dataclasses.replace(reply, request_id=_request_id(response))


@dataclass
class WorkerDeps:
    tracker: IssueTracker
    invoker: AgentRuntimeInvoker
    max_prompt_chars: int = 20_000


def deps_from_env() -> WorkerDeps:
    arn = os.environ.get("AGENT_RUNTIME_ARN", "")
    token_secret = os.environ.get("GITHUB_TOKEN_SECRET_NAME", "")
    if not arn or not token_secret:
        raise RuntimeError("AGENT_RUNTIME_ARN and GITHUB_TOKEN_SECRET_NAME are required")
    provider = SecretsProvider(boto3_client=boto3.client("secretsmanager"))
    max_age = int(os.environ.get("SECRET_MAX_AGE_SECONDS", "300"))

    def token() -> str:
        value = provider.get(token_secret, max_age=max_age)
        value = value.decode() if isinstance(value, bytes) else str(value or "")
        if value.lstrip().startswith("{"):
            return str(json.loads(value).get("token", ""))
        return value.strip()

    read_timeout = int(os.environ.get("INVOKE_READ_TIMEOUT_SECONDS", str(DEFAULT_READ_TIMEOUT_SECONDS)))
    client = boto3.client("bedrock-agentcore", config=agentcore_client_config(read_timeout=read_timeout))
    return WorkerDeps(
        tracker=GitHubTracker(
            token=token,
            api_url=os.environ.get("GITHUB_API_URL", "https://api.github.com"),
            trigger_label=os.environ.get("TRIGGER_LABEL", "agent"),
            trigger_mention=os.environ.get("TRIGGER_MENTION", "/agent"),
        ),
        invoker=AgentRuntimeInvoker(
            client=client,
            runtime_arn=arn,
            qualifier=os.environ.get("AGENT_RUNTIME_QUALIFIER") or None,
            actor_header=os.environ.get("ACTOR_HEADER", DEFAULT_ACTOR_HEADER),
            throttle_retries=int(os.environ.get("THROTTLE_RETRIES", str(DEFAULT_THROTTLE_RETRIES))),
        ),
        max_prompt_chars=int(os.environ.get("MAX_PROMPT_CHARS", "20000")),
    )


_deps: WorkerDeps | None = None


def configure(deps: WorkerDeps | None) -> None:
    """Install ``deps`` (tests) or reset to lazily building them from the environment (``None``)."""
    global _deps
    _deps = deps


def _get_deps() -> WorkerDeps:
    global _deps
    if _deps is None:
        _deps = deps_from_env()
    return _deps


def error_comment(code: str, reference: str) -> str:
    """The public comment for a failed turn: the error code and a log reference, nothing else."""
    return (
        f"The agent could not answer (`{safe_error_code(code)}`). "
        f"An admin can check the logs (request id `{reference}`)."
    )


@tracer.capture_method
def process_task(task: AgentTask, deps: WorkerDeps) -> str:
    """One agent turn for ``task``; returns the URL of the posted comment ("" when the post is unknown)."""
    session_id = task.runtime_session_id
    log_ctx = {"repository": task.repository, "issue": task.issue_number, "delivery_id": task.delivery_id}
    reply = deps.invoker.invoke(
        prompt=render_prompt(task, max_chars=deps.max_prompt_chars), session_id=session_id, actor=task.actor
    )
    if reply.error_code:
        reference = reply.request_id or task.delivery_id
        metrics.add_metric(name="IssueTurnErrors", unit=MetricUnit.Count, value=1)
        # Details stay in the log: the message may name ARNs, paths or limits not meant for a public issue.
        logger.warning(
            "agent returned an error",
            extra={
                **log_ctx,
                "code": reply.error_code,
                "detail": (reply.error_message or "")[:4000],
                "request_id": reference,
            },
        )
        text = error_comment(reply.error_code, reference)
        footer = f"agentkit · session {session_id[:15]}…"
    else:
        text = reply.text
        cost = f"${reply.cost_usd:.4f}" if reply.cost_usd is not None else "n/a"
        footer = f"agentkit · session {session_id[:15]}… · turns {reply.num_turns or '?'} · cost {cost}"
    try:
        comment_url = deps.tracker.post_reply(task, format_reply(text, footer=footer)).url
        metrics.add_metric(name="IssueReplies", unit=MetricUnit.Count, value=1)
    except TrackerApiError as exc:
        if exc.retryable or exc.status is not None:
            raise
        # GitHub may have posted it: a retry could double-post (and re-run the turn). Keep the text in the log.
        metrics.add_metric(name="IssueReplyUnconfirmed", unit=MetricUnit.Count, value=1)
        logger.error(
            "reply may not have been posted; not retried",
            extra={**log_ctx, "session_id": session_id, "error": exc.message, "reply": text},
        )
        comment_url = ""
    if reply.cost_usd is not None:
        metrics.add_metric(name="IssueCostUSD", unit=MetricUnit.NoUnit, value=reply.cost_usd)
    # One structured line per turn: docs/webhook.md sums cost_usd per issue with Logs Insights.
    logger.info(
        "issue turn answered",
        extra={
            **log_ctx,
            "session_id": session_id,
            "cost_usd": reply.cost_usd,
            "num_turns": reply.num_turns,
            "comment_url": comment_url,
        },
    )
    return comment_url


def failure_kind(exc: BaseException) -> str:
    """``transient`` (SQS retry may succeed) or ``permanent`` (fix the setup, then redrive from the DLQ)."""
    if isinstance(exc, TransientInvokeError | EndpointConnectionError | ConnectTimeoutError):
        return "transient"
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        return "transient" if err.get("Code") in TRANSIENT_CODES or status >= 500 else "permanent"
    if isinstance(exc, TrackerApiError):
        return "transient" if exc.retryable else "permanent"
    return "permanent"


def record_handler(record: SQSRecord) -> str:
    task = AgentTask.model_validate_json(record.body)
    try:
        return process_task(task, _get_deps())
    except Exception as exc:
        # The record fails (batchItemFailures): SQS redelivers it, then moves it to the DLQ.
        logger.warning(
            "task failed; SQS will redeliver it",
            extra={
                "delivery_id": task.delivery_id,
                "kind": failure_kind(exc),
                "error": f"{type(exc).__name__}: {exc}"[:2000],
                "receive_count": record.attributes.approximate_receive_count,
            },
        )
        raise


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
