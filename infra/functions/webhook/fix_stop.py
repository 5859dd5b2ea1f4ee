"""``/agent stop``: stop the issue's running fix job, once, and say so in its progress comment.

The stop task (its own idempotency key: the signed comment's body hash) is claimed like an answer
(:class:`replies.ReplyStore`), so a redelivered stop does nothing twice. Then:

1. the issue's newest job (:meth:`fix_jobs.JobStore.active_job`) moves ``job`` → ``stopped`` with a
   conditional write, recording who stopped it; the cost so far is the last progress event's. Done first,
   so a result the runtime still sends finds ``stopped`` and the reporter opens no pull request;
2. ``bedrock-agentcore`` ``StopRuntimeSession`` on the issue's runtime session (``agentRuntimeArn``,
   ``runtimeSessionId``, ``qualifier``; botocore model ``bedrock-agentcore`` ``StopRuntimeSession``).
   ``ResourceNotFoundException`` means the session is gone already: the state asked for. Another error fails
   the record (SQS retries it; the retry finds its own stop recorded and calls again);
3. the progress comment says "stopped" with the cost so far.

Nothing running (no job, or it finished, was stopped already, or is being reported): one short comment says
so. Either way the stop task's reply is stored and marked posted, so it answers once.

IAM: ``bedrock-agentcore:StopRuntimeSession`` on the runtime ARN and ``<arn>/runtime-endpoint/<name>``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import ClientError
from fix_jobs import JOB, STOPPED, JobState, JobStore
from fix_worker import IssueRef, ProgressComments
from invoker import TransientInvokeError
from replies import ANSWERED, POSTED, RUNNING, ReplyStore, StoredReply
from trackers import AgentTask, IssueTracker, TrackerConfigError
from webhook_metrics import TrackerMetrics

NOT_FOUND = "ResourceNotFoundException"


def stopped_text(state: JobState, by: str) -> str:
    cost = f"${state.cost_so_far:.4f}" if state.cost_so_far is not None else "n/a"
    ran = f" after {state.elapsed_s:.0f}s" if state.elapsed_s >= 1 else ""
    calls = f", {state.tool_calls} tool calls" if state.tool_calls else ""
    return f"Stopped by @{by}{ran}{calls}. Cost so far: {cost}. No pull request was opened."


NOTHING_TEXT = "Nothing to stop: no agent run is in progress on this issue."


class Stopper:
    """Runs stop tasks: ``client`` is a ``bedrock-agentcore`` client (standard retries: stopping is
    idempotent), ``runtime_arn`` / ``qualifier`` the runtime the worker invokes."""

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
        lease_seconds: int = 900,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.client = client
        self.runtime_arn = runtime_arn
        self.qualifier = qualifier
        self.jobs = jobs
        self.replies = replies
        self.comments = comments
        self.trackers = trackers
        self.metrics = metrics
        self.logger = logger
        self.lease_seconds = lease_seconds
        self.clock = clock or time.time

    def _stop_session(self, session_id: str) -> None:
        params: dict[str, Any] = {"agentRuntimeArn": self.runtime_arn, "runtimeSessionId": session_id}
        if self.qualifier:
            params["qualifier"] = self.qualifier
        try:
            self.client.stop_runtime_session(**params)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != NOT_FOUND:
                raise

    def run(self, task: AgentTask, key: str) -> str:
        """Stop ``task``'s issue session; returns the URL of the comment that says what happened.

        Raises:
            TransientInvokeError: another delivery of this stop is running.
            ReplyStoreError / botocore ClientError / TrackerApiError: SQS retries the record.
        """
        tracker = self.trackers.get(task.tracker)
        if tracker is None:
            raise TrackerConfigError(
                f"task for tracker {task.tracker!r}, but the worker has only {sorted(self.trackers)}"
            )
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
        job_key = self.jobs.active_job(session_id)
        state = self.jobs.get(job_key) if job_key else None
        issue = IssueRef.of_task(task)
        footer = f"agentkit · session {session_id[:15]}… · stop"
        ours = state is not None and state.status == STOPPED and state.stop_key == key
        if (
            state is not None
            and job_key
            and (ours or (state.status == JOB and self.jobs.stop(job_key, by=task.author, stop_key=key)))
        ):
            self._stop_session(session_id)  # raises: the record is retried and finds the stop recorded
            after = self.jobs.get(job_key) or state
            text = stopped_text(after, task.author)
            if not ours:
                self.metrics.emit("Stops", task.tracker)
            self.comments.edit(issue, after.progress_comment_id, tracker.format_reply(text, footer=footer))
            url = after.progress_comment_url
            self.logger.info(
                "fix job stopped", extra={**log_ctx, "job": job_key, "cost_so_far": after.cost_so_far}
            )
        else:
            self.metrics.emit("StopsNothingRunning", task.tracker)
            url = self.comments.post(issue, tracker.format_reply(NOTHING_TEXT, footer=footer)).url
            self.logger.info("stop: nothing running", extra={**log_ctx, "job": job_key or ""})
        self.replies.put(key, StoredReply(comment="", session_id=session_id, delivery_id=task.delivery_id))
        self.replies.mark(key, status=POSTED, comment_url=url)
        return url
