"""Idle eviction gives the memory of a warm session back: its CLI process exits and the process tree shrinks."""

from __future__ import annotations

import time
from pathlib import Path

from harness.cli import write_fake_cli
from harness.procmem import tree_rss
from harness.runtime_server import RuntimeServer, session_id


def test_idle_eviction_returns_the_cli_memory(tmp_path: Path) -> None:
    cli = write_fake_cli(tmp_path)
    srv = RuntimeServer(
        env={
            "AGENTKIT_CLI_PATH": str(cli),
            "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
            "AGENTKIT_IDLE_TIMEOUT": "1.0",
            "FAKE_CLAUDE_LOG": str(tmp_path / "fake.log"),
        },
        log_path=tmp_path / "server.log",
    )
    with srv:
        assert srv.proc is not None
        pid = srv.proc.pid
        reply = srv.invoke("hello", session=session_id("mem"), stream=False)
        assert reply.status == 200
        own_warm, kids_warm = tree_rss(pid)
        assert kids_warm, "a warm session holds a CLI process"
        cli_rss = sum(kids_warm.values())
        assert cli_rss > 0
        deadline = time.monotonic() + 15
        own_idle, kids_idle = tree_rss(pid)
        while time.monotonic() < deadline and kids_idle:
            time.sleep(0.1)
            own_idle, kids_idle = tree_rss(pid)
        assert kids_idle == {}, f"CLI processes still alive after the idle timeout: {kids_idle}"
        # The tree gives back (at least most of) what the CLI held; the runtime itself may move a little.
        assert own_idle + sum(kids_idle.values()) < own_warm + cli_rss - cli_rss // 2
        assert "idle, closing its client" in (tmp_path / "server.log").read_text()
