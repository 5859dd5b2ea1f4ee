"""The spool's write-ahead journal on local disk, and its dead-letter file.

``spool-<pid>-<rand>.jsonl`` holds one JSON line per record: ``{"op": "batch", "id", "key", "entries",
"state"}`` when a write is accepted (before the remote store is called), ``{"op": "done", "id"}`` once it is
delivered or given up. Each line is flushed and ``fsync``ed. The file is ``flock``ed by its process, so a
journal whose lock is free belongs to a dead process and is adopted (:meth:`Journal.adopt_orphans`).
``dead-letter.jsonl`` keeps batches the store rejected for good (one line each, with the error), for an
operator to inspect or replay; nothing reads it automatically.

Lines are written with :func:`runtime.session_store.codec.dumps_entry`, so an entry holding a lone surrogate
cannot make a journal line unwritable. Environment: none.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from runtime.session_store.codec import dumps_entry

if TYPE_CHECKING:
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

log = logging.getLogger(__name__)

DEAD_LETTER_FILE = "dead-letter.jsonl"


@dataclass
class Batch:
    """One write: a transcript batch (``entries``) or a per-session state write (``state``)."""

    id: str
    key: SessionKey
    entries: list[SessionStoreEntry] | None = None
    state: dict[str, Any] | None = None
    journaled: bool = False
    late: bool = False  # it failed once: the next try is a late delivery

    def record(self) -> dict[str, Any]:
        return {"op": "batch", "id": self.id, "key": self.key, "entries": self.entries, "state": self.state}


class Journal:
    """Append-only, fsynced JSONL journal of one process (see the module docstring)."""

    def __init__(self, spool_dir: Path) -> None:
        self.dir = Path(spool_dir)
        self.path = self.dir / f"spool-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
        self._file: IO[str] | None = None

    def renew_name(self) -> None:
        """A journal not opened yet takes a new name (after a snapshot restore the pid is the image's)."""
        if self._file is None:
            self.path = self.dir / f"spool-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"

    def _open(self) -> IO[str]:
        if self._file is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the spool's life
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return self._file

    def write(self, record: dict[str, Any]) -> None:
        """Append one record durably. Raises OSError (disk full, read-only volume)."""
        f = self._open()
        f.write(dumps_entry(record) + "\n")
        f.flush()
        os.fsync(f.fileno())

    def truncate(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.truncate(0)

    def close(self, *, remove: bool) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if remove:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def dead_letter(self, batch: Batch, error: BaseException) -> Path:
        """Keep a batch the store rejected for good in ``dead-letter.jsonl``. Raises OSError."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / DEAD_LETTER_FILE
        line = {**batch.record(), "op": "dead", "error": str(error), "time": time.time()}
        with open(path, "a", encoding="utf-8") as f:
            f.write(dumps_entry(line) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return path

    def adopt_orphans(self) -> Iterator[Batch]:
        """Undelivered batches of journals left by dead processes (their lock is free); those files are
        removed once read."""
        if not self.dir.is_dir():
            return
        for path in sorted(self.dir.glob("spool-*.jsonl")):
            if path == self.path or path.stat().st_size == 0:
                continue  # ours, or just created by a live process that has not locked it yet
            with open(path, "r+", encoding="utf-8") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # a live process owns it
                batches: dict[str, Batch] = {}
                for line in f:
                    with contextlib.suppress(json.JSONDecodeError):  # a torn last line from a crash
                        rec = json.loads(line)
                        if rec.get("op") == "batch":
                            batches[rec["id"]] = Batch(
                                rec["id"], rec["key"], rec.get("entries"), rec.get("state"), late=True
                            )
                        elif rec.get("op") == "done":
                            batches.pop(rec["id"], None)
                log.warning("adopted %d undelivered session-store batches from %s", len(batches), path)
                yield from batches.values()
            path.unlink()


def read_transcript_file(path: Path) -> list[Any]:
    """The entries of the CLI's local transcript file (a torn last line is skipped; no file: none)."""
    out: list[Any] = []
    if not path.exists():
        return out
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict):
                    out.append(entry)
    return out
