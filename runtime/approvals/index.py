"""The deployment's list of pending approvals, so ``agentkit sessions pending`` can show every session's requests
without waking a session (:mod:`runtime.approvals.book` holds the truth; this is a best-effort index of it).

On AgentCore Memory each pending request is one blob event ``{"k": "approval", "d": <card>}`` under actorId
``agentkit-approvals``, sessionId ``pending``; it is deleted when the request is answered or expires. Events are
appended, never rewritten, so two microVMs adding at once lose nothing. An entry whose delete failed stays until it
expires; answering it then says it was already answered. Blob events are never extracted to long-term memory.

IAM: ``bedrock-agentcore:CreateEvent``, ``DeleteEvent`` (the client: ``ListEvents``). Environment variables: none.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from runtime.approvals.records import ApprovalRecord

logger = logging.getLogger(__name__)

#: Where the index lives in AgentCore Memory (the client reads the same names).
INDEX_ACTOR_ID = "agentkit-approvals"
INDEX_SESSION_ID = "pending"
BLOB_KIND = "approval"


class PendingIndex(Protocol):
    """Where pending requests are listed across sessions."""

    async def add(self, record: ApprovalRecord) -> str | None:
        """List ``record``; returns the entry's id (kept in the record, to remove it later)."""
        ...

    async def remove(self, entry_id: str) -> None: ...


class MemoryPendingIndex:
    """The index on AgentCore Memory (``client``: a boto3 ``bedrock-agentcore`` client)."""

    def __init__(self, client: Any, memory_id: str, *, clock: Callable[[], float] | None = None) -> None:
        import time

        self.client, self.memory_id = client, memory_id
        self._clock = clock or time.time

    async def add(self, record: ApprovalRecord) -> str | None:
        return await asyncio.to_thread(self._add, record)

    def _add(self, record: ApprovalRecord) -> str | None:
        response = self.client.create_event(
            memoryId=self.memory_id,
            actorId=INDEX_ACTOR_ID,
            sessionId=INDEX_SESSION_ID,
            eventTimestamp=datetime.fromtimestamp(self._clock(), tz=UTC),
            payload=[{"blob": {"k": BLOB_KIND, "d": dict(record.card())}}],
            extractionMode="SKIP",
            # one entry per request, even when the call is retried
            clientToken=hashlib.sha256(f"approval|{record.id}".encode()).hexdigest(),
        )
        return str(response["event"]["eventId"])

    async def remove(self, entry_id: str) -> None:
        await asyncio.to_thread(
            self.client.delete_event,
            memoryId=self.memory_id,
            actorId=INDEX_ACTOR_ID,
            sessionId=INDEX_SESSION_ID,
            eventId=entry_id,
        )
