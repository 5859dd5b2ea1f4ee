"""``npm root -g`` asked once per runtime (``runtime.agent.npm_root``): the sandboxed CLI gets npm's own answer from
the script first on its ``PATH``, everything else still runs the real npm, and the script stays out of the
sandbox's view. The npm here is a scripted one on a private ``PATH`` that logs each time it runs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from runtime.accounting import Accounting
from runtime.agent import npm_root
from runtime.agent.budget_policy import BudgetPolicy
from runtime.agent.definition import AgentDefinitionSpec
from runtime.agent.runner import AgentDeps, AgentTurnRunner
from runtime.config.settings import Settings
from runtime.guard.policy import PermissionPolicy
from runtime.observe.metrics import EmfMetrics
from runtime.observe.observer import Observer
from runtime.observe.tracing import Tracing
from runtime.sessions import WarmSession
from runtime.turn_request import TurnRequest

GLOBAL_ROOT = "/opt/fake node/lib/node_modules"  # a space: the answer must survive shell quoting


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    npm_root._ask_npm.cache_clear()
    yield
    npm_root._ask_npm.cache_clear()


def fake_npm(tmp_path: Path) -> tuple[str, Path]:
    """A ``PATH`` (the fake npm's directory and the system's) and the log of the fake npm's invocations."""
    bin_dir, log = tmp_path / "node-bin", tmp_path / "npm.log"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(
        f"#!/bin/sh\necho \"$*\" >> '{log}'\n"
        f'if [ "$1" = root ]; then echo \'{GLOBAL_ROOT}\'; else echo "npm-ran $*"; fi\n'
    )
    npm.chmod(0o755)
    return f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", log


def sh(command: str, path: str) -> str:
    done = subprocess.run(
        ["/bin/sh", "-c", command], env={"PATH": path}, capture_output=True, text=True, check=True, cwd="/"
    )
    return done.stdout


def test_the_cli_question_gets_npms_answer_without_running_npm_again(tmp_path: Path) -> None:
    path, log = fake_npm(tmp_path)
    cli_path = npm_root.path_with_npm_root(tmp_path / "state" / "bin", path)
    assert cli_path is not None and cli_path.endswith(os.pathsep + path)
    assert log.read_text().splitlines() == ["root -g"]  # asked once, when the runtime built the path
    for _ in range(3):  # three CLI starts, as the CLI asks it
        assert sh("npm root -g", cli_path) == GLOBAL_ROOT + "\n"
    assert log.read_text().splitlines() == ["root -g"]
    assert sh("npm install left-pad", cli_path) == "npm-ran install left-pad\n"  # anything else: the real npm
    assert sh("npm root", cli_path) == GLOBAL_ROOT + "\n"  # a local root is npm's question too: passed on
    assert log.read_text().splitlines() == ["root -g", "install left-pad", "root"]
    # Another runtime state dir: the answer is reused, only the script is written there.
    assert npm_root.path_with_npm_root(tmp_path / "other", path) is not None
    assert log.read_text().count("root -g") == 1


def test_nothing_changes_without_npm_or_when_npm_fails(tmp_path: Path) -> None:
    assert npm_root.path_with_npm_root(tmp_path, f"{tmp_path / 'empty'}{os.pathsep}/nonexistent") is None
    assert npm_root.path_with_npm_root(tmp_path, None) is None
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "npm").write_text("#!/bin/sh\nexit 1\n")
    (broken / "npm").chmod(0o755)
    assert npm_root.path_with_npm_root(tmp_path, str(broken)) is None
    assert not (tmp_path / npm_root.SHIM_DIR_NAME).exists()


def runner_for(tmp_path: Path, sandbox: Literal["required", "off"]) -> AgentTurnRunner:
    settings = Settings(state_dir=tmp_path / "state", session_store="off", sandbox=sandbox)
    definition = AgentDefinitionSpec()
    return AgentTurnRunner(
        AgentDeps(
            settings=settings,
            definition=definition,
            policy=PermissionPolicy(
                allowed_tools=definition.permitted_tools, workspace=settings.resolved_workspace
            ),
            observer=Observer(
                metrics=EmfMetrics(namespace="T", agent="demo", stream=sys.stderr),
                tracing=Tracing(),
                model=settings.model,
            ),
            budgets=BudgetPolicy(max_turns=25, max_budget_usd=1.0),
        )
    )


@pytest.mark.anyio
@pytest.mark.parametrize("sandbox", ["required", "off"])
async def test_a_sandboxed_cli_runs_with_the_script_first_and_commands_cannot_see_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: Literal["required", "off"]
) -> None:
    path, log = fake_npm(tmp_path)
    monkeypatch.setenv("PATH", path)
    runner = runner_for(tmp_path, sandbox)
    asked = log.read_text().splitlines() if log.exists() else []
    assert asked == (["root -g"] if sandbox == "required" else [])  # when the services are built
    captured: list[Any] = []

    class CapturingClient:
        def __init__(self, options: Any) -> None:
            captured.append(options)

        async def connect(self) -> None:
            pass

    runner.deps.client_factory = CapturingClient  # type: ignore[assignment]
    sid = "5b0a3f7e-1111-5222-8333-444455556666"
    session: WarmSession[Any] = WarmSession(
        key=sid,
        runtime_session_id="rt-" + "1" * 36,
        claude_session_id=sid,
        actor_id=None,
        runner=runner,
        account=Accounting().open(claude_session_id=sid, runtime_session_id="rt", actor_id=None),
        idle_timeout_s=5,
        max_queued=1,
    )
    await runner.connect(session, TurnRequest(prompt="p"))
    await runner.connect(session, TurnRequest(prompt="p"))  # a second CLI process: npm is not asked again
    assert (log.read_text().splitlines() if log.exists() else []) == asked
    env = captured[0].env
    if sandbox == "off":  # the CLI does not ask without its sandbox, and commands would see the script
        assert npm_root.SHIM_DIR_NAME not in env.get("PATH", "")
        return
    first = env["PATH"].split(os.pathsep, 1)[
        0
    ]  # before the helpers' shims (orphan_guard) and the host's PATH
    assert env["PATH"].endswith(os.pathsep + path) and sh("npm root -g", env["PATH"]) == GLOBAL_ROOT + "\n"
    assert first == str(tmp_path / "state" / "bin" / npm_root.SHIM_DIR_NAME)
    assert Path(first).is_relative_to(tmp_path / "state")
    # Hidden from commands: the sandbox denies every read under "/" except what it allows, and none of that
    # holds the script.
    sandbox_settings = captured[0].sandbox
    assert sandbox_settings["filesystem"]["denyRead"] == ["/"]
    for allowed in sandbox_settings["filesystem"]["allowRead"]:
        assert not Path(first).is_relative_to(allowed), allowed
