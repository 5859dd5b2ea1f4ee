"""Approvals for the runtime: the gate's question ("may this call run now?") and a person's answer.

- :meth:`Approvals.check` is asked by the permission gate's ``PreToolUse`` hook (:mod:`runtime.guard.gate`) about
  every call the permission policy allows. An approved, unused, unexpired approval of exactly this call (same
  session, tool and input hash) lets it through and is used up. Otherwise, when a rule matches
  (:mod:`runtime.approvals.rules`), the request is stored with the session (:mod:`runtime.approvals.book`) before
  anything else, and the gate refuses the call and stops the turn; the turn (:mod:`runtime.agent.turn`) ends with
  subtype ``awaiting_approval`` and the request's card. Nothing waits inside the hook, so nothing can fail open on
  a timeout, and nothing lives only in this process.
- :meth:`Approvals.answer` takes an ``approve`` / ``deny`` from an invocation: it checks and records the answer and
  returns the prompt of the turn that follows (approved: make exactly that call now; denied: go on without it).
- :meth:`Approvals.withdraw` takes a ``withdraw`` from an invocation: a pending request is taken back unanswered
  (the job that waited for it was stopped), so no later answer can let its call run; no turn starts.

Every request, answer, use, expiry and withdrawal is a metric (``ApprovalsRequested``, ``Approved``, ``Denied``,
``Expired``, ``Withdrawn``, ``ApprovalDecisionSeconds``) and a span on the session (:meth:`runtime.observe.observer.Observer.approval`).
Environment variables: none read here. IAM: what :mod:`runtime.approvals.book` needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from runtime.approvals.book import ApprovalBook, StateStore
from runtime.approvals.index import PendingIndex
from runtime.approvals.records import ApprovalCard, ApprovalRecord, Status, input_hash, new_id
from runtime.approvals.rules import ApprovalRules, held_paths, named_paths

logger = logging.getLogger(__name__)

Event = Literal["requested", "approved", "denied", "expired", "used", "withdrawn"]
#: Most books kept in memory (one per session seen by this process); the oldest is re-read from the store.
MAX_BOOKS = 4096


class ApprovalSink(Protocol):
    """Where approval events go (:class:`runtime.observe.observer.Observer`)."""

    def approval(self, event: Event, record: ApprovalRecord, *, wait_s: float | None = None) -> None: ...


@dataclass
class TurnBinding:
    """What the gate needs to know about the turn running on a session (set by the turn while it streams)."""

    runtime_session_id: str
    cost_so_far: Callable[[], float]
    job_id: str | None = None
    #: The request this turn stopped for, once the gate refused a call for it.
    paused: ApprovalRecord | None = None


@dataclass(frozen=True)
class Answer:
    """An ``approve`` (``approved`` True) or ``deny`` from an invocation body."""

    approval_id: str
    approved: bool
    by: str | None = None
    #: deny: why (told to the agent); approve: a note told to the agent with the approval.
    reason: str | None = None


class Approvals:
    """The runtime's approvals.

    Args:
        rules: what needs approval (empty: nothing; answers to earlier requests are still honoured).
        store: the session store's per-session state (None: this process only, for tests and ``off`` stores).
        sink: told every event.
        clock: epoch seconds (expiry and time to decision are wall-clock times: they span processes).
        workspace: the directory file-tool paths are relative to (``paths`` rules).
        allowed_hosts: the agent's ``network_allowed_domains`` (``network`` rule).
        index: the deployment's list of pending requests (:mod:`runtime.approvals.index`); None: none.
    """

    def __init__(
        self,
        rules: ApprovalRules,
        *,
        store: StateStore | None,
        sink: ApprovalSink,
        clock: Callable[[], float] = time.time,
        workspace: str | None = None,
        allowed_hosts: Iterable[str] = (),
        index: PendingIndex | None = None,
    ) -> None:
        self.rules = rules
        self._store, self._sink, self._clock = store, sink, clock
        self._index = index
        self.workspace = workspace
        self.allowed_hosts = tuple(allowed_hosts)
        self._books: dict[str, ApprovalBook] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._bindings: dict[str, TurnBinding] = {}

    def book(self, claude_session_id: str) -> ApprovalBook:
        book = self._books.get(claude_session_id)
        if book is None:
            book = self._books[claude_session_id] = ApprovalBook(claude_session_id, self._store)
            while len(self._books) > MAX_BOOKS:
                oldest = next(iter(self._books))
                if self._books[oldest].lock.locked():
                    break
                del self._books[oldest]
        return book

    @contextlib.contextmanager
    def bind(self, claude_session_id: str, binding: TurnBinding) -> Iterator[TurnBinding]:
        """While a turn streams: calls of ``claude_session_id`` are checked against this turn."""
        self._bindings[claude_session_id] = binding
        try:
            yield binding
        finally:
            if self._bindings.get(claude_session_id) is binding:
                del self._bindings[claude_session_id]

    # -- the gate's question ------------------------------------------------------------------------------------

    async def check(
        self,
        tool_name: str,
        tool_input: Mapping[str, Any],
        *,
        claude_session_id: str,
        tool_use_id: str | None = None,
        workspace: str | None = None,
    ) -> ApprovalRecord | None:
        """None: the call may run now. A record: it waits for that approval (stored before this returns).
        ``workspace``: the session's workspace as the call sees it (default the runtime's), for ``paths`` rules.

        Raises what the store raises: the gate then refuses the call (it never runs unrecorded)."""
        if not self.rules.enabled:  # nothing needs approval: no store read, today's behaviour exactly
            return None
        binding = self._bindings.get(claude_session_id)
        digest = input_hash(claude_session_id, tool_name, tool_input)
        book = self.book(claude_session_id)
        async with book.lock:
            now = self._clock()
            expired = await book.expire_due(now)
            grant = await book.grant_for(digest, now)
            if grant is not None:
                grant.status, grant.used_at = "used", now
                grant.history.append({"status": "used", "at": round(now, 3), "tool_use_id": tool_use_id})
                try:
                    await book.save()
                except BaseException:  # not recorded as used: the call does not run, the approval stays
                    grant.status, grant.used_at = "approved", None
                    grant.history.pop()
                    raise
                self._tell(expired)
                self._sink.approval("used", grant)
                return None
            hit = self.rules.match(
                tool_name,
                tool_input,
                cost_usd=binding.cost_so_far() if binding is not None else 0.0,
                workspace=workspace or self.workspace,
                allowed_hosts=self.allowed_hosts,
            )
            if hit is None:
                if expired:
                    await book.save()
                    self._tell(expired)
                return None
            record = await book.pending_for(digest)
            created = record is None
            if record is None:
                record = ApprovalRecord(
                    id=new_id(),
                    session_id=binding.runtime_session_id if binding is not None else "",
                    claude_session_id=claude_session_id,
                    tool=tool_name,
                    input=json.loads(json.dumps(dict(tool_input), default=str)),
                    input_hash=digest,
                    rule=hit.describe(),
                    cost_usd=binding.cost_so_far() if binding is not None else 0.0,
                    created_at=now,
                    expires_at=now + self.rules.expiry_hours * 3600,
                    job_id=binding.job_id if binding is not None else None,
                    tool_use_id=tool_use_id,
                    history=[{"status": "pending", "at": round(now, 3)}],
                )
                record.index_id = await self._listed(record)
                try:
                    await book.add(record)
                except (
                    BaseException
                ):  # not stored: no request exists, the call is refused (runtime.guard.gate)
                    await self._unlisted([record])
                    raise
            elif expired:
                await book.save()
            self._tell(expired)
            if created:
                self._sink.approval("requested", record)
        if binding is not None and binding.paused is None:
            binding.paused = record
        return record

    # -- a person's answer --------------------------------------------------------------------------------------

    async def answer(self, claude_session_id: str, answer: Answer) -> tuple[ApprovalRecord, str]:
        """Record ``answer`` and return the record and the prompt of the turn that follows.

        Raises:
            ApprovalNotFound: the session has no such approval.
            ApprovalExpired: it expired (recorded as such now if it had not been).
            ApprovalNotPending: it was already answered.
            SessionStoreError: the answer could not be stored (it is not given).
        """
        book = self.book(claude_session_id)
        async with book.lock:
            record = await book.get(answer.approval_id)
            status: Status = "approved" if answer.approved else "denied"
            now = await self._decide(book, record, status, by=answer.by, reason=answer.reason)
        self._sink.approval(record.status, record, wait_s=now - record.created_at)  # type: ignore[arg-type]
        await self._unlisted([record])
        return record, follow_up_prompt(record)

    async def withdraw(
        self, claude_session_id: str, approval_id: str, *, by: str | None, reason: str | None
    ) -> ApprovalRecord:
        """Take the pending request ``approval_id`` back unanswered: it can no longer be approved or denied
        (:class:`ApprovalWithdrawn`), it leaves the pending index, and who, when and why are recorded. A request
        withdrawn before is returned as it is (nothing is recorded twice), so a retried withdraw answers the same.

        Raises:
            ApprovalNotFound: the session has no such approval.
            ApprovalExpired: it expired (recorded as such now if it had not been).
            ApprovalNotPending: it was answered (or used) already: withdrawing cannot take an answer back.
            SessionStoreError: the withdrawal could not be stored (the request stays pending).
        """
        book = self.book(claude_session_id)
        async with book.lock:
            record = await book.get(approval_id)
            if record.status == "withdrawn":
                return record
            await self._decide(book, record, "withdrawn", by=by, reason=reason)
        self._sink.approval("withdrawn", record)
        await self._unlisted([record])
        return record

    async def _decide(
        self,
        book: ApprovalBook,
        record: ApprovalRecord,
        status: Status,
        *,
        by: str | None,
        reason: str | None,
    ) -> float:
        """Under ``book.lock``: expire what is due, check that ``record`` is still pending and record it as ``status``
        by ``by`` now, stored before anything is told. Returns now (epoch seconds).

        Raises what :meth:`ApprovalBook.check_pending` raises, and ``SessionStoreError`` when the decision could not
        be stored (the record is pending again, as it was)."""
        now = self._clock()
        expired = await book.expire_due(now)
        if expired:
            await book.save()
            self._tell(expired)
        book.check_pending(record, now)
        record.status = status
        record.decided_at, record.decided_by, record.reason = now, by, reason
        record.history.append({"status": status, "at": round(now, 3), "by": by})
        try:
            await book.save()
        except BaseException:
            record.status, record.decided_at, record.decided_by, record.reason = (
                "pending",
                None,
                None,
                None,
            )
            record.history.pop()
            raise
        return now

    async def undo(self, claude_session_id: str, approval_id: str) -> None:
        """Put an answer back to pending when the turn it was to start could not be queued (a busy session): the
        caller's retry then finds the approval as it left it. Never raises; only an unused answer is undone."""
        book = self.book(claude_session_id)
        try:
            async with book.lock:
                record = await book.get(approval_id)
                if record.status not in ("approved", "denied"):
                    return
                record.status, record.decided_at, record.decided_by, record.reason = (
                    "pending",
                    None,
                    None,
                    None,
                )
                record.history.append({"status": "pending", "at": round(self._clock(), 3), "undone": True})
                await book.save()
        except Exception:
            logger.exception("approval %s: could not put the answer back to pending", approval_id)

    async def path_hold(
        self, claude_session_id: str, *, workspace: str
    ) -> Callable[[str], str | None] | None:
        """The backstop of ``paths`` rules for the patch of a turn of ``claude_session_id`` (None without such
        rules): a function telling why a changed workspace path stays out of the patch — a rule matches it and no
        call approved in this session (used) named it (:func:`runtime.approvals.rules.held_paths`). ``workspace``:
        the session's workspace as its calls saw it. A book that cannot be read counts no approved call (fails
        closed: such changes are withheld, the turn still ends)."""
        if not self.rules.paths:
            return None
        book = self.book(claude_session_id)
        try:
            async with book.lock:
                records = list((await book.records()).values())
        except Exception as exc:
            logger.warning("approvals of %s not readable for the patch: %s", claude_session_id, exc)
            records = []
        approved = [
            name
            for record in records
            if record.status == "used"
            for name in named_paths(record.tool, record.input, workspace)
        ]
        rules = self.rules

        def hold(path: str) -> str | None:
            glob = held_paths(rules, [path], approved).get(path)
            return f"needs approval: paths {glob}" if glob is not None else None

        return hold

    async def pending(self, claude_session_id: str) -> list[ApprovalCard]:
        """The session's requests still waiting for an answer (expired ones are recorded as such)."""
        book = self.book(claude_session_id)
        async with book.lock:
            expired = await book.expire_due(self._clock())
            if expired:
                await book.save()
                self._tell(expired)
            return [r.card() for r in (await book.records()).values() if r.status == "pending"]

    def _tell(self, expired: list[ApprovalRecord]) -> None:
        for record in expired:
            self._sink.approval("expired", record)
        if expired and self._index is not None:
            # off the caller's path: the index is a convenience, the book is the truth
            task = asyncio.get_running_loop().create_task(self._unlisted(expired))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _listed(self, record: ApprovalRecord) -> str | None:
        """Add a new request to the index; never raises (a request is made even when the index is down)."""
        if self._index is None:
            return None
        try:
            return await self._index.add(record)
        except Exception as exc:
            logger.warning("approval %s: not listed in the pending index: %s", record.id, exc)
            return None

    async def _unlisted(self, records: list[ApprovalRecord]) -> None:
        """Remove answered / expired requests from the index; never raises."""
        if self._index is None:
            return
        for record in records:
            if record.index_id is None:
                continue
            try:
                await self._index.remove(record.index_id)
            except Exception as exc:
                logger.warning("approval %s: still listed in the pending index: %s", record.id, exc)


def answer_of(approve: Any, deny: Any) -> Answer:
    """The :class:`Answer` in an invocation body's ``approve`` or ``deny`` (:class:`runtime.protocol.ApproveSpec` /
    ``DenySpec``; the body validated that exactly one is given)."""
    if approve is not None:
        return Answer(approval_id=approve.id, approved=True, by=approve.by, reason=approve.note)
    return Answer(approval_id=deny.id, approved=False, by=deny.by, reason=deny.reason)


def follow_up_prompt(record: ApprovalRecord) -> str:
    """The prompt of the turn after an answer. The input is repeated exactly, so the model can make exactly the
    approved call (any other input asks again)."""
    by = f" by {record.decided_by}" if record.decided_by else ""
    call = json.dumps({"tool": record.tool, "input": record.input}, ensure_ascii=False, sort_keys=True)
    if record.status == "approved":
        note = f"\nThe approver's note: {record.reason}" if record.reason else ""
        return (
            f"Approval {record.id} was granted{by}. The tool call that waited for it may now run once, exactly as "
            f"it was requested:\n{call}\nMake exactly this call now (the same tool and the same input; any other "
            f"input needs a new approval), then go on with the task.{note}"
        )
    reason = f" Reason given: {record.reason}" if record.reason else " No reason was given."
    return (
        f"Approval {record.id} was denied{by}: the tool call that waited for it will not run.{reason}\n"
        f"The denied call was:\n{call}\nDo not make this call again. Go on with the task without it, or say what "
        "you could not do without it."
    )
