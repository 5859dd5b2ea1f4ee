"""A session's approvals, kept durably with the session so any process (any microVM) can read and answer them.

The book is one JSON document per Claude session in the session store's per-session state (``get_state`` /
``put_state``: a row in SQLite locally, a blob event in AgentCore Memory, never extracted to long-term memory),
under the key ``<claude session id>.approvals``. Each change reads nothing new: the book is loaded once per process
and session, changed under the session's lock and written whole (last write wins), which is safe because
AgentCore runs one session on one microVM at a time.

Raises :class:`runtime.errors.SessionStoreError` (from the store) when it cannot be read or written: a request that
cannot be stored is not made (the call is refused, never run), an answer that cannot be stored is refused.
IAM (AgentCore Memory): ``bedrock-agentcore:CreateEvent``, ``ListEvents``, ``DeleteEvent``.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from runtime.approvals.records import ApprovalRecord
from runtime.errors import ApprovalExpired, ApprovalNotFound, ApprovalNotPending, ApprovalWithdrawn

#: Decided records kept per session (the newest); pending and approved ones are never dropped.
MAX_DECIDED = 100
STATE_SUFFIX = ".approvals"
BOOK_VERSION = 1


class StateStore(Protocol):
    """The session store's per-session state (:mod:`runtime.session_store.sqlite`, :mod:`runtime.session_store.agentcore.store`)."""

    async def get_state(self, session_id: str) -> dict[str, Any] | None: ...

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None: ...


class ApprovalBook:
    """The approvals of one Claude session."""

    def __init__(self, claude_session_id: str, store: StateStore | None) -> None:
        self.claude_session_id = claude_session_id
        self._store = store
        self._records: dict[str, ApprovalRecord] | None = None
        self.lock = asyncio.Lock()

    @property
    def key(self) -> str:
        return self.claude_session_id + STATE_SUFFIX

    async def records(self) -> dict[str, ApprovalRecord]:
        """The session's records by id (read from the store once per process)."""
        if self._records is None:
            state = await self._store.get_state(self.key) if self._store is not None else None
            items = (state or {}).get("approvals") or []
            self._records = {r.id: r for r in (ApprovalRecord.from_dict(item) for item in items)}
        return self._records

    async def save(self) -> None:
        records = await self.records()
        decided = [r for r in records.values() if r.status not in ("pending", "approved")]
        drop = (
            {r.id for r in sorted(decided, key=lambda r: r.created_at)[:-MAX_DECIDED]} if decided else set()
        )
        for record_id in drop:
            del records[record_id]
        if self._store is not None:
            await self._store.put_state(
                self.key, {"v": BOOK_VERSION, "approvals": [r.to_dict() for r in records.values()]}
            )

    async def add(self, record: ApprovalRecord) -> None:
        """Store a new record; when the store refuses it, it is not kept here either (raises what it raised)."""
        records = await self.records()
        records[record.id] = record
        try:
            await self.save()
        except BaseException:
            records.pop(record.id, None)
            raise

    async def get(self, approval_id: str) -> ApprovalRecord:
        """Raises :class:`ApprovalNotFound`."""
        record = (await self.records()).get(approval_id)
        if record is None:
            raise ApprovalNotFound(
                f"this session has no approval {approval_id!r}; list the session's pending approvals with "
                "`agentkit sessions pending SESSION_ID` (approvals are bound to the session that asked)"
            )
        return record

    async def pending_for(self, input_hash: str) -> ApprovalRecord | None:
        """The pending request for exactly this call, if one is waiting (a repeated call does not ask twice)."""
        for record in (await self.records()).values():
            if record.status == "pending" and record.input_hash == input_hash:
                return record
        return None

    async def grant_for(self, input_hash: str, now: float) -> ApprovalRecord | None:
        """An approved, unused, unexpired approval of exactly this call."""
        for record in (await self.records()).values():
            if record.status == "approved" and record.input_hash == input_hash and not record.expired(now):
                return record
        return None

    async def expire_due(self, now: float) -> list[ApprovalRecord]:
        """Mark pending/approved records past their expiry ``expired`` (not saved here); returns them."""
        due = [r for r in (await self.records()).values() if r.expired(now)]
        for record in due:
            record.status = "expired"
            record.history.append({"status": "expired", "at": round(now, 3)})
        return due

    @staticmethod
    def check_pending(record: ApprovalRecord, now: float) -> None:
        """Raises :class:`ApprovalExpired` / :class:`ApprovalWithdrawn` / :class:`ApprovalNotPending` unless
        ``record`` can be answered now."""
        if record.status == "withdrawn":
            by = f" by {record.decided_by}" if record.decided_by else ""
            why = f" ({record.reason})" if record.reason else ""
            raise ApprovalWithdrawn(
                f"approval {record.id} was withdrawn{by}{why}: it can no longer be answered; the agent asks again "
                "if a later turn still needs the call"
            )
        if record.status == "expired" or (record.status == "pending" and record.expired(now)):
            raise ApprovalExpired(
                f"approval {record.id} expired at {record.expires_at:.0f} (epoch s) without an answer; the agent "
                "asks again if it still needs the call: send it a new turn"
            )
        if record.status != "pending":
            raise ApprovalNotPending(
                f"approval {record.id} was already answered ({record.status}); each approval is answered once and "
                "lets its one call through once"
            )
