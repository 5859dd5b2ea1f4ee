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

Failures raise, so Powertools batch processing reports that record in ``batchItemFailures``; SQS
redelivers it and, after the queue's max receive count, moves it to the DLQ. The other records of
the batch are unaffected. An *agent-level* error in the reply (a JSON error body) is posted on the
issue instead of being retried.

Environment:
  AGENT_RUNTIME_ARN             runtime ARN (required)
  AGENT_RUNTIME_QUALIFIER       runtime endpoint name (optional; default endpoint when empty)
  GITHUB_TOKEN_SECRET_NAME      Secrets Manager name/ARN of the token (plain string or {"token": ...})
  GITHUB_API_URL                default https://api.github.com
  ACTOR_HEADER                  default X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor (empty: none)
  INVOKE_READ_TIMEOUT_SECONDS   botocore read timeout for the agent turn (default 840)
  MAX_PROMPT_CHARS              issue body / comment clip (default 20000)
  SECRET_MAX_AGE_SECONDS        default 300
  POWERTOOLS_SERVICE_NAME / POWERTOOLS_METRICS_NAMESPACE / LOG_LEVEL

IAM: ``bedrock-agentcore:InvokeAgentRuntime`` on the runtime ARN and ``<arn>/runtime-endpoint/*``;
``secretsmanager:GetSecretValue`` on the token secret; ``sqs:ReceiveMessage/DeleteMessage/
GetQueueAttributes/ChangeMessageVisibility`` on the queue (event source); X-Ray put.
"""

from __future__ import annotations

import contextvars
import json
import os
from dataclasses import dataclass
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.parameters import SecretsProvider
from botocore.config import Config
from trackers import AgentTask, GitHubTracker, IssueTracker, format_reply, render_prompt

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "github-webhook-worker")
logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(
    namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "AgentCoreClaudeKit"), service=SERVICE
)
# Report every failed record (even when all fail) instead of raising: SQS retries exactly those.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

DEFAULT_ACTOR_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"
_current_actor: contextvars.ContextVar[str | None] = contextvars.ContextVar("agentkit_actor", default=None)


class RuntimeReplyError(Exception):
    """The runtime answered with something that is neither a result nor an error document."""


@dataclass(frozen=True)
class RuntimeReply:
    text: str = ""
    cost_usd: float | None = None
    num_turns: int | None = None
    session_id: str | None = None
    error_code: str | None = None
    error_message: str | None = None


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
        self, *, client: Any, runtime_arn: str, qualifier: str | None = None, actor_header: str = ""
    ) -> None:
        self._client = client
        self.runtime_arn = runtime_arn
        self.qualifier = qualifier or None
        self.actor_header = actor_header
        client.meta.events.register_first(
            "before-sign.bedrock-agentcore.InvokeAgentRuntime", self._add_actor_header
        )

    def _add_actor_header(self, request: Any, **_: Any) -> None:
        actor = _current_actor.get()
        if actor and self.actor_header:
            request.headers[self.actor_header] = actor

    def invoke(self, *, prompt: str, session_id: str, actor: str | None = None) -> RuntimeReply:
        kwargs: dict[str, Any] = {
            "agentRuntimeArn": self.runtime_arn,
            "runtimeSessionId": session_id,
            "contentType": "application/json",
            "accept": "application/json",
            "payload": json.dumps({"prompt": prompt, "stream": False}).encode(),
        }
        if self.qualifier:
            kwargs["qualifier"] = self.qualifier
        token = _current_actor.set(actor)
        try:
            response = self._client.invoke_agent_runtime(**kwargs)
        finally:
            _current_actor.reset(token)
        stream = response["response"]
        try:
            body = stream.read()
        finally:
            stream.close()
        return parse_reply(body, response.get("contentType") or "application/json")


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

    read_timeout = int(os.environ.get("INVOKE_READ_TIMEOUT_SECONDS", "840"))
    client = boto3.client(
        "bedrock-agentcore",
        config=Config(read_timeout=read_timeout, connect_timeout=10, retries={"mode": "standard"}),
    )
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


@tracer.capture_method
def process_task(task: AgentTask, deps: WorkerDeps) -> str:
    """One agent turn for ``task``; returns the URL of the posted comment."""
    session_id = task.runtime_session_id
    log_ctx = {"repository": task.repository, "issue": task.issue_number, "delivery_id": task.delivery_id}
    reply = deps.invoker.invoke(
        prompt=render_prompt(task, max_chars=deps.max_prompt_chars), session_id=session_id, actor=task.actor
    )
    if reply.error_code:
        metrics.add_metric(name="IssueTurnErrors", unit=MetricUnit.Count, value=1)
        logger.warning("agent returned an error", extra={**log_ctx, "code": reply.error_code})
        text = f"The agent could not answer this time (`{reply.error_code}`): {reply.error_message}"
        footer = f"agentkit · session {session_id[:15]}…"
    else:
        text = reply.text
        cost = f"${reply.cost_usd:.4f}" if reply.cost_usd is not None else "n/a"
        footer = f"agentkit · session {session_id[:15]}… · turns {reply.num_turns or '?'} · cost {cost}"
    ref = deps.tracker.post_reply(task, format_reply(text, footer=footer))
    metrics.add_metric(name="IssueReplies", unit=MetricUnit.Count, value=1)
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
            "comment_url": ref.url,
        },
    )
    return ref.url


def record_handler(record: SQSRecord) -> str:
    task = AgentTask.model_validate_json(record.body)
    return process_task(task, _get_deps())


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
