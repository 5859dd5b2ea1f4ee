"""A caller that disconnects mid-turn, over real HTTP with the fake CLI.

The turn is interrupted (the CLI never reaches its next tool call), a ``Disconnected`` metric is counted, and
the same warm CLI process serves the session's next turn, which sees the interrupted one in its history.
Ordering is decided by events (the fake CLI's log, the reply's status line), never by sleeping.
"""

from __future__ import annotations

import http.client
import json
import socket
import sqlite3
import time

import pytest

from harness.cli import write_fake_cli
from harness.runtime_server import SESSION_HEADER, RuntimeServer, read_log, session_id

pytestmark = pytest.mark.timeout(120)

#: Without an interrupt the turn sleeps 30 s, then calls Bash a second time.
SLOW_TURN = "[bash:echo first] [slow:30000] [bash:echo second] slow work"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("disconnect")
    srv = RuntimeServer(
        env={
            "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp)),
            "AGENTKIT_STATE_DIR": str(tmp / "state"),
            "FAKE_CLAUDE_LOG": str(tmp / "fake.log"),
            "AGENTKIT_METRICS": "emf",
        },
        log_path=tmp / "server.log",
    ).start()
    srv.tmp = tmp  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def transcript(server: RuntimeServer) -> str:
    db = sqlite3.connect(server.tmp / "state" / "sessions.db")  # type: ignore[attr-defined]
    try:
        return "\n".join(row[0] for row in db.execute("SELECT data FROM entries ORDER BY seq"))
    finally:
        db.close()


def wait_for(predicate, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def entry_session_prompt(entries: list[dict], entry: dict) -> str:
    """The first user prompt of ``entry``'s session (to tell the tests' sessions apart)."""
    for other in entries:
        if other.get("sessionId") == entry.get("sessionId") and other.get("type") == "user":
            content = other["message"]["content"]
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def disconnected_metrics(server: RuntimeServer) -> int:
    return sum(
        1
        for line in server.log_path.read_text().splitlines()
        if line.startswith("{") and '"Disconnected"' in line
    )


def turns_started(server: RuntimeServer, prompt: str) -> int:
    log = read_log(server.tmp / "fake.log")  # type: ignore[attr-defined]
    return sum(1 for e in log if e["event"] == "turn" and e["prompt"].startswith(prompt))


def sleeping(server: RuntimeServer, prompt: str) -> bool:
    """The turn of ``prompt`` has run its first tool and is inside its 30 s ``[slow]`` directive."""
    log = read_log(server.tmp / "fake.log")  # type: ignore[attr-defined]
    return any(e["event"] == "slow" and e["prompt"] == prompt for e in log)


def post(server: RuntimeServer, sid: str, prompt: str, *, stream: bool) -> socket.socket:
    """Send an invocation on a raw socket (so the test decides when the caller leaves)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=20)
    body = json.dumps({"prompt": prompt, "stream": stream}).encode()
    sock.sendall(
        b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"{SESSION_HEADER}: {sid}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


def check_interrupted_and_usable(server: RuntimeServer, sid: str, tag: str, metrics_before: int) -> None:
    wait_for(lambda: disconnected_metrics(server) > metrics_before)
    follow = server.invoke(f"after {tag}", session=sid, stream=False, timeout=20)
    assert follow.status == 200, follow.body
    assert "history=1" in follow.body["text"]  # the interrupted turn is in the session's history
    stored = transcript(server)
    assert "Request interrupted by user" in stored
    calls = [json.loads(line) for line in stored.splitlines()]
    commands = [
        block["input"]["command"]
        for entry in calls
        if entry.get("type") == "assistant"
        for block in entry["message"]["content"]
        if block.get("type") == "tool_use" and tag in entry_session_prompt(calls, entry)
    ]
    assert "echo first" in commands  # the first tool call ran and was stored ...
    assert "echo second" not in commands  # ... the CLI never went on to the next one


def test_sse_caller_leaving_mid_turn_interrupts_it_and_keeps_the_session(server: RuntimeServer) -> None:
    sid = session_id("sse-leave")
    before = disconnected_metrics(server)
    prompt = f"sse {SLOW_TURN}"
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    conn.request(
        "POST",
        "/invocations",
        body=json.dumps({"prompt": prompt}),
        headers={"Content-Type": "application/json", SESSION_HEADER: sid},
    )
    resp = conn.getresponse()
    for raw in resp:  # read until the first tool finished, then hang up
        if raw.startswith(b"data: ") and json.loads(raw[6:])["type"] == "tool_result":
            break
    conn.sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]
    conn.close()
    check_interrupted_and_usable(server, sid, "sse", before)
    pids = {e["pid"] for e in read_log(server.tmp / "fake.log") if e["event"] == "start"}  # type: ignore[attr-defined]
    assert len([e for e in read_log(server.tmp / "fake.log") if e["event"] == "exit"]) == 0, pids  # type: ignore[attr-defined]


def test_json_caller_leaving_mid_turn_interrupts_it_and_keeps_the_session(server: RuntimeServer) -> None:
    sid = session_id("json-leave")
    before = disconnected_metrics(server)
    prompt = f"json {SLOW_TURN}"
    sock = post(server, sid, prompt, stream=False)
    wait_for(lambda: sleeping(server, prompt))
    sock.close()
    check_interrupted_and_usable(server, sid, "json", before)


def test_a_queued_turn_whose_caller_left_never_runs(server: RuntimeServer) -> None:
    sid = session_id("queued-leave")
    first = f"first {SLOW_TURN}"
    running = post(server, sid, first, stream=False)
    wait_for(lambda: sleeping(server, first))
    # A streaming reply's status line is sent once the invocation is on the session's queue: it is queued now.
    queued = post(server, sid, "queued and abandoned", stream=True)
    assert queued.recv(64).startswith(b"HTTP/1.1 200")
    sockets = [running, queued]
    before = disconnected_metrics(server)
    for sock in reversed(sockets):  # the queued caller leaves first, then the running one
        sock.close()
    wait_for(lambda: disconnected_metrics(server) >= before + 2)
    follow = server.invoke("after queue", session=sid, stream=False, timeout=20)
    assert follow.status == 200
    assert turns_started(server, "queued and abandoned") == 0
    assert "history=1" in follow.body["text"]
