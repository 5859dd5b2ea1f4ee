"""The work of a turn paused for approval, kept with the session, and restored where an answer arrives.

Real runner, workspaces (git) and SQLite session store (and the AgentCore Memory one on moto, for a large patch); each
"microVM" is a runner with its own state dir and the one store. The agent's change is made on disk, as a command of
the agent would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from harness.archives import tar_gz
from runtime.agent.runner import AgentTurnRunner
from runtime.approvals import Approvals
from runtime.approvals.rules import ApprovalRules
from runtime.errors import PausedWorkLost, SessionStoreError, WorkspaceExpired
from runtime.session_store.agentcore import AgentCoreMemorySessionStore
from runtime.session_store.agentcore.ids import MAX_ITEM_BYTES
from runtime.session_store.sqlite import SqliteSessionStore
from runtime.turn_request import TurnRequest
from runtime.workspace.paused import MAX_KEPT_BYTES, STATE_SUFFIX, kept_bytes
from tests.unit.test_approvals import Sink
from tests.unit.test_workspace_runner import SID, make

pytestmark = pytest.mark.anyio

SNAPSHOT = [("src/calc.py", b"def add(a, b):\n    return a - b\n"), ("README.md", b"# calc\n")]


def microvm(tmp_path: Path, name: str, store: SqliteSessionStore) -> tuple[AgentTurnRunner, Any]:
    """A runner on its own disk (``tmp_path/name``) with the shared session store and approval rules."""
    (tmp_path / name).mkdir()
    runner, session = make(tmp_path / name)
    rules = ApprovalRules(bash_programs=("git",))
    deps = replace(runner.deps, session_store=store, approvals=Approvals(rules, store=store, sink=Sink()))
    return AgentTurnRunner(deps), session


async def kept_patch(store: Any) -> str | None:
    """The change the session's last pause kept in ``store``: None when none was kept (nothing stored, or the
    patch could not be made or was too large to keep)."""
    state = await store.get_state(SID + STATE_SUFFIX) or {}
    patch = state.get("patch")
    return patch if isinstance(patch, str) else None


def answer(**snapshot: bytes) -> TurnRequest:
    return TurnRequest(prompt="approved: go on", answers_approval=True, **snapshot)  # type: ignore[arg-type]


def tree(tmp_path: Path, name: str) -> Path:
    return tmp_path / name / "state" / "workspaces" / SID


async def test_the_paused_work_is_kept_where_it_is_and_restored_on_a_new_microvm(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    archive = tar_gz(SNAPSHOT)
    first, session = microvm(tmp_path, "a", store)
    await first.prepare(session, TurnRequest(prompt="fix it", workspace_archive=archive))
    (tree(tmp_path, "a") / "README.md").write_bytes(
        b"# calc\n\nadd() adds.\n"
    )  # the agent's work before the pause
    (tree(tmp_path, "a") / "NOTES").write_bytes(b"\x00binary\xff")
    (tree(tmp_path, "a") / ".env").write_bytes(b"TOKEN=local\n")  # a secret name: withheld from every patch
    await first.keep_paused_work(session, 30.0)
    kept = await kept_patch(store)
    assert kept is not None and "+add() adds." in kept and "NOTES" in kept and ".env" not in kept

    # The microVM that paused keeps its workspace: the snapshot sent with the answer is not installed over it.
    await first.prepare(session, answer(workspace_archive=archive))
    assert (tree(tmp_path, "a") / "README.md").read_bytes() == b"# calc\n\nadd() adds.\n"
    assert (tree(tmp_path, "a") / ".env").exists()  # even what no patch carries
    await first.keep_paused_work(session, 30.0)  # the answered turn pauses again (at another call)

    # A new microVM installs the snapshot and applies the kept work; the patch then holds it against the snapshot.
    second, session_b = microvm(tmp_path, "b", store)
    await second.prepare(session_b, answer(workspace_archive=archive))
    restored = tree(tmp_path, "b")
    assert (restored / "README.md").read_bytes() == b"# calc\n\nadd() adds.\n"
    assert (restored / "NOTES").read_bytes() == b"\x00binary\xff"
    assert (restored / "src" / "calc.py").read_bytes() == SNAPSHOT[0][1]
    assert not (restored / ".env").exists()  # withheld paths are not carried (docs/approvals.md)
    workspaces = second.deps.workspaces
    assert workspaces is not None
    assert workspaces.changes(SID).changed_files == ["NOTES", "README.md"]

    await first.keep_paused_work(session, 30.0)  # and again
    # Kept work made against another snapshot cannot be applied to this one: the answer is refused, and the
    # snapshot installed for it is forgotten, so answering again here is refused too instead of going on in it.
    third, session_c = microvm(tmp_path, "c", store)
    other = tar_gz([*SNAPSHOT, ("LICENSE", b"MIT\n")])
    for _ in range(2):
        with pytest.raises(PausedWorkLost, match="another snapshot than the one sent") as refused:
            await third.prepare(session_c, answer(workspace_archive=other))
        assert refused.value.http_status == 410 and refused.value.code == "paused_work_lost"
        assert third.deps.workspaces is not None and not third.deps.workspaces.has_snapshot(SID)
    with pytest.raises(WorkspaceExpired, match="send the snapshot"):  # the right snapshot would restore it
        await third.prepare(session_c, answer())
    await third.prepare(session_c, answer(workspace_archive=archive))
    assert (tree(tmp_path, "c") / "README.md").read_bytes() == b"# calc\n\nadd() adds.\n"

    # A turn that is not an answer (a new fix with its snapshot) starts from the snapshot alone.
    await second.prepare(session_b, TurnRequest(prompt="another fix", workspace_archive=archive))
    assert workspaces.changes(SID).changed_files == []


async def test_an_answer_without_a_snapshot_where_the_workspace_is_missing_is_refused(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    first, session = microvm(tmp_path, "a", store)
    await first.prepare(session, TurnRequest(prompt="fix it", workspace_archive=tar_gz(SNAPSHOT)))
    await first.keep_paused_work(session, 30.0)  # nothing changed yet: an empty patch is kept
    assert await kept_patch(store) == ""
    await first.prepare(session, answer())  # where the workspace is, no snapshot is needed
    await first.keep_paused_work(session, 30.0)  # the answered turn pauses again

    second, session_b = microvm(tmp_path, "b", store)
    with pytest.raises(WorkspaceExpired, match="send the snapshot") as refused:
        await second.prepare(session_b, answer())
    assert refused.value.http_status == 410
    assert not tree(tmp_path, "b").exists()  # nothing ran in an empty directory


class FailingStateStore(SqliteSessionStore):
    """The SQLite store, refusing to write per-session state (as AgentCore Memory may at the pause) while ``failing``."""

    failing = True

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None:
        if self.failing:
            raise SessionStoreError("state write refused")
        await super().put_state(session_id, state)


async def paused_with_work(
    tmp_path: Path, store: SqliteSessionStore, *, readme: bytes
) -> tuple[AgentTurnRunner, Any]:
    """Microvm ``a`` worked on the snapshot, changed README.md to ``readme`` and paused (keeping what it can)."""
    first, session = microvm(tmp_path, "a", store)
    await first.prepare(session, TurnRequest(prompt="fix it", workspace_archive=tar_gz(SNAPSHOT)))
    (tree(tmp_path, "a") / "README.md").write_bytes(readme)
    await first.keep_paused_work(session, 30.0)
    return first, session


async def refused_on_a_new_microvm(tmp_path: Path, store: SqliteSessionStore, match: str) -> None:
    second, session_b = microvm(tmp_path, "b", store)
    with pytest.raises(PausedWorkLost, match=match) as refused:
        await second.prepare(session_b, answer(workspace_archive=tar_gz(SNAPSHOT)))
    assert refused.value.http_status == 410 and "Start the job again" in refused.value.message
    assert second.deps.workspaces is not None and not second.deps.workspaces.has_snapshot(SID)


async def test_an_answer_on_a_new_microvm_is_refused_when_nothing_was_stored_at_the_pause(
    tmp_path: Path,
) -> None:
    store = FailingStateStore(tmp_path / "sessions.db")
    first, session = await paused_with_work(tmp_path, store, readme=b"# calc\n\nwork before the pause\n")
    assert await kept_patch(store) is None  # the failure was logged only
    await refused_on_a_new_microvm(tmp_path, store, "nothing of it is stored")
    # the microVM that paused still has its workspace and goes on
    await first.prepare(session, answer(workspace_archive=tar_gz(SNAPSHOT)))
    assert (tree(tmp_path, "a") / "README.md").read_bytes() == b"# calc\n\nwork before the pause\n"


async def test_an_answer_on_a_new_microvm_is_refused_for_a_session_paused_before_work_was_kept(
    tmp_path: Path,
) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    first, session = microvm(tmp_path, "a", store)
    await first.prepare(session, TurnRequest(prompt="fix it", workspace_archive=tar_gz(SNAPSHOT)))
    # an older runtime paused here and kept nothing: no state at all for the session
    await refused_on_a_new_microvm(tmp_path, store, "runtime version that did not keep it")


async def test_an_answer_on_a_new_microvm_is_refused_when_no_patch_could_be_made_at_the_pause(
    tmp_path: Path,
) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    first, session = microvm(tmp_path, "a", store)
    assert first.deps.workspaces is not None
    first.deps.workspaces.max_patch_bytes = 100  # changes() raises PatchTooLarge at the pause
    await first.prepare(session, TurnRequest(prompt="fix it", workspace_archive=tar_gz(SNAPSHOT)))
    (tree(tmp_path, "a") / "README.md").write_bytes(b"# calc\n" + b"a longer line of work\n" * 20)
    await first.keep_paused_work(session, 30.0)
    assert (await store.get_state(SID + STATE_SUFFIX) or {}).get("patch", "absent") is None
    await refused_on_a_new_microvm(tmp_path, store, "no patch of it could be made")
    second, session_b = microvm(
        tmp_path, "c", store
    )  # an answer without the snapshot: sending it would not help
    with pytest.raises(PausedWorkLost, match="no patch of it could be made"):
        await second.prepare(session_b, answer())


async def test_a_paused_patch_over_what_the_store_holds_is_not_kept_and_its_answer_elsewhere_is_refused(
    tmp_path: Path,
) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    # Non-ASCII text: each character is sent as 7 bytes (its JSON escape, escaped again as a string inside the
    # store's chunk), so what is measured is the state as sent, not the patch.
    big = "".join(f"line {i}: {'é' * 50}\n" for i in range(3000)).encode()
    first, session = await paused_with_work(tmp_path, store, readme=big)
    assert len(big) < MAX_KEPT_BYTES < kept_bytes({"patch": big.decode()})
    state = await store.get_state(SID + STATE_SUFFIX)
    assert state is not None and state["patch"] is None and state["too_large"] > MAX_KEPT_BYTES
    assert kept_bytes(state) < MAX_ITEM_BYTES
    await refused_on_a_new_microvm(tmp_path, store, "too large to keep")
    await first.prepare(session, answer(workspace_archive=tar_gz(SNAPSHOT)))  # where it paused, it goes on
    assert (tree(tmp_path, "a") / "README.md").read_bytes() == big


class RecordingMemoryStore(AgentCoreMemorySessionStore):
    """The AgentCore Memory store on moto, recording each blob item it sends as botocore serialised it."""

    def __init__(self) -> None:
        client = boto3.client("bedrock-agentcore", region_name="us-east-1")
        super().__init__("mem-paused0001", client=client)
        self.sent_items: list[str] = []
        client.meta.events.register("before-send.bedrock-agentcore.CreateEvent", self._record)

    def _record(self, request: Any, **_: Any) -> None:
        self.sent_items.extend(json.dumps(p["blob"]) for p in json.loads(request.body)["payload"])


@pytest.fixture(params=["sqlite", "agentcore"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The SQLite store, and the AgentCore Memory store on moto (a state there is one event of chunk items)."""
    if request.param == "sqlite":
        yield SqliteSessionStore(tmp_path / "sessions.db")
        return
    with mock_aws():
        yield RecordingMemoryStore()


async def test_a_paused_patch_within_the_bound_is_kept_and_restored(tmp_path: Path, any_store: Any) -> None:
    # Lines of about 18 bytes: a patch of several hundred KB, over what one AgentCore Memory item holds.
    big = "".join(f"line {i}: plain\n" for i in range(MAX_KEPT_BYTES // 40)).encode()
    await paused_with_work(tmp_path, any_store, readme=big)
    state = await any_store.get_state(SID + STATE_SUFFIX)
    assert state is not None and isinstance(state["patch"], str)
    assert MAX_ITEM_BYTES < kept_bytes(state) <= MAX_KEPT_BYTES
    if isinstance(any_store, RecordingMemoryStore):  # the state went as several items, each within the bound
        assert sum(len(item) for item in any_store.sent_items) > MAX_ITEM_BYTES
        assert all(len(item) <= MAX_ITEM_BYTES for item in any_store.sent_items)
    second, session_b = microvm(tmp_path, "b", any_store)
    await second.prepare(session_b, answer(workspace_archive=tar_gz(SNAPSHOT)))
    assert (tree(tmp_path, "b") / "README.md").read_bytes() == big


async def test_a_pause_with_no_change_is_answered_on_a_new_microvm(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    await paused_with_work(tmp_path, store, readme=SNAPSHOT[1][1])
    assert await kept_patch(store) == ""  # known to be empty: nothing to restore, nothing lost
    second, session_b = microvm(tmp_path, "b", store)
    await second.prepare(session_b, answer(workspace_archive=tar_gz(SNAPSHOT)))
    workspaces = second.deps.workspaces
    assert (
        workspaces is not None
        and workspaces.has_snapshot(SID)
        and workspaces.changes(SID).changed_files == []
    )


async def test_a_kept_patch_that_does_not_apply_is_refused(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    await paused_with_work(tmp_path, store, readme=b"# calc\n\nwork\n")
    state = await store.get_state(SID + STATE_SUFFIX)
    assert state is not None
    # a patch against the same snapshot id that git cannot apply (its context is not in the snapshot)
    broken = state["patch"].replace("\n # calc\n", "\n # not calc\n")
    assert broken != state["patch"]
    await store.put_state(SID + STATE_SUFFIX, {**state, "patch": broken})
    await refused_on_a_new_microvm(tmp_path, store, "does not apply")


async def test_an_earlier_pauses_work_is_not_restored_for_a_later_pause_that_kept_nothing(
    tmp_path: Path,
) -> None:
    store = FailingStateStore(tmp_path / "sessions.db")
    store.failing = False
    first, session = await paused_with_work(tmp_path, store, readme=b"# calc\n\nbefore the first pause\n")
    await first.prepare(session, answer(workspace_archive=tar_gz(SNAPSHOT)))  # answered where it paused
    (tree(tmp_path, "a") / "README.md").write_bytes(b"# calc\n\nbefore the second pause\n")
    store.failing = True
    await first.keep_paused_work(session, 30.0)  # the second pause: its work could not be stored
    store.failing = False
    await refused_on_a_new_microvm(tmp_path, store, "the work of an earlier pause, already answered")
