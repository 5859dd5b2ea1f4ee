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

Where the paused work cannot be restored on a new microVM, the answer is refused with ``410 paused_work_lost``
(:class:`runtime.errors.PausedWorkLost`) instead of running the approved call on the bare snapshot, which would end
in a pull request without the work done before the pause: nothing is stored for the session (the store failed at
the pause, or the session paused under a runtime that did not keep its work), the patch could not be made at the
pause, it was too large to keep, it was made against another snapshot than the one sent, or it was already used
(every answer marks it so: when the store fails at a later pause, the earlier pause's work is not restored in place
of the later one's). A pause with no change keeps ``""``, which is restored as nothing. The microVM that paused keeps
its workspace and is not affected.

Size: the state is one AgentCore Memory event (the store's ``put_state`` cuts its JSON into blob items of at most
:data:`runtime.session_store.agentcore.ids.MAX_ITEM_BYTES` each, in one ``CreateEvent`` of at most
:data:`~runtime.session_store.agentcore.ids.MAX_EVENT_BYTES`), so a restore never sees half of it. A blob is a
``MemoryDocument`` (a document shape in botocore's ``bedrock-agentcore`` service model, protocol ``rest-json``),
which botocore's serializer sends inside the body's ``json.dumps``, and the store's chunks are pieces of the
state's JSON text: a state is measured as that text is sent, ``json.dumps(json.dumps(state))`` (a non-ASCII
character takes 7 bytes: its ``\\uXXXX`` escape, with the backslash escaped again; a quote takes 4). One over
:data:`MAX_KEPT_BYTES` keeps no patch, only that it was too large (and its size).

What is not carried: paths the patch withholds (secret names, protected paths, links leaving the workspace), which
never reach a pull request either.

Raises :class:`runtime.errors.SessionStoreError` (from the store). IAM (AgentCore Memory):
``bedrock-agentcore:CreateEvent``, ``ListEvents``, ``DeleteEvent`` (the approvals' own).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from runtime.errors import PausedWorkLost
from runtime.session_store.agentcore.ids import MAX_EVENT_BYTES
from runtime.session_store.codec import wire_bytes

STATE_SUFFIX = ".paused-work"
VERSION = 1
#: The largest kept state, as its JSON text is sent (:func:`kept_bytes`); what is left of the event holds each chunk
#: item's own fields (about 80 bytes an item, at most 100 items).
MAX_KEPT_BYTES = MAX_EVENT_BYTES - 20_000


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
        not be made, so nothing is restored) and ``snapshot``, the git tree id of the snapshot it was made against.
        A patch over :data:`MAX_KEPT_BYTES` is not kept: only its size, so an answer elsewhere is refused."""
        state: dict[str, Any] = {"v": VERSION, "patch": patch, "snapshot": snapshot}
        size = kept_bytes(state)
        if size > MAX_KEPT_BYTES:
            state = {"v": VERSION, "patch": None, "snapshot": snapshot, "too_large": size}
        await self.store.put_state(claude_session_id + STATE_SUFFIX, state)

    async def spend(self, claude_session_id: str) -> None:
        """Record that the kept work was used (its pause was answered where the workspace is, or it was restored):
        until the session's next pause stores its own, an answer elsewhere is refused rather than given it."""
        await self.store.put_state(
            claude_session_id + STATE_SUFFIX, {"v": VERSION, "patch": None, "snapshot": None, "spent": True}
        )

    async def restorable(self, claude_session_id: str, *, snapshot: str | None) -> str | None:
        """The change to apply to ``snapshot`` (a git tree id; None: do not compare) on a microVM without the
        session's workspace; None when nothing is stored for the session.

        Raises: PausedWorkLost: a state is stored but its change cannot be restored there (see the module).
        """
        state = await self.store.get_state(claude_session_id + STATE_SUFFIX)
        if state is None:
            return None
        patch = state.get("patch")
        if isinstance(state.get("too_large"), int):
            raise paused_work_lost(
                f"its patch was too large to keep ({state['too_large']:,} bytes, at most {MAX_KEPT_BYTES:,})"
            )
        if state.get("spent") is True:
            raise paused_work_lost(
                "what is stored is the work of an earlier pause, already answered (the session store failed at "
                "the latest pause)"
            )
        if not isinstance(patch, str):
            raise paused_work_lost("no patch of it could be made at the pause")
        if snapshot is not None and state.get("snapshot") != snapshot:
            raise paused_work_lost("it was made against another snapshot than the one sent with the answer")
        return patch


def kept_bytes(state: dict[str, Any]) -> int:
    """Bytes ``state`` takes in the AgentCore store's request: its JSON text, as botocore sends that text."""
    return wire_bytes(json.dumps(state))


def paused_work_lost(why: str) -> PausedWorkLost:
    """The refusal of an answer whose paused work cannot be restored on this microVM, saying ``why``."""
    return PausedWorkLost(
        f"the work the agent did before it paused could not be restored on this microVM: {why}; the answer is "
        "refused instead of going on without it. Start the job again (the microVM that paused is gone)"
    )
