"""The worker's side of a fix job: claim, one progress comment, snapshot, hand the turn to the runtime.

A fix task (:attr:`trackers.AgentTask.intent` ``fix``) never waits for the agent: the worker

1. claims the task's key (:meth:`fix_jobs.JobStore.claim`; a concurrent delivery fails transiently);
2. posts ONE progress comment at once ("working…"; a retried task edits the one it posted before);
3. fetches the repository the change goes to — the issue's own (GitHub, GitLab) or the Jira project's
   mapped one (:mod:`webhook.fix.config`) — at its default branch, or at the head of the pull/merge request commented
   on, with the tracker token, which never leaves this side; and keeps the job document on the claim
   (:meth:`fix_jobs.JobStore.prepared`);
4. invokes the runtime with ``async: true`` and ``job: {"id": <the task's key>, "context": <FixJob>}`` and
   the snapshot inline (``workspace.tar_gz_b64``) or, over ``INLINE_SNAPSHOT_MAX_BYTES``, uploaded to the
   workspace bucket (``workspace.s3_uri``); the runtime answers 202 at once;
5. records the job (:meth:`fix_jobs.JobStore.started`) and finishes the SQS record.

The result arrives later on the runtime's events queue (:mod:`reporter`). Failures: no job started and the
cause may pass (throttling, a busy session, the tracker's 5xx) → the claim is released and the record fails
(SQS retries it, the same progress comment is reused); a final error (no repository mapped, snapshot refused
or too large, the runtime refusing the job) → the progress comment becomes a short error with its code and
the task is done.

**A worker that died after its claim** (a Lambda timeout or crash; the claim is older than the lease): the
redelivered task takes the claim over (:meth:`fix_jobs.JobStore.adopt`) and finishes the start: the same
progress comment, and — when the dead worker had prepared the job, so it may have invoked the runtime — the
same job document, a snapshot of the same commit and the SAME job id. The runtime accepts a job id its session
already has (queued, running or recently finished) with the same 202 and no second turn, so the job is paid
once and recorded once. A retry after a released claim re-sends its prepared job the same way.

**A stop before the job is recorded**: ``/agent stop`` records a request on the claim (:mod:`webhook.fix.stop`). The
worker reads it after claiming and again right before invoking: then it does not start the job; and
:meth:`fix_jobs.JobStore.started` refuses to record a job with a stop request, so a stop that arrives during
the invocation makes the worker call ``StopRuntimeSession`` at once. Either way the claim becomes ``stopped``
and the progress comment is edited once to say so.

IAM (besides the worker's): ``s3:PutObject`` on ``<WORKSPACE_S3_URI>jobs/*`` when snapshots may go by S3;
``bedrock-agentcore:StopRuntimeSession`` (a stop during the invocation; :mod:`session_stop`).
"""

from __future__ import annotations

import base64
import contextlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from webhook.errors import TrackerApiError, TrackerConfigError, WebhookError
from webhook.fix.config import FixSettings
from webhook.fix.failure_hints import hint
from webhook.fix.jobs import DONE, JOB, REPORTING, RUNNING, STOPPED, FixJob, JobState, JobStore
from webhook.invoker import AgentRuntimeInvoker, TransientInvokeError, safe_error_code
from webhook.prompts import render_fix_prompt
from webhook.session_stop import stopped_text
from webhook.trackers import AgentTask, IssueTracker
from webhook.trackers.base import enabled_tracker
from webhook.trackers.reply_marks import reply_footer
from webhook.trackers.targets import RepoTarget
from webhook.webhook_metrics import TrackerMetrics


@dataclass(frozen=True)
class IssueRef:
    """An issue and the tracker it lives on: where progress comments are posted and edited."""

    tracker: str
    repository: str
    scope_id: str
    issue_number: int
    issue_id: str
    html_url: str = ""
    #: A pull/merge request rather than an issue (GitLab keeps its notes apart).
    pull_request: bool = False

    @classmethod
    def of_task(cls, task: AgentTask) -> IssueRef:
        fields = (
            task.tracker,
            task.repository,
            task.scope_id,
            task.issue_number,
            task.issue_id,
            task.html_url,
        )
        return cls(*fields, task.pull_request)

    @classmethod
    def of_job(cls, job: FixJob) -> IssueRef:
        fields = (job.tracker, job.repository, job.scope_id, job.issue_number, job.issue_id, job.html_url)
        return cls(*fields, job.pull_request)


@dataclass(frozen=True)
class CommentRef:
    id: str
    url: str


class ProgressComments(Protocol):
    """Post and edit the one progress comment of a job (text already formatted for the tracker)."""

    def post(self, issue: IssueRef, text: str) -> CommentRef: ...

    def edit(self, issue: IssueRef, comment_id: str, text: str) -> None: ...


@dataclass(frozen=True)
class FetchedRepo:
    """A repository snapshot to work on: ``archive`` (the runtime's tar.gz) or, streamed, the file
    ``archive_path`` holding it; the commit it was made from, the branch it was fetched at and the branch a
    pull request would target."""

    archive: bytes
    commit_sha: str
    branch: str
    pr_base: str
    archive_path: str = ""

    @property
    def size(self) -> int:
        return os.path.getsize(self.archive_path) if self.archive_path else len(self.archive)

    def read(self) -> bytes:
        """The whole archive (only for one small enough to go inline)."""
        if not self.archive_path:
            return self.archive
        with open(self.archive_path, "rb") as f:
            return f.read()

    def discard(self) -> None:
        """Remove the spooled archive (the Lambda's ``/tmp`` outlives the invocation)."""
        if self.archive_path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.archive_path)


class RepoSource(Protocol):
    """Fetches snapshots with the tracker token (raises ``TrackerApiError`` or a repository error)."""

    def fetch(self, target: RepoTarget, *, pull_request: int | None) -> FetchedRepo: ...

    def refetch(self, job: FixJob) -> FetchedRepo:
        """The snapshot of ``job``'s base commit again (a retried start re-sends the job it prepared)."""
        ...


@dataclass
class FixDeps:
    jobs: JobStore
    repos: RepoSource
    comments: ProgressComments
    settings: FixSettings
    #: An ``s3`` client, for snapshots over the inline cap (``None``: every snapshot goes inline).
    s3: Any = None
    clock: Callable[[], float] = time.time
    #: ``StopRuntimeSession`` of a runtime session (:class:`session_stop.SessionStopper`), for a stop that
    #: arrives while the runtime is being invoked. ``None``: such a stop fails the record (set-up error).
    stop_session: Callable[[str], None] | None = None


class _StopRequested(Exception):
    """``/agent stop`` asked before the job started (the claim's state carries who)."""

    def __init__(self, state: JobState, *, invoked: bool) -> None:
        super().__init__("stop requested")
        self.state = state
        #: Whether the runtime may have accepted the job (an earlier attempt prepared it, so may have invoked).
        self.invoked = invoked


class FixRefused(WebhookError):
    """A fix that can never run as asked (a final error, shown on the issue with its code)."""

    http_status = 422

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


WORKING_TEXT = (
    "Working on it… I am preparing a snapshot of the repository. This comment is updated as the run goes;"
    " comment `/agent stop` to stop it."
)


def resolve_target(task: AgentTask, settings: FixSettings) -> RepoTarget:
    """The repository a task's change goes to. Raises :class:`FixRefused` for an unmapped Jira project."""
    if task.tracker == "github":
        return RepoTarget("github", task.repository)
    if task.tracker == "gitlab":
        return RepoTarget("gitlab", task.repository, task.scope_id)
    target = settings.jira_repositories.get(task.repository)
    if target is None:
        raise FixRefused(
            "no_repository_mapped",
            f"Jira project {task.repository} is not mapped to a repository (JIRA_REPOSITORIES)",
        )
    return target


def workspace_field(fx: FixDeps, fetched: FetchedRepo, key: str) -> dict[str, Any]:
    """``{"tar_gz_b64": ...}`` inline, or ``{"s3_uri": ...}`` after an upload when the snapshot is over
    ``INLINE_SNAPSHOT_MAX_BYTES`` and a workspace bucket is set. Without a bucket every snapshot goes inline: the
    runtime's own cap (``AGENTKIT_WORKSPACE_MAX_BYTES``) then decides, with a clear ``workspace_too_large``."""
    location = fx.settings.s3_location
    if fetched.size <= fx.settings.inline_snapshot_max_bytes or location is None or fx.s3 is None:
        return {"tar_gz_b64": base64.b64encode(fetched.read()).decode()}
    bucket, prefix = location
    object_key = f"{prefix}jobs/{key}/workspace.tar.gz"
    extra = {"ContentType": "application/gzip"}
    if fetched.archive_path:  # streamed from disk in parts (boto3's managed transfer), never read whole
        with open(fetched.archive_path, "rb") as body:
            fx.s3.upload_fileobj(body, bucket, object_key, ExtraArgs=extra)
    else:
        fx.s3.put_object(Bucket=bucket, Key=object_key, Body=fetched.archive, **extra)
    return {"s3_uri": f"s3://{bucket}/{object_key}"}


def error_text(code: str, reference: str) -> str:
    """The failed job's comment: its code, the code's fixed hint when it has one (:mod:`webhook.fix.failure_hints`),
    and a log reference; nothing of the error's message, which is only logged."""
    shown = safe_error_code(code)
    what_to_do = hint(shown)
    return (
        f"The agent could not work on this (`{shown}`). "
        + (f"{what_to_do} " if what_to_do else "")
        + f"An admin can check the logs (request id `{reference}`)."
    )


class FixRunner:
    """Runs the worker's part of fix tasks with ``invoker``, ``trackers`` and :class:`FixDeps`."""

    def __init__(
        self,
        *,
        fx: FixDeps,
        invoker: AgentRuntimeInvoker,
        trackers: Mapping[str, IssueTracker],
        metrics: TrackerMetrics,
        logger: Any,
        lease_seconds: int = 900,
        max_prompt_chars: int = 20_000,
    ) -> None:
        self.fx = fx
        self.invoker = invoker
        self.trackers = trackers
        self.metrics = metrics
        self.logger = logger
        self.lease_seconds = lease_seconds
        self.max_prompt_chars = max_prompt_chars

    def _tracker(self, name: str) -> IssueTracker:
        return enabled_tracker(self.trackers, name)

    def _footer(self, task: AgentTask) -> str:
        return reply_footer(task.runtime_session_id, "fix job")

    def run(self, task: AgentTask, key: str) -> str:
        """Start the fix job of ``task`` (stored under ``key``); returns the progress comment's URL.

        Raises:
            TransientInvokeError, ReplyStoreError, TrackerApiError (retryable), botocore errors: no job
                started and SQS may retry (the claim is released first).
        """
        jobs, issue = self.fx.jobs, IssueRef.of_task(task)
        tracker = self._tracker(task.tracker)
        log_ctx = {
            "tracker": task.tracker,
            "repository": task.repository,
            "issue": task.issue_number,
            "key": key,
        }
        state = jobs.get(key)
        if state is not None and state.status in (JOB, REPORTING, DONE, STOPPED):
            self.logger.info(
                "fix task already started; redelivery ignored", extra={**log_ctx, "status": state.status}
            )
            return state.progress_comment_url
        if state is not None and state.status == RUNNING:
            age = self.fx.clock() - state.stored_at
            if age < self.lease_seconds:
                raise TransientInvokeError(f"the fix job for this task is being started since {age:.0f}s")
            # Its worker died after the claim: take the claim over and finish the start (module docstring).
            if jobs.adopt(key, claimed_at=state.stored_at) is None:
                raise TransientInvokeError("another delivery took over this fix task")
            self.logger.warning(
                "fix task taken over from a worker that died",
                extra={**log_ctx, "age_s": round(age), "prepared": state.job is not None},
            )
        elif not jobs.claim(key, session_id=task.runtime_session_id):
            raise TransientInvokeError("another delivery of this fix task claimed it")
        claim = jobs.get(key)
        assert claim is not None
        comment_id, comment_url = claim.progress_comment_id, claim.progress_comment_url
        try:
            if claim.stop_requested_by:
                raise _StopRequested(claim, invoked=claim.job is not None)
            if not comment_id:
                posted = self.fx.comments.post(
                    issue, tracker.format_reply(WORKING_TEXT, footer=self._footer(task))
                )
                comment_id, comment_url = posted.id, posted.url
                jobs.remember_progress_comment(key, comment_id=comment_id, url=comment_url)
            job = self._start(task, key, claim, comment_id, comment_url)
        except _StopRequested as stop:
            return self._stopped_unstarted(task, stop.state, invoked=stop.invoked)
        except FixRefused as exc:
            return self._refuse(
                task, key, claim.stored_at, comment_id, comment_url, exc.code, exc.message, log_ctx
            )
        except WebhookError as exc:
            if isinstance(exc, TrackerApiError) and (
                exc.retryable or exc.status is None or exc.status >= 500
            ):
                jobs.release(key)
                raise
            if isinstance(exc, TrackerConfigError):
                jobs.release(key)
                raise
            return self._refuse(
                task, key, claim.stored_at, comment_id, comment_url, exc.code, exc.message, log_ctx
            )
        except Exception:
            jobs.release(key)
            raise
        if jobs.started(key, job, claimed_at=claim.stored_at):
            # Counted by whichever side's conditional write recorded the start (the reporter counts the ones it
            # records from a job's first event), so each job is counted once.
            self.metrics.emit("FixJobsStarted", task.tracker)
        else:
            now = jobs.get(key)
            if now is not None and now.status == RUNNING and now.stored_at == claim.stored_at:
                # A stop was requested while the runtime was being invoked: stop the job it just accepted.
                return self._stopped_unstarted(task, now, invoked=True)
            if now is None or now.status == RUNNING:
                self.logger.warning("fix job accepted, but its claim was taken over", extra=log_ctx)
            # Otherwise the reporter (or the delivery that took the claim over) recorded it already.
        self.logger.info(
            "fix job started",
            extra={
                **log_ctx,
                "target": job.target_repository,
                "base_sha": job.base_sha,
                "comment_url": comment_url,
            },
        )
        return comment_url

    def _start(self, task: AgentTask, key: str, claim: JobState, comment_id: str, comment_url: str) -> FixJob:
        """Prepare (or take the prepared) job, then invoke the runtime unless a stop was requested meanwhile.

        Raises :class:`_StopRequested`, :class:`FixRefused`, ``TransientInvokeError`` and what fetching raises."""
        job = claim.job
        if job is None:
            target = resolve_target(task, self.fx.settings)
            pull_request = task.issue_number if task.pull_request and task.tracker != "jira" else None
            fetched = self.fx.repos.fetch(target, pull_request=pull_request)
            try:
                job = FixJob(
                    tracker=task.tracker,
                    repository=task.repository,
                    scope_id=task.scope_id,
                    issue_number=task.issue_number,
                    issue_id=task.issue_id,
                    issue_ref=task.issue_ref,
                    html_url=task.html_url,
                    title=task.title[:200],
                    author=task.author[:200],
                    author_id=task.author_id,
                    session_id=task.runtime_session_id,
                    comment_id=comment_id,
                    comment_url=comment_url,
                    target_tracker=target.tracker,
                    target_repository=target.repository,
                    target_project_id=target.project_id,
                    base_branch=fetched.branch,
                    base_sha=fetched.commit_sha,
                    pr_base=fetched.pr_base,
                    pull_request=pull_request is not None,
                )
                self._context(job)  # a context too large is refused before it is kept
                if not self.fx.jobs.prepared(key, job, claimed_at=claim.stored_at):
                    raise TransientInvokeError("the claim of this fix task was taken over")
            except BaseException:
                fetched.discard()
                raise
        else:
            fetched = self.fx.repos.refetch(job)
        try:
            now = self.fx.jobs.get(key)
            if now is not None and now.stop_requested_by:
                raise _StopRequested(now, invoked=claim.job is not None)
            reply = self.invoker.invoke(
                prompt=render_fix_prompt(task, job, max_chars=self.max_prompt_chars),
                session_id=task.runtime_session_id,
                actor=task.actor,
                extra={
                    "workspace": workspace_field(self.fx, fetched, key),
                    "async": True,
                    "job": {"id": key, "context": self._context(job)},
                },
            )
        finally:
            fetched.discard()
        if reply.error_code:
            self.logger.warning(
                "runtime refused the fix job",
                extra={"key": key, "code": reply.error_code, "detail": (reply.error_message or "")[:2000]},
            )
            raise FixRefused(reply.error_code, reply.error_message or reply.error_code)
        if reply.job_id != key:
            raise FixRefused("malformed_reply", f"the runtime accepted job {reply.job_id!r}, not {key!r}")
        return job

    def _stopped_unstarted(self, task: AgentTask, state: JobState, *, invoked: bool) -> str:
        """A stop asked before the job was recorded: stop the runtime session when the job may have been
        accepted (``invoked``), move the claim to ``stopped`` and say so in the progress comment, once.

        Raises ``TrackerConfigError`` (no session stopper) or the stopper's ``ClientError``: the claim is
        released and the retry finds the stop request again."""
        jobs, key = self.fx.jobs, state.key
        text = stopped_text(
            state.stop_requested_by, cost_usd=None if invoked else 0.0, before_start=not invoked
        )
        try:
            if invoked:
                if self.fx.stop_session is None:
                    raise TrackerConfigError("fix jobs need a StopRuntimeSession client to honour a stop")
                self.fx.stop_session(task.runtime_session_id)
            # The comment before the state: a retry after a failure here says it again (the same words), while
            # the other order could leave a stopped job whose comment still says "working".
            issue, tracker = IssueRef.of_task(task), self._tracker(task.tracker)
            url = self._say(issue, tracker, task, state.progress_comment_id, text)
            if not jobs.stop_unstarted(key, claimed_at=state.stored_at):
                self.logger.warning("stopped fix task's claim was taken over", extra={"key": key})
        except Exception:
            jobs.release(key)
            raise
        self.logger.info(
            "fix job stopped before it started",
            extra={"key": key, "invoked": invoked, "stopped_by": state.stop_requested_by},
        )
        return url or state.progress_comment_url

    @staticmethod
    def _context(job: FixJob) -> dict[str, Any]:
        try:
            return job.context()
        except ValueError as exc:  # a final error: the same task would be as large again
            raise FixRefused("job_context_too_large", str(exc)) from None

    def _say(
        self, issue: IssueRef, tracker: IssueTracker, task: AgentTask, comment_id: str, text: str
    ) -> str:
        """Put ``text`` into the progress comment (or a new comment when none was posted)."""
        formatted = tracker.format_reply(text, footer=self._footer(task))
        if comment_id:
            self.fx.comments.edit(issue, comment_id, formatted)
            return ""
        return self.fx.comments.post(issue, formatted).url

    def _refuse(
        self,
        task: AgentTask,
        key: str,
        claimed_at: int,
        comment_id: str,
        comment_url: str,
        code: str,
        message: str,
        log_ctx: dict[str, Any],
    ) -> str:
        """A final error before the job started: the task is done and the issue says why (code only)."""
        self.metrics.emit("FixJobErrors", task.tracker)
        self.logger.warning("fix job not started", extra={**log_ctx, "code": code, "detail": message[:2000]})
        if self.fx.jobs.finish_unstarted(key, error_code=code, claimed_at=claimed_at):
            url = self._say(
                IssueRef.of_task(task),
                self._tracker(task.tracker),
                task,
                comment_id,
                error_text(code, key[:16]),
            )
            return url or comment_url
        return comment_url
