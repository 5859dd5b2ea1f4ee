"""The retention sweep over real HTTP: the real runtime (``python -m runtime``) with a retention of a few seconds, the
real claude-agent-sdk and the fake CLI. The workspace of a session whose CLI was closed goes once it is unused for
the retention (one log line says what was freed); a warm session's stays however long it is idle; the session
whose workspace went is told to send its snapshot again (``410 workspace_expired``), and with it goes on with its
conversation."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any

import pytest

from harness.archives import b64, tar_gz
from harness.runtime_server import (
    EDITING_AGENT,
    SESSION_HEADER,
    RuntimeServer,
    fake_cli_server,
    read_log,
    session_id,
)
from runtime.identity import claude_session_id

pytestmark = pytest.mark.timeout(120)

RETENTION_S = 4.0
ORIGINAL = {"src/calc.py": b"def add(a, b):\n    return a - b\n"}
FIX = '[tool:Edit {"file_path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}]'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("retention")
    (tmp / "agent.json").write_text(json.dumps(EDITING_AGENT))
    srv = fake_cli_server(
        tmp,
        AGENTKIT_AGENT_FILE=str(tmp / "agent.json"),
        AGENTKIT_SANDBOX="off",
        AGENTKIT_WORKSPACE_MAX_BYTES="200000",
        AGENTKIT_WORKSPACE_RETENTION_HOURS=f"{RETENTION_S / 3600:.9f}",  # swept every second
        AGENTKIT_IDLE_TIMEOUT="600",  # a session stays warm unless it is stopped
    ).start()
    srv.tmp = tmp  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def snapshot(files: dict[str, bytes]) -> dict[str, Any]:
    return {"workspace": {"tar_gz_b64": b64(tar_gz(list(files.items())))}}


def stop(server: RuntimeServer, sid: str) -> int:
    """Close the session's warm CLI, as ``agentkit sessions stop --local`` does."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("POST", "/stopruntimesession", body=b"", headers={SESSION_HEADER: sid})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def starts(server: RuntimeServer) -> list[dict[str, Any]]:
    """The fake CLI's process starts so far."""
    return [e for e in read_log(server.tmp / "fake.log") if e["event"] == "start"]  # type: ignore[attr-defined]


def wait_for(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_an_unused_sessions_workspace_goes_a_warm_ones_stays_and_the_first_is_told_to_resend(
    server: RuntimeServer,
) -> None:
    state: Path = server.tmp / "state"  # type: ignore[attr-defined]
    old, warm = session_id("ret-old"), session_id("ret-warm")
    old_tree = state / "workspaces" / claude_session_id(old, None)
    warm_tree = state / "workspaces" / claude_session_id(warm, None)
    warm_history = state / "snapshots" / claude_session_id(warm, None) / "base.git"

    assert server.invoke(FIX, session=old, stream=False, extra=snapshot(ORIGINAL)).status == 200
    first = server.invoke(FIX, session=warm, stream=False, extra=snapshot(ORIGINAL))
    assert first.status == 200, first.body
    warm_last_turn = time.monotonic()
    assert old_tree.is_dir() and warm_tree.is_dir()

    assert stop(server, old) == 200  # its CLI is closed: the session is no longer warm
    assert wait_for(lambda: not old_tree.exists(), timeout=RETENTION_S + 15), "the unused workspace stayed"
    # The warm session was idle just as long (and then some): its workspace and snapshot stay.
    time.sleep(max(0.0, warm_last_turn + RETENTION_S + 3 - time.monotonic()))
    assert warm_tree.is_dir() and warm_history.is_dir()
    assert (warm_tree / "src" / "calc.py").read_bytes() == b"def add(a, b):\n    return a + b\n"

    log = (server.tmp / "server.log").read_text()  # type: ignore[attr-defined]
    removed = [line for line in log.splitlines() if "workspace retention: removed" in line]
    assert len(removed) == 1 and claude_session_id(old, None) in removed[0], removed
    assert "workspace and snapshot" in removed[0] and "MiB freed" in removed[0]

    # The old session, without a snapshot: a clear answer, and nothing runs in the shared workspace instead.
    starts_before = len(starts(server))
    assert starts_before >= 2
    refused = server.invoke("and now add tests", session=old, stream=False)
    assert refused.status == 410, refused.body
    assert refused.body["type"] == "error" and refused.body["code"] == "workspace_expired"
    assert "send the snapshot again" in refused.body["message"]
    streamed = server.invoke("and now add tests", session=old)
    assert streamed.events[-1]["type"] == "error" and streamed.events[-1]["code"] == "workspace_expired"
    assert len(starts(server)) == starts_before

    # With the snapshot sent again it works, and the conversation went on.
    again = server.invoke("look again", session=old, stream=False, extra=snapshot(ORIGINAL))
    assert again.status == 200, again.body
    assert again.body["patch"] == "" and "history=1" in again.body["text"]

    # The warm session's next turn finds its workspace as it left it: the patch still holds the first turn's change.
    later = server.invoke("anything else?", session=warm, stream=False)
    assert later.status == 200, later.body
    assert later.body["changed_files"] == ["src/calc.py"]
