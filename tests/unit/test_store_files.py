"""The SQLite store's files deleted, replaced or damaged under a running store.

Through the real ``SpoolingSessionStore(SqliteSessionStore)`` stack the runtime uses: every fault is counted
(``on_error`` → ``SessionStoreErrors``), nothing written is lost, and a truncated ``-shm`` no longer kills
the process with SIGBUS (checked in a child process, so the old behaviour fails the test instead of the run).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk.types import SessionKey, SessionStoreEntry

from harness.runtime_server import ROOT
from runtime.session_store import SqliteSessionStore
from runtime.session_store.file_guard import FileGuard
from runtime.session_store.spool import SpoolingSessionStore

KEY: SessionKey = {"project_key": "proj", "session_id": "sess"}
OTHER: SessionKey = {"project_key": "proj", "session_id": "other"}


def batch(start: int, n: int = 2) -> list[SessionStoreEntry]:
    return [
        cast(SessionStoreEntry, {"type": "user", "uuid": f"u{i}", "n": i}) for i in range(start, start + n)
    ]


def files(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


async def settle(store: SpoolingSessionStore) -> None:
    for _ in range(300):
        if store.pending_count == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{store.pending_count} batches still spooled")


def run_with_fault(tmp_path: Path, fault: Any) -> tuple[list[BaseException], SqliteSessionStore]:
    path = tmp_path / "sessions.db"
    errors: list[BaseException] = []

    async def scenario() -> SqliteSessionStore:
        inner = SqliteSessionStore(path)
        store = SpoolingSessionStore(
            inner,
            spool_dir=tmp_path / "spool",
            on_error=errors.append,
            retry_initial_s=0.01,
            retry_max_s=0.05,
        )
        await store.append(KEY, batch(0))
        await store.put_state("sess", {"spent_usd": 1.0})
        fault(path)
        await store.append(KEY, batch(2))  # the turn completes either way
        await store.put_state("sess", {"spent_usd": 2.0})
        await store.append(KEY, batch(4))
        await settle(store)
        await store.close()
        return inner

    return errors, asyncio.run(scenario())


def reopened(path: Path) -> SqliteSessionStore:
    """What a restarted runtime sees."""
    return SqliteSessionStore(path)


def test_deleted_database_files_are_recreated_with_everything_written(tmp_path: Path) -> None:
    def delete(path: Path) -> None:
        for f in files(path):
            f.unlink(missing_ok=True)

    errors, _ = run_with_fault(tmp_path, delete)
    after = reopened(tmp_path / "sessions.db")
    assert asyncio.run(after.load(KEY)) == batch(0, 6)  # the old code: None (written to the unlinked file)
    assert asyncio.run(after.get_state("sess")) == {"spent_usd": 2.0}
    assert errors, "the fault was not reported (SessionStoreErrors)"
    assert "deleted" in str(errors[0])


def test_a_database_replaced_under_the_store_gets_our_rows_and_keeps_its_own(tmp_path: Path) -> None:
    other_path = tmp_path / "restored.db"
    other = SqliteSessionStore(other_path)
    asyncio.run(other.append(OTHER, batch(100)))
    asyncio.run(other.close())

    def replace(path: Path) -> None:
        os.replace(other_path, path)

    errors, _ = run_with_fault(tmp_path, replace)
    after = reopened(tmp_path / "sessions.db")
    assert asyncio.run(after.load(KEY)) == batch(0, 6)
    assert asyncio.run(after.load(OTHER)) == batch(100)
    assert errors and "replaced" in str(errors[0])


def test_a_replaced_shm_file_is_reported_and_nothing_is_lost(tmp_path: Path) -> None:
    def replace_shm(path: Path) -> None:
        shm = files(path)[2]
        size = shm.stat().st_size
        shm.unlink()
        shm.write_bytes(b"\0" * size)

    errors, _ = run_with_fault(tmp_path, replace_shm)
    assert asyncio.run(reopened(tmp_path / "sessions.db").load(KEY)) == batch(0, 6)
    assert errors and "shm" in str(errors[0])


def run_child(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``script`` in a child Python (a SIGBUS there is an exit code, not a crashed test run), given the
    database path and the spool directory under ``tmp_path``."""
    return subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "sessions.db"), str(tmp_path / "spool")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


_TRUNCATE_CHILD = textwrap.dedent(
    """
    import asyncio, json, os, sys
    from pathlib import Path
    from runtime.session_store import SqliteSessionStore
    from runtime.session_store.spool import SpoolingSessionStore

    path, spool = Path(sys.argv[1]), Path(sys.argv[2])
    key = {"project_key": "proj", "session_id": "sess"}
    errors = []

    async def main():
        store = SpoolingSessionStore(SqliteSessionStore(path), spool_dir=spool, on_error=errors.append,
                                     retry_initial_s=0.01, retry_max_s=0.05)
        await store.append(key, [{"type": "user", "uuid": "a", "n": 0}])
        os.truncate(str(path) + "-shm", 0)  # what a full disk, a cleanup job or a bad copy can do
        for i in range(1, 4):
            await store.append(key, [{"type": "user", "uuid": f"b{i}", "n": i}])
        for _ in range(300):
            if store.pending_count == 0:
                break
            await asyncio.sleep(0.01)
        loaded = await store.load(key)
        await store.close()
        print(json.dumps({"loaded": [e["uuid"] for e in loaded], "errors": [str(e) for e in errors]}))

    asyncio.run(main())
    """
)


def test_a_truncated_shm_file_does_not_crash_the_process_and_loses_nothing(tmp_path: Path) -> None:
    proc = run_child(_TRUNCATE_CHILD, tmp_path)
    assert proc.returncode == 0, f"exit {proc.returncode} (-7 is SIGBUS): {proc.stderr[-2000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["loaded"] == ["a", "b1", "b2", "b3"]
    assert any("truncated" in e for e in out["errors"])
    assert asyncio.run(reopened(tmp_path / "sessions.db").load(KEY)) == [
        {"type": "user", "uuid": u, "n": n} for n, u in enumerate(["a", "b1", "b2", "b3"])
    ]


_DISK_FULL_CHILD = textwrap.dedent(
    """
    import asyncio, json, resource, signal, sys
    from pathlib import Path
    from runtime.session_store import SqliteSessionStore
    from runtime.session_store.spool import SpoolingSessionStore

    path, spool = Path(sys.argv[1]), Path(sys.argv[2])
    key = {"project_key": "proj", "session_id": "sess"}
    errors = []
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, like ENOSPC
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)

    async def main():
        store = SpoolingSessionStore(SqliteSessionStore(path), spool_dir=spool, on_error=errors.append,
                                     retry_initial_s=0.05, retry_max_s=0.1)
        await store.append(key, [{"type": "user", "uuid": "a", "n": 0}])
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))  # the disk is full: no file may grow
        for i in range(1, 4):  # the store cannot write its WAL and the spool cannot write its journal
            await store.append(key, [{"type": "user", "uuid": f"b{i}", "n": i}])
        pending_while_full = store.pending_count
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # space is back
        for _ in range(300):
            if store.pending_count == 0:
                break
            await asyncio.sleep(0.01)
        loaded = await store.load(key)
        await store.close()
        print(json.dumps({"loaded": [e["uuid"] for e in loaded], "pending_while_full": pending_while_full,
                          "errors": [type(e).__name__ + ": " + str(e) for e in errors]}))

    asyncio.run(main())
    """
)


def test_a_full_disk_for_the_spool_while_the_store_fails_loses_nothing(tmp_path: Path) -> None:
    proc = run_child(_DISK_FULL_CHILD, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["pending_while_full"] == 3  # held in memory: neither the store nor the journal could take them
    assert out["loaded"] == ["a", "b1", "b2", "b3"]
    assert any("File too large" in e for e in out["errors"]), out["errors"]  # the journal fault was reported
    assert asyncio.run(reopened(tmp_path / "sessions.db").load(KEY)) == [
        {"type": "user", "uuid": u, "n": n} for n, u in enumerate(["a", "b1", "b2", "b3"])
    ]


def test_a_database_replaced_by_a_non_database_file_keeps_every_row(tmp_path: Path) -> None:
    """The file at the path is not SQLite (a stray copy, a truncated download): the rows the old file held and
    everything written after survive; the foreign file is moved aside, not deleted."""

    def replace_with_junk(path: Path) -> None:
        junk = path.with_name("junk")
        junk.write_bytes(b"this is not a database\n" * 100)
        os.replace(junk, path)

    errors, _ = run_with_fault(tmp_path, replace_with_junk)
    after = reopened(tmp_path / "sessions.db")
    assert asyncio.run(after.load(KEY)) == batch(0, 6)  # the old code: every earlier row lost
    assert asyncio.run(after.get_state("sess")) == {"spent_usd": 2.0}
    assert errors and "replaced" in str(errors[0])
    aside = list(tmp_path.glob("sessions.db.not-a-database-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not a database")


def test_rescued_rows_stay_in_memory_until_a_restore_succeeds(tmp_path: Path) -> None:
    """When even moving the foreign file aside fails, the rows wait in memory and a later call restores them."""
    path = tmp_path / "sessions.db"
    blocker = tmp_path / "sessions.db.not-a-database-0"  # where the store moves the file (its clock says 0)

    async def scenario() -> list[Any] | None:
        inner = SqliteSessionStore(path, clock=lambda: 0.0)
        await inner.append(KEY, batch(0))
        junk = tmp_path / "junk"
        junk.write_bytes(b"not sqlite" * 100)
        os.replace(junk, path)
        blocker.mkdir()
        (blocker / "keep").write_text("x")  # a non-empty directory: the move aside fails
        for _ in range(2):
            try:
                await inner.append(KEY, batch(2))
            except Exception as exc:  # the write fails (the spool would keep it); the rows wait in memory
                assert "SQLite session store" in str(exc)
            else:
                raise AssertionError("a write landed while the file at the path is not a database")
        (blocker / "keep").unlink()
        blocker.rmdir()
        await inner.append(KEY, batch(2))  # the move works now: rows restored, the write lands
        loaded = await inner.load(KEY)
        await inner.close()
        return loaded

    assert asyncio.run(scenario()) == batch(0, 4)
    assert asyncio.run(reopened(path).load(KEY)) == batch(0, 4)


def test_a_database_deleted_before_the_guard_first_looked_is_still_reported(tmp_path: Path) -> None:
    """The file is deleted between the open of the connection and the guard's first look (a busy machine: the
    window of the store's first call). The guard must not disarm itself: the next check reports the deletion, so
    the store rescues what the unlinked file holds instead of writing to it for good."""
    path = tmp_path / "sessions.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    guard = FileGuard(path)
    for f in files(path):
        f.unlink(missing_ok=True)
    guard.opened()  # what the store calls after the call in which the file went away
    fault = guard.check()
    assert fault is not None and fault.kind == "deleted", fault
    # Another file at the path is not ours either: reported as replaced, not taken for the one the connection has.
    sqlite3.connect(path).close()
    fault = guard.check()
    assert fault is not None and fault.kind == "replaced", fault
    db.close()
