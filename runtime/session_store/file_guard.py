"""Guards for the SQLite store's files: notice when they are deleted, replaced or damaged under a running process.

Two faults a long-lived SQLite connection does not notice by itself:

- **The database file is deleted or replaced** (``rm sessions.db*``, a restore copied over it). The open
  connection keeps writing to the old, unlinked inode: nothing fails, nothing is logged, and everything
  written since is gone at the next start. :class:`FileGuard` remembers the device and inode the connection
  opened and compares them with the path before every call. On a mismatch the store reads every row the old
  connection can still see (:func:`dump_rows`), closes it, opens the file now at the path and writes them
  there (:func:`restore_rows`).
- **The WAL index (``-shm``) is truncated, replaced or unwritable.** SQLite maps ``-shm`` into memory;
  touching a page of a truncated mapping kills the process with SIGBUS (and with it the warm sessions,
  orphaning their CLI processes). The guard checks the file before every call: a truncated ``-shm`` whose
  inode is still ours is grown back to its size (its zeroed header makes SQLite rebuild the index from the
  WAL); a replaced or unwritable one is not touched again by this process — the store raises
  ``SessionStoreError`` instead, so the spool (:mod:`runtime.session_store.spool`) keeps every write on local disk
  and ``SessionStoreErrors`` counts the fault, until the file is usable again or the process restarts.

The checks are ``stat`` calls (a few microseconds). They cannot close the window between the check and the
write; they turn a silent loss or a crash into an error the spool absorbs in every case they can see.
Environment: none.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fault:
    """What is wrong with the store's files. ``kind``: deleted | replaced | shm_truncated | shm_replaced |
    shm_unwritable."""

    kind: str
    detail: str
    repaired: bool = False

    @property
    def database_moved(self) -> bool:
        return self.kind in ("deleted", "replaced")


#: The identity of a database that was no longer at its path when its connection was opened.
_GONE = (-1, -1)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


class FileGuard:
    """Remembers the identity of a SQLite database and its ``-shm`` file, and checks them before each use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.shm = path.with_name(path.name + "-shm")
        self.wal = path.with_name(path.name + "-wal")
        self._db: tuple[int, int] | None = None
        self._wal: tuple[int, int] | None = None
        self._shm: tuple[int, int] | None = None
        self._shm_size = 0

    def opened(self) -> None:
        """Call after (re)opening the connection and after each successful call."""
        st = _stat(self.path)
        if st is not None:
            self._db = (st.st_dev, st.st_ino)
        elif self._db is None:
            # The file the connection opened is already gone from the path (deleted between the open and this
            # call). Forgetting the identity would disarm the guard for good, and every later write would go to
            # the unlinked inode; no real file has this identity, so the next check reports the deletion.
            self._db = _GONE
        # else: keep the identity, so that the next check() reports the deletion.
        wal = _stat(self.wal)
        if wal is not None:
            self._wal = (wal.st_dev, wal.st_ino)
        shm = _stat(self.shm)
        if shm is None:
            return
        ident = (shm.st_dev, shm.st_ino)
        if ident != self._shm:
            self._shm, self._shm_size = ident, shm.st_size
        else:
            self._shm_size = max(self._shm_size, shm.st_size)

    def remove_stale_sidecars(self) -> None:
        """After the old connection closed on a moved database: remove the ``-wal``/``-shm`` it left at the
        path. SQLite keeps them when its file has moved, and would replay that old WAL into the new file."""
        for path, ident in ((self.wal, self._wal), (self.shm, self._shm)):
            st = _stat(path)
            if st is not None and (st.st_dev, st.st_ino) == ident:
                path.unlink(missing_ok=True)
        self._wal = self._shm = None
        self._shm_size = 0

    def check(self) -> Fault | None:
        """The first problem found, or ``None``. Repairs a truncated ``-shm`` of our own inode in place."""
        if self._db is None:
            return None
        st = _stat(self.path)
        if st is None:
            return Fault("deleted", f"{self.path} was deleted while open")
        if (st.st_dev, st.st_ino) != self._db:
            return Fault("replaced", f"{self.path} was replaced by another file while open")
        shm = _stat(self.shm)
        if shm is None or self._shm is None:
            return None  # no mapping yet, or SQLite removed it at a clean close: it will recreate it
        if (shm.st_dev, shm.st_ino) != self._shm:
            return Fault("shm_replaced", f"{self.shm} was replaced while mapped")
        if not os.access(self.shm, os.W_OK):
            return Fault("shm_unwritable", f"{self.shm} is no longer writable")
        if shm.st_size < self._shm_size:
            try:
                os.truncate(self.shm, self._shm_size)  # back to the mapped size: no page beyond EOF
            except OSError as exc:
                return Fault("shm_truncated", f"{self.shm} was truncated and cannot be regrown ({exc})")
            return Fault(
                "shm_truncated",
                f"{self.shm} was truncated from {self._shm_size} to {shm.st_size} bytes while mapped; grew it "
                "back (SQLite rebuilds its index from the WAL)",
                repaired=True,
            )
        return None


# Session rows and state: the newer write wins.
_SESSIONS_SQL = "INSERT INTO sessions VALUES (?,?,?,?) ON CONFLICT DO UPDATE SET mtime=excluded.mtime WHERE excluded.mtime > mtime"
_SUMMARIES_SQL = (
    "INSERT INTO summaries VALUES (?,?,?,?) "
    "ON CONFLICT DO UPDATE SET mtime=excluded.mtime, data=excluded.data WHERE excluded.mtime > mtime"
)
_STATE_SQL = (
    "INSERT INTO state VALUES (?,?,?) "
    "ON CONFLICT DO UPDATE SET mtime=excluded.mtime, data=excluded.data WHERE excluded.mtime > mtime"
)


@dataclass
class Rows:
    """Everything a store file holds, read out of a connection whose file is gone or replaced."""

    entries: list[tuple[str, str, str, str | None, str]]
    sessions: list[tuple[str, str, str, int]]
    summaries: list[tuple[str, str, int, str]]
    state: list[tuple[str, int, str]]


def dump_rows(old: sqlite3.Connection) -> Rows:
    """Read every row ``old`` can still see (an unlinked file stays readable through its open descriptor)."""
    return Rows(
        entries=old.execute(
            "SELECT project_key, session_id, subpath, uuid, data FROM entries ORDER BY seq"
        ).fetchall(),
        sessions=old.execute("SELECT project_key, session_id, subpath, mtime FROM sessions").fetchall(),
        summaries=old.execute("SELECT project_key, session_id, mtime, data FROM summaries").fetchall(),
        state=old.execute("SELECT session_id, mtime, data FROM state").fetchall(),
    )


def restore_rows(new: sqlite3.Connection, rows: Rows) -> int:
    """Write ``rows`` into ``new`` (whose schema exists); returns the entries added.

    Entries are matched on their ``uuid`` (or, without one, on their whole content), so restoring twice or
    into a file that already holds some of them adds nothing twice. Session rows and state keep the newer.
    """
    copied = 0
    new.execute("BEGIN IMMEDIATE")
    try:
        for pk, sid, sub, uid, data in rows.entries:
            if uid is None:
                exists = new.execute(
                    "SELECT 1 FROM entries WHERE project_key=? AND session_id=? AND subpath=? AND uuid IS NULL "
                    "AND data=?",
                    (pk, sid, sub, data),
                ).fetchone()
                if exists:
                    continue
            cur = new.execute(
                "INSERT OR IGNORE INTO entries(project_key, session_id, subpath, uuid, data) VALUES (?,?,?,?,?)",
                (pk, sid, sub, uid, data),
            )
            copied += cur.rowcount
        new.executemany(_SESSIONS_SQL, rows.sessions)
        new.executemany(_SUMMARIES_SQL, rows.summaries)
        new.executemany(_STATE_SQL, rows.state)
        new.execute("COMMIT")
    except BaseException:
        new.execute("ROLLBACK")
        raise
    return copied
