"""Job results on local disk until SQS has them: written before the first send, removed once a send succeeded.

A result is written here before it is sent (write-ahead), so one that cannot be sent (SQS unreachable, throttled
past the retries, the process stopped mid-send) is never only in memory; :class:`runtime.jobs.service.Jobs`
re-sends what is here in the background and at the next start. Each file holds one message, written atomically
(:mod:`runtime.jobs.disk`: ASCII JSON, a temporary file, fsync, rename, fsync of the directory), named by the job's
hash and ``seq`` so a job id's characters never reach a path. A message sent just before a crash may be sent again:
consumers deduplicate on ``(job_id, seq)``.

A message SQS refuses for good (:attr:`runtime.jobs.sink.EventsUnavailable.permanent`) is moved to ``dead/``
(:meth:`Outbox.dead_letter`): kept for an operator, never sent again, no longer counted as waiting.

Directory: ``<AGENTKIT_STATE_DIR>/jobs/outbox`` (dead letters in ``outbox/dead``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from pathlib import Path
from typing import Any, cast

from runtime.jobs.disk import Writer, encode, job_digest, write_atomic
from runtime.jobs.protocol import ResultMessage

logger = logging.getLogger(__name__)


class Outbox:
    """Result messages not yet known to be in SQS. Thread-safe (writes come from worker threads)."""

    def __init__(self, directory: Path, *, write: Writer = write_atomic) -> None:
        self.directory = directory
        self._write = write
        self._lock = threading.Lock()
        self._sent: set[str] = set()  # sent, but the disk refused their removal
        self._count = 0
        self.recount()

    def recount(self) -> None:
        """Count what the directory holds (at start, and after a snapshot restore: the disk may not be the one the
        count was taken on); a write no process finished (``.tmp``: never renamed, never sent) is removed."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._lock:
            for leftover in self.directory.glob("*.tmp"):
                with contextlib.suppress(OSError):  # a read-only volume: a leftover is ignored, never sent
                    leftover.unlink(missing_ok=True)
            self._count = len(self.paths())

    @property
    def count(self) -> int:
        """Messages waiting here."""
        return self._count

    def path_for(self, message: ResultMessage) -> Path:
        return (
            self.directory / f"{job_digest(message['session_id'], message['job_id'])}-{message['seq']}.json"
        )

    def put(self, message: ResultMessage) -> Path:
        """Write ``message`` durably; returns its file. Raises ``OSError`` when the disk refuses it."""
        path = self.path_for(message)
        data = encode(message)
        with self._lock:
            existed = path.exists()
            self._write(path, data)
            if not existed:
                self._count += 1
        return path

    def has_result(self, digest: str, after_seq: int) -> bool:
        """Is a message of the job ``digest`` with a ``seq`` above ``after_seq`` waiting here?"""
        for path in self.directory.glob(f"{digest}-*.json"):
            seq = path.stem.rpartition("-")[2]
            if seq.isdigit() and int(seq) > after_seq:
                return True
        return False

    def dead_letter(self, path: Path, message: ResultMessage) -> Path | None:
        """Set ``message`` aside in ``dead/`` (SQS refused it for good); it is no longer waiting. Returns where it
        was kept (None: the disk refused that too; it is then only in the log)."""
        dead = self.directory / "dead"
        target = dead / path.name
        try:
            dead.mkdir(exist_ok=True)
            if path.exists():
                with self._lock:
                    path.replace(target)
                    self._count -= 1
            else:
                self._write(target, encode(message))
        except OSError as exc:
            logger.error("job outbox: could not keep the refused result %s in %s: %s", path.name, dead, exc)
            self.remove(path)
            return None
        return target

    def remove(self, path: Path) -> None:
        """``path`` was sent: it no longer waits. A file the disk will not let go (read-only volume) is no longer
        counted or listed by this process; a next process sends it once more (consumers deduplicate)."""
        with self._lock:
            if path.name in self._sent:
                return
            try:
                path.unlink()
            except FileNotFoundError:
                return
            except OSError as exc:
                logger.error("job outbox: %s was sent but cannot be removed (%s)", path.name, exc)
                self._sent.add(path.name)
            self._count -= 1

    def paths(self) -> list[Path]:
        """Waiting messages, oldest first."""
        found = []
        for path in self.directory.glob("*.json"):
            if path.name in self._sent:
                continue
            with contextlib.suppress(FileNotFoundError):
                found.append((path.stat().st_mtime_ns, path.name, path))
        return [path for _, _, path in sorted(found)]

    def read(self, path: Path) -> ResultMessage | None:
        """The message in ``path`` (None, and the file set aside as ``.bad``, when it cannot be read)."""
        try:
            data: Any = json.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.error("job outbox: %s is unreadable (%s); kept as %s.bad", path.name, exc, path.name)
            with self._lock, contextlib.suppress(OSError):
                path.rename(path.with_name(path.name + ".bad"))
                self._count -= 1
            return None
        return cast(ResultMessage, data)
