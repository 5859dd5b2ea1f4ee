"""Per-session state on AgentCore Memory (``get_state`` / ``put_state``) and the count of billed writes, mixed
into the session store.

State that must outlive a microVM (e.g. the session's cumulative cost) is one blob item ``{"k": "state",
"s": seq, "d": state}`` under actorId ``agentkit-state``, sessionId ``t-<esc(session_id)>``; the newest
``seq`` wins and older events are pruned after a write. IAM: ``bedrock-agentcore:CreateEvent``,
``ListEvents``, ``DeleteEvent``. Environment: none.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from runtime.errors import SessionStoreError
from runtime.session_store.agentcore.ids import (
    MEMORY_EVENTS_WRITTEN,
    STATE_ACTOR_ID,
    UsageMeter,
    session_id_for,
)

log = logging.getLogger(__name__)


class MemoryStateMixin:
    """``get_state`` / ``put_state`` over the store's ``_call`` and ``_list_all``."""

    _clock: Callable[[], float]
    _state_events: dict[str, list[str]]
    _on_usage: UsageMeter | None

    def _call(self, action: str, **kwargs: Any) -> Any:  # pragma: no cover - provided by the store
        raise NotImplementedError

    def _list_all(self, actor_id: str, session_id: str) -> list[dict[str, Any]]:  # pragma: no cover
        raise NotImplementedError

    def _count_event(self, owner: str | None) -> None:
        """One billed ``CreateEvent`` for the Claude session ``owner`` (a retried batch whose event had landed
        is counted again: AgentCore deduplicates it by ``clientToken``, so the count errs high, never low)."""
        if self._on_usage is not None:
            try:
                self._on_usage(MEMORY_EVENTS_WRITTEN, owner)
            except Exception:  # a metrics failure must not fail the write
                log.exception("on_usage callback raised")

    def _get_state_sync(self, session_id: str) -> dict[str, Any] | None:
        events = self._list_all(STATE_ACTOR_ID, session_id_for(session_id))
        best: tuple[int, dict[str, Any]] | None = None
        ids: list[str] = []
        for event in events:
            ids.append(event["eventId"])
            for payload in event.get("payload") or []:
                blob = payload.get("blob")
                if isinstance(blob, dict) and blob.get("k") == "state":
                    seq = int(blob["s"])
                    if best is None or seq >= best[0]:
                        best = (seq, blob["d"])
        self._state_events[session_id] = ids
        return dict(best[1]) if best else None

    def _put_state_sync(self, session_id: str, state: dict[str, Any]) -> None:
        seq = int(self._clock() * 1e9)
        item = {"k": "state", "s": f"{seq:020d}", "d": state}
        session = session_id_for(session_id)
        token = hashlib.sha256(f"{session}|{seq}".encode()).hexdigest()
        previous = self._state_events.get(session_id, [])
        response = self._call(
            "create_event",
            actorId=STATE_ACTOR_ID,
            sessionId=session,
            eventTimestamp=datetime.fromtimestamp(self._clock(), tz=UTC),
            payload=[{"blob": item}],
            extractionMode="SKIP",
            clientToken=token,
        )
        self._count_event(session_id)
        self._state_events[session_id] = [response["event"]["eventId"]]
        for event_id in previous:  # keep the state session short; a leftover only costs one more item to read
            try:
                self._call("delete_event", actorId=STATE_ACTOR_ID, sessionId=session, eventId=event_id)
            except SessionStoreError as exc:
                log.info("could not prune old state event %s: %s", event_id, exc)

    async def get_state(self, session_id: str) -> dict[str, Any] | None:
        """Latest state written with :meth:`put_state`, or ``None``. Raises SessionStoreError."""
        return await asyncio.to_thread(self._get_state_sync, session_id)

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None:
        """Store a JSON-serializable dict for the session (last write wins). Raises SessionStoreError."""
        json.dumps(state)  # fail fast on non-JSON state
        await asyncio.to_thread(self._put_state_sync, session_id, state)
