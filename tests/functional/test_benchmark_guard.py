"""A benchmark refuses to print figures for a runtime that ran in a lesser configuration than it claims (command
tools switched off, no sandbox): such figures describe another runtime (``benchmarks/_harness.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.cli import write_fake_cli
from harness.runtime_server import RuntimeServer, session_id

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _harness import refuse_if_degraded  # noqa: E402


def _served(tmp_path: Path, name: str, **env: str) -> RuntimeServer:
    server = RuntimeServer(
        env={
            "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp_path)),
            "AGENTKIT_STATE_DIR": str(tmp_path / name),
            **env,
        },
        log_path=tmp_path / f"{name}.log",
    ).start()
    try:
        assert server.invoke("hello", session=session_id(name)).status == 200  # the services are built
    finally:
        server.stop()
    return server


def test_a_runtime_without_its_sandbox_is_refused(tmp_path: Path) -> None:
    # no bubblewrap (nor setpriv/unshare for a root runtime) on PATH: the runtime switches command tools off
    server = _served(tmp_path, "degraded", AGENTKIT_SANDBOX="required", PATH=str(tmp_path / "empty-bin"))
    assert server.degraded()
    with pytest.raises(SystemExit, match="benchmark refused"):
        refuse_if_degraded(server)


def test_a_runtime_as_configured_is_measured(tmp_path: Path) -> None:
    server = _served(tmp_path, "as-asked", AGENTKIT_SANDBOX="off")  # off on purpose: what it claims
    assert server.degraded() == []
    refuse_if_degraded(server)
