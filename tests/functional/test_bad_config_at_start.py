"""A configuration the runtime could not serve a turn with stops ``python -m runtime`` before it listens (exit 2,
one sentence naming the file or variable), on the default platform too: AgentCore's health check sees only
``/ping``, so a runtime that answered Healthy and then failed every invocation with 500 would deploy green."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.runtime_server import free_port

ROOT = Path(__file__).resolve().parents[2]


def _start(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    full = {
        **base,
        "PYTHONPATH": str(ROOT),
        "AGENTKIT_PORT": str(free_port()),
        "AGENTKIT_METRICS": "off",
        "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "runtime"], cwd=ROOT, env=full, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("bad-value.json", '{"max_turns": 0}', "max_turns"),
        ("unknown-key.json", '{"system_promt": "typo"}', "system_promt"),
        ("not-json.json", "{", "cannot read agent definition"),
    ],
)
def test_a_bad_agent_file_stops_the_runtime_at_start(
    tmp_path: Path, name: str, content: str, says: str
) -> None:
    agent = tmp_path / name
    agent.write_text(content)
    done = _start(tmp_path, AGENTKIT_AGENT_FILE=str(agent))
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("agentkit runtime: ") and says in last and str(agent) in last


def test_an_unusable_state_dir_stops_the_runtime_at_start(tmp_path: Path) -> None:
    done = _start(tmp_path, AGENTKIT_STATE_DIR="/proc/nope")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "AGENTKIT_STATE_DIR=/proc/nope" in done.stderr.strip().splitlines()[-1]


def test_a_state_dir_the_runtime_cannot_write_stops_it_at_start(tmp_path: Path) -> None:
    # A read-only directory stops a non-root runtime; root writes through a read-only mode, so as root the
    # directory is one whose parent is a regular file (no user can create it).
    if os.geteuid() == 0:
        (tmp_path / "a-file").write_text("")
        state = tmp_path / "a-file" / "state"
    else:
        state = tmp_path / "ro"
        state.mkdir(mode=0o500)
    done = _start(tmp_path, AGENTKIT_STATE_DIR=str(state))
    assert done.returncode == 2, done.stderr[-2000:]
    assert str(state) in done.stderr.strip().splitlines()[-1]


def test_a_bad_agent_directory_stops_the_runtime_at_start(tmp_path: Path) -> None:
    agent_dir = tmp_path / "my-agent"
    (agent_dir / "tools").mkdir(parents=True)
    (agent_dir / "agent.json").write_text("{}")
    (agent_dir / "tools" / "__init__.py").write_text("import not_a_module_anywhere\n")
    done = _start(tmp_path, AGENTKIT_AGENT_DIR=str(agent_dir))
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "failed to import" in last and "not_a_module_anywhere" in last
