"""Start-up with and without a working sandbox: the REAL runtime and CLI against the Bedrock stand-in.

Without bubblewrap/socat on PATH and ``AGENTKIT_SANDBOX=required`` (the default), the runtime stays healthy,
logs one line saying why, emits ``SandboxUnavailable``, hides the Bash tool from the model and keeps the
read-only tools working. ``AGENTKIT_SANDBOX=off`` is logged as a warning.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.runtime_server import RuntimeServer, session_id
from harness.sandbox_tools import path_without_sandbox_tools
from standins import BedrockStandIn, Reply

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """Under /tmp and traversable (pytest's own is private to its user): a root runtime runs its CLI as an
    unprivileged user, who must reach the workspace, or command tools stay off."""
    path = Path(tempfile.mkdtemp(prefix="ak-startup-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def start(tmp: Path, bedrock: BedrockStandIn, **env: str) -> RuntimeServer:
    (tmp / "ws").mkdir(exist_ok=True)
    (tmp / "ws" / "notes.txt").write_text("hello from the workspace\n")
    return RuntimeServer(
        env={
            "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
            "AGENTKIT_MODEL": MODEL,
            "AGENTKIT_STATE_DIR": str(tmp / "state"),
            "AGENTKIT_WORKSPACE": str(tmp / "ws"),
            "AGENTKIT_METRICS": "emf",
            "AGENTKIT_EMF_FILE": str(tmp / "metrics.jsonl"),
            **env,
        },
        log_path=tmp / "server.log",
    ).start()


def test_missing_sandbox_switches_command_tools_off_and_keeps_read_tools(tmp_path: Path) -> None:
    with BedrockStandIn() as bedrock:
        server = start(tmp_path, bedrock, PATH=path_without_sandbox_tools(tmp_path))
        try:
            assert server.ping()["status"] == "Healthy"
            bedrock.enqueue(
                Reply.tool_use("Read", {"file_path": str(tmp_path / "ws" / "notes.txt")}),
                Reply.text("read it"),
            )
            reply = server.invoke("read my notes", session=session_id("no-sandbox"))
            assert reply.status == 200 and reply.last["type"] == "result", reply.events
            first, second = bedrock.model_requests
            tools = [t["name"] for t in first.body["tools"]]
            assert "Bash" not in tools and "Read" in tools
            assert "hello from the workspace" in json.dumps(second.body["messages"][-1])
            assert server.ping()["status"] in ("Healthy", "HealthyBusy")
        finally:
            server.stop()
    log = (tmp_path / "server.log").read_text()
    lines = [line for line in log.splitlines() if "sandbox: unavailable" in line]
    assert len(lines) == 1 and "bubblewrap (bwrap) and socat not installed" in lines[0], log[-2000:]
    metrics = [
        json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines() if line.strip()
    ]
    assert any("SandboxUnavailable" in m for m in metrics), metrics


def test_sandbox_off_is_explicit_and_logged_as_a_warning(tmp_path: Path) -> None:
    assert shutil.which("bwrap"), "bubblewrap missing: run `make setup`"
    with BedrockStandIn() as bedrock:
        server = start(tmp_path, bedrock, AGENTKIT_SANDBOX="off", PATH=os.environ["PATH"])
        try:
            bedrock.enqueue(Reply.text("ok"))
            reply = server.invoke("hi", session=session_id("sandbox-off"))
            assert reply.status == 200 and reply.last["type"] == "result", reply.events
            assert "Bash" in [t["name"] for t in bedrock.model_requests[0].body["tools"]]
        finally:
            server.stop()
    log = (tmp_path / "server.log").read_text()
    assert "sandbox: OFF (AGENTKIT_SANDBOX=off)" in log and "WARNING" in log.upper(), log[-2000:]
