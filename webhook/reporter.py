"""Reporter Lambda (SQS: the runtime's job events queue): progress and results of fix jobs onto the issue.

The runtime sends, per asynchronous job, ``progress`` events and exactly one ``result`` event (delivery at
least once; see docs/webhook/fix-jobs.md). For each record the reporter:

* ``progress`` → keeps the figures (:meth:`fix_jobs.JobStore.record_progress`: newer ``seq`` only, while the
  job runs) and edits the progress comment at most once per ``PROGRESS_MIN_SECONDS`` (elapsed time, tool
  calls, cost so far);
* ``result`` → takes it exactly once (:meth:`fix_jobs.JobStore.begin_report`: a duplicated or redelivered
  result, or one arriving after ``/agent stop`` or after the sweep ended the job at its deadline
  (:mod:`webhook.sweeper`), does nothing), applies the patch to the base commit and opens
  the draft pull/merge request (or pushes the branch, ``PR_MODE=branch``) with the tracker token, then edits
  the progress comment into the answer with the link, cost and duration. An error result, a refused patch or
  a branch conflict become a short comment with the error code. A result of subtype ``awaiting_approval``
  opens nothing: the job waits for a person's approval and the comment becomes the approval card
  (:mod:`webhook.fix.approvals`).

Jobs whose approval nobody answered before it expired are ended by the sweeper (:mod:`webhook.sweeper`).

What the message says is checked against the job the worker recorded: the job id must name a started job
(or a claim whose worker kept that job document before invoking: the event proves the runtime accepted it, and
the job is recorded as started here) and ``context`` must equal the job's document, so a message nobody on the trusted side started (the events
queue is writable by the runtime) cannot point a token at another repository or issue. A patch too large for
SQS arrives as ``patch_s3_uri``; it is read only from ``s3://<WORKSPACE_S3 bucket>/jobs/<session id>/<job id>/patch.diff``
of the job's recorded session and id (two sessions may use one job id).

Environment: the variables :mod:`webhook.settings` declares for the reporter (``IDEMPOTENCY_TABLE``,
``TRACKERS``, the trackers' token secret names and API URLs, ``PR_MODE``, ``PROGRESS_MIN_SECONDS``,
``JOB_LEASE_SECONDS``, ``WORKSPACE_S3_URI``, …).

IAM: ``sqs:ReceiveMessage/DeleteMessage/GetQueueAttributes/ChangeMessageVisibility`` on the events queue;
``dynamodb:GetItem/UpdateItem`` on the table for ``reply#*`` keys; ``secretsmanager:GetSecretValue`` on the
enabled trackers' token secrets; ``s3:GetObject`` on ``<bucket>/jobs/*`` when a workspace bucket is set.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any, Literal

import boto3
from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from webhook import wiring
from webhook.errors import TrackerApiError, TrackerConfigError, WebhookError
from webhook.fix.approvals import approval_record, card_text, is_card
from webhook.fix.config import FixSettings, fix_settings
from webhook.fix.jobs import (
    DONE,
    JOB,
    REPORTING,
    RUNNING,
    STOPPED,
    TIMED_OUT,
    FixJob,
    JobState,
    JobStore,
    NotAFixJob,
)
from webhook.fix.repos import TrackerComments, TrackerRepos
from webhook.fix.worker import IssueRef, ProgressComments, error_text
from webhook.invoker import TransientInvokeError
from webhook.repo import PatchRefused, ProtectedPathRefused
from webhook.repo.patch_apply import DEFAULT_MAX_PATCH_BYTES
from webhook.repo.protected_paths import refusal_code
from webhook.settings import DEFAULT_REPLY_TTL_SECONDS, ENV, SERVICE_NAMES, WebhookSettings
from webhook.trackers import IssueTracker
from webhook.trackers.base import enabled_tracker
from webhook.trackers.reply_marks import cost_text, reply_footer
from webhook.trackers.reply_text import defuse_closing_keywords, neutralise
from webhook.webhook_metrics import TrackerMetrics

SERVICE = os.environ.get(ENV["service_name"]) or SERVICE_NAMES["reporter"]
logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = TrackerMetrics(service=SERVICE)
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
#: The largest figure believed from the runtime, per name: an event's cost (USD), times (seconds or
#: milliseconds; AgentCore's asynchronous jobs end within 8 hours), counts. Beyond it a figure is unknown.
FIGURE_CAPS: dict[str, float] = {
    "cost_usd": 100_000.0,
    "elapsed_s": 7 * 86_400.0,
    "duration_ms": 7 * 86_400_000.0,
    "tool_calls": 10_000_000.0,
    "at": 2**53,
}
_PATCH_URI = re.compile(
    r"^s3://([^/]+)/(jobs/([A-Za-z0-9._:-]{1,256})/([A-Za-z0-9._:-]{1,128})/patch\.diff)$"
)


class PatchLocationRefused(WebhookError):
    """A result names a patch object outside ``s3://<workspace bucket>/jobs/<its session>/<its job id>/patch.diff``."""

    code, http_status = "patch_location_refused", 422


class JobEvent(BaseModel):
    """One message of the events queue (the runtime's job event contract, version 1)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    v: Literal[1]
    job_id: str = Field(pattern=r"^[A-Za-z0-9._:-]{1,128}$")
    session_id: str
    #: Up to 2**53: a larger number would not survive a JSON reader or DynamoDB's 38 digits unchanged.
    seq: int = Field(ge=1, le=2**53)
    kind: Literal["progress", "result"]
    at: float
    context: dict[str, Any]
    elapsed_s: float = 0.0
    tool_calls: int = 0
    last_tool: str | None = None
    cost_usd: float = 0.0
    result: dict[str, Any] | None = None

    @field_validator("at", "elapsed_s", "cost_usd", "tool_calls", mode="before")
    @classmethod
    def _figure_or_zero(cls, value: Any, info: ValidationInfo) -> Any:
        """Progress figures the runtime reports: a value that is not a plausible figure (NaN, infinite,
        negative, over its cap, not a number) reads as 0 instead of failing the event, so a result still
        opens its change and the job still finishes."""
        figure = _figure(value, FIGURE_CAPS[info.field_name or ""])
        if figure is None:
            return 0
        return int(figure) if info.field_name == "tool_calls" else figure


@dataclass
class ReporterDeps:
    jobs: JobStore
    comments: ProgressComments
    repos: TrackerRepos
    trackers: dict[str, IssueTracker]
    settings: FixSettings
    s3: Any = None


def deps_from_env() -> ReporterDeps:
    s = WebhookSettings.from_env(os.environ)
    table = s.idempotency_table
    if not table:
        raise TrackerConfigError(f"environment variable {ENV['idempotency_table']} is required")
    secrets = boto3.client("secretsmanager")
    built = wiring.build_trackers("worker", env=s, secrets_client=secrets)
    settings = fix_settings(s)
    return ReporterDeps(
        jobs=JobStore(
            client=boto3.client("dynamodb"), table_name=table, ttl_seconds=DEFAULT_REPLY_TTL_SECONDS
        ),
        comments=TrackerComments(built),
        repos=TrackerRepos(
            tokens=wiring.token_providers(s, secrets_client=secrets, access="write"),
            api_urls=wiring.api_urls(s),
            allow_protected=settings.allow_protected,
        ),
        trackers=built,
        settings=settings,
        s3=boto3.client("s3") if settings.s3_location else None,
    )


_deps: ReporterDeps | None = None


def configure(deps: ReporterDeps | None) -> None:
    """Install ``deps`` (tests) or reset to lazily building them from the environment (``None``)."""
    global _deps
    _deps = deps


def _get_deps() -> ReporterDeps:
    global _deps
    if _deps is None:
        _deps = deps_from_env()
    return _deps


def _duration(ms: float | None) -> str:
    if not ms:
        return "n/a"
    seconds = int(ms / 1000)
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{ms / 1000:.1f}s"


def progress_text(ev: JobEvent) -> str:
    tool = f" (last: `{ev.last_tool[:60]}`)" if ev.last_tool else ""
    return (
        f"Working on it… {_duration(ev.elapsed_s * 1000)} so far, {ev.tool_calls} tool calls{tool},"
        f" cost so far ${ev.cost_usd:.4f}. Comment `/agent stop` to stop it."
    )


class Reporter:
    """Handles one job event at a time with ``deps``."""

    def __init__(self, deps: ReporterDeps) -> None:
        self.deps = deps

    def _format(self, job: FixJob, text: str, *, tail: str = "fix job") -> str:
        tracker = enabled_tracker(self.deps.trackers, job.tracker)
        return tracker.format_reply(text, footer=reply_footer(job.session_id, tail))

    def handle(self, ev: JobEvent) -> str:
        """Returns what was done (``progress``, ``throttled``, ``reported``, ``duplicate``, ...).

        Raises:
            TransientInvokeError: the job is not recorded as started yet, or another reporter holds the
                result: SQS redelivers the record later.
            ReplyStoreError / TrackerApiError (retryable): the same.
        """
        try:
            state = self.deps.jobs.get(ev.job_id)
        except NotAFixJob:
            state = None
        if state is None or state.status == "released":
            logger.error(
                "event for a job nobody started; dropped", extra={"job_id": ev.job_id, "kind": ev.kind}
            )
            return "unknown"
        if state.status == RUNNING:
            state = self._record_accepted(ev, state)
        if state.status == RUNNING:
            if ev.kind == "progress":
                return "early"  # the worker records the job right after the runtime's 202
            raise TransientInvokeError("the job's result came before the worker recorded the job")
        if state.job is None:  # stopped (or refused) before the worker prepared a job: nothing was started
            logger.error("event for a job that never started; dropped", extra={"job_id": ev.job_id})
            return "unknown"
        if ev.context != state.job.model_dump() or ev.session_id != state.job.session_id:
            logger.error("event does not match the recorded job; dropped", extra={"job_id": ev.job_id})
            return "mismatch"
        if ev.kind == "progress":
            return self._progress(ev, state)
        return self._result(ev, state)

    def _record_accepted(self, ev: JobEvent, state: JobState) -> JobState:
        """An event of the job document the worker kept on its claim before invoking proves the runtime accepted
        that job: record it as started here, so a worker that died after the runtime's 202 does not hold the
        result back until its task is redelivered (the task queue's visibility timeout can outlast the events
        queue's retries). Nothing is recorded for another document, nor when a stop was requested (the worker
        that takes the claim over stops the job)."""
        job = state.job
        if job is None or ev.context != job.model_dump() or ev.session_id != job.session_id:
            return state
        if not self.deps.jobs.started(ev.job_id, job, claimed_at=state.stored_at):
            return state
        # This write recorded the start, so this side counts it (the worker counts only the starts it records).
        metrics.emit("FixJobsStarted", job.tracker)
        logger.info(
            "job recorded as started from its own event", extra={"job_id": ev.job_id, "kind": ev.kind}
        )
        return self.deps.jobs.get(ev.job_id) or state

    def _progress(self, ev: JobEvent, state: JobState) -> str:
        jobs, job = self.deps.jobs, state.job
        assert job is not None
        kept = jobs.record_progress(
            ev.job_id,
            seq=ev.seq,
            cost_usd=ev.cost_usd,
            tool_calls=ev.tool_calls,
            last_tool=ev.last_tool or "",
            elapsed_s=ev.elapsed_s,
        )
        if not kept:
            return "stale"
        if not jobs.take_edit_slot(ev.job_id, min_interval=self.deps.settings.progress_min_seconds):
            return "throttled"
        self.deps.comments.edit(IssueRef.of_job(job), job.comment_id, self._format(job, progress_text(ev)))
        return "progress"

    def _result(self, ev: JobEvent, state: JobState) -> str:
        jobs, job = self.deps.jobs, state.job
        assert job is not None
        if not jobs.begin_report(ev.job_id, lease_seconds=self.deps.settings.job_lease_seconds):
            now = jobs.get(ev.job_id)
            status = now.status if now else "gone"
            if status == STOPPED:
                metrics.emit("ResultsAfterStop", job.tracker)
                logger.info("result after a stop; nothing opened", extra={"job_id": ev.job_id})
                return "stopped"
            if status == TIMED_OUT:
                # The sweep ended the job at its deadline and told the issue to ask again: a second, later answer
                # (a pull request under a comment saying nothing was changed) would contradict it. Logged and
                # counted so an operator sees deadlines that are too short.
                metrics.emit("ResultsAfterTimeout", job.tracker)
                logger.warning("result after the job's deadline; nothing opened", extra={"job_id": ev.job_id})
                return "timed_out"
            if status == REPORTING:
                raise TransientInvokeError("another reporter is reporting this result")
            metrics.emit("FixResultDuplicate", job.tracker)
            return "duplicate"
        try:
            return self._report(ev, job)
        except WebhookError as exc:
            if isinstance(exc, TrackerApiError) and (
                exc.retryable or exc.status is None or exc.status >= 500
            ):
                jobs.unreport(ev.job_id)
                raise
            if isinstance(exc, TrackerConfigError):
                jobs.unreport(ev.job_id)
                raise
            # a protected change names its classes on the issue (the policy's names, nothing of the patch)
            code = refusal_code(exc.classes) if isinstance(exc, ProtectedPathRefused) else exc.code
            return self._fail(ev, job, code, exc.message, cost=_cost(ev.result))
        except Exception:
            jobs.unreport(ev.job_id)
            raise

    def _report(self, ev: JobEvent, job: FixJob) -> str:
        result = ev.result or {}
        cost, duration_ms = _cost(result), _int(result.get("duration_ms"))
        if result.get("type") != "result":
            code = str(result.get("code") or "agent_error")
            return self._fail(ev, job, code, str(result.get("message") or ""), cost=cost)
        if is_card(result):
            return self._awaiting(ev, job, result["approval"], cost)
        patch = self._patch(ev, job, result)
        answer = str(result.get("text") or "").strip() or "_(the agent returned no summary)_"
        pr_url, lines = "", [answer, ""]
        proposal = None
        if patch:
            # The agent's text is steered by the issue's author: made inert as in comments (no mentions, no remote
            # images, no raw HTML; GitLab quick actions indented), since the pull request is posted as the bot.
            # Closing keywords are defused in all three (the title is the commit message): merging must not close
            # issues the agent or the issue's author named.
            title = defuse_closing_keywords(" ".join(f"Agent fix for {job.issue_ref}: {job.title}".split()))[
                :250
            ]
            summary = neutralise(answer, quick_actions=job.target_tracker == "gitlab")
            summary = defuse_closing_keywords(summary)[:60_000]
            body = f"{summary}\n\n---\nProposed by the agent for {job.html_url or job.issue_ref}. Review before merging."
            settings = self.deps.settings
            proposal = self.deps.repos.propose(
                job,
                ev.job_id,
                patch,
                mode=settings.pr_mode,
                title=title,
                body=body,
                branch_in=settings.branch_in,
            )
        if proposal is None:
            lines.append("No change to propose: the agent left the repository as it was.")
        else:
            change = proposal.result
            pr_url = change.url
            metrics.emit("PatchesApplied", job.tracker)
            if change.kind == "pull_request":
                lines.append(f"**Draft pull request:** {change.url}")
                if change.created:
                    metrics.emit("PullRequestsOpened", job.tracker)
                    if cost is not None:
                        metrics.emit("PullRequestCostUSD", job.tracker, cost, MetricUnit.NoUnit)
            else:
                note = f" ({change.note})" if change.note else ""
                lines.append(
                    f"**Branch `{change.branch}` pushed{note}:** [create the pull request]({change.url})"
                )
        tail = f"cost {cost_text(cost)} · {_duration(duration_ms)}"
        self.deps.comments.edit(
            IssueRef.of_job(job), job.comment_id, self._format(job, "\n".join(lines), tail=tail)
        )
        self.deps.jobs.finish(ev.job_id, pr_url=pr_url, cost_usd=cost, duration_ms=duration_ms)
        if cost is not None:
            metrics.emit("IssueCostUSD", job.tracker, cost, MetricUnit.NoUnit)
        logger.info(
            "fix job reported",
            extra={"job_id": ev.job_id, "tracker": job.tracker, "pr_url": pr_url, "cost_usd": cost},
        )
        return "reported"

    def _awaiting(self, ev: JobEvent, job: FixJob, card: dict[str, Any], cost: float | None) -> str:
        """The turn paused at a tool call that needs approval: no pull request; the job waits
        (:mod:`webhook.fix.approvals`) and its progress comment becomes the approval card."""
        approval = approval_record(card, job, ev.at)
        text = card_text(card, quick_actions=job.tracker == "gitlab", tracker=job.tracker)
        self.deps.comments.edit(
            IssueRef.of_job(job),
            job.comment_id,
            self._format(job, text, tail=f"cost so far {cost_text(cost)}"),
        )
        self.deps.jobs.await_approval(ev.job_id, approval, cost_usd=cost)
        metrics.emit("ApprovalsRequested", job.tracker)
        logger.info(
            "fix job waits for approval",
            extra={"job_id": ev.job_id, "approval_id": approval["id"], "tool": approval["tool"]},
        )
        return "awaiting_approval"

    def _patch(self, ev: JobEvent, job: FixJob, result: dict[str, Any]) -> str:
        """The result's patch, inline or from the workspace bucket (only this job's patch object, under the session
        the worker recorded for it)."""
        uri = result.get("patch_s3_uri")
        if not uri:
            return str(result.get("patch") or "")
        match = _PATCH_URI.match(str(uri))
        location = self.deps.settings.s3_location
        if (
            match is None
            or location is None
            or match.group(1) != location[0]
            or match.group(3) != job.session_id
            or match.group(4) != ev.job_id
        ):
            raise PatchLocationRefused(
                f"patch_s3_uri {str(uri)[:200]!r} is not this job's patch in the workspace bucket"
            )
        return _read_capped(self.deps.s3, match.group(1), match.group(2), DEFAULT_MAX_PATCH_BYTES)

    def _fail(self, ev: JobEvent, job: FixJob, code: str, message: str, *, cost: float | None) -> str:
        metrics.emit("FixJobErrors", job.tracker)
        logger.warning("fix job failed", extra={"job_id": ev.job_id, "code": code, "detail": message[:2000]})
        text = error_text(code, ev.job_id[:16])
        self.deps.comments.edit(
            IssueRef.of_job(job), job.comment_id, self._format(job, text, tail=f"cost {cost_text(cost)}")
        )
        self.deps.jobs.finish(ev.job_id, error_code=code, cost_usd=cost)
        return "failed"


def _read_capped(s3: Any, bucket: str, key: str, cap: int) -> str:
    """The object as text, never more than ``cap`` bytes of it read: a ranged GET (``Range: bytes=0-cap``; S3
    answers ``Content-Range: bytes 0-<last>/<size>``, GetObject in botocore's s3 service model) asks for one
    byte over the cap, so an object over it is refused on its size, whatever a read would cost the Lambda.

    Raises:
        PatchRefused: the object is over ``cap`` bytes.
    """
    answer = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes=0-{cap}")
    size = str(answer.get("ContentRange") or "").rpartition("/")[2]
    total = int(size) if size.isdigit() else int(answer.get("ContentLength") or 0)
    if total > cap:
        answer["Body"].close()
        raise PatchRefused(f"the patch object is {total} bytes; the limit is {cap}")
    body = answer["Body"].read(cap + 1)
    if len(body) > cap:
        raise PatchRefused(f"the patch object is over {cap} bytes")
    return str(body.decode("utf-8", "surrogateescape"))


def _figure(value: Any, cap: float) -> float | None:
    """``value`` as a figure in ``[0, cap]``, or ``None``: not a number, NaN, infinite, negative or over
    ``cap``. What the runtime reports is untrusted, and NaN or 1e300 fail DynamoDB's number type, while a
    negative cost would lower the cost metrics."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number <= cap else None


def _cost(result: dict[str, Any] | None) -> float | None:
    return _figure((result or {}).get("cost_usd"), FIGURE_CAPS["cost_usd"])


def _int(value: Any) -> int | None:
    figure = _figure(value, FIGURE_CAPS["duration_ms"])
    return None if figure is None else int(figure)


def record_handler(record: SQSRecord) -> str:
    try:
        ev = JobEvent.model_validate_json(record.body)
    except ValueError as exc:
        # Never retried: a malformed message stays malformed. Logged without its body (it may hold a patch).
        logger.error("malformed job event; dropped", extra={"error": str(exc)[:500]})
        return "malformed"
    return Reporter(_get_deps()).handle(ev)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return dict(
        process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    )


__all__ = ["DONE", "JOB", "JobEvent", "Reporter", "ReporterDeps", "configure", "handler"]
