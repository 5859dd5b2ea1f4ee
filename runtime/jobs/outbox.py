"""Job results on local disk until SQS has them: written before the first send, removed once a send succeeded.

A result is written here before it is sent (write-ahead), so one that cannot be sent (SQS unreachable, throttled
past the retries, the process stopped mid-send) is never only in memory; :class:`runtime.jobs.service.Jobs`
re-sends what is here in the background and at the next start. Each file holds one message, written atomically
(a temporary file, fsync, rename, fsync of the directory), named by the job's hash and ``seq`` so a job id's
characters never reach a path. A message sent just before a crash may be sent again: consumers deduplicate on
``(job_id, seq)``.

Directory: ``<AGENTKIT_STATE_DIR>/jobs/outbox``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, cast

from runtime.jobs.protocol import ResultMessage

logger = logging.getLogger(__name__)


class Outbox:
    """Result messages not yet known to be in SQS. Thread-safe (writes come from worker threads)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._count = 0
        self.recount()

    def recount(self) -> None:
        """Count what the directory holds (at start, and after a snapshot restore: the disk may not be the one the
        count was taken on); a write no process finished (``.tmp``: never renamed, never sent) is removed."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._lock:
            for leftover in self.directory.glob("*.tmp"):
                leftover.unlink(missing_ok=True)
            self._count = len(self.paths())

    @property
    def count(self) -> int:
        """Messages waiting here."""
        return self._count

    def path_for(self, message: ResultMessage) -> Path:
        digest = hashlib.sha256(f"{message['session_id']}\0{message['job_id']}".encode()).hexdigest()[:40]
        return self.directory / f"{digest}-{message['seq']}.json"

    def put(self, message: ResultMessage) -> Path:
        """Write ``message`` durably; returns its file."""
        path = self.path_for(message)
        tmp = path.with_suffix(".tmp")
        data = json.dumps(message, ensure_ascii=False).encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        with self._lock:
            existed = path.exists()
            os.replace(tmp, path)
            if not existed:
                self._count += 1
        _fsync_dir(self.directory)
        return path

    def remove(self, path: Path) -> None:
        with self._lock:
            try:
                path.unlink()
            except FileNotFoundError:
                return
            self._count -= 1

    def paths(self) -> list[Path]:
        """Waiting messages, oldest first."""
        found = []
        for path in self.directory.glob("*.json"):
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


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
