"""Webhook worker Lambda (SQS): run one agent turn per task and post the answer on the issue.

Each SQS record is an :class:`trackers.AgentTask` as JSON, from any tracker. Its ``intent`` decides: ``fix``
starts an asynchronous fix job and returns (:mod:`webhook.fix.worker`; the result is reported by :mod:`reporter`),
``stop`` stops the issue's running job (:mod:`webhook.fix.stop`), ``approve`` / ``deny`` answer a tool call waiting
for approval (:mod:`webhook.fix.approvals`), ``answer`` (below) runs one turn and posts the reply.

For an answer the worker:

1. renders the prompt (:func:`webhook.prompts.render_prompt`);
2. calls ``bedrock-agentcore`` ``InvokeAgentRuntime`` with body ``{"prompt": ..., "stream": false}``,
   ``runtimeSessionId`` = ``task.runtime_session_id`` (``gh-``/``gitlab-``/``jira-`` + sha256 of the issue,
   so each issue of each tracker is one continuing conversation), ``qualifier`` = the runtime endpoint
   when configured, and the actor in the custom header ``ACTOR_HEADER`` (default
   ``X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor``, value ``<tracker>:<repository>``), added by a
   botocore ``before-sign`` hook — the documented way to pass custom headers to an AgentCore runtime;
   the runtime must allow-list that header;
3. stores the finished comment under the task's idempotency key (:mod:`replies`, DynamoDB, TTL);
4. posts it (with a cost/turns footer and a loop-guard marker) through the task's tracker adapter
   (``task.tracker``) and marks the stored reply ``posted``.

A redelivered record whose reply is stored is not run again: an ``answered`` reply is only posted
(the post had failed), a ``posted`` or ``unconfirmed`` one is left alone. Before invoking, the worker
claims the key with a conditional write (:meth:`replies.ReplyStore.claim`): a concurrent duplicate
delivery finds the claim and fails transiently (SQS retries it after the visibility timeout, by when
the reply is stored); a claim older than ``TURN_LEASE_SECONDS`` (its worker died, maybe after the paid
turn) gets a short ``turn_interrupted`` comment instead of a second turn. After a 2xx from AgentCore the
turn is never run again: an unreadable or malformed reply is posted as an error (:mod:`invoker`). The key is the sha256 of
the signed webhook body the receiver put into the task (``idempotency_key``), or the sha256 of the SQS
message body for tasks without one. If the reply cannot be stored (DynamoDB outage), it is posted
anyway and the failure logged; if the lookup fails, the record fails before any turn runs.

Retries never re-run a paid turn. The ``bedrock-agentcore`` client makes exactly one attempt
(botocore ``retries={"total_max_attempts": 1}``); the worker itself retries only throttling, in a
bounded loop (``THROTTLE_RETRIES``), because a throttled call never reached the agent. Then:

* *transient* failures where no turn ran — still throttled, ``ServiceQuotaExceededException``,
  ``RetryableConflictException``, 5xx from AgentCore's own service, connect errors, the runtime's
  ``session_busy`` — raise, so Powertools batch processing reports the record in
  ``batchItemFailures``; SQS redelivers it and, after the max receive count, moves it to the DLQ;
* *final* agent errors — an error document in the reply, a ``RuntimeClientError`` (the container
  answered with an error status; AgentCore relays only ``Received error (<status>) from runtime``,
  and the status names the error, e.g. 402 ``budget_exceeded``), a read timeout or a connection lost
  mid-turn — are posted on the issue as a short generic comment with the error code and a request
  id; the details (message, ARNs) go only to the log. The record succeeds: SQS does not retry;
  the container's 429 (``session_busy``) and 503 (``shutting_down``) are transient instead;
* configuration errors (``AccessDeniedException``, ``ValidationException``, ``ResourceNotFoundException``)
  raise like transient ones, so the tasks wait in the DLQ until the setup is fixed;
* a reply that may have been posted (the tracker never answered the POST) is logged, not retried.

The read timeout (default 780 s) must exceed the runtime's turn timeout (``AGENTKIT_TURN_TIMEOUT``,
default 600 s) and stay below the Lambda timeout (the construct sets 14 minutes).

Environment: the variables :mod:`webhook.settings` declares for the worker (``AGENT_RUNTIME_ARN``,
``IDEMPOTENCY_TABLE``, ``TRACKERS``, the trackers' token secret names, the fix-job settings, …).

IAM: ``bedrock-agentcore:InvokeAgentRuntime`` on the runtime ARN and ``<arn>/runtime-endpoint/*``;
``secretsmanager:GetSecretValue`` on the enabled trackers' token secrets (never the webhook secrets); ``dynamodb:GetItem/PutItem/UpdateItem`` on the
table (``reply#*`` keys); ``sqs:ReceiveMessage/DeleteMessage/
GetQueueAttributes/ChangeMessageVisibility`` on the queue (event source); X-Ray put; for fix jobs
``bedrock-agentcore:StopRuntimeSession`` on the runtime ARN and its endpoint (``/agent stop``) and
``s3:PutObject`` on ``<WORKSPACE_S3_URI>jobs/*`` (large snapshots).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import boto3
from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError

from webhook import wiring
from webhook.errors import TrackerApiError, TrackerConfigError
from webhook.fix.approvals import Approver, GateWriters
from webhook.fix.config import fix_settings
from webhook.fix.gate import FixGate, Refusal, TrackerPermissions, gate_settings
from webhook.fix.jobs import JobStore
from webhook.fix.repos import TrackerComments, TrackerRepos
from webhook.fix.stop import Stopper
from webhook.fix.worker import FixDeps, FixRunner
from webhook.invoker import (
    TRANSIENT_CODES,
    AgentRuntimeInvoker,
    TransientInvokeError,
    agentcore_client_config,
    safe_error_code,
)
from webhook.prompts import render_prompt
from webhook.replies import (
    ANSWERED,
    POSTED,
    RUNNING,
    UNCONFIRMED,
    ReplyStore,
    ReplyStoreError,
    StoredReply,
)
from webhook.settings import ENV, SERVICE_NAMES, WebhookSettings
from webhook.trackers import AgentTask, IssueTracker
from webhook.trackers.base import enabled_tracker
from webhook.trackers.reply_marks import cost_text, reply_footer
from webhook.webhook_metrics import TrackerMetrics

SERVICE = os.environ.get(ENV["service_name"]) or SERVICE_NAMES["worker"]
logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = TrackerMetrics(service=SERVICE)
# Report every failed record (even when all fail) instead of raising: SQS retries exactly those.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@dataclass
class WorkerDeps:
    """``trackers``: the enabled adapters by name; ``replies``: where finished replies are stored before
    posting (``None``: not stored)."""

    trackers: Mapping[str, IssueTracker]
    invoker: AgentRuntimeInvoker
    max_prompt_chars: int = 20_000
    replies: ReplyStore | None = None
    #: How long a ``running`` claim holds: longer than a worker can run (Lambda's 15-minute maximum).
    turn_lease_seconds: int = 900
    clock: Callable[[], float] = time.time
    #: Fix tasks (``intent`` ``fix``): started as asynchronous jobs (:mod:`webhook.fix.worker`); ``None``: refused.
    fix: FixRunner | None = None
    #: Stop tasks (``intent`` ``stop``): :mod:`webhook.fix.stop`; ``None``: refused.
    stopper: Stopper | None = None
    #: Who may start and stop fixes, and how many (:mod:`webhook.fix.gate`); ``None``: not checked (tests of the runners).
    gate: FixGate | None = None
    #: Answers to approvals (``intent`` ``approve`` / ``deny``): :mod:`webhook.fix.approvals`; ``None``: refused.
    approver: Approver | None = None

    def tracker_for(self, task: AgentTask) -> IssueTracker:
        """Raises :class:`TrackerConfigError` for a task of a tracker this worker is not set up for."""
        return enabled_tracker(self.trackers, task.tracker)


def deps_from_env() -> WorkerDeps:
    s = WebhookSettings.from_env(os.environ)
    arn, table = s.agent_runtime_arn, s.idempotency_table
    if not arn or not table:
        raise RuntimeError(f"{ENV['agent_runtime_arn']} and {ENV['idempotency_table']} are required")
    read_timeout = s.invoke_read_timeout_seconds
    client = boto3.client("bedrock-agentcore", config=agentcore_client_config(read_timeout=read_timeout))
    secrets = boto3.client("secretsmanager")
    built = wiring.build_trackers("worker", env=s, secrets_client=secrets)
    qualifier = s.agent_runtime_qualifier or None
    ttl = s.reply_ttl_seconds
    lease = s.turn_lease_seconds
    ddb = boto3.client("dynamodb")
    replies = ReplyStore(client=ddb, table_name=table, ttl_seconds=ttl)
    jobs = JobStore(client=ddb, table_name=table, ttl_seconds=ttl)
    invoker = AgentRuntimeInvoker(
        client=client,
        runtime_arn=arn,
        qualifier=qualifier,
        actor_header=s.actor_header,
        throttle_retries=s.throttle_retries,
    )
    settings = fix_settings(s)
    comments = TrackerComments(built)
    max_prompt_chars = s.max_prompt_chars
    fx = FixDeps(
        jobs=jobs,
        repos=TrackerRepos(
            tokens=wiring.token_providers(s, secrets_client=secrets, access="read"),
            api_urls=wiring.api_urls(s),
        ),
        comments=comments,
        settings=settings,
        s3=boto3.client("s3") if settings.s3_location else None,
    )
    stopper = Stopper(
        # Stopping is idempotent: botocore's standard retries (not the invoke client's single attempt).
        client=boto3.client("bedrock-agentcore", config=Config(retries={"mode": "standard"})),
        runtime_arn=arn,
        qualifier=qualifier,
        jobs=jobs,
        replies=replies,
        comments=comments,
        trackers=built,
        metrics=metrics,
        logger=logger,
        lease_seconds=lease,
        invoker=invoker,  # withdraws a stopped job's approval on the runtime
    )
    fx.stop_session = stopper.stop_session  # a stop that arrives while the worker invokes the runtime
    gate = FixGate(
        settings=gate_settings(s),
        fix=settings,
        jobs=jobs,
        permissions=TrackerPermissions(repos=fx.repos, trackers=built),
        client=ddb,
    )
    return WorkerDeps(
        gate=gate,
        trackers=built,
        invoker=invoker,
        max_prompt_chars=max_prompt_chars,
        turn_lease_seconds=lease,
        replies=replies,
        fix=FixRunner(
            fx=fx,
            invoker=invoker,
            trackers=built,
            metrics=metrics,
            logger=logger,
            lease_seconds=lease,
            max_prompt_chars=max_prompt_chars,
        ),
        stopper=stopper,
        approver=Approver(
            invoker=invoker,
            jobs=jobs,
            replies=replies,
            comments=comments,
            trackers=built,
            metrics=metrics,
            logger=logger,
            two_person=settings.approval_two_person,
            writers=GateWriters(gate),
            # FIX_JOBS=off: an approval would resume a fix turn, so it is refused; a denial ends the job.
            fix_jobs=gate.settings.enabled,
            lease_seconds=lease,
            fx=fx,
        ),
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


_SAFE_REFERENCE = re.compile(r"^[A-Za-z0-9-]{1,64}$")


def public_reference(request_id: str | None, task: AgentTask) -> str:
    """The log reference a public error comment may show: AgentCore's request id when it looks like one,
    else the start of the signed body's hash. Never the delivery id: no tracker signs that header."""
    if request_id and _SAFE_REFERENCE.match(request_id):
        return request_id
    return (task.idempotency_key or task.runtime_session_id)[:16]


def error_comment(code: str, reference: str) -> str:
    """The public comment for a failed turn: the error code and a log reference, nothing else."""
    return (
        f"The agent could not answer (`{safe_error_code(code)}`). "
        f"An admin can check the logs (request id `{reference}`)."
    )


def task_key(task: AgentTask, raw_body: str) -> str:
    """The key a task's reply is stored under: the receiver's body hash, else sha256 of the SQS body."""
    return task.idempotency_key or "sqs-" + hashlib.sha256(raw_body.encode()).hexdigest()


def run_turn(task: AgentTask, deps: WorkerDeps) -> StoredReply:
    """Invoke the runtime once and build the comment to post (an answer or a short error note)."""
    session_id = task.runtime_session_id
    tracker = deps.tracker_for(task)
    reply = deps.invoker.invoke(
        prompt=render_prompt(task, max_chars=deps.max_prompt_chars), session_id=session_id, actor=task.actor
    )
    if reply.error_code:
        reference = public_reference(reply.request_id, task)
        metrics.emit("IssueTurnErrors", task.tracker)
        # Details stay in the log: the message may name ARNs, paths or limits not meant for a public issue.
        logger.warning(
            "agent returned an error",
            extra={
                "tracker": task.tracker,
                "repository": task.repository,
                "issue": task.issue_number,
                "delivery_id": task.delivery_id,
                "code": reply.error_code,
                "detail": (reply.error_message or "")[:4000],
                "request_id": reference,
            },
        )
        text = error_comment(reply.error_code, reference)
        footer = reply_footer(session_id)
    else:
        text = reply.text
        footer = reply_footer(
            session_id, f"turns {reply.num_turns or '?'}", f"cost {cost_text(reply.cost_usd)}"
        )
    return StoredReply(
        comment=tracker.format_reply(text, footer=footer),
        session_id=session_id,
        delivery_id=task.delivery_id,
        cost_usd=reply.cost_usd,
        num_turns=reply.num_turns if isinstance(reply.num_turns, int) else None,
        error_code=reply.error_code,
        request_id=reply.request_id,
    )


def _mark(
    store: ReplyStore,
    key: str,
    *,
    status: Literal["posted", "unconfirmed"],
    url: str,
    log_ctx: dict[str, Any],
    tracker: str,
) -> None:
    """Best effort: the reply is out already, so a DynamoDB failure here must not fail the record."""
    try:
        store.mark(key, status=status, comment_url=url)
    except ReplyStoreError as exc:
        metrics.emit("IssueReplyStoreErrors", tracker)
        logger.error("could not mark the stored reply as posted", extra={**log_ctx, "error": str(exc)})


@tracer.capture_method
def process_task(task: AgentTask, deps: WorkerDeps, *, key: str | None = None) -> str:
    """Run (or replay) one turn for ``task``; returns the posted comment's URL ("" when unknown).

    With ``deps.replies`` and a ``key``: a stored reply is posted instead of running the turn again,
    or nothing happens when it was posted already.

    Raises:
        ReplyStoreError: the stored-reply lookup failed (no turn ran; SQS retries the record).
        TrackerApiError / TrackerConfigError: the post failed (the stored reply is posted on redelivery).
        Errors of :meth:`AgentRuntimeInvoker.invoke`.
    """
    session_id = task.runtime_session_id
    tracker = deps.tracker_for(task)
    log_ctx: dict[str, Any] = {
        "tracker": task.tracker,
        "repository": task.repository,
        "issue": task.issue_number,
        "delivery_id": task.delivery_id,
        "idempotency_key": key,
    }
    store = deps.replies if key else None
    stored = store.get(key) if store is not None and key else None
    if stored is not None and stored.status == RUNNING:
        claimed = stored
        age = deps.clock() - stored.stored_at
        if age < deps.turn_lease_seconds:
            # Another delivery of this task is running the turn: retry later (its reply will be stored).
            metrics.emit("IssueTurnInProgress", task.tracker)
            raise TransientInvokeError(f"the turn for this task is running since {age:.0f}s")
        # The claimer died: the turn may have run (and been paid). Never run it again; say so instead.
        stored = StoredReply(
            comment=tracker.format_reply(
                error_comment("turn_interrupted", public_reference(None, task)),
                footer=reply_footer(session_id),
            ),
            session_id=session_id,
            delivery_id=task.delivery_id,
            error_code="turn_interrupted",
        )
        if store is not None and key and not store.put(key, stored, over_claim_from=claimed.stored_at):
            raise TransientInvokeError("another delivery took over the interrupted turn")
    if stored is not None and stored.status != ANSWERED:
        metrics.emit("IssueReplyDuplicate", task.tracker)
        logger.info(
            "reply already posted; redelivery ignored",
            extra={**log_ctx, "status": stored.status, "comment_url": stored.comment_url},
        )
        return stored.comment_url
    replayed = stored is not None
    saved = replayed
    if stored is None:
        if store is not None and key and not store.claim(key):
            metrics.emit("IssueTurnInProgress", task.tracker)
            raise TransientInvokeError("another delivery of this task claimed the turn")
        try:
            stored = run_turn(task, deps)
        except Exception:
            if store is not None and key:  # no 2xx arrived (the invoker raises only then): no turn ran
                store.release(key)
            raise
        if store is not None and key:
            try:
                store.put(key, stored)
                saved = True
            except ReplyStoreError as exc:
                # The turn is paid for: post it anyway. The claim stays, so no delivery runs it again.
                metrics.emit("IssueReplyStoreErrors", task.tracker)
                logger.error(
                    "could not store the reply; posting it anyway", extra={**log_ctx, "error": str(exc)}
                )
    else:
        metrics.emit("IssueReplyReposted", task.tracker)
        logger.info("posting the stored reply; the turn is not run again", extra=log_ctx)
    try:
        comment_url = tracker.post_reply(task, stored.comment).url
        metrics.emit("IssueReplies", task.tracker)
        if saved and store is not None and key:
            _mark(store, key, status=POSTED, url=comment_url, log_ctx=log_ctx, tracker=task.tracker)
    except TrackerApiError as exc:
        if exc.retryable or exc.status is not None:
            if not saved:
                # Neither stored nor posted: the text survives only in this log line.
                logger.error(
                    "reply neither stored nor posted; its text survives only in this log line",
                    extra={**log_ctx, "error": exc.message, "reply": stored.comment},
                )
            raise
        # The tracker may have posted it: a retry could double-post. Keep the text in the log.
        metrics.emit("IssueReplyUnconfirmed", task.tracker)
        logger.error(
            "reply may not have been posted; not retried",
            extra={**log_ctx, "session_id": session_id, "error": exc.message, "reply": stored.comment},
        )
        comment_url = ""
        if saved and store is not None and key:
            _mark(store, key, status=UNCONFIRMED, url="", log_ctx=log_ctx, tracker=task.tracker)
    if stored.cost_usd is not None:
        metrics.emit("IssueCostUSD", task.tracker, stored.cost_usd, MetricUnit.NoUnit)
    # One structured line per turn (logged once: when its reply is first posted). docs/webhook/reference.md sums
    # cost_usd per issue with Logs Insights.
    logger.info(
        "issue turn answered",
        extra={
            **log_ctx,
            "session_id": session_id,
            "cost_usd": stored.cost_usd,
            "num_turns": stored.num_turns,
            "comment_url": comment_url,
            "replayed": replayed,
        },
    )
    return comment_url


def failure_kind(exc: BaseException) -> str:
    """``transient`` (SQS retry may succeed) or ``permanent`` (fix the setup, then redrive from the DLQ)."""
    if isinstance(
        exc, TransientInvokeError | ReplyStoreError | EndpointConnectionError | ConnectTimeoutError
    ):
        return "transient"
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        return "transient" if err.get("Code") in TRANSIENT_CODES or status >= 500 else "permanent"
    if isinstance(exc, TrackerApiError):
        return "transient" if exc.retryable else "permanent"
    return "permanent"


def dispatch(task: AgentTask, deps: WorkerDeps, key: str) -> str:
    """Run ``task`` by its intent: an answer (:func:`process_task`), a fix job or a stop."""
    if task.intent == "answer":
        return process_task(task, deps, key=key)
    # An answer to an approval continues a fix that passed the gate when it started: no rate limit or
    # one-fix-per-issue check applies to it. Who may answer is checked by the approver, with the gate's
    # writer check (``GateWriters``), so that its refusal is counted as an approval refusal.
    if deps.gate is not None and task.intent in ("fix", "stop"):
        refused = deps.gate.refusal(task, key)
        if refused is not None:
            return _refuse(task, deps, refused)
    runner: FixRunner | Stopper | Approver | None = (
        deps.fix if task.intent == "fix" else deps.stopper if task.intent == "stop" else deps.approver
    )
    if runner is None:
        raise TrackerConfigError(f"this worker is not set up for {task.intent} tasks")
    return runner.run(task, key)


def _refuse(task: AgentTask, deps: WorkerDeps, refused: Refusal) -> str:
    """Say on the issue why a fix or stop is not done (nothing was claimed or paid)."""
    metrics.emit("FixRequestsRefused", task.tracker)
    logger.info(
        "fix or stop refused",
        extra={"tracker": task.tracker, "intent": task.intent, "code": refused.code, "author": task.author},
    )
    tracker = deps.tracker_for(task)
    text = tracker.format_reply(refused.text, footer=reply_footer(task.runtime_session_id, refused.code))
    return tracker.post_reply(task, text).url


def record_handler(record: SQSRecord) -> str:
    task = AgentTask.model_validate_json(record.body)
    try:
        return dispatch(task, _get_deps(), task_key(task, record.body))
    except Exception as exc:
        # The record fails (batchItemFailures): SQS redelivers it, then moves it to the DLQ.
        logger.warning(
            "task failed; SQS will redeliver it",
            extra={
                "tracker": task.tracker,
                "delivery_id": task.delivery_id,
                "kind": failure_kind(exc),
                "error": f"{type(exc).__name__}: {exc}"[:2000],
                "receive_count": record.attributes.approximate_receive_count,
            },
        )
        raise


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return dict(
        process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    )
