"""Faults, one test each, over real HTTP with real ``python -m runtime`` processes and the fake CLI.

Each test shows that nothing is lost: every turn that completed before, during or after the fault is still in
the session's history afterwards (the fake CLI reports ``history=<n>``: the user prompts it was resumed with).
Faults covered elsewhere: a hung CLI (``test_runtime_http.test_a_hung_cli_times_out_and_the_session_recovers``),
a crashed CLI (``test_runtime_http.test_crash_mid_turn_gives_an_error_and_the_next_turn_recovers``), the
store's files deleted / replaced / ``-shm`` truncated and a full spool disk (``tests/unit/test_store_files.py``),
a caller leaving mid-turn (``test_disconnect.py``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from harness.faults import alive, history, kill9_loop, stored_prompts, wait_for
from harness.flaky_proxy import FlakyProxy
from harness.runtime_server import (
    SESSION_HEADER,
    RuntimeServer,
    fake_cli_server,
    free_port,
    read_log,
    session_id,
)
from tests.functional.conftest import create_memory

pytestmark = pytest.mark.timeout(180)


def started(tmp: Path, prompt: str) -> list[dict[str, Any]]:
    return [e for e in read_log(tmp / "fake.log") if e["event"] == "turn" and e["prompt"].startswith(prompt)]


def sleeping(tmp: Path, prompt: str) -> bool:
    """The turn of ``prompt`` is inside its ``[slow]`` directive (the fake CLI logs that as it starts waiting)."""
    return any(e["event"] == "slow" and e["prompt"] == prompt for e in read_log(tmp / "fake.log"))


def queued_sse(srv: RuntimeServer, sid: str, prompt: str) -> socket.socket:
    """Send a streaming invocation and return once its status line arrived: it is queued on its session."""
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=20)
    body = json.dumps({"prompt": prompt, "stream": True}).encode()
    sock.sendall(
        b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"{SESSION_HEADER}: {sid}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock


def read_to_end(sock: socket.socket) -> bytes:
    data = b""
    with sock:
        while chunk := sock.recv(65536):
            data += chunk
    return data


def in_background(fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["reply"] = fn(*args, **kwargs)
        except Exception as exc:  # a reset connection is an outcome too
            box["error"] = exc

    box["thread"] = threading.Thread(target=run, daemon=True)
    box["thread"].start()
    return box


def test_cli_killed_mid_turn(tmp_path: Path) -> None:
    with fake_cli_server(tmp_path, "claude") as srv:
        sid = session_id("kill-cli")
        assert srv.invoke("done before", session=sid, stream=False).status == 200
        box = in_background(srv.invoke, "[slow:30000] killed mid-turn", session=sid, stream=False)
        wait_for(lambda: started(tmp_path, "[slow:30000] killed"))
        os.kill(started(tmp_path, "[slow:30000] killed")[0]["pid"], signal.SIGKILL)
        box["thread"].join(30)
        killed = box["reply"]
        assert killed.status == 502 and killed.body["code"] == "agent_process_error", killed.body
        after = srv.invoke("after the kill", session=sid, stream=False)
        assert after.status == 200
        assert (
            history(after) >= 1 and "resumed=true" in after.body["text"]
        )  # a new CLI, resumed from the store


def test_runtime_sigkilled_mid_turn_leaves_no_cli_running(tmp_path: Path) -> None:
    """A CLI busy with a turn does not read stdin, so it may not notice its runtime is gone (run standalone,
    the fake CLI in ``[slow:30000]`` went on for the full 30 s). The parent-death signal kills it at once: it
    is gone, and it never got to log an exit of its own."""
    srv = fake_cli_server(tmp_path, "claude").start()
    in_background(srv.invoke, "[slow:30000] busy", session=session_id("orphan"), stream=False)
    # Kill only once the CLI is inside its 30 s wait, where it neither reads stdin nor writes stdout. Killed
    # earlier (the turn's hooks, its first messages), the CLI may write to the dead runtime's pipe and exit on
    # the broken pipe before the kernel delivers the parent-death signal: the pipes close before that signal
    # is sent, so that exit is a race, not a failure of the signal.
    wait_for(lambda: sleeping(tmp_path, "[slow:30000] busy"))
    pid = started(tmp_path, "[slow:30000] busy")[0]["pid"]
    srv.kill()
    wait_for(lambda: not alive(pid), timeout=10)
    exits = [e for e in read_log(tmp_path / "fake.log") if e["event"] == "exit" and e["pid"] == pid]
    assert exits == [], exits  # killed by the kernel, not an exit it chose (e.g. "stdout closed" on a write)


@pytest.mark.parametrize(
    ("directive", "ok"),
    [("[garbage]", None), ("[longline:9000000]", False), ("[longline:2000000]", True)],
    ids=["not-json", "over-the-8MiB-buffer", "2MB-line-within-the-buffer"],
)
def test_malformed_or_over_long_cli_line(tmp_path: Path, directive: str, ok: bool | None) -> None:
    """``ok``: the turn must succeed (True), must fail with a contract error (False), or either (None: the
    SDK skips a line that is not JSON)."""
    with fake_cli_server(tmp_path, "claude") as srv:
        sid = session_id("bad-line")
        assert srv.invoke("done before", session=sid, stream=False).status == 200
        reply = srv.invoke(f"{directive} odd output", session=sid, stream=False, timeout=90)
        if ok or (ok is None and reply.status == 200):
            assert reply.status == 200 and reply.body["type"] == "result", reply.body
        else:
            assert reply.status >= 500 and reply.body["type"] == "error", reply.body
            assert set(reply.body) == {"type", "code", "message"}
        after = srv.invoke("after the bad line", session=sid, stream=False)
        assert after.status == 200, after.body
        assert history(after) >= 1  # the turn before is still there


def test_store_throttled_then_down_then_back(tmp_path: Path, moto_server: str) -> None:
    """AgentCore Memory (moto) behind two fault proxies: 429s first, then 503s, then healthy again."""
    memory_id = create_memory(moto_server, name="agentkit_faults")
    phase = {"now": "throttled"}
    writes = lambda m, p: m == "POST" and p.endswith("/events")  # noqa: E731 - CreateEvent
    with (
        FlakyProxy(
            moto_server, fail=lambda m, p: phase["now"] == "down" and writes(m, p), failures=10**6
        ) as down,
        FlakyProxy(
            down.url,
            fail=lambda m, p: phase["now"] == "throttled" and writes(m, p),
            failures=10**6,
            status=429,
        ) as throttled,
    ):
        env = {
            "AGENTKIT_SESSION_STORE": f"agentcore://{memory_id}",
            "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": throttled.url,
            "AGENTKIT_METRICS": "emf",
        }
        sid = session_id("store-faults")
        srv = fake_cli_server(tmp_path, "vm-1", **env).start()
        try:
            assert srv.invoke("turn 1 while throttled", session=sid, stream=False).status == 200
            phase["now"] = "down"
            assert srv.invoke("turn 2 while down", session=sid, stream=False).status == 200
            phase["now"] = "back"
            assert srv.invoke("turn 3 when back", session=sid, stream=False).status == 200
            wait_for(lambda: "SessionStoreErrors" in srv.log_path.read_text())
        finally:
            srv.stop()  # SIGTERM flushes what is still spooled
        assert throttled.failed and down.failed  # both faults really happened
        fresh = fake_cli_server(tmp_path, "vm-2", **env).start()  # another microVM: only the store remembers
        try:
            after = fresh.invoke("what happened?", session=sid, stream=False)
        finally:
            fresh.stop()
        assert after.status == 200 and history(after) == 3, after.body


def test_store_files_deleted_under_the_runtime(tmp_path: Path) -> None:
    sid = session_id("deleted")
    srv = fake_cli_server(tmp_path, "vm-1", AGENTKIT_METRICS="emf").start()
    try:
        for n in (1, 2):
            assert srv.invoke(f"turn {n}", session=sid, stream=False).status == 200
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / "state" / f"sessions.db{suffix}").unlink(missing_ok=True)
        for n in (3, 4):
            assert srv.invoke(f"turn {n}", session=sid, stream=False).status == 200
        wait_for(lambda: "was deleted while open" in srv.log_path.read_text())
    finally:
        srv.kill()  # no graceful shutdown: what is in the file is all there is
    fresh = fake_cli_server(tmp_path, "vm-2").start()
    try:
        after = fresh.invoke("turn 5", session=sid, stream=False)
    finally:
        fresh.stop()
    assert history(after) == 4, after.body  # the old code: 0 (four turns lost silently)


def test_shm_truncated_under_the_runtime(tmp_path: Path) -> None:
    sid = session_id("shm")
    srv = fake_cli_server(tmp_path, "vm-1").start()
    try:
        assert srv.invoke("turn 1", session=sid, stream=False).status == 200
        # Truncate while nothing writes: turn 1 persists after its reply, and a truncation in the middle of a
        # write is the window the guard cannot close (runtime/session_store/file_guard.py).
        srv.until_idle()
        os.truncate(tmp_path / "state" / "sessions.db-shm", 0)
        for n in (2, 3):
            assert srv.invoke(f"turn {n}", session=sid, stream=False).status == 200
        assert srv.proc is not None and srv.proc.poll() is None  # the old code: killed by SIGBUS
    finally:
        srv.stop()
    cli_pids = {e["pid"] for e in read_log(tmp_path / "fake.log") if e["event"] == "start"}
    wait_for(lambda: not any(alive(pid) for pid in cli_pids), timeout=15)  # no orphaned CLI
    fresh = fake_cli_server(tmp_path, "vm-2").start()
    try:
        after = fresh.invoke("turn 4", session=sid, stream=False)
    finally:
        fresh.stop()
    assert history(after) == 3, after.body


def test_metrics_sink_down(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens: every PutMetricData fails to connect
    with fake_cli_server(
        tmp_path,
        "claude",
        AGENTKIT_METRICS="cloudwatch",
        AWS_ENDPOINT_URL_CLOUDWATCH=dead,
        AGENTKIT_METRICS_NAMESPACE="F",
    ) as srv:
        sid = session_id("metrics-down")
        first = srv.invoke("turn 1", session=sid, stream=False)
        second = srv.invoke("turn 2", session=sid, stream=False)
        assert first.status == 200 and second.status == 200, (first.body, second.body)
        assert history(second) == 1
        assert srv.ping()["status"] in ("Healthy", "HealthyBusy")


def test_sigterm_mid_turn_with_turns_queued(tmp_path: Path) -> None:
    """The running turn and the queued ones end with a retryable ``shutting_down``; queued turns never run
    (they would be paid), and the process exits by itself well within the 25 s shutdown budget."""
    srv = fake_cli_server(tmp_path, "claude", AGENTKIT_IDLE_TIMEOUT="900").start()
    sid = session_id("sigterm")
    assert srv.invoke("done before", session=sid, stream=False).status == 200
    running = in_background(srv.invoke, "[slow:8000] running", session=sid, stream=False)
    wait_for(lambda: sleeping(tmp_path, "[slow:8000] running"))
    # Streaming callers: a reply's status line is sent once its invocation is on the session's queue.
    queued = [queued_sse(srv, sid, f"queued {n}") for n in range(2)]
    assert srv.proc is not None
    srv.proc.send_signal(signal.SIGTERM)
    srv.proc.wait(30)  # raises if the process does not exit by itself
    running["thread"].join(10)
    reply = running.get("reply")
    if reply is not None:  # a reply that made it out before the socket closed
        assert reply.status == 503 and reply.body["code"] == "shutting_down", reply.body
    for sock in queued:
        events = [
            json.loads(line[6:]) for line in read_to_end(sock).splitlines() if line.startswith(b"data: ")
        ]
        # what made it out before the socket closed: only the retryable error, never a result
        assert all(e["type"] == "error" and e["code"] == "shutting_down" for e in events), events
    assert started(tmp_path, "queued") == []  # no queued paid turn ran after SIGTERM
    fresh = fake_cli_server(tmp_path, "vm-2").start()
    try:
        assert history(fresh.invoke("after", session=sid, stream=False)) >= 1
    finally:
        fresh.stop()


#: Kills in the in-suite loop; ``benchmarks/faults.py`` runs the full 20 (each round starts a runtime: seconds).
KILL9_ROUNDS = int(os.environ.get("AGENTKIT_KILL9_ROUNDS", "3"))


def test_kill_9_loop_every_completed_turn_is_resumable(tmp_path: Path) -> None:
    """SIGKILLs at random points; afterwards every turn that got a result is in the session's history."""
    completed, after = kill9_loop(tmp_path, KILL9_ROUNDS)
    assert len(completed) > KILL9_ROUNDS, completed  # the kills landed among real turns
    assert after.status == 200
    assert history(after) >= len(completed)  # every completed turn (plus any cut off right after its result)
    turn = [e for e in read_log(tmp_path / "fake.log") if e["event"] == "turn"][-1]
    assert turn["resumed"] is True
    missing = set(completed) - stored_prompts(tmp_path / "state" / "sessions.db")
    assert not missing, f"completed turns missing from the store: {sorted(missing)}"
