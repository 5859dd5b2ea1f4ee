"""Tool calls waiting for a person's approval, on the tracker: the card on the issue and ``/agent approve|deny``.

A fix job's turn can stop at a tool call a rule of the runtime names (``AGENTKIT_APPROVALS``; docs/approvals.md):
the runtime ends the job with a result of subtype ``awaiting_approval`` carrying the request's card (id, tool,
exact input, input hash, rule, cost so far, expiry). Here:

* the reporter (:mod:`webhook.reporter`) opens nothing for it, records the job as ``awaiting_approval`` with the
  request (:meth:`fix_jobs.JobStore.await_approval`; :func:`approval_record`) and edits the progress comment into
  the card (:func:`card_text`): the input is model-produced and untrusted, so it is shown as JSON in a code fence
  with every backtick escaped (no fence can be closed from inside), non-ASCII escaped (no bidirectional or
  zero-width tricks), clipped, with its hash; the tool name and the rule are reduced to safe characters;
* ``/agent approve <id> [note]`` / ``/agent deny <id> [reason]`` on the issue (:class:`Approver`, run by the
  worker): who may answer is checked (:class:`Writers`: the same check as for starting a fix, :class:`GateWriters`
  — GitHub's collaborator permission, Jira's mapping, GitLab's access level; with ``APPROVAL_TWO_PERSON`` on,
  not the person who asked for the run), then the answer is recorded on the
  paused job with a conditional write (:meth:`fix_jobs.JobStore.decide`: the first answer wins) and sent to the
  runtime as a NEW asynchronous job on the same session whose id is the approval id (the runtime takes a job id
  once per session; the paused job's id is used up), with the paused job's document as its context: the
  reporter edits the same progress comment from the continuation's result and opens the pull request.
  The continuation can pause again (another card, another id).

Refused, with a short comment and nothing started: an unknown id (not the issue's job waiting for it), an answer
after the first (``approval_used``: the continuation's item exists), a job stopped (``/agent stop`` while
waiting) or expired, a commenter who is not a writer, the requester under the two-person rule, and an approval
while fix jobs are turned off (``FIX_JOBS=off``: resuming would be a fix turn); a denial then ends the job without
resuming the agent (``done``, ``error_code`` ``fix_jobs_off``) and withdraws the request on the runtime
(:func:`withdraw_on_runtime`), so no approval sent there directly can run the call either.

**Expiry**: past the card's ``expires_at`` the job moves to ``expired`` and the progress comment says so, either
when an answer arrives (it is refused) or when the sweeper's scheduled run (:mod:`webhook.sweeper`, every 15
minutes, with :class:`Sweeper`) finds it on the pending list, whichever comes first; the runtime refuses a late answer on its own as well (410
``approval_expired``).

Metrics (``Tracker`` dimension): ``ApprovalsRequested`` (reporter), ``ApprovalsApproved``, ``ApprovalsDenied``,
``ApprovalsExpired``, ``ApprovalsRefused`` and ``ApprovalDecisionSeconds`` (worker).

IAM: the worker's (``bedrock-agentcore:InvokeAgentRuntime``, the reply table).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit

from webhook.errors import WebhookError
from webhook.fix.gate import FixGate
from webhook.fix.jobs import ANSWERED, AWAITING, EXPIRED, RELEASED, STOPPED, FixJob, JobState, JobStore
from webhook.fix.jobs import RUNNING as CLAIMED
from webhook.fix.worker import FixDeps, IssueRef, ProgressComments, error_text, workspace_field
from webhook.invoker import AgentRuntimeInvoker, TransientInvokeError
from webhook.replies import ANSWERED as REPLY_ANSWERED
from webhook.replies import POSTED, RUNNING, ReplyStore, ReplyStoreError, StoredReply
from webhook.trackers import AgentTask, IssueTracker
from webhook.trackers.base import enabled_tracker
from webhook.trackers.reply_marks import cost_text, reply_footer
from webhook.trackers.reply_text import neutralise
from webhook.trackers.triggers import approval_answer, markdown_unquoted, wiki_unquoted
from webhook.webhook_metrics import TrackerMetrics

#: The most of a tool input a card shows (the hash binds the whole input).
MAX_INPUT_CHARS = 1500
_APPROVAL_ID = re.compile(r"^apv-[0-9a-f]{20}$")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.:-]")


# --------------------------------------------------------------------------- the card
def _when(epoch: float | None) -> str:
    if not epoch:
        return "n/a"
    return datetime.fromtimestamp(float(epoch), tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def safe_name(value: Any, limit: int = 100) -> str:
    """A tool name as a card shows it: letters, digits and ``_.:-`` only (MCP tool names are model-visible)."""
    return _UNSAFE_NAME.sub("?", str(value))[:limit] or "?"


def input_block(tool_input: Any) -> str:
    """``tool_input`` as JSON for a code fence: every backtick and every non-ASCII character escaped (``\\u0060``,
    ``\\uXXXX``: the same JSON value), so nothing in it closes the fence or hides text; clipped to
    :data:`MAX_INPUT_CHARS`."""
    shown = json.dumps(tool_input, ensure_ascii=True, indent=2, sort_keys=True).replace("`", "\\u0060")
    if len(shown) > MAX_INPUT_CHARS:
        shown = shown[:MAX_INPUT_CHARS] + f"\n… ({len(shown) - MAX_INPUT_CHARS} more characters not shown)"
    return shown


def _inline(text: Any, limit: int = 300) -> str:
    """Untrusted one-line text for inside a code span: no backticks, no line breaks, no hidden characters."""
    flat = " ".join(str(text).split()).replace("`", "'")
    return flat.encode("ascii", "backslashreplace").decode()[:limit]


def answerers(tracker: str) -> str:
    """Who may answer an approval on ``tracker``'s issues, as a card and a refusal say it (:class:`GateWriters`)."""
    if tracker == "jira":
        return "the people this Jira project's repository mapping names"
    return "someone with write permission on the repository"


def card_text(card: Mapping[str, Any], *, quick_actions: bool = False, tracker: str = "github") -> str:
    """The progress comment of a job waiting for approval ``card`` (the runtime's ``result.approval``) on an issue
    of ``tracker``."""
    approval_id = str(card.get("id", ""))
    expires = _when(card.get("expires_at"))
    who = answerers(tracker)
    cost = card.get("cost_usd")
    lines = [
        "**Waiting for approval.** The agent wants to make a tool call that needs a person's approval first.",
        "",
        f"- Tool: `{safe_name(card.get('tool'))}`",
        f"- Rule: `{_inline(card.get('rule', ''))}`",
        f"- Cost so far: {cost_text(float(cost) if isinstance(cost, int | float) else None)}",
        f"- Approval id: `{approval_id}` (expires {expires})",
        f"- Input hash: `{_inline(card.get('input_hash', ''), 80)}`",
        "",
        "Input (exactly as the model asked; the approval is bound to this input's hash):",
        "",
        "```json",
        input_block(card.get("input")),
        "```",
        "",
        f"{who[:1].upper()}{who[1:]} can answer with `/agent approve {approval_id}` (exactly"
        f" this call runs once) or `/agent deny {approval_id} <reason>` (the agent goes on without it)."
        " `/agent stop` ends the job.",
    ]
    # The fenced block is code (left alone); the rest is neutralised as any reply text is.
    head, fence, tail = "\n".join(lines[:8]), "\n".join(lines[8:13]), "\n".join(lines[13:])
    return "\n".join(
        [neutralise(head, quick_actions=quick_actions), fence, neutralise(tail, quick_actions=quick_actions)]
    )


def approval_record(card: Mapping[str, Any], job: FixJob, now: float) -> dict[str, Any]:
    """What the job record keeps of a request: id, tool, input hash, rule, cost, requested/expires, requester."""
    cost = card.get("cost_usd")
    return {
        "id": str(card["id"]),
        "tool": safe_name(card.get("tool"), 200),
        "input_hash": str(card.get("input_hash", ""))[:100],
        "rule": str(card.get("rule", ""))[:500],
        "cost_usd": float(cost) if isinstance(cost, int | float) else None,
        "requested_at": float(card.get("created_at") or now),
        "expires_at": float(card["expires_at"]) if isinstance(card.get("expires_at"), int | float) else None,
        "requester": job.author,
    }


def is_card(result: Mapping[str, Any]) -> bool:
    """Does a job's result say it waits for approval (``subtype`` ``awaiting_approval`` with a card)?"""
    card = result.get("approval")
    return (
        result.get("subtype") == "awaiting_approval"
        and isinstance(card, dict)
        and bool(_APPROVAL_ID.match(str(card.get("id", ""))))
    )


# --------------------------------------------------------------------------- who may answer
class Writers(Protocol):
    """Does the commenter of ``task`` hold write permission on the repository ``job`` changes?"""

    def is_writer(self, task: AgentTask, job: FixJob) -> bool: ...


class GateWriters:
    """Who may answer is who may start and stop a fix (:meth:`gate.FixGate.writer_refusal`, one check for all
    three): on GitHub ``write`` or ``admin`` on the repository, asked from GitHub's collaborator-permission
    endpoint (``author_association`` says how someone relates to the repository, not what they may do; a
    read-only collaborator is admitted by the receiver's allowlist); on Jira the people the project's mapping
    names (``fix_account_ids``, ``fix_group``); on GitLab the receiver's access level
    (``GITLAB_FIX_MIN_ACCESS_LEVEL``)."""

    def __init__(self, gate: FixGate) -> None:
        self.gate = gate

    def is_writer(self, task: AgentTask, job: FixJob) -> bool:
        return self.gate.writer_refusal(task) is None


def is_requester(task: AgentTask, job: FixJob) -> bool:
    """Is the author of ``task`` the person who asked for ``job``? By the immutable id when both carry one (Jira
    ``accountId``, GitLab user id): a display name is not unique and its owner can change it, so a requester who
    renames themselves is still the requester, and a namesake is not. Otherwise by name (a GitHub login)."""
    if task.author_id and job.author_id:
        return task.author_id == job.author_id
    return task.author.casefold() == job.author.casefold()


#: The most of ``by`` the webhook records and sends (the runtime takes up to 256 characters, runtime/protocol.py).
BY_MAX = 200


def answerer(task: AgentTask) -> str:
    """Who answered (or stopped), as the runtime records it in ``by``: ``<tracker>:<name> (<id>)`` where the tracker
    gives an immutable id (Jira ``accountId``, GitLab user id), so the runtime's audit trail, spans and
    ``agentkit sessions`` tell two people with one display name apart, and know someone who renamed themselves;
    otherwise ``<tracker>:<login>`` (a GitHub login is unique). The name is shortened so the id always fits in
    :data:`BY_MAX` characters."""
    if not task.author_id:
        return f"{task.tracker}:{task.author}"[:BY_MAX]
    suffix = f" ({task.author_id})"
    name = task.author[: max(0, BY_MAX - len(task.tracker) - 1 - len(suffix))]
    return f"{task.tracker}:{name}{suffix}" if name else f"{task.tracker}:{task.author_id}"


@dataclass(frozen=True)
class Refused:
    code: str
    text: str


def _unquoted(task: AgentTask) -> str:
    text = task.comment or ""
    return wiki_unquoted(text) if task.tracker == "jira" else markdown_unquoted(text)


# --------------------------------------------------------------------------- the answer
class Approver:
    """Runs ``/agent approve|deny`` tasks (module docstring)."""

    def __init__(
        self,
        *,
        invoker: AgentRuntimeInvoker,
        jobs: JobStore,
        replies: ReplyStore,
        comments: ProgressComments,
        trackers: Mapping[str, IssueTracker],
        metrics: TrackerMetrics,
        logger: Any,
        writers: Writers,
        fix_jobs: bool,
        two_person: bool = True,
        lease_seconds: int = 900,
        clock: Callable[[], float] | None = None,
        fx: FixDeps,
    ) -> None:
        """``fx``: the fix jobs' repositories, to send the paused job's snapshot with the answer (the session's
        workspace lives on the microVM that paused; a new one restores it from this snapshot and the paused
        work the runtime kept with the session)."""
        self.fx = fx
        self.invoker = invoker
        self.jobs = jobs
        self.replies = replies
        self.comments = comments
        self.trackers = trackers
        self.metrics = metrics
        self.logger = logger
        self.writers = writers
        self.fix_jobs = fix_jobs
        self.two_person = two_person
        self.lease_seconds = lease_seconds
        self.clock = clock or time.time

    def run(self, task: AgentTask, key: str) -> str:
        """Answer the approval ``task`` names; returns the URL of the comment that says what happened.

        Raises:
            TransientInvokeError: another delivery of this answer runs, or the runtime was busy (the answer is
                retried; its decision stays recorded and is sent again).
            ReplyStoreError / TrackerApiError / botocore errors: SQS retries the record.
        """
        stored = self.replies.get(key)
        if stored is not None and stored.status == RUNNING:
            if self.clock() - stored.stored_at < self.lease_seconds:
                raise TransientInvokeError("this answer is being handled by another delivery")
        elif stored is not None and stored.status != REPLY_ANSWERED:
            return stored.comment_url  # answered once already
        if stored is None and not self.replies.claim(key):
            raise TransientInvokeError("another delivery of this answer claimed it")
        try:
            url = self._answer(task, key)
        except Exception:
            self.replies.release(key)
            raise
        self.replies.put(
            key, StoredReply(comment="", session_id=task.runtime_session_id, delivery_id=task.delivery_id)
        )
        self.replies.mark(key, status=POSTED, comment_url=url)
        return url

    # ------------------------------------------------------------------ steps
    def _answer(self, task: AgentTask, key: str) -> str:
        parsed = approval_answer(_unquoted(task))
        if parsed is None:
            return self._refuse(
                task,
                Refused(
                    "approval_malformed",
                    "To answer a tool call waiting for approval, comment `/agent approve <id>` or"
                    " `/agent deny <id> <reason>` with the id from the approval card (`apv-` and 20 hex digits).",
                ),
            )
        verb, approval_id, rest = parsed
        paused = self._paused(task, approval_id)
        if isinstance(paused, Refused):
            return self._refuse(task, paused)
        assert paused.job is not None and paused.approval is not None
        decision = paused.approval_decision
        if paused.status == ANSWERED and decision is not None and decision.get("key") == key:
            # A retry of this very answer: send it again (an approval only while fix jobs are on).
            if not self.fix_jobs and decision.get("outcome") == "approved":
                return self._refuse(task, self._fix_jobs_off(approval_id))
            return self._resume(task, paused, decision)
        refused = self._check(task, paused, approval_id)
        if refused is None and verb == "approve" and not self.fix_jobs:
            refused = self._fix_jobs_off(approval_id)
        if refused is not None:
            return self._refuse(task, refused)
        now = self.clock()
        outcome = "approved" if verb == "approve" else "denied"
        decision = {
            "outcome": outcome,
            "by": answerer(task),
            # The answerer's immutable id (Jira accountId, GitLab user id): a display name alone does not say who.
            "by_id": task.author_id,
            "name": task.author,  # for the card's "Approved by @<name>"
            "at": now,
            "reason": rest,
            "key": key,
        }
        # With fix jobs off a denial ends the job here: resuming the agent would be a fix turn that could still
        # end in a pull request.
        ends = not self.fix_jobs
        if not self.jobs.decide(paused.key, approval_id=approval_id, decision=decision, ends=ends):
            return self._refuse(task, self._used(approval_id))  # another answer won meanwhile
        if outcome == "approved":
            self.metrics.emit("ApprovalsApproved", task.tracker)
        else:
            self.metrics.emit("ApprovalsDenied", task.tracker)
        requested = paused.approval.get("requested_at")
        if isinstance(requested, int | float):
            waited = max(0.0, now - float(requested))
            self.metrics.emit("ApprovalDecisionSeconds", task.tracker, waited, MetricUnit.Seconds)
        self.logger.info(
            "approval answered",
            extra={
                "approval_id": approval_id,
                "outcome": outcome,
                "by": task.author,
                "by_id": task.author_id,
                "job": paused.key,
            },
        )
        if ends:
            withdraw_on_runtime(
                self.invoker,
                task,
                approval_id,
                reason="denied on the issue while fix jobs are turned off",
                logger=self.logger,
                log_ctx={"tracker": task.tracker, "issue": task.issue_number, "job": paused.key},
            )
            reason = f" Reason: {_inline(rest, 500)}" if rest else ""
            self._edit(
                paused,
                f"Denied by @{task.author}: the tool call `{paused.approval.get('tool')}` does not run.{reason}"
                " Fix jobs are turned off in this deployment, so the agent does not go on: the job ended and"
                " nothing was changed in the repository.",
            )
            return paused.progress_comment_url
        return self._resume(task, paused, decision)

    def _paused(self, task: AgentTask, approval_id: str) -> JobState | Refused:
        """The issue's job waiting for (or which waited for) ``approval_id``."""
        continuation = self.jobs.get(approval_id)
        if continuation is not None:  # answered before: the continuation names the job it answered
            paused = self.jobs.get(continuation.paused_key) if continuation.paused_key else None
            if paused is None or paused.job is None:
                return self._used(approval_id)
            # An id is answered only on the issue whose job asked for it.
            return (
                paused if paused.job.session_id == task.runtime_session_id else self._not_found(approval_id)
            )
        job_key, _ = self.jobs.session_jobs(task.runtime_session_id)
        state = self.jobs.get(job_key) if job_key else None
        if state is None or state.job is None or (state.approval or {}).get("id") != approval_id:
            return self._not_found(approval_id)
        return state

    @staticmethod
    def _not_found(approval_id: str) -> Refused:
        return Refused(
            "approval_not_found", f"There is no tool call waiting for approval `{approval_id}` on this issue."
        )

    @staticmethod
    def _fix_jobs_off(approval_id: str) -> Refused:
        return Refused(
            "approval_fix_jobs_off",
            f"Fix jobs are turned off in this deployment, so approving `{approval_id}` starts nothing: the tool call"
            f" does not run and the job keeps waiting. `/agent deny {approval_id}` or `/agent stop` ends it.",
        )

    @staticmethod
    def _used(approval_id: str) -> Refused:
        return Refused(
            "approval_used",
            f"Approval `{approval_id}` was answered already: an approval is used once. A new call needs a new"
            " approval.",
        )

    def _check(self, task: AgentTask, paused: JobState, approval_id: str) -> Refused | None:
        assert paused.job is not None and paused.approval is not None
        if paused.status == STOPPED:
            return Refused(
                "approval_stopped", f"The job waiting for `{approval_id}` was stopped; nothing runs."
            )
        if paused.status == EXPIRED:
            return Refused("approval_expired", f"Approval `{approval_id}` expired; nothing runs.")
        if paused.status != AWAITING:
            return self._used(approval_id)
        if not self.writers.is_writer(task, paused.job):
            return Refused("approval_not_writer", f"Only {answerers(task.tracker)} can answer an approval.")
        if self.two_person and is_requester(task, paused.job):
            return Refused(
                "approval_requester",
                "The person who asked for this run cannot answer its approval here: another maintainer has to"
                " (two-person rule).",
            )
        expires = paused.approval.get("expires_at")
        if isinstance(expires, int | float) and self.clock() >= float(expires):
            self._expire(task, paused, approval_id)
            return Refused("approval_expired", f"Approval `{approval_id}` expired; nothing runs.")
        return None

    def _expire(self, task: AgentTask, paused: JobState, approval_id: str) -> None:
        expire(
            paused,
            jobs=self.jobs,
            comments=self.comments,
            trackers=self.trackers,
            metrics=self.metrics,
            logger=self.logger,
            now=self.clock(),
        )

    def _resume(self, task: AgentTask, paused: JobState, decision: Mapping[str, Any]) -> str:
        """Start the answer as a job keyed by the approval id on the paused job's session; edit the card."""
        job, approval = paused.job, paused.approval
        assert job is not None and approval is not None
        approval_id = str(approval["id"])
        approved = decision["outcome"] == "approved"
        state = self.jobs.get(approval_id)
        if state is not None and state.status == CLAIMED:
            age = self.clock() - state.stored_at
            if age < self.lease_seconds or self.jobs.adopt(approval_id, claimed_at=state.stored_at) is None:
                raise TransientInvokeError("another delivery is starting this answer")
        elif (state is None or state.status == RELEASED) and not self.jobs.claim(
            approval_id, session_id=job.session_id
        ):
            raise TransientInvokeError("another delivery is starting this answer")
        if state is None or state.status in (CLAIMED, RELEASED):
            claim = self.jobs.get(approval_id)
            assert claim is not None
            # The paused job's comment and key go with the continuation: its result edits that comment, and a
            # replay of the id finds the job it answered.
            self.jobs.remember_progress_comment(
                approval_id,
                comment_id=paused.progress_comment_id,
                url=paused.progress_comment_url,
                paused_key=paused.key,
            )
            if not self.jobs.prepared(approval_id, job, claimed_at=claim.stored_at):
                raise TransientInvokeError("the claim of this answer was taken over")
            # Said before the runtime is asked, so the continuation's own result (which the reporter writes into
            # this comment) always comes after it.
            # A decision recorded before "name" existed carries it in "by" only.
            who = str(decision.get("name") or str(decision["by"]).split(":", 1)[-1])
            if approved:
                text = (
                    f"Approved by @{who}: the tool call `{approval.get('tool')}` (input hash"
                    f" `{_inline(approval.get('input_hash', ''), 80)}`) runs once, exactly as requested, and the agent"
                    " goes on. Comment `/agent stop` to stop it."
                )
            else:
                reason = (
                    f" Reason: {_inline(decision.get('reason') or '', 500)}" if decision.get("reason") else ""
                )
                text = (
                    f"Denied by @{who}: the tool call `{approval.get('tool')}` does not run and the agent goes on"
                    f" without it.{reason} Comment `/agent stop` to stop it."
                )
            self._edit(paused, text)
            answer: dict[str, Any] = {"id": approval_id, "by": str(decision["by"])}
            if decision.get("reason"):
                answer["note" if approved else "reason"] = str(decision["reason"])
            extra: dict[str, Any] = {
                "approve" if approved else "deny": answer,
                "async": True,
                "job": {"id": approval_id, "context": job.context()},
            }
            fetched = None
            try:
                # the paused job's base commit, as the job was started with
                fetched = self.fx.repos.refetch(job)
                extra["workspace"] = workspace_field(self.fx, fetched, approval_id)
                reply = self.invoker.invoke(
                    prompt=None, session_id=job.session_id, actor=task.actor, extra=extra
                )
            except Exception:
                self.jobs.release(approval_id)
                raise
            finally:
                if fetched is not None:
                    fetched.discard()
            if reply.error_code:
                # The runtime is authoritative (410 expired, 409 used, 404 unknown): the answer ends here.
                self.jobs.finish_unstarted(
                    approval_id, error_code=reply.error_code, claimed_at=claim.stored_at
                )
                self._edit(paused, error_text(reply.error_code, approval_id))
                self.logger.warning(
                    "runtime refused the approval answer",
                    extra={"approval_id": approval_id, "code": reply.error_code},
                )
                return self._refuse(
                    task,
                    Refused(
                        reply.error_code,
                        f"The agent's runtime refused the answer to `{approval_id}` (`{reply.error_code}`);"
                        " nothing runs.",
                    ),
                )
            self.jobs.started(approval_id, job, claimed_at=claim.stored_at)
        return paused.progress_comment_url

    # ------------------------------------------------------------------ comments
    def _tracker(self, name: str) -> IssueTracker:
        return enabled_tracker(self.trackers, name)

    def _edit(self, paused: JobState, text: str) -> None:
        edit_card(paused, text, comments=self.comments, trackers=self.trackers)

    def _refuse(self, task: AgentTask, refused: Refused) -> str:
        self.metrics.emit("ApprovalsRefused", task.tracker)
        self.logger.info(
            "approval answer refused",
            extra={"code": refused.code, "by": task.author, "issue": task.issue_number},
        )
        tracker = self._tracker(task.tracker)
        footer = reply_footer(task.runtime_session_id, "approval")
        return self.comments.post(
            IssueRef.of_task(task), tracker.format_reply(refused.text, footer=footer)
        ).url


def withdraw_on_runtime(
    invoker: AgentRuntimeInvoker,
    task: AgentTask,
    approval_id: str,
    *,
    reason: str,
    logger: Any,
    log_ctx: Mapping[str, Any],
) -> None:
    """Withdraw ``approval_id`` on the runtime session of ``task``'s issue (:meth:`AgentRuntimeInvoker.withdraw`, as
    the issue's actor, by :func:`answerer`), for a job that ended on the issue while its request waited: a
    stop, or a denial with fix jobs turned off. Never raises: a failure is logged, and the runtime's own expiry of
    the request is the backstop (an answer on the issue is refused by the job's state either way)."""
    if not approval_id:
        return
    ctx = {**log_ctx, "approval_id": approval_id}
    try:
        outcome = invoker.withdraw(
            session_id=task.runtime_session_id,
            approval_id=approval_id,
            by=answerer(task),
            reason=reason,
            actor=task.actor,
        )
    except Exception as exc:
        logger.warning(
            "the approval could not be withdrawn on the runtime; it stays pending there until it expires",
            extra={**ctx, "error": f"{type(exc).__name__}: {exc}"[:500]},
        )
        return
    if outcome == "withdrawn":
        logger.info("approval withdrawn on the runtime", extra={**ctx, "outcome": outcome})
    else:  # http_409: answered there first; http_410: expired; http_404: the runtime has no such request
        logger.warning("the runtime refused to withdraw the approval", extra={**ctx, "outcome": outcome})


# --------------------------------------------------------------------------- expiry
def edit_card(
    paused: JobState, text: str, *, comments: ProgressComments, trackers: Mapping[str, IssueTracker]
) -> None:
    """Put ``text`` into the progress comment of the job ``paused``."""
    job = paused.job
    assert job is not None
    tracker = enabled_tracker(trackers, job.tracker)
    formatted = tracker.format_reply(text, footer=reply_footer(job.session_id, "fix job"))
    comments.edit(IssueRef.of_job(job), paused.progress_comment_id, formatted)


def expire(
    paused: JobState,
    *,
    jobs: JobStore,
    comments: ProgressComments,
    trackers: Mapping[str, IssueTracker],
    metrics: TrackerMetrics,
    logger: Any,
    now: float,
) -> bool:
    """End the job ``paused`` (waiting for approval) as ``expired`` and say so in its comment, once: ``False``
    when it was answered, stopped or expired meanwhile. The job leaves the pending list only once its comment
    says so: an edit that fails (the tracker's API is down) is made by the next sweep (:func:`tell_expired`)."""
    assert paused.job is not None and paused.approval is not None
    approval_id = str(paused.approval.get("id", ""))
    decision = {"outcome": "expired", "by": "", "at": now, "reason": "", "key": ""}
    if not jobs.decide(paused.key, approval_id=approval_id, decision=decision):
        return False
    metrics.emit("ApprovalsExpired", paused.job.tracker)
    logger.info("approval expired", extra={"approval_id": approval_id, "job": paused.key})
    tell_expired(paused, jobs=jobs, comments=comments, trackers=trackers)
    return True


def tell_expired(
    paused: JobState, *, jobs: JobStore, comments: ProgressComments, trackers: Mapping[str, IssueTracker]
) -> None:
    """Edit the expired job's card to say so, then take it off the pending list."""
    assert paused.job is not None and paused.approval is not None
    text = (
        f"Approval `{paused.approval.get('id', '')}` expired at {_when(paused.approval.get('expires_at'))}"
        " without an answer: the tool call did not run and the job ended."
        f" Cost: {cost_text(paused.cost_so_far)}. Comment `/agent fix …` to start again."
    )
    edit_card(paused, text, comments=comments, trackers=trackers)
    jobs.unlist_pending(paused.key)


class Sweeper:
    """Expires the jobs whose approval nobody answered in time (the sweeper Lambda runs it on its schedule): each job on
    the pending list (:meth:`fix_jobs.JobStore.pending_approvals`) past its expiry ends ``expired`` and its comment
    says so; entries of jobs no longer waiting are dropped. Returns how many it expired."""

    def __init__(
        self,
        *,
        jobs: JobStore,
        comments: ProgressComments,
        trackers: Mapping[str, IssueTracker],
        metrics: TrackerMetrics,
        logger: Any,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.jobs, self.comments, self.trackers = jobs, comments, trackers
        self.metrics, self.logger, self.clock = metrics, logger, clock

    def sweep(self) -> int:
        """Raises ``ReplyStoreError`` / ``TrackerApiError`` (the first failure, after trying every due job): the
        next run retries what is left (a job stays listed until its comment says it expired)."""
        now, expired = self.clock(), 0
        failure: Exception | None = None
        for key, expires_at in sorted(self.jobs.pending_approvals().items(), key=lambda kv: kv[1]):
            if expires_at > now:
                continue
            try:
                state = self.jobs.get(key)
                if state is None or state.job is None or not state.approval:
                    self.jobs.unlist_pending(key)
                elif state.status == AWAITING:
                    expired += expire(
                        state,
                        jobs=self.jobs,
                        comments=self.comments,
                        trackers=self.trackers,
                        metrics=self.metrics,
                        logger=self.logger,
                        now=now,
                    )
                elif state.status == EXPIRED:
                    # Expired before (here or by a late answer) while its comment could not be edited.
                    tell_expired(state, jobs=self.jobs, comments=self.comments, trackers=self.trackers)
                else:
                    self.jobs.unlist_pending(key)  # answered or stopped: nothing to expire
            except (ReplyStoreError, WebhookError) as exc:
                self.logger.error("approval expiry failed", extra={"job": key, "error": str(exc)[:500]})
                failure = failure or exc
        if failure is not None:
            raise failure
        return expired
