"""The work a turn paused for approval leaves in its session's workspace, kept with the session.

A turn that stops at a call waiting for a person's approval (:mod:`runtime.approvals`) has usually changed the
session's workspace before that call (edits, generated files). The workspace is the microVM's local disk
(:mod:`runtime.workspace.sessions`), but the answer may come hours later, to a new microVM after the first is gone,
which starts with an empty disk. So at the pause the change against the session's snapshot (the git patch a
finished turn would return) is written to the session store's per-session state (a row in SQLite locally, a blob
event in AgentCore Memory, never extracted to long-term memory) under ``<claude session id>.paused-work``, and
every later pause of the session overwrites it.

The answer's turn (an ``approve`` / ``deny`` invocation) carries the snapshot again (the webhook's worker sends the
paused job's base commit, as it did for the job). Where the session's workspace is still there (the microVM that
paused), that snapshot is NOT installed: the workspace already holds it plus the paused work, which installing
would wipe. Where it is not (a new microVM), the snapshot is installed and the stored change applied with
``git apply`` before the turn (only when it was made against that same snapshot: the git tree id is kept with it), so the agent goes on where it stopped and the job's patch holds all of its work.
An answer that sends no snapshot to a microVM without the session's workspace is refused with
``410 workspace_expired`` when paused work is stored, instead of running in an empty directory.

What is not carried: paths the patch withholds (secret names, protected paths, links leaving the workspace), which
never reach a pull request either.

Raises :class:`runtime.errors.SessionStoreError` (from the store). IAM (AgentCore Memory):
``bedrock-agentcore:CreateEvent``, ``ListEvents``, ``DeleteEvent`` (the approvals' own).
"""

from __future__ import annotations

from typing import Any, Protocol

STATE_SUFFIX = ".paused-work"
VERSION = 1


class StateStore(Protocol):
    """The session store's per-session state (:mod:`runtime.session_store.sqlite`, ``...agentcore.store``)."""

    async def get_state(self, session_id: str) -> dict[str, Any] | None: ...

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None: ...


class PausedWork:
    """The paused work of every session, in ``store``."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    async def save(self, claude_session_id: str, patch: str | None, *, snapshot: str | None) -> None:
        """Keep ``patch`` (the workspace's change against its snapshot at the pause; ``""``: none; None: it could
        not be made, so nothing is restored) and ``snapshot``, the git tree id of the snapshot it was made against."""
        state = {"v": VERSION, "patch": patch, "snapshot": snapshot}
        await self.store.put_state(claude_session_id + STATE_SUFFIX, state)

    async def load(self, claude_session_id: str, *, snapshot: str | None = None) -> str | None:
        """The change kept at the session's last pause; None when none was kept, or (``snapshot`` given) when it was
        made against another snapshot than ``snapshot`` (applying it there would not give the paused work back)."""
        state = await self.store.get_state(claude_session_id + STATE_SUFFIX) or {}
        patch = state.get("patch")
        if not isinstance(patch, str) or (snapshot is not None and state.get("snapshot") != snapshot):
            return None
        return patch
