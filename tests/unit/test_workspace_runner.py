"""How the runner starts the CLI of a session that works on a snapshot: its own workspace as cwd, the OS sandbox
and the permission policy confined to it, the snapshot's history outside everything the agent can read or write,
and a CLI started in the shared workspace replaced once the session moves to its own.

The runner, policy, gate and workspaces are real; the SDK client is a stand-in that records its options."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, PermissionResultAllow, PermissionResultDeny
from claude_agent_sdk.types import ToolPermissionContext

from harness.archives import tar_gz
from runtime.accounting import Accounting
from runtime.agent.budget_policy import BudgetPolicy
from runtime.agent.definition import AgentDefinitionSpec
from runtime.agent.runner import AgentDeps, AgentTurnRunner
from runtime.config.settings import Settings
from runtime.errors import InvalidWorkspace
from runtime.guard.policy import PermissionPolicy, is_sensitive_name
from runtime.observe.metrics import EmfMetrics
from runtime.observe.observer import Observer
from runtime.sessions import WarmSession
from runtime.turn_request import TurnRequest
from runtime.workspace import SnapshotLimits, Workspaces, default_tree_for

pytestmark = pytest.mark.anyio

SID = "5b0a3f7e-1111-5222-8333-444455556666"


class Recorder:
    """A ``ClaudeSDKClient`` stand-in: connects at once and keeps the options it was built with."""

    def __init__(self, options: ClaudeAgentOptions) -> None:
        self.options = options

    async def connect(self) -> None:
        return None

    async def disconnect(self) -> None:
        return None


def make(
    tmp_path: Path, *, sandbox: str = "required", workspaces: bool = True
) -> tuple[AgentTurnRunner, Any]:
    settings = Settings(state_dir=tmp_path / "state", session_store="off", sandbox=sandbox)  # type: ignore[arg-type]
    settings.ensure_dirs()
    definition = AgentDefinitionSpec()
    observer = Observer(
        metrics=EmfMetrics(namespace="T", agent="a", stream=io.StringIO()), model=settings.model
    )
    state = settings.resolved_state_dir
    deps = AgentDeps(
        settings=settings,
        definition=definition,
        policy=PermissionPolicy(
            allowed_tools=definition.permitted_tools, workspace=settings.resolved_workspace
        ),
        observer=observer,
        budgets=BudgetPolicy(max_turns=25, max_budget_usd=1.0),
        client_factory=Recorder,  # type: ignore[arg-type]
        workspaces=Workspaces(
            trusted_root=state / "snapshots",
            tree_for=default_tree_for(state),
            limits=SnapshotLimits(10**6, 10**7, 100, 10**6),
            max_patch_bytes=10**6,
            withhold=is_sensitive_name,
        )
        if workspaces
        else None,
    )
    runner = AgentTurnRunner(deps)
    session = WarmSession(
        key=SID,
        runtime_session_id="rt-" + "1" * 36,
        claude_session_id=SID,
        actor_id=None,
        runner=runner,
        account=Accounting().open(claude_session_id=SID, runtime_session_id="rt-" + "1" * 36, actor_id=None),
        idle_timeout_s=5,
        max_queued=2,
    )
    return runner, session


async def test_a_snapshot_session_runs_in_its_own_confined_workspace(tmp_path: Path) -> None:
    runner, session = make(tmp_path)
    shared = runner.cwd
    request = TurnRequest(prompt="fix", workspace_archive=tar_gz([("a.py", b"x = 1\n")]))
    await runner.prepare(session, request)
    process = await runner.connect(session, request)
    options: ClaudeAgentOptions = process.client.options  # type: ignore[attr-defined]
    state = tmp_path.resolve() / "state"
    tree = state / "workspaces" / SID
    assert Path(str(options.cwd)) == tree == runner.cwd_for(session) and process.cwd == tree
    assert (tree / "a.py").read_text() == "x = 1\n"
    assert options.setting_sources == []  # no settings file of the snapshot is read
    sandbox: dict[str, Any] = dict(options.sandbox or {})
    fs = sandbox["filesystem"]
    assert str(tree) in fs["allowWrite"] and str(shared) not in fs["allowWrite"]
    snapshots = str(state / "snapshots")
    readable = [*fs.get("allowRead", []), *fs["allowWrite"]]
    assert not any(snapshots == p or snapshots.startswith(p.rstrip("/") + "/") for p in readable)
    assert "/" in fs["denyRead"]
    denied = json.loads(str(options.settings))["permissions"]["deny"]
    assert f"Edit(/{tree}/.git/**)" in denied
    # The permission gate judges paths against the session's own workspace.
    gate = options.can_use_tool
    assert gate is not None
    inside = await gate("Read", {"file_path": str(tree / "a.py")}, ToolPermissionContext(tool_use_id="t1"))
    outside = await gate("Read", {"file_path": str(shared / "a.py")}, ToolPermissionContext(tool_use_id="t2"))
    assert isinstance(inside, PermissionResultAllow)
    assert isinstance(outside, PermissionResultDeny) and "outside the workspace" in outside.message


async def test_a_session_moving_to_its_own_workspace_gets_a_new_cli(tmp_path: Path) -> None:
    runner, session = make(tmp_path)
    session.client = await runner.connect(session, TurnRequest(prompt="hello"))
    assert session.client.cwd == runner.cwd
    snapshot = TurnRequest(prompt="fix", workspace_archive=tar_gz([("a.py", b"x\n")]))
    assert not runner.wants_reconnect(session, snapshot)  # nothing unpacked yet
    await runner.prepare(session, snapshot)
    assert runner.wants_reconnect(session, snapshot)
    session.client = await runner.connect(session, snapshot)
    later = TurnRequest(prompt="more", workspace_archive=tar_gz([("b.py", b"y\n")]))
    await runner.prepare(session, later)
    assert not runner.wants_reconnect(session, later)  # same directory, new content: the CLI stays


async def test_snapshots_off_is_a_clear_error_before_queueing(tmp_path: Path) -> None:
    runner, _session = make(tmp_path, workspaces=False)
    with pytest.raises(InvalidWorkspace, match="does not accept workspace snapshots"):
        runner.check_request(TurnRequest(prompt="x", workspace_archive=b"\x1f\x8b"))


async def test_unpacking_runs_off_the_event_loop(tmp_path: Path) -> None:
    runner, session = make(tmp_path)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    big = tar_gz([(f"f{i}.txt", bytes(2000)) for i in range(90)])
    await runner.prepare(session, TurnRequest(prompt="x", workspace_archive=big))
    task.cancel()
    assert ticks > 1  # the loop kept running while git recorded the snapshot
