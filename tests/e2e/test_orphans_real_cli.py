"""No process of a SIGKILLed runtime survives it: the REAL bundled CLI with the OS sandbox on.

With the sandbox on, the CLI starts a ``socat`` bridging its network proxy to a UNIX socket and keeps it for its
whole life. The runtime starts the CLI with a parent-death signal, so the kernel kills the CLI with the runtime;
the CLI's ``socat`` must go too (``runtime/agent/orphan_guard.py``). Checked in ``/proc`` — which processes of the
runtime's tree still exist — never by exit codes.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.runtime_server import RuntimeServer, session_id
from standins import BedrockStandIn, Reply

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of ``pid`` from ``/proc/<pid>/stat``; ``None`` when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0], int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """Every process below ``root``: pid → start time (so a reused pid is not mistaken for a survivor)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _stat(int(name))) is not None:
            children.setdefault(st[0], []).append(int(name))
    found: dict[int, int] = {}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if (st := _stat(child)) is not None:
                found[child] = st[2]
                todo.append(child)
    return found


def alive(pid: int, started: int) -> bool:
    st = _stat(pid)
    return st is not None and st[2] == started and st[1] != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "<gone>"


@pytest.fixture
def tmp_root() -> Iterator[Path]:
    """A directory every user can enter: a root runtime starts the CLI as an unprivileged user, which must reach
    the workspace (pytest's own temp base is private to root)."""
    root = Path(tempfile.mkdtemp(prefix="ak-orphans-", dir="/tmp"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_no_cli_or_socat_outlives_a_sigkilled_runtime(tmp_root: Path) -> None:
    tmp_path = tmp_root
    (tmp_path / "workspace").mkdir()
    (tmp_path / "claude").mkdir()
    with BedrockStandIn() as bedrock:
        env = {
            "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
            "AGENTKIT_MODEL": MODEL,
            "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
            "AGENTKIT_WORKSPACE": str(tmp_path / "workspace"),
            "AGENTKIT_SESSION_STORE": f"sqlite:///{tmp_path / 'sessions.db'}",
            "AGENTKIT_SANDBOX": "required",
            "AGENTKIT_TURN_TIMEOUT": "60",
            "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        }
        server = RuntimeServer(env=env, log_path=tmp_path / "runtime.log").start()
        survivors: dict[int, int] = {}
        try:
            bedrock.enqueue(Reply.tool_use("Bash", {"command": "echo sandboxed-ok"}), Reply.text("done"))
            reply = server.invoke("run it", session=session_id("orphans"))
            assert reply.status == 200 and reply.last["type"] == "result", reply.body
            tool_result = bedrock.model_requests[-1].body["messages"][-1]["content"][0]
            assert tool_result.get("is_error") is not True and "sandboxed-ok" in str(tool_result), tool_result
            assert server.proc is not None
            tree = descendants(server.proc.pid)
            names = {pid: cmdline(pid) for pid in tree}
            # the bundled CLI, or its hard link when the checkout is out of the CLI user's reach (runtime.guard.cli_reach)
            assert any(c.split(" ")[0].endswith("/claude") for c in names.values()), names
            assert any(c.split(" ")[0].endswith("socat") for c in names.values()), (
                names
            )  # the sandbox's proxy

            os.kill(server.proc.pid, signal.SIGKILL)
            server.proc.wait()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                survivors = {pid: t for pid, t in tree.items() if alive(pid, t)}
                if not survivors:
                    break
                time.sleep(0.1)
            assert not survivors, {pid: names[pid] for pid in survivors}
        finally:
            for pid, started in survivors.items():  # do not leave them running on a shared machine
                if alive(pid, started):
                    os.kill(pid, signal.SIGKILL)
            server.kill()
