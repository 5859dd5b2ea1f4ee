"""Sweeper Lambda (a schedule): fix jobs past their deadline with no result are ended and the issue is told.

A fix job reports through the runtime's result event. A microVM lost with its disk (AgentCore replaced it, the
session's maximum lifetime ended it while the result could not be sent) never sends one, and the runtime's own
journal only helps a restart on the same disk: without this sweep the issue would say "Working on it…" for ever.

Each run (an EventBridge rule, every 15 minutes by default):

1. reads the open jobs with a bounded, paged Scan of the reply table (:meth:`JobStore.open_jobs`: only the
   statuses that have a deadline rule, and ``timed_out`` jobs whose issue was not told yet);
2. for each job whose deadline passed (:data:`DeadlineRule` of its status; a status without a rule — a claim,
   a result being reported, a job waiting for an approval — is never swept here), moves it ``job`` →
   ``timed_out`` with a conditional write (:meth:`JobStore.time_out`). The reporter's
   :meth:`JobStore.begin_report` takes the same job out of ``job`` with its own conditional write, so of a sweep
   and a late result exactly one wins: the loser changes nothing and the issue sees one final answer;
3. edits the progress comment to say what happened and what to do (comment ``/agent fix`` again), counts
   ``JobsTimedOut``, and records that the issue was told (:meth:`JobStore.notified`). An edit that fails (the
   tracker's API is down) is retried by the next run; the count is not repeated.

4. expires the approvals nobody answered in time (:class:`webhook.fix.approvals.Sweeper`): a job waiting for an
   approval has no deadline rule (it may wait for hours, and no result is due while it waits); its own expiry is
   read from one pending-list item (``reply#approvals#pending``: job key → expiry, no Scan), the job moves to
   ``expired`` and its card says so. The same schedule runs both, so there is one rule to watch.

A result that arrives after the sweep finds ``timed_out``: the reporter opens nothing and posts nothing
(``ResultsAfterTimeout``), as for a result after ``/agent stop`` — the issue was already told to ask again.

Deadlines: ``JOB_DEADLINE_SECONDS`` after the job's start (``started_at``; default 8.5 h, the stack derives it
from the stage's ``max_lifetime_hours``; see :data:`webhook.settings.DEFAULT_JOB_DEADLINE_SECONDS`). Another
state gets its own deadline by adding a rule to :func:`deadline_rules`.

Environment: the variables :mod:`webhook.settings` declares for the sweeper (``IDEMPOTENCY_TABLE``, ``TRACKERS``,
the trackers' token secret names and API URLs, ``JOB_DEADLINE_SECONDS``, ``SWEEP_MAX_PAGES``).

IAM: ``dynamodb:Scan`` on the table reading only :data:`webhook.fix.jobs.SCAN_ATTRIBUTES`;
``dynamodb:GetItem/UpdateItem`` for ``reply#*`` keys; ``secretsmanager:GetSecretValue`` on the token secrets.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Tracer

from webhook import wiring
from webhook.errors import TrackerConfigError, WebhookError
from webhook.fix.approvals import Sweeper as ApprovalExpiry
from webhook.fix.jobs import JOB, TIMED_OUT, JobState, JobStore, OpenJob
from webhook.fix.repos import TrackerComments
from webhook.fix.worker import IssueRef, ProgressComments
from webhook.replies import ReplyStoreError
from webhook.settings import DEFAULT_REPLY_TTL_SECONDS, ENV, SERVICE_NAMES, WebhookSettings
from webhook.trackers import IssueTracker
from webhook.trackers.base import enabled_tracker
from webhook.trackers.reply_marks import reply_footer
from webhook.webhook_metrics import TrackerMetrics

SERVICE = os.environ.get(ENV["service_name"]) or SERVICE_NAMES["sweeper"]
logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = TrackerMetrics(service=SERVICE)
#: Items one Scan page evaluates (DynamoDB's ``Limit``: counted before the filter).
PAGE_SIZE = 500

#: When a job in a given status is overdue: epoch seconds, or ``None`` (never swept, e.g. not started yet).
DeadlineRule = Callable[[OpenJob], float | None]


def deadline_rules(settings: WebhookSettings) -> dict[str, DeadlineRule]:
    """Status → its deadline rule. Only a started job (``job``) has one: a claim (``running``) is the worker's
    and its task queue's (a dead worker's claim is adopted by the task's redelivery), a result being reported
    (``reporting``) the reporter's lease. A state added later (an approval wait with its own expiry) adds its
    rule here; a status without one is skipped by the Scan's filter."""
    seconds = settings.job_deadline_seconds

    def started_job(job: OpenJob) -> float | None:
        return job.started_at + seconds if job.started_at else None

    return {JOB: started_job}


def timed_out_text(deadline_seconds: float) -> str:
    """What the issue is told when a job ended without a result."""
    hours = deadline_seconds / 3600
    span = f"{hours:.1f} hours" if hours >= 1 else f"{int(deadline_seconds // 60)} minutes"
    return (
        f"No result came from the agent within {span} of the job's start, so this job was ended (`timed_out`):"
        " the runtime that ran it stopped before it could report. Nothing was changed in the repository."
        " Comment `/agent fix` to try again."
    )


@dataclass
class SweeperDeps:
    jobs: JobStore
    comments: ProgressComments
    trackers: dict[str, IssueTracker]
    rules: Mapping[str, DeadlineRule]
    deadline_seconds: float
    max_pages: int = 20
    page_size: int = PAGE_SIZE
    clock: Callable[[], float] = time.time
    #: Expires unanswered approvals in the same run (``None``: not here).
    approvals: ApprovalExpiry | None = None


@dataclass
class SweepReport:
    """What one run did: keys ended (``timed_out``), comments edited, lost races, failures, overdue count."""

    timed_out: list[str] = field(default_factory=list)
    notified: list[str] = field(default_factory=list)
    lost_race: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    within_deadline: int = 0
    complete: bool = True
    #: Jobs whose approval expired in this run; ``approvals_failed``: that pass failed (the next run retries).
    approvals_expired: int = 0
    approvals_failed: bool = False

    def summary(self) -> dict[str, Any]:
        return {
            "timed_out": len(self.timed_out),
            "notified": len(self.notified),
            "lost_race": len(self.lost_race),
            "failed": len(self.failed),
            "within_deadline": self.within_deadline,
            "complete": self.complete,
            "approvals_expired": self.approvals_expired,
            "approvals_failed": self.approvals_failed,
        }


class Sweeper:
    """One sweep with ``deps``."""

    def __init__(self, deps: SweeperDeps) -> None:
        self.deps = deps

    def sweep(self) -> SweepReport:
        """Raises :class:`ReplyStoreError` when the Scan fails (nothing was changed then)."""
        d = self.deps
        report = SweepReport()
        found, report.complete = d.jobs.open_jobs(
            tuple(d.rules), page_size=d.page_size, max_pages=d.max_pages
        )
        if not report.complete:
            logger.warning(
                "sweep stopped at its page bound; raise SWEEP_MAX_PAGES",
                extra={"max_pages": d.max_pages, "page_size": d.page_size},
            )
        now = d.clock()
        for job in found:
            try:
                if job.status == TIMED_OUT:
                    if not job.notified_at and self._notify(job.key):
                        report.notified.append(job.key)
                    continue
                rule = d.rules.get(job.status)
                deadline = rule(job) if rule else None
                if deadline is None or now < deadline:
                    report.within_deadline += 1
                    continue
                if not d.jobs.time_out(job.key, status=job.status):
                    # A result (or a stop) moved it first: that answer stands.
                    report.lost_race.append(job.key)
                    continue
                report.timed_out.append(job.key)
                if self._notify(job.key, count=True):
                    report.notified.append(job.key)
            except (ReplyStoreError, WebhookError) as exc:
                # One job's failure does not hold back the others; the next run retries what is left.
                report.failed.append(job.key)
                logger.error("sweep of a job failed", extra={"job_id": job.key, "error": str(exc)[:500]})
        if d.approvals is not None:
            try:
                report.approvals_expired = d.approvals.sweep()
            except (ReplyStoreError, WebhookError) as exc:
                # The jobs stay on the pending list: the next run expires them.
                report.approvals_failed = True
                logger.error("approval expiry failed", extra={"error": str(exc)[:500]})
        return report

    def _notify(self, key: str, *, count: bool = False) -> bool:
        """Edit the timed-out job's progress comment and record it; ``count``: this run ended the job."""
        d = self.deps
        state = d.jobs.get(key)
        if state is None or state.status != TIMED_OUT or state.job is None:
            return False
        job = state.job
        if count:
            metrics.emit("JobsTimedOut", job.tracker)
            logger.warning(
                "fix job timed out with no result",
                extra={"job_id": key, "tracker": job.tracker, "started_at": state.started_at},
            )
        if state.notified_at:
            return False
        tracker = enabled_tracker(d.trackers, job.tracker)
        text = tracker.format_reply(
            timed_out_text(d.deadline_seconds), footer=reply_footer(job.session_id, "fix job")
        )
        d.comments.edit(IssueRef.of_job(job), _comment_id(state), text)
        d.jobs.notified(key)
        return True


def _comment_id(state: JobState) -> str:
    assert state.job is not None
    return state.progress_comment_id or state.job.comment_id


def deps_from_env() -> SweeperDeps:
    s = WebhookSettings.from_env(os.environ)
    if not s.idempotency_table:
        raise TrackerConfigError(f"environment variable {ENV['idempotency_table']} is required")
    secrets = boto3.client("secretsmanager")
    built = wiring.build_trackers("worker", env=s, secrets_client=secrets)
    jobs = JobStore(
        client=boto3.client("dynamodb"),
        table_name=s.idempotency_table,
        ttl_seconds=DEFAULT_REPLY_TTL_SECONDS,
    )
    comments = TrackerComments(built)
    return SweeperDeps(
        jobs=jobs,
        comments=comments,
        trackers=built,
        rules=deadline_rules(s),
        deadline_seconds=s.job_deadline_seconds,
        max_pages=s.sweep_max_pages,
        approvals=ApprovalExpiry(
            jobs=jobs, comments=comments, trackers=built, metrics=metrics, logger=logger
        ),
    )


_deps: SweeperDeps | None = None


def configure(deps: SweeperDeps | None) -> None:
    """Install ``deps`` (tests) or reset to lazily building them from the environment (``None``)."""
    global _deps
    _deps = deps


def _get_deps() -> SweeperDeps:
    global _deps
    if _deps is None:
        _deps = deps_from_env()
    return _deps


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    report = Sweeper(_get_deps()).sweep()
    summary = report.summary()
    logger.info("sweep done", extra=summary)
    return summary


__all__ = ["DeadlineRule", "Sweeper", "SweeperDeps", "configure", "deadline_rules", "handler"]
