"""``/agent stop``: stop the issue's running fix job, once, and say so in its progress comment.

The stop task (its own idempotency key: the signed comment's body hash) is claimed like an answer
(:class:`replies.ReplyStore`), so a redelivered stop does nothing twice. Then:

1. the issue's newest job (:meth:`fix_jobs.JobStore.session_jobs`) moves ``job`` (or ``awaiting_approval``) →
   ``stopped`` with a
   conditional write, recording who stopped it; the cost so far is the last progress event's. Done first,
   so a result the runtime still sends finds ``stopped`` and the reporter opens no pull request;
2. a job waiting for an approval: its request is withdrawn on the runtime (``{"withdraw": ...}`` through
   ``InvokeAgentRuntime``, :meth:`invoker.AgentRuntimeInvoker.withdraw`), so no answer sent to the runtime directly
   (``agentkit approve``) can run the call after the stop. Before the session is stopped: the withdraw is an
   invocation of the session, which would start it again. Its failure is logged and does not keep the job from
   stopping: the runtime's own expiry of the request is the backstop, and a redelivered stop withdraws again (the
   runtime answers a repeated withdraw as the first);
3. ``bedrock-agentcore`` ``StopRuntimeSession`` on the issue's runtime session (:class:`session_stop.SessionStopper`).
   ``ResourceNotFoundException`` means the session is gone already: the state asked for. Another error fails
   the record (SQS retries it; the retry finds its own stop recorded and calls again);
4. the progress comment says "stopped" with the cost so far.

A fix the worker is still starting (claimed, fetching its snapshot or waiting for the runtime's 202) is not a
job yet: the stop is recorded on its claim (:meth:`fix_jobs.JobStore.request_stop`) and the worker, which
checks before invoking and when it records the job, does not start it or stops it at once, and edits the
progress comment itself (:mod:`webhook.fix.worker`). The two writes are conditional on the claim's state, so exactly
one side acts: a claim that became a job meanwhile is stopped here as in 1-3.

Nothing running (no job or claim, or it finished, was stopped already, or is being reported): one short comment
says so. Either way the stop task's reply is stored and marked posted, so it answers once.

IAM: ``bedrock-agentcore:StopRuntimeSession`` on the runtime ARN and ``<arn>/runtime-endpoint/<name>`` (and the
worker's ``InvokeAgentRuntime`` / ``InvokeAgentRuntimeForUser`` for the withdraw).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from webhook.fix.approvals import withdraw_on_runtime
from webhook.fix.jobs import AWAITING, DONE, JOB, RELEASED, REPORTING, STOPPED, JobState, JobStore
from webhook.fix.jobs import RUNNING as CLAIMED
from webhook.fix.worker import IssueRef, ProgressComments
from webhook.invoker import AgentRuntimeInvoker, TransientInvokeError
from webhook.replies import ANSWERED, POSTED, RUNNING, ReplyStore, StoredReply
from webhook.repo import branch_name
from webhook.session_stop import NOT_FOUND, SessionStopper
from webhook.session_stop import stopped_text as _stopped_text
from webhook.trackers import AgentTask, IssueTracker
from webhook.trackers.base import enabled_tracker
from webhook.trackers.reply_marks import reply_footer
from webhook.webhook_metrics import TrackerMetrics

__all__ = ["NOT_FOUND", "Stopper", "stopped_text"]


def stopped_text(state: JobState, by: str) -> str:
    return _stopped_text(
        by, cost_usd=state.cost_so_far, elapsed_s=state.elapsed_s, tool_calls=state.tool_calls
    )


NOTHING_TEXT = "Nothing to stop: no agent run is in progress on this issue."


class Stopper:
    """Runs stop tasks: ``client`` is a ``bedrock-agentcore`` client (standard retries: stopping is
    idempotent), ``runtime_arn`` / ``qualifier`` the runtime the worker invokes; ``invoker`` (the worker's)
    withdraws a waiting job's approval on the runtime (None: not withdrawn, it expires there)."""

    def __init__(
        self,
        *,
        client: Any,
        runtime_arn: str,
        qualifier: str | None,
        jobs: JobStore,
        replies: ReplyStore,
        comments: ProgressComments,
        trackers: Mapping[str, IssueTracker],
        metrics: TrackerMetrics,
        logger: Any,
        invoker: AgentRuntimeInvoker,
        lease_seconds: int = 900,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.stop_session = SessionStopper(client=client, runtime_arn=runtime_arn, qualifier=qualifier)
        self.invoker = invoker
        self.jobs = jobs
        self.replies = replies
        self.comments = comments
        self.trackers = trackers
        self.metrics = metrics
        self.logger = logger
        self.lease_seconds = lease_seconds
        self.clock = clock or time.time

    def run(self, task: AgentTask, key: str) -> str:
        """Stop ``task``'s issue session; returns the URL of the comment that says what happened.

        Raises:
            TransientInvokeError: another delivery of this stop is running.
            ReplyStoreError / botocore ClientError / TrackerApiError: SQS retries the record.
        """
        tracker = enabled_tracker(self.trackers, task.tracker)
        log_ctx = {"tracker": task.tracker, "issue": task.issue_number, "key": key}
        stored = self.replies.get(key)
        if stored is not None and stored.status == RUNNING:
            if self.clock() - stored.stored_at < self.lease_seconds:
                raise TransientInvokeError("this stop is being handled by another delivery")
        elif stored is not None and stored.status != ANSWERED:
            return stored.comment_url  # answered once already
        if stored is None and not self.replies.claim(key):
            raise TransientInvokeError("another delivery of this stop claimed it")
        try:
            return self._stop(task, key, tracker, log_ctx)
        except Exception:
            self.replies.release(key)  # a retry claims it again and finds its own stop recorded
            raise

    def _stop(self, task: AgentTask, key: str, tracker: IssueTracker, log_ctx: dict[str, Any]) -> str:
        session_id = task.runtime_session_id
        job_key, pending_key = self.jobs.session_jobs(session_id)
        issue = IssueRef.of_task(task)
        footer = reply_footer(session_id, "stop")
        requested = self._request_stop(task, key, pending_key) if pending_key != job_key else None
        if requested is not None:
            # A newer fix is still being started: its worker stops it and edits its own comment.
            pending_url, new = requested
            if new:
                self.metrics.emit("Stops", task.tracker)
            self.logger.info("stop requested before the job started", extra={**log_ctx, "job": pending_key})
            if job_key:  # an older job still running on the session is stopped as well
                self._stop_job(task, key, job_key, issue, footer, log_ctx)
            return self._answered(task, key, pending_url)
        url = None
        # The claim may have become the job since the pointers were read: both are candidates.
        candidates = list(dict.fromkeys(k for k in (job_key, pending_key) if k))
        for candidate in candidates:
            url = self._stop_job(task, key, candidate, issue, footer, log_ctx) or url
        if url is None:
            self.metrics.emit("StopsNothingRunning", task.tracker)
            text = self._too_late_text(candidates)
            url = self.comments.post(issue, tracker.format_reply(text, footer=footer)).url
            self.logger.info("stop: nothing running", extra={**log_ctx, "job": job_key or ""})
        return self._answered(task, key, url)

    def _too_late_text(self, candidates: list[str]) -> str:
        """What a stop that stopped nothing says: the truth about the issue's newest fix, which may be past the
        point a stop can reach (its result being turned into a pull request, or done)."""
        for candidate in candidates:
            state = self.jobs.get(candidate)
            if state is None:
                continue
            if state.status == REPORTING:
                return (
                    "Too late to stop: the agent has finished, and its change is being opened as a draft pull "
                    "request right now. Close that pull request if you do not want it."
                )
            if state.status == DONE and state.pr_url:
                return f"Nothing to stop: the fix has finished already: {state.pr_url}"
        return NOTHING_TEXT

    def _request_stop(self, task: AgentTask, key: str, pending_key: str | None) -> tuple[str, bool] | None:
        """Record the stop on a claim not started yet: ``(its progress comment URL, newly recorded)``, or
        ``None`` when it is not (or no longer) such a claim."""
        state = self.jobs.get(pending_key) if pending_key else None
        if state is None or pending_key is None or state.status not in (CLAIMED, RELEASED):
            return None
        if state.stop_key == key:
            return state.progress_comment_url, False
        if self.jobs.request_stop(pending_key, by=task.author, stop_key=key):
            return state.progress_comment_url, True
        return None

    def _answered(self, task: AgentTask, key: str, url: str) -> str:
        self.replies.put(
            key, StoredReply(comment="", session_id=task.runtime_session_id, delivery_id=task.delivery_id)
        )
        self.replies.mark(key, status=POSTED, comment_url=url)
        return url

    def _stop_job(
        self,
        task: AgentTask,
        key: str,
        job_key: str,
        issue: IssueRef,
        footer: str,
        log_ctx: dict[str, Any],
    ) -> str | None:
        """Stop the started job ``job_key`` when it runs (or this stop task stopped it before); its comment's URL,
        or ``None`` when there was nothing to stop."""
        state = self.jobs.get(job_key)
        ours = state is not None and state.status == STOPPED and state.stop_key == key
        if state is not None and (
            # A job waiting for an approval is stopped too: later answers to it are refused (webhook.fix.approvals).
            ours
            or (state.status in (JOB, AWAITING) and self.jobs.stop(job_key, by=task.author, stop_key=key))
        ):
            if state.approval and not state.approval_decision:  # it was waiting: no answer may run it now
                self._withdraw(task, state, log_ctx)
            # Raises: the record is retried and finds its own stop recorded.
            self.stop_session(task.runtime_session_id)
            after = self.jobs.get(job_key) or state
            text = stopped_text(after, task.author)
            if after.report_at and after.job is not None:
                # A reporter took the result before (report_at is set when it does) and gave it back after a
                # failure: its branch may exist already, and it stays where it is.
                job = after.job
                branch = branch_name(
                    job.tracker, job.scope_id, job.issue_id, job_key, label=job.issue_ref.lstrip("#")
                )
                text = text.replace(
                    "No pull request was opened.",
                    f"No pull request was opened, but an earlier attempt may have pushed the branch `{branch}`"
                    " (in the bot's fork, or the repository); it is left in place: delete it if you do not want it.",
                )
            if not ours:
                self.metrics.emit("Stops", task.tracker)
            tracker = self.trackers[task.tracker]
            self.comments.edit(issue, after.progress_comment_id, tracker.format_reply(text, footer=footer))
            self.logger.info(
                "fix job stopped", extra={**log_ctx, "job": job_key, "cost_so_far": after.cost_so_far}
            )
            return after.progress_comment_url
        return None

    def _withdraw(self, task: AgentTask, state: JobState, log_ctx: dict[str, Any]) -> None:
        """Withdraw the stopped job's approval on the runtime; never raises (module docstring, step 2)."""
        if state.approval:
            withdraw_on_runtime(
                self.invoker,
                task,
                str(state.approval.get("id", "")),
                reason="the fix job waiting for it was stopped with /agent stop on the issue",
                logger=self.logger,
                log_ctx=log_ctx,
            )
