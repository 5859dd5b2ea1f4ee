"""One approval request and what became of it: the record kept with its session, and the card a person sees.

A record is bound to its session, its tool and a hash of its exact input (:func:`input_hash`): an approval lets
exactly that call through, once. Status moves ``pending`` → ``approved`` → ``used``, or ``pending`` → ``denied`` /
``expired`` / ``withdrawn`` (taken back unanswered: the job that waited was stopped); nothing moves back.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypedDict

Status = Literal["pending", "approved", "denied", "expired", "used", "withdrawn"]
STATUSES: tuple[Status, ...] = ("pending", "approved", "denied", "expired", "used", "withdrawn")
#: Approval ids: ``apv-`` and 20 hex digits (80 random bits), also valid as a job id and in a tracker comment.
ID_PREFIX = "apv-"


def new_id() -> str:
    """A fresh approval id (made when the call is reached, never at start-up: a V2 snapshot shares start-up state)."""
    return ID_PREFIX + secrets.token_hex(10)


def input_hash(claude_session_id: str, tool_name: str, tool_input: Any) -> str:
    """SHA-256 over the session, the tool and its input as canonical JSON (sorted keys, no spaces): the same call
    in the same session hashes the same, any other input or session differently."""
    canonical = json.dumps(
        {"session": claude_session_id, "tool": tool_name, "input": tool_input},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


class ApprovalCard(TypedDict):
    """What a person needs to answer a request (the ``approval`` of an ``awaiting_approval`` result, and of
    ``agentkit sessions pending``): the exact call, why it waits, what the session cost so far, and until when."""

    id: str
    session_id: str
    tool: str
    input: Any
    input_hash: str
    rule: str
    cost_usd: float
    created_at: float
    expires_at: float
    status: Status
    job_id: str | None


@dataclass
class ApprovalRecord:
    """One request and its outcome (stored as a plain dict with the session)."""

    id: str
    session_id: str  # the runtime session id
    claude_session_id: str
    tool: str
    input: Any
    input_hash: str
    rule: str
    cost_usd: float
    created_at: float
    expires_at: float
    status: Status = "pending"
    job_id: str | None = None
    tool_use_id: str | None = None
    decided_at: float | None = None
    decided_by: str | None = None
    reason: str | None = None
    used_at: float | None = None
    #: Its entry in the deployment's list of pending requests (runtime.approvals.index), while listed.
    index_id: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    def expired(self, now: float) -> bool:
        """Whether a pending or approved-but-unused record is past its expiry."""
        return self.status in ("pending", "approved") and now >= self.expires_at

    def card(self) -> ApprovalCard:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "tool": self.tool,
            "input": self.input,
            "input_hash": self.input_hash,
            "rule": self.rule,
            "cost_usd": round(self.cost_usd, 6),
            "created_at": round(self.created_at, 3),
            "expires_at": round(self.expires_at, 3),
            "status": self.status,
            "job_id": self.job_id,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ApprovalRecord:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        record = cls(**known)
        if record.status not in STATUSES:
            raise ValueError(f"unknown approval status {record.status!r}")
        return record
