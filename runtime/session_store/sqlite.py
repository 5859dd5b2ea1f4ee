"""The embedded session store: Claude session transcripts in one SQLite file (WAL, safe across processes).

Two implementations of the Claude Agent SDK's ``SessionStore`` protocol (``append``, ``load``,
``list_sessions``, ``list_session_summaries``, ``delete``, ``list_subkeys``), both also keeping per-session
state that must outlive a microVM (``get_state`` / ``put_state``, e.g. the session's cumulative cost):

- :class:`SqliteSessionStore` — the embedded default for local runs and tests. WAL mode and a busy timeout
  make it safe for several processes sharing one file.
- :class:`AgentCoreMemorySessionStore` — AgentCore Memory events (implementation, id mapping and the IAM
  actions it needs: :mod:`runtime.session_store.agentcore.store`).

:func:`store_from_url` builds one from ``AGENTKIT_SESSION_STORE`` (read by :mod:`runtime.config.settings`):
``sqlite:///abs/path.db`` | ``agentcore://<memory-id>`` | empty (SQLite at ``<state_dir>/sessions.db``).
Wrap the result in :class:`runtime.session_store.spool.SpoolingSessionStore` so a failing store never fails a turn.

Environment: none read here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from runtime.errors import SessionStoreError
from runtime.session_store.codec import dumps_entry
from runtime.session_store.file_guard import Fault, FileGuard, Rows, dump_rows, restore_rows

if TYPE_CHECKING:  # importing claude_agent_sdk costs ~1 s: only for type checking here
    from claude_agent_sdk.types import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

__all__ = ["SqliteSessionStore"]

T = TypeVar("T")
log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    project_key TEXT NOT NULL, session_id TEXT NOT NULL, subpath TEXT NOT NULL,
    uuid TEXT, data TEXT NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uuid ON entries(project_key, session_id, subpath, uuid)
    WHERE uuid IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_key ON entries(project_key, session_id, subpath, seq);
CREATE TABLE IF NOT EXISTS sessions (
    project_key TEXT NOT NULL, session_id TEXT NOT NULL, subpath TEXT NOT NULL, mtime INTEGER NOT NULL,
    PRIMARY KEY (project_key, session_id, subpath));
CREATE TABLE IF NOT EXISTS summaries (
    project_key TEXT NOT NULL, session_id TEXT NOT NULL, mtime INTEGER NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (project_key, session_id));
CREATE TABLE IF NOT EXISTS state (session_id TEXT PRIMARY KEY, mtime INTEGER NOT NULL, data TEXT NOT NULL);
"""


def _subpath(key: SessionKey | SessionListSubkeysKey) -> str:
    subpath = cast(dict[str, Any], key).get("subpath")
    if subpath == "":
        raise ValueError("subpath must be omitted for the main transcript, not empty")
    return subpath or ""


class SqliteSessionStore:
    """``SessionStore`` in one SQLite file (WAL), safe for several processes.

    Order is the global autoincrement ``seq``; an entry's ``uuid`` is unique per key (re-appends are ignored).
    Blocking SQLite work runs in a worker thread on one long-lived connection per store (serialized by a
    lock): reopening per call would make every close of a WAL database checkpoint and fsync (~20 ms).

    Args:
        path: database file; parent directories are created.
        busy_timeout_ms: how long a writer waits for another process's lock.
        clock: seconds since the epoch (injectable for tests).

    Raises:
        SessionStoreError: the database is locked past the busy timeout or unreadable.
    """

    def __init__(
        self, path: Path | str, *, busy_timeout_ms: int = 5000, clock: Callable[[], float] = time.time
    ):
        self.path = Path(path)
        self._busy_ms = busy_timeout_ms
        self._clock = clock
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._guard = FileGuard(self.path)
        self._rescued: Rows | None = None  # rows of a moved database not yet written back
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, timeout=self._busy_ms / 1000, isolation_level=None, check_same_thread=False
        )
        db.execute(f"PRAGMA busy_timeout={int(self._busy_ms)}")
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    @contextmanager
    def _connect(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                fault = self._guard.check() if self._db is not None else None
                if fault is not None:
                    self._on_fault(fault, write=write)
                elif self._rescued is not None:
                    self._restore_rescued()
                if self._db is None:
                    self._db = self._open()
                    self._guard.opened()  # the identity of the file it opened, before anything is written to it
                yield self._db
                self._guard.opened()
            except sqlite3.Error as exc:
                raise SessionStoreError(
                    f"SQLite session store {self.path} failed: {exc}",
                    aws_code=type(exc).__name__,
                    retryable=True,
                ) from exc

    def _on_fault(self, fault: Fault, *, write: bool) -> None:
        """Recover from a fault found by the file guard (under the lock). A write raises afterwards, so the
        spool keeps its batch and redelivers it, and ``SessionStoreErrors`` counts the fault."""
        log.error("SQLite session store: %s", fault.detail)
        old = self._db
        if fault.database_moved and old is not None:
            # Read what the old file holds and close it (removing the -wal/-shm it leaves at the path); the rows
            # stay in memory until they are written into the file now at the path (a new one if it was deleted).
            self._rescued = dump_rows(old)
            self._db = None
            old.close()
            self._guard.remove_stale_sidecars()
            self._restore_rescued()
        elif not fault.repaired and old is not None:
            self._db = (
                None  # the mapping is intact (only truncation breaks it): close, reopen on the next call
            )
            old.close()
        if write or not (fault.database_moved or fault.repaired):
            raise SessionStoreError(
                f"SQLite session store {self.path}: {fault.detail}; the write is kept in the spool and retried",
                aws_code=f"File{fault.kind.title().replace('_', '')}",
                retryable=True,
            )

    def _restore_rescued(self) -> None:
        """Write the rows rescued from a moved database into the file at the path. A file there that is not a
        SQLite database is moved aside (``<name>.not-a-database-<time>``, never deleted) and a new database
        takes its place. Until a restore succeeds the rows stay in memory and every call retries it first.
        Raises SessionStoreError (through ``_connect``) while the restore keeps failing."""
        rows = self._rescued
        if rows is None:
            return
        for attempt in range(2):
            new = None
            try:
                new = self._open()
                new.execute("PRAGMA journal_mode=WAL")
                new.executescript(_SCHEMA)
                copied = restore_rows(new, rows)
            except sqlite3.DatabaseError as exc:
                if new is not None:
                    new.close()
                if attempt or not self.path.exists():
                    log.error(
                        "SQLite session store: %d rescued entries kept in memory: %s", len(rows.entries), exc
                    )
                    raise
                aside = self.path.with_name(f"{self.path.name}.not-a-database-{int(self._clock())}")
                log.error(
                    "SQLite session store: %s is not a usable database (%s); moved it to %s",
                    self.path,
                    exc,
                    aside,
                )
                try:
                    os.replace(self.path, aside)
                except OSError as move_error:
                    log.error("SQLite session store: could not move %s aside: %s", self.path, move_error)
                    raise exc from None
                self._guard.remove_stale_sidecars()
                continue
            self._db = new
            self._rescued = None
            self._guard.opened()
            log.error(
                "SQLite session store: rewrote the %d entries the old file held into %s", copied, self.path
            )
            return

    async def close(self) -> None:
        """Close the connection (a later call reopens it)."""
        self.after_restore()

    def after_restore(self) -> None:
        """Drop the connection so the next call opens its own (after a snapshot restore: :mod:`runtime.process.restore`)."""
        with self._lock:
            if self._db is not None:
                self._guard.check()  # grows back a truncated -shm: closing touches its mapping
                self._db.close()
                self._db = None

    async def _run(self, fn: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        def work() -> T:
            with self._connect(write=write) as db:
                return fn(db)

        return await asyncio.to_thread(work)

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if not entries:
            return
        pk, sid, sub = key["project_key"], key["session_id"], _subpath(key)
        rows = [(pk, sid, sub, e.get("uuid"), dumps_entry(e)) for e in entries]

        from claude_agent_sdk import fold_session_summary

        def work(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                written: list[SessionStoreEntry] = []
                for row, entry in zip(rows, entries, strict=True):
                    cur = db.execute(
                        "INSERT OR IGNORE INTO entries(project_key, session_id, subpath, uuid, data) "
                        "VALUES (?,?,?,?,?)",
                        row,
                    )
                    if cur.rowcount:
                        written.append(entry)
                now = int(self._clock() * 1000)
                if written:
                    db.execute(
                        "INSERT INTO sessions VALUES (?,?,?,?) "
                        "ON CONFLICT DO UPDATE SET mtime=excluded.mtime",
                        (pk, sid, sub, now),
                    )
                if written and not sub:
                    prev_row = db.execute(
                        "SELECT mtime, data FROM summaries WHERE project_key=? AND session_id=?", (pk, sid)
                    ).fetchone()
                    prev = (
                        cast(
                            "SessionSummaryEntry",
                            {"session_id": sid, "mtime": prev_row[0], "data": json.loads(prev_row[1])},
                        )
                        if prev_row
                        else None
                    )
                    folded = fold_session_summary(prev, key, written)
                    db.execute(
                        "INSERT INTO summaries VALUES (?,?,?,?) "
                        "ON CONFLICT DO UPDATE SET mtime=excluded.mtime, data=excluded.data",
                        (pk, sid, now, json.dumps(folded["data"])),
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

        await self._run(work, write=True)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        args = (key["project_key"], key["session_id"], _subpath(key))

        def work(db: sqlite3.Connection) -> list[SessionStoreEntry] | None:
            rows = db.execute(
                "SELECT data FROM entries WHERE project_key=? AND session_id=? AND subpath=? ORDER BY seq",
                args,
            ).fetchall()
            return [json.loads(r[0]) for r in rows] or None

        return await self._run(work)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        def work(db: sqlite3.Connection) -> list[SessionStoreListEntry]:
            rows = db.execute(
                "SELECT session_id, mtime FROM sessions WHERE project_key=? AND subpath=''", (project_key,)
            ).fetchall()
            return [{"session_id": r[0], "mtime": r[1]} for r in rows]

        return await self._run(work)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        def work(db: sqlite3.Connection) -> list[SessionSummaryEntry]:
            rows = db.execute(
                "SELECT session_id, mtime, data FROM summaries WHERE project_key=?", (project_key,)
            ).fetchall()
            return [{"session_id": r[0], "mtime": r[1], "data": json.loads(r[2])} for r in rows]

        return await self._run(work)

    async def delete(self, key: SessionKey) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], _subpath(key)

        def work(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                if sub:
                    one = "project_key=? AND session_id=? AND subpath=?"
                    db.execute(f"DELETE FROM entries WHERE {one}", (pk, sid, sub))  # noqa: S608 - constant SQL
                    db.execute(f"DELETE FROM sessions WHERE {one}", (pk, sid, sub))  # noqa: S608
                else:  # a main key cascades to its subagent transcripts
                    for table in ("entries", "sessions", "summaries"):
                        db.execute(f"DELETE FROM {table} WHERE project_key=? AND session_id=?", (pk, sid))  # noqa: S608
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")  # the connection is long-lived: never leave it inside a transaction
                raise

        await self._run(work, write=True)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        def work(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT subpath FROM sessions "
                "WHERE project_key=? AND session_id=? AND subpath!='' ORDER BY subpath",
                (key["project_key"], key["session_id"]),
            ).fetchall()
            return [r[0] for r in rows]

        return await self._run(work)

    async def get_state(self, session_id: str) -> dict[str, Any] | None:
        """Latest state written with :meth:`put_state`, or ``None``."""

        def work(db: sqlite3.Connection) -> dict[str, Any] | None:
            row = db.execute("SELECT data FROM state WHERE session_id=?", (session_id,)).fetchone()
            return json.loads(row[0]) if row else None

        return await self._run(work)

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None:
        """Store a JSON-serializable dict for the session (last write wins)."""
        data, now = dumps_entry(state), int(self._clock() * 1000)

        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO state VALUES (?,?,?) "
                "ON CONFLICT DO UPDATE SET mtime=excluded.mtime, data=excluded.data",
                (session_id, now, data),
            )

        await self._run(work, write=True)
