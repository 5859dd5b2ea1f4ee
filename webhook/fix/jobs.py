"""Fix jobs in the reply table: who runs, reports or stops a change request, exactly once.

A fix task (``/agent fix …`` or the fix label) runs as an asynchronous job of the runtime: the worker
hands the turn over and finishes its SQS record; the result comes back later on the runtime's events
queue, to the reporter. This module holds the one DynamoDB item that ties the two together, under the same
key as a stored answer (``reply#<idempotency key>``, the sha256 of the signed webhook body; the job id the
runtime sees is that key), and moves it through its states with conditional writes:

``running`` (the worker's claim, as for answers) → ``job`` (the runtime accepted the job: :meth:`started`)
→ ``reporting`` (a reporter took the result: :meth:`begin_report`) → ``done``; or ``job`` → ``stopped``
(``/agent stop``: :meth:`stop`), or ``job`` → ``timed_out`` (no result by the job's deadline: the sweep,
:meth:`time_out`, :mod:`webhook.sweeper`). A claim whose invocation failed before the runtime accepted it goes to
``released`` (claimable again). Each transition is conditional on the state before it, so of two deliveries
of one result only one reports it, and a result arriving after a stop finds ``stopped`` and opens nothing; of the sweep and a late result only
one moves the job out of ``job``, so the issue gets one final answer.

While ``running``: the worker keeps the job document before it invokes the runtime (:meth:`prepared`), so a
delivery that takes over the claim of a worker that died (:meth:`adopt`) re-sends the very same job; and
``/agent stop`` records a stop request on the claim (:meth:`request_stop`), which :meth:`started` refuses to
pass, so the worker either never starts the job or stops it at once (:meth:`stop_unstarted`).

Attributes: ``status``, ``stored_at``, ``expiration`` (TTL), ``job`` (the :class:`FixJob` as JSON: what the
reporter needs, and what the runtime is sent as ``job.context``), ``progress_comment_id`` /
``progress_comment_url`` (the comment edited as the run goes), ``started_at``, ``last_seq``, ``cost_so_far``,
``tool_calls``, ``last_tool``, ``elapsed_s``, ``last_edit_at``, ``report_at``, ``pr_url``, ``cost_usd``,
``duration_ms``, ``error_code``, ``stopped_by``, ``stop_key``, ``stop_requested_by``, ``finished_at``,
``notified_at`` (a timed-out job's comment says so), ``issue_session`` (the issue's runtime session, kept at the
claim: whose active-fix marker a final state gives up). Next to it,
``reply#session#<runtime session id>`` names the issue's newest started job (``job_key``) and its newest claim
(``pending_key``), so ``/agent stop`` finds what to stop, started or not; and ``reply#active#<runtime session id>``
names the issue's one active fix (``job_key``, ``taken_at``, ``active_until``: :meth:`JobStore.take_active`), given
up by every write to a final state (``done``, ``stopped``, ``timed_out``).

What a fix job is (:class:`FixJob`, the document sent to the runtime as ``job.context``) and how its item reads
(:class:`JobState`, :func:`job_state`) live here too, next to the states and the writes that move a job.

IAM: ``dynamodb:GetItem``, ``PutItem``, ``UpdateItem`` on the table, for ``reply#*`` keys only; the sweep's
:meth:`JobStore.open_jobs` also ``dynamodb:Scan`` limited to :data:`SCAN_ATTRIBUTES`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from webhook.replies import KEY_PREFIX, ReplyStoreError, ReplyTable
from webhook.trackers.base import TrackerName

JobStatus = Literal[
    "running",
    "released",
    "job",
    "reporting",
    "done",
    "stopped",
    "timed_out",
    "awaiting_approval",
    "answered",
    "expired",
]
RUNNING: Final = "running"
RELEASED: Final = "released"
JOB: Final = "job"
REPORTING: Final = "reporting"
DONE: Final = "done"
STOPPED: Final = "stopped"
#: Final: no result came by the job's deadline (the sweep ended it; a later result opens nothing).
TIMED_OUT: Final = "timed_out"
#: The attributes the sweep's Scan reads (and the only ones its IAM grant lets it read with a Scan).
SCAN_ATTRIBUTES = ("id", "status", "started_at", "stored_at", "notified_at")
#: The job's turn paused for a person's approval of one tool call (:meth:`JobStore.await_approval`); then
#: ``answered`` (approved or denied: the answer runs as a new job keyed by the approval id), ``expired`` or
#: ``stopped``.
AWAITING: Final = "awaiting_approval"
ANSWERED: Final = "answered"
EXPIRED: Final = "expired"
STATUSES = (RUNNING, RELEASED, JOB, REPORTING, DONE, STOPPED, TIMED_OUT, AWAITING, ANSWERED, EXPIRED)
#: The runtime's limit on ``job.context`` (encoded JSON).
MAX_CONTEXT_BYTES = 4096


class FixJob(BaseModel):
    """What a fix job is about: sent to the runtime as ``job.context`` and kept in the job's item.

    ``tracker`` / ``repository`` / ``scope_id`` / ``issue_*`` name the issue (and where the progress comment
    lives); ``target_*`` the repository the change goes to (the issue's own on GitHub and GitLab, the mapped
    one for Jira); ``base_branch`` / ``base_sha`` what the snapshot was taken from; ``pr_base`` the branch a
    pull request targets (the default branch, or the head branch of the pull request commented on).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1
    tracker: TrackerName
    repository: str
    scope_id: str
    issue_number: int
    issue_id: str
    issue_ref: str
    html_url: str = ""
    title: str = Field(default="", max_length=200)
    author: str = ""
    #: The requester's immutable id where the tracker gives one (Jira ``accountId``, GitLab user id): the
    #: two-person rule compares it, since a display name is neither unique nor fixed (anyone can change theirs).
    author_id: str = Field(default="", max_length=128)
    session_id: str
    comment_id: str = ""
    comment_url: str = ""
    target_tracker: Literal["github", "gitlab"]
    target_repository: str
    target_project_id: str = ""
    base_branch: str
    base_sha: str = Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")
    pr_base: str
    pull_request: bool = False

    @model_serializer(mode="wrap")
    def _without_empty_author_id(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No ``author_id`` key when there is none (GitHub): such a job's document, and so its ``job.context``, is
        the same as before the field existed, so the result of a job started before an upgrade still matches it."""
        doc: dict[str, Any] = handler(self)
        if not doc.get("author_id"):
            doc.pop("author_id", None)
        return doc

    def context(self) -> dict[str, Any]:
        """The ``job.context`` object. Raises ``ValueError`` when it would exceed the runtime's limit."""
        doc = self.model_dump()
        if len(json.dumps(doc).encode()) > MAX_CONTEXT_BYTES:
            raise ValueError(f"job context over {MAX_CONTEXT_BYTES} bytes")
        return doc


@dataclass(frozen=True)
class JobState:
    """One read of a job's item."""

    key: str
    status: JobStatus
    stored_at: int = 0
    job: FixJob | None = None
    progress_comment_id: str = ""
    progress_comment_url: str = ""
    started_at: float = 0.0
    last_seq: int = 0
    cost_so_far: float | None = None
    tool_calls: int = 0
    last_tool: str = ""
    elapsed_s: float = 0.0
    last_edit_at: float = 0.0
    report_at: float = 0.0
    pr_url: str = ""
    cost_usd: float | None = None
    error_code: str = ""
    stopped_by: str = ""
    #: The key of the stop task that stopped it (a retried stop task finishes its own stop).
    stop_key: str = ""
    #: Who asked ``/agent stop`` while the job was not started yet (``running``): it must not run.
    stop_requested_by: str = ""
    finished_at: float = 0.0
    #: When the sweep's note reached the issue (a ``timed_out`` job without it is edited again).
    notified_at: float = 0.0
    #: The approval the job waits for (``awaiting_approval``) or waited for: id, tool, input_hash, rule, cost_usd,
    #: requested_at, expires_at, requester.
    approval: dict[str, Any] | None = None
    #: The answer: outcome (approved | denied | expired), by, at, reason, task key.
    approval_decision: dict[str, Any] | None = None
    #: The answer to an approval runs as a job keyed by the approval id: the key of the job that paused.
    paused_key: str = ""


@dataclass(frozen=True)
class OpenJob:
    """What the sweep's Scan reads of one job item (:data:`SCAN_ATTRIBUTES`)."""

    key: str
    status: str
    started_at: float
    stored_at: float
    notified_at: float


class NotAFixJob(ReplyStoreError):
    """The key names an item of the reply table that is not a fix job (an answer's reply, a session
    pointer): an event naming it can never be reported, so it is dropped, not retried."""


def text(item: dict[str, Any], name: str) -> str:
    """A string attribute of a low-level DynamoDB item (``""`` when absent)."""
    return str(item.get(name, {}).get("S", ""))


def _n(item: dict[str, Any], name: str) -> float | None:
    raw = item.get(name, {}).get("N")
    return float(raw) if raw is not None else None


def num(value: float | int) -> dict[str, str]:
    """A low-level DynamoDB number value."""
    return {"N": repr(float(value)) if isinstance(value, float) else str(value)}


def job_state(key: str, item: dict[str, Any]) -> JobState:
    """The :class:`JobState` of the job ``key`` from its DynamoDB item (low-level attribute values).

    Raises ``ReplyStoreError`` when the item is not a fix job or holds a malformed job document."""
    status = text(item, "status")
    if status not in STATUSES:
        raise NotAFixJob(f"item {KEY_PREFIX + key!r} is not a fix job (status {status!r})")
    try:
        job = FixJob.model_validate_json(text(item, "job")) if "job" in item else None
    except ValueError as exc:
        raise ReplyStoreError(f"job {key!r} holds a malformed job document: {exc}") from exc
    return JobState(
        key=key,
        status=status,  # type: ignore[arg-type]
        stored_at=int(_n(item, "stored_at") or 0),
        job=job,
        progress_comment_id=text(item, "progress_comment_id"),
        progress_comment_url=text(item, "progress_comment_url"),
        started_at=_n(item, "started_at") or 0.0,
        last_seq=int(_n(item, "last_seq") or 0),
        cost_so_far=_n(item, "cost_so_far"),
        tool_calls=int(_n(item, "tool_calls") or 0),
        last_tool=text(item, "last_tool"),
        elapsed_s=_n(item, "elapsed_s") or 0.0,
        last_edit_at=_n(item, "last_edit_at") or 0.0,
        report_at=_n(item, "report_at") or 0.0,
        pr_url=text(item, "pr_url"),
        cost_usd=_n(item, "cost_usd"),
        error_code=text(item, "error_code"),
        stopped_by=text(item, "stopped_by"),
        stop_key=text(item, "stop_key"),
        stop_requested_by=text(item, "stop_requested_by"),
        finished_at=_n(item, "finished_at") or 0.0,
        notified_at=_n(item, "notified_at") or 0.0,
        approval=_doc(item, "approval"),
        approval_decision=_doc(item, "approval_decision"),
        paused_key=text(item, "paused_key"),
    )


def _doc(item: dict[str, Any], name: str) -> dict[str, Any] | None:
    raw = text(item, name)
    return dict(json.loads(raw)) if raw else None


SESSION_PREFIX = KEY_PREFIX + "session#"
#: One item listing the jobs waiting for approval (job key → expiry, epoch s) for the sweep that expires them
#: (:class:`webhook.fix.approvals.Sweeper`): a GetItem under the ``reply#`` keys the Lambdas may read, no Scan.
#: An item holds at most 400 KB: some 4,000 waiting jobs.
PENDING_APPROVALS_ID = KEY_PREFIX + "approvals#pending"
#: ``reply#active#<runtime session id>``: the issue's one active fix (``job_key``), taken with a conditional write
#: before a fix task claims anything, so of two tasks for one issue arriving at once only one passes.
ACTIVE_PREFIX = KEY_PREFIX + "active#"
#: States in which a job no longer holds its issue's active-fix marker.
FINAL_STATUSES = (DONE, STOPPED, TIMED_OUT, EXPIRED)


class JobStore(ReplyTable):
    """Reads and moves fix jobs on an injected low-level ``dynamodb`` client (the reply table; constructor
    arguments as :class:`replies.ReplyTable`'s)."""

    # ------------------------------------------------------------------ plumbing
    @staticmethod
    def _key(key: str) -> dict[str, dict[str, str]]:
        if not key:
            raise ValueError("a job key is required")
        return {"id": {"S": KEY_PREFIX + key}}

    def _update(
        self,
        what: str,
        key: str,
        expression: str,
        condition: str,
        values: dict[str, Any],
        *,
        final: bool = False,
    ) -> bool:
        """One conditional UpdateItem; ``False`` when the condition failed. Raises :class:`ReplyStoreError`.

        ``final``: the write moves the job to a final state, so it gives up its issue's active-fix marker."""
        out: dict[str, Any] = {}

        def write() -> None:
            out.update(
                self._client.update_item(
                    TableName=self.table_name,
                    Key=self._key(key),
                    UpdateExpression=expression,
                    ConditionExpression=condition,
                    ExpressionAttributeNames={"#s": "status"},
                    ExpressionAttributeValues=values,
                    **({"ReturnValues": "ALL_NEW"} if final else {}),
                )
            )

        moved = self._conditional(f"UpdateItem ({what})", write)
        if moved and final:
            self._release_active_of(key, out.get("Attributes") or {})
        return moved

    # ------------------------------------------------------------------ one active fix per issue
    def take_active(self, session_id: str, key: str, *, hold_seconds: int, claim_grace_seconds: int) -> bool:
        """Make ``key`` the one active fix of the issue whose runtime session is ``session_id``. ``False`` when
        another fix holds it.

        A conditional write, so two tasks for one issue arriving at the same instant cannot both pass: the
        marker is free when absent, already ours (a redelivery), or past ``active_until`` (``hold_seconds``
        after it was taken: the job deadline, so a marker left by a crash never blocks the issue for ever).
        One held by another job is taken over, conditionally on that job still holding it, when that job is
        final or has a stop request, or never claimed anything within ``claim_grace_seconds`` (its worker
        died between the marker and the claim). Raises :class:`ReplyStoreError`."""
        now = int(self._clock())
        item_id = {"id": {"S": ACTIVE_PREFIX + session_id}}

        def put(condition: str, extra: dict[str, Any]) -> bool:
            return self._conditional(
                "UpdateItem (active fix)",
                lambda: self._client.update_item(
                    TableName=self.table_name,
                    Key=item_id,
                    UpdateExpression="SET job_key = :key, taken_at = :now, active_until = :until, "
                    "expiration = :exp",
                    ConditionExpression=condition,
                    ExpressionAttributeValues={
                        ":key": {"S": key},
                        ":now": num(now),
                        ":until": num(now + hold_seconds),
                        ":exp": num(now + hold_seconds + self.ttl_seconds),
                        **extra,
                    },
                ),
            )

        if put("attribute_not_exists(job_key) OR job_key = :key OR active_until < :now", {}):
            return True
        try:
            held = self._client.get_item(TableName=self.table_name, Key=item_id, ConsistentRead=True)
        except (ClientError, BotoCoreError) as exc:
            raise ReplyStoreError(f"GetItem on {self.table_name} failed: {exc}") from exc
        holder = text(held.get("Item") or {}, "job_key")
        if not holder:  # released between the two reads
            return put("attribute_not_exists(job_key)", {})
        state = self.get(holder)
        started_at = _n(held.get("Item") or {}, "taken_at") or now
        # A job whose approval was answered lives on as its continuation, a job keyed by the approval id (which
        # may pause and be answered again): the fix is the last of that chain.
        for _ in range(50):
            if state is None or state.status != ANSWERED or not state.approval:
                break
            decided_at = (state.approval_decision or {}).get("at")
            if isinstance(decided_at, int | float):
                started_at = float(decided_at)
            state = self.get(str(state.approval.get("id", "")))
        if state is None or state.status == RELEASED:
            ended = now - started_at > claim_grace_seconds
        else:
            ended = state.status in FINAL_STATUSES or bool(state.stop_requested_by)
        return ended and put("job_key = :old", {":old": {"S": holder}})

    def release_active(self, session_id: str, key: str) -> None:
        """Give up the issue's active-fix marker if ``key`` holds it. An UpdateItem (``REMOVE job_key``), not a
        DeleteItem: every side that writes a final state (worker, reporter, sweeper) may update the table, and
        the sweeper may not delete. Raises :class:`ReplyStoreError`."""
        self._conditional(
            "UpdateItem (active fix release)",
            lambda: self._client.update_item(
                TableName=self.table_name,
                Key={"id": {"S": ACTIVE_PREFIX + session_id}},
                UpdateExpression="REMOVE job_key",
                ConditionExpression="job_key = :key",
                ExpressionAttributeValues={":key": {"S": key}},
            ),
        )

    def _release_active_of(self, key: str, item: dict[str, Any]) -> None:
        """After a final transition: the job's issue (``issue_session`` kept at the claim, or its job document)."""
        session_id = text(item, "issue_session")
        if not session_id and text(item, "job"):
            session_id = json.loads(text(item, "job")).get("session_id", "")
        if session_id:
            self.release_active(session_id, key)

    # ------------------------------------------------------------------ reads
    def get(self, key: str) -> JobState | None:
        """The job's item (strongly consistent), or ``None``. Raises :class:`ReplyStoreError`."""
        try:
            out = self._client.get_item(TableName=self.table_name, Key=self._key(key), ConsistentRead=True)
        except (ClientError, BotoCoreError) as exc:
            raise ReplyStoreError(f"GetItem on {self.table_name} failed: {exc}") from exc
        item = out.get("Item")
        return job_state(key, item) if item else None

    def active_job(self, session_id: str) -> str | None:
        """The key of the newest job started on ``session_id`` (an issue's session), or ``None``."""
        return self.session_jobs(session_id)[0]

    def session_jobs(self, session_id: str) -> tuple[str | None, str | None]:
        """``(newest started job, newest claim)`` keys of ``session_id`` (an issue's session); either ``None``."""
        try:
            out = self._client.get_item(
                TableName=self.table_name, Key={"id": {"S": SESSION_PREFIX + session_id}}, ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise ReplyStoreError(f"GetItem on {self.table_name} failed: {exc}") from exc
        item = out.get("Item") or {}
        return text(item, "job_key") or None, text(item, "pending_key") or None

    def _point_session(self, session_id: str, attribute: str, key: str) -> None:
        """``reply#session#<session_id>``'s ``attribute`` := ``key`` (an UpdateItem: the other pointer stays)."""
        now = int(self._clock())
        try:
            self._client.update_item(
                TableName=self.table_name,
                Key={"id": {"S": SESSION_PREFIX + session_id}},
                UpdateExpression="SET #a = :key, stored_at = :now, expiration = :exp",
                ExpressionAttributeNames={"#a": attribute},
                ExpressionAttributeValues={
                    ":key": {"S": key},
                    ":now": num(now),
                    ":exp": num(now + self.ttl_seconds),
                },
            )
        except (ClientError, BotoCoreError) as exc:
            raise ReplyStoreError(f"UpdateItem (session pointer) on {self.table_name} failed: {exc}") from exc

    # ------------------------------------------------------------------ worker
    def claim(self, key: str, *, session_id: str = "") -> bool:
        """Claim ``key`` for one fix job (``running``); ``False`` when another claim or the job exists. With
        ``session_id`` the issue's session names the claim as its newest (``/agent stop`` finds it there).

        An UpdateItem, not a PutItem: a claim after a released one keeps the progress comment posted by the
        earlier attempt, so a retried task edits that comment instead of posting a second one."""
        now = int(self._clock())
        claimed = self._update(
            "claim",
            key,
            "SET #s = :running, stored_at = :now, expiration = :exp"
            + (", issue_session = :sid" if session_id else ""),
            "attribute_not_exists(id) OR #s = :released",
            {
                ":running": {"S": RUNNING},
                ":released": {"S": RELEASED},
                ":now": num(now),
                ":exp": num(now + self.ttl_seconds),
                **({":sid": {"S": session_id}} if session_id else {}),
            },
        )
        if claimed and session_id:
            self._point_session(session_id, "pending_key", key)
        return claimed

    def adopt(self, key: str, *, claimed_at: int) -> int | None:
        """Take over the ``running`` claim written at ``claimed_at`` (its worker died: the lease is over). Returns
        the new claim time, or ``None`` when the claim changed meanwhile (another delivery took it, or it moved
        on). Everything the dead worker kept (progress comment, job document, a stop request) stays."""
        now = int(self._clock())
        if now <= claimed_at:  # the new claim must differ from the old one, or the old worker's writes pass
            now = claimed_at + 1
        moved = self._update(
            "adopt",
            key,
            "SET stored_at = :now",
            "#s = :running AND stored_at = :at",
            {":now": num(now), ":running": {"S": RUNNING}, ":at": num(claimed_at)},
        )
        return now if moved else None

    def prepared(self, key: str, job: FixJob, *, claimed_at: int) -> bool:
        """Keep the job document on the claim before the runtime is invoked, so whoever takes the claim over
        re-sends exactly this job (same snapshot commit, same ``job.context``). ``False``: not our claim."""
        return self._update(
            "prepare",
            key,
            "SET job = :doc",
            "#s = :running AND stored_at = :at",
            {":doc": {"S": job.model_dump_json()}, ":running": {"S": RUNNING}, ":at": num(claimed_at)},
        )

    def request_stop(self, key: str, *, by: str, stop_key: str) -> bool:
        """``/agent stop`` before the job started: record the request on the ``running`` claim, or on a
        ``released`` one waiting for its retry (once: the first stop's key is kept). ``False`` when the claim is
        neither (started, finished) or a stop is already requested by another stop task."""
        return self._update(
            "stop request",
            key,
            "SET stop_requested_by = :by, stop_key = :sk, stop_requested_at = :now",
            "#s IN (:running, :released) AND (attribute_not_exists(stop_key) OR stop_key = :sk)",
            {
                ":by": {"S": by[:200]},
                ":sk": {"S": stop_key},
                ":now": num(self._clock()),
                ":running": {"S": RUNNING},
                ":released": {"S": RELEASED},
            },
        )

    def stop_unstarted(self, key: str, *, claimed_at: int) -> bool:
        """A claim with a stop request → ``stopped`` (the job never ran, or was stopped right after the runtime
        accepted it). ``False`` when it is not our claim or no stop was requested."""
        return self._update(
            "stop unstarted",
            key,
            "SET #s = :stopped, stopped_by = stop_requested_by, finished_at = :now",
            "#s = :running AND stored_at = :at AND attribute_exists(stop_requested_by)",
            {
                ":stopped": {"S": STOPPED},
                ":now": num(self._clock()),
                ":running": {"S": RUNNING},
                ":at": num(claimed_at),
            },
            final=True,
        )

    def remember_progress_comment(self, key: str, *, comment_id: str, url: str, paused_key: str = "") -> None:
        """Keep the progress comment's id and URL with the claim (and, for the answer to an approval, the key of
        the job that paused). Raises :class:`ReplyStoreError`."""
        self._update(
            "progress comment",
            key,
            "SET progress_comment_id = :id, progress_comment_url = :url"
            + (", paused_key = :pk" if paused_key else ""),
            "#s = :running",
            {
                ":id": {"S": comment_id},
                ":url": {"S": url},
                ":running": {"S": RUNNING},
                **({":pk": {"S": paused_key}} if paused_key else {}),
            },
        )

    def release(self, key: str) -> None:
        """Give up a ``running`` claim (the runtime did not take the job). Raises :class:`ReplyStoreError`."""
        self._update(
            "release",
            key,
            "SET #s = :released",
            "#s = :running",
            {":released": {"S": RELEASED}, ":running": {"S": RUNNING}},
        )

    def started(self, key: str, job: FixJob, *, claimed_at: int) -> bool:
        """The runtime accepted the job: ``running`` → ``job`` (only the claim written at ``claimed_at``, and not
        when a stop was requested meanwhile), and the issue's session now points at this job. ``False`` when the
        claim is no longer ours or a stop is requested (read the item to tell)."""
        now = self._clock()
        moved = self._update(
            "start",
            key,
            "SET #s = :job, job = :doc, started_at = :now",
            "#s = :running AND stored_at = :at AND attribute_not_exists(stop_requested_by)",
            {
                ":job": {"S": JOB},
                ":doc": {"S": job.model_dump_json()},
                ":now": num(now),
                ":running": {"S": RUNNING},
                ":at": num(claimed_at),
            },
        )
        if moved:
            self._point_session(job.session_id, "job_key", key)
        return moved

    def finish_unstarted(self, key: str, *, error_code: str, claimed_at: int) -> bool:
        """A claim whose job can never start (a final error before the runtime took it) → ``done``."""
        return self._update(
            "finish",
            key,
            "SET #s = :done, error_code = :code, finished_at = :now",
            "#s = :running AND stored_at = :at",
            {
                ":done": {"S": DONE},
                ":code": {"S": error_code},
                ":now": num(self._clock()),
                ":running": {"S": RUNNING},
                ":at": num(claimed_at),
            },
            final=True,
        )

    # ------------------------------------------------------------------ reporter
    def record_progress(
        self, key: str, *, seq: int, cost_usd: float, tool_calls: int, last_tool: str, elapsed_s: float
    ) -> bool:
        """Keep a progress event's figures when it is newer than the last one kept and the job still runs.

        ``False`` for a duplicate, an older event delivered late, or a job no longer running."""
        return self._update(
            "progress",
            key,
            "SET last_seq = :seq, cost_so_far = :cost, tool_calls = :calls, last_tool = :tool, elapsed_s = :el",
            "#s = :job AND (attribute_not_exists(last_seq) OR last_seq < :seq)",
            {
                ":seq": num(seq),
                ":cost": num(float(cost_usd)),
                ":calls": num(tool_calls),
                ":tool": {"S": last_tool[:200]},
                ":el": num(float(elapsed_s)),
                ":job": {"S": JOB},
            },
        )

    def take_edit_slot(self, key: str, *, min_interval: float) -> bool:
        """May the progress comment be edited now (at most once per ``min_interval`` seconds)?"""
        now = self._clock()
        return self._update(
            "edit slot",
            key,
            "SET last_edit_at = :now",
            "#s = :job AND (attribute_not_exists(last_edit_at) OR last_edit_at <= :cutoff)",
            {":now": num(now), ":cutoff": num(now - min_interval), ":job": {"S": JOB}},
        )

    def begin_report(self, key: str, *, lease_seconds: float) -> bool:
        """Take the result: ``job`` → ``reporting``, or take over a ``reporting`` lease older than
        ``lease_seconds`` (its reporter died). ``False``: another reporter has it, it is done or stopped."""
        now = self._clock()
        return self._update(
            "report",
            key,
            "SET #s = :reporting, report_at = :now",
            "#s = :job OR (#s = :reporting AND report_at < :stale)",
            {
                ":reporting": {"S": REPORTING},
                ":job": {"S": JOB},
                ":now": num(now),
                ":stale": num(now - lease_seconds),
            },
        )

    def unreport(self, key: str) -> None:
        """Give the result back (``reporting`` → ``job``) after a failure that may pass, so its redelivery
        reports it without waiting for the lease."""
        self._update(
            "unreport",
            key,
            "SET #s = :job",
            "#s = :reporting",
            {":job": {"S": JOB}, ":reporting": {"S": REPORTING}},
        )

    def finish(
        self,
        key: str,
        *,
        pr_url: str = "",
        cost_usd: float | None = None,
        duration_ms: int | None = None,
        error_code: str = "",
    ) -> bool:
        """``reporting`` → ``done`` with what was reported. ``False`` when the item was not reporting."""
        parts = ["#s = :done", "finished_at = :now", "pr_url = :pr", "error_code = :code"]
        values: dict[str, Any] = {
            ":done": {"S": DONE},
            ":now": num(self._clock()),
            ":pr": {"S": pr_url},
            ":code": {"S": error_code},
            ":reporting": {"S": REPORTING},
        }
        if cost_usd is not None:
            parts.append("cost_usd = :cost")
            values[":cost"] = num(float(cost_usd))
        if duration_ms is not None:
            parts.append("duration_ms = :dur")
            values[":dur"] = num(int(duration_ms))
        return self._update("finish", key, "SET " + ", ".join(parts), "#s = :reporting", values, final=True)

    # ------------------------------------------------------------------ stop
    def stop(self, key: str, *, by: str, stop_key: str) -> bool:
        """``job`` → ``stopped`` (the cost so far stays as last reported), recording the stop task's key.
        ``False`` when it was not running: already stopped, being reported or done — so a second stop changes
        nothing, and a result that arrives later finds ``stopped`` and opens nothing."""
        return self._update(
            "stop",
            key,
            "SET #s = :stopped, stopped_by = :by, stop_key = :sk, finished_at = :now",
            "#s IN (:job, :awaiting)",
            {
                ":stopped": {"S": STOPPED},
                ":by": {"S": by[:200]},
                ":sk": {"S": stop_key},
                ":now": num(self._clock()),
                ":job": {"S": JOB},
                ":awaiting": {"S": AWAITING},
            },
            final=True,
        )

    # ------------------------------------------------------------------ sweep
    def open_jobs(
        self, statuses: tuple[str, ...], *, page_size: int, max_pages: int
    ) -> tuple[list[OpenJob], bool]:
        """Job items in one of ``statuses``, or ``timed_out`` with the issue not told yet: a paged Scan reading
        :data:`SCAN_ATTRIBUTES` only, at most ``max_pages`` pages of ``page_size`` items evaluated each. Returns
        ``(jobs, complete)``; ``complete`` is ``False`` when the bound stopped the Scan before the table's end.

        A Scan, not an index: the table holds an issue bot's items for two weeks (receiver records, stored
        replies, jobs), a few thousand, and the sweep runs every 15 minutes (about 7 million read units a month
        for 5,000 items of 4 KB); a sparse index would add a write to every job transition. The filter does not
        lower the read capacity a Scan consumes (every item evaluated counts), so the page bound caps the cost.

        Raises :class:`ReplyStoreError`."""
        names = {"#s": "status"}
        values: dict[str, Any] = {":prefix": {"S": KEY_PREFIX}, ":timed_out": {"S": TIMED_OUT}}
        wanted = []
        for i, status in enumerate(statuses):
            values[f":s{i}"] = {"S": status}
            wanted.append(f":s{i}")
        open_filter = f"#s IN ({', '.join(wanted)}) OR " if wanted else ""
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "Select": "SPECIFIC_ATTRIBUTES",
            "ProjectionExpression": ", ".join("#s" if a == "status" else a for a in SCAN_ATTRIBUTES),
            "FilterExpression": (
                f"begins_with(id, :prefix) AND ({open_filter}(#s = :timed_out AND attribute_not_exists(notified_at)))"
            ),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "Limit": page_size,
        }
        found: list[OpenJob] = []
        for _page in range(max_pages):
            try:
                out = self._client.scan(**kwargs)
            except (ClientError, BotoCoreError) as exc:
                raise ReplyStoreError(f"Scan on {self.table_name} failed: {exc}") from exc
            for item in out.get("Items", []):
                found.append(
                    OpenJob(
                        key=text(item, "id").removeprefix(KEY_PREFIX),
                        status=text(item, "status"),
                        started_at=_n(item, "started_at") or 0.0,
                        stored_at=_n(item, "stored_at") or 0.0,
                        notified_at=_n(item, "notified_at") or 0.0,
                    )
                )
            last = out.get("LastEvaluatedKey")
            if not last:
                return found, True
            kwargs["ExclusiveStartKey"] = last
        return found, False

    def time_out(self, key: str, *, status: str) -> bool:
        """A job past its deadline with no result → ``timed_out`` (``error_code`` ``timed_out``), only while it
        is still in ``status``: ``False`` when a result (or a stop) moved it first — then that answer stands."""
        return self._update(
            "time out",
            key,
            "SET #s = :timed_out, error_code = :code, finished_at = :now",
            "#s = :from",
            {
                ":timed_out": {"S": TIMED_OUT},
                ":code": {"S": TIMED_OUT},
                ":now": num(self._clock()),
                ":from": {"S": status},
            },
            final=True,
        )

    def notified(self, key: str) -> bool:
        """The issue was told that the job timed out: the next sweep leaves it alone."""
        return self._update(
            "notified",
            key,
            "SET notified_at = :now",
            "#s = :timed_out",
            {":now": num(self._clock()), ":timed_out": {"S": TIMED_OUT}},
        )

    # ------------------------------------------------------------------ approvals
    def await_approval(self, key: str, approval: dict[str, Any], *, cost_usd: float | None) -> bool:
        """``reporting`` → ``awaiting_approval`` with the request (``approval``: id, tool, input_hash, rule,
        cost_usd, requested_at, expires_at, requester), and the job on the pending list (:meth:`list_pending`).
        ``False`` when the item was not reporting."""
        moved = self._update(
            "await approval",
            key,
            "SET #s = :awaiting, approval = :doc, approval_id = :id, cost_so_far = :cost",
            "#s = :reporting",
            {
                ":awaiting": {"S": AWAITING},
                ":doc": {"S": json.dumps(approval, sort_keys=True)},
                ":id": {"S": str(approval["id"])},
                ":cost": num(float(cost_usd or 0.0)),
                ":reporting": {"S": REPORTING},
            },
        )
        expires_at = approval.get("expires_at")
        if moved and isinstance(expires_at, int | float):
            self.list_pending(key, float(expires_at))
        return moved

    def _pending_update(
        self, what: str, expression: str, condition: str, names: dict[str, str], values: Any
    ) -> bool:
        return self._conditional(
            f"UpdateItem ({what})",
            lambda: self._client.update_item(
                TableName=self.table_name,
                Key={"id": {"S": PENDING_APPROVALS_ID}},
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                **({"ExpressionAttributeValues": values} if values else {}),
            ),
        )

    def list_pending(self, key: str, expires_at: float) -> None:
        """Name the job ``key`` (waiting for approval until ``expires_at``) in the pending list."""
        self._pending_update(
            "pending list", "SET pending = :empty", "attribute_not_exists(pending)", {}, {":empty": {"M": {}}}
        )
        self._pending_update(
            "pending list",
            "SET pending.#k = :exp",
            "attribute_exists(pending)",
            {"#k": key},
            {":exp": num(expires_at)},
        )

    def unlist_pending(self, key: str) -> None:
        """Take the job ``key`` off the pending list (answered, stopped or expired)."""
        self._pending_update(
            "pending list", "REMOVE pending.#k", "attribute_exists(pending)", {"#k": key}, None
        )

    def pending_approvals(self) -> dict[str, float]:
        """The pending list: job key → expiry (epoch s). Raises :class:`ReplyStoreError`."""
        try:
            out = self._client.get_item(
                TableName=self.table_name, Key={"id": {"S": PENDING_APPROVALS_ID}}, ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise ReplyStoreError(f"GetItem on {self.table_name} failed: {exc}") from exc
        pending = (out.get("Item") or {}).get("pending", {}).get("M", {})
        return {key: float(value["N"]) for key, value in pending.items() if "N" in value}

    def decide(self, key: str, *, approval_id: str, decision: dict[str, Any]) -> bool:
        """``awaiting_approval`` (of ``approval_id``) → ``answered`` (``decision``: outcome approved | denied, by,
        at, reason, task key) or → ``expired`` (outcome expired). ``False`` when it was not waiting for that
        approval (answered, stopped or expired already): the first answer wins. An answer takes the job off the
        pending list; an expiry leaves it there until its comment says so (:meth:`unlist_pending`), so a failed
        edit is retried by the next sweep."""
        expired = decision.get("outcome") == "expired"
        decided = self._update(
            "decide",
            key,
            "SET #s = :to, approval_decision = :doc" + (", finished_at = :now" if expired else ""),
            "#s = :awaiting AND approval_id = :id",
            {
                ":to": {"S": EXPIRED if expired else ANSWERED},
                ":doc": {"S": json.dumps(decision, sort_keys=True)},
                ":awaiting": {"S": AWAITING},
                ":id": {"S": approval_id},
                **({":now": num(self._clock())} if expired else {}),
            },
            # An expired job is final: it gives up its issue's active-fix marker. An answered one is not: its
            # continuation (keyed by the approval id) is the fix still running (:meth:`take_active`).
            final=expired,
        )
        if decided and not expired:
            self.unlist_pending(key)
        return decided
