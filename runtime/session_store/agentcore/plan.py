"""What one process knows about an AgentCore Memory transcript key, and a batch of events as first planned.

Both belong to :class:`runtime.session_store.agentcore.store.AgentCoreMemorySessionStore`, which alone changes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionStoreEntry, SessionSummaryEntry


@dataclass
class KeyCache:
    """What this process knows about one transcript key after reading or writing it."""

    uuids: set[str] = field(default_factory=set)
    last_seq: int = 0
    epoch: int = 1  # this writer's epoch for the key: one more than the highest it read
    summary: SessionSummaryEntry | None = None
    indexed: bool = False


@dataclass
class BatchPlan:
    """A batch's events as planned on its first try, resent unchanged on a retry (same seqs, same tokens)."""

    events: list[tuple[list[dict[str, Any]], list[SessionStoreEntry]]]
    sent: int = 0  # events acknowledged so far
    summaries: dict[int, SessionSummaryEntry] = field(default_factory=dict)  # folded per event, once
