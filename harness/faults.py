"""Fault-injection helpers over real ``python -m runtime`` processes with the fake CLI.

Shared by the fault tests (``tests/functional/test_faults.py``) and the full-size kill loop
(``benchmarks/faults.py``). The fake CLI reports ``history=<n>`` (the user prompts it was resumed with) in
every answer, which is how a caller sees that nothing was lost.
"""

from __future__ import annotations

import http.client
import json
import random
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from harness.runtime_server import Reply, RuntimeServer, fake_cli_server, read_log, session_id


def history(reply: Reply) -> int:
    text = reply.body["text"] if reply.body else reply.text
    match = re.search(r"history=(\d+)", text)
    assert match, reply.body or reply.events
    return int(match.group(1))


def wait_for(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"  # a zombie has exited (its parent, the test, has not reaped it yet)


def kill9_loop(tmp: Path, rounds: int, *, seed: int = 10) -> tuple[list[str], Reply]:
    """``rounds`` runtimes of one session, each SIGKILLed at a random point while a client drives turns.
    Returns the prompts that got a result and the reply of one more turn in a fresh runtime."""
    rng = random.Random(seed)
    sid = session_id("kill9")
    completed: list[str] = []
    for round_ in range(rounds):
        srv = fake_cli_server(tmp, f"vm-{round_}").start()
        warm = srv.invoke(f"r{round_} warm", session=sid, stream=False, timeout=60)  # resume + start-up
        if warm.status == 200:
            completed.append(f"r{round_} warm")
        stop = threading.Event()

        def drive(srv: RuntimeServer = srv, round_: int = round_, stop: threading.Event = stop) -> None:
            n = 0
            while not stop.is_set():
                prompt = f"r{round_} t{n} [slow:{rng.randrange(0, 40)}]"
                try:
                    reply = srv.invoke(prompt, session=sid, stream=False, timeout=10)
                except (OSError, http.client.HTTPException):  # the process was killed under the request
                    return
                if reply.status == 200:
                    completed.append(prompt)
                n += 1

        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        time.sleep(rng.uniform(0.0, 0.8))  # mid-turn, between turns, while persisting
        srv.kill()
        stop.set()
        driver.join(15)
        # No CLI outlives its runtime: it sees stdin close and exits (no orphan keeps running and billing).
        pids = {e["pid"] for e in read_log(tmp / "fake.log") if e["event"] == "start"}
        wait_for(lambda pids=pids: not any(alive(pid) for pid in pids), timeout=15)
    final = fake_cli_server(tmp, "vm-final").start()
    try:
        after = final.invoke("final", session=sid, stream=False, timeout=60)
    finally:
        final.stop()
    return completed, after


def stored_prompts(db_path: Path) -> set[str]:
    """The user prompts in the SQLite store's transcripts."""
    db = sqlite3.connect(db_path)
    try:
        rows = [json.loads(r[0]) for r in db.execute("SELECT data FROM entries")]
    finally:
        db.close()
    prompts = set()
    for entry in rows:
        content = entry.get("message", {}).get("content") if entry.get("type") == "user" else None
        if isinstance(content, str):
            prompts.add(content)
        elif isinstance(content, list):
            prompts.update(
                b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
            )
    return prompts
