"""The work of a turn paused for approval, kept with the session, and restored where an answer arrives.

Real runner, workspaces (git) and SQLite session store; each "microVM" is a runner with its own state dir and the one
store. The agent's change is made on disk, as a command of the agent would.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.archives import tar_gz
from runtime.agent.runner import AgentTurnRunner
from runtime.approvals import Approvals
from runtime.approvals.rules import ApprovalRules
from runtime.errors import WorkspaceExpired
from runtime.session_store.sqlite import SqliteSessionStore
from runtime.turn_request import TurnRequest
from runtime.workspace.paused import PausedWork
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
    kept = await PausedWork(store).load(SID)
    assert kept is not None and "+add() adds." in kept and "NOTES" in kept and ".env" not in kept

    # The microVM that paused keeps its workspace: the snapshot sent with the answer is not installed over it.
    await first.prepare(session, answer(workspace_archive=archive))
    assert (tree(tmp_path, "a") / "README.md").read_bytes() == b"# calc\n\nadd() adds.\n"
    assert (tree(tmp_path, "a") / ".env").exists()  # even what no patch carries

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

    # Kept work made against another snapshot is not applied to this one.
    third, session_c = microvm(tmp_path, "c", store)
    other = tar_gz([*SNAPSHOT, ("LICENSE", b"MIT\n")])
    await third.prepare(session_c, answer(workspace_archive=other))
    assert (tree(tmp_path, "c") / "README.md").read_bytes() == b"# calc\n"
    assert third.deps.workspaces is not None and third.deps.workspaces.changes(SID).changed_files == []

    # A turn that is not an answer (a new fix with its snapshot) starts from the snapshot alone.
    await second.prepare(session_b, TurnRequest(prompt="another fix", workspace_archive=archive))
    assert workspaces.changes(SID).changed_files == []


async def test_an_answer_without_a_snapshot_where_the_workspace_is_missing_is_refused(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "sessions.db")
    first, session = microvm(tmp_path, "a", store)
    await first.prepare(session, TurnRequest(prompt="fix it", workspace_archive=tar_gz(SNAPSHOT)))
    await first.keep_paused_work(session, 30.0)  # nothing changed yet: an empty patch is kept
    assert await PausedWork(store).load(SID) == ""
    await first.prepare(session, answer())  # where the workspace is, no snapshot is needed

    second, session_b = microvm(tmp_path, "b", store)
    with pytest.raises(WorkspaceExpired, match="send the snapshot") as refused:
        await second.prepare(session_b, answer())
    assert refused.value.http_status == 410
    assert not tree(tmp_path, "b").exists()  # nothing ran in an empty directory
