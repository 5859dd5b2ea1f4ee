"""Accepted jobs on local disk, so a runtime that dies mid-job still reports it, and a job's ``seq`` never repeats.

One small file per job (named by :func:`runtime.jobs.disk.job_digest`), written atomically:

- at acceptance, before the ``202``: ``state: running``, the job's id, session, context and the last ``seq`` used;
- before each progress event is sent: the ``seq`` it takes (reserved first, so an event that reached SQS is never
  numbered again after a crash);
- once the job's result is in the outbox (or, when the outbox could not be written, in SQS): ``state: done`` with
  the result's ``seq``.

At the next start on the same disk (:meth:`runtime.jobs.service.Jobs.start`) every ``running`` entry whose result
is not in the outbox gets an ``interrupted`` result (its ``seq`` one above the last reserved), so the consumer
learns what happened instead of waiting for ever. A job id accepted again after a restart continues numbering
above its earlier run's ``seq``, so ``(job_id, seq)`` (and a FIFO queue's deduplication id) stays unique.

``done`` entries are remembered up to :data:`REMEMBERED` files (oldest removed first). Writes are best-effort: a
disk that refuses one is logged, the job runs and reports in this process all the same.

Directory: ``<AGENTKIT_STATE_DIR>/jobs/accepted``.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from runtime.jobs.disk import Writer, encode, job_digest, write_atomic

logger = logging.getLogger(__name__)

#: Journal files kept per disk (finished jobs beyond it are forgotten, oldest first).
REMEMBERED = 4096


@dataclass(frozen=True)
class Entry:
    """One job as the journal knows it."""

    job_id: str
    session_id: str
    context: dict[str, Any] = field(default_factory=dict)
    seq: int = 0
    state: Literal["running", "done"] = "running"
    accepted_at: float = 0.0

    @property
    def digest(self) -> str:
        return job_digest(self.session_id, self.job_id)


class Journal:
    """The jobs accepted on this disk. Methods block (call them from the jobs' threads)."""

    def __init__(
        self, directory: Path, *, write: Writer = write_atomic, remembered: int = REMEMBERED
    ) -> None:
        self.directory = directory
        self._write = write
        self._remembered = remembered
        with contextlib.suppress(OSError):
            directory.mkdir(parents=True, exist_ok=True)

    def _path(self, digest: str) -> Path:
        return self.directory / f"{digest}.json"

    def last_seq(self, session_id: str, job_id: str) -> int:
        """The highest ``seq`` an earlier run of this job used on this disk (0: none known)."""
        entry = self._read(self._path(job_digest(session_id, job_id)))
        return entry.seq if entry is not None else 0

    def record(self, entry: Entry) -> bool:
        """Write ``entry`` (replacing the job's earlier one). False: the disk refused it (logged)."""
        try:
            self._write(self._path(entry.digest), encode(asdict(entry)))
        except OSError as exc:
            logger.error(
                "job %s: journal not written (%s); if the runtime dies before the job ends, it is not reported",
                entry.job_id,
                exc,
            )
            return False
        return True

    def done(self, entry: Entry, seq: int) -> bool:
        return self.record(replace(entry, seq=seq, state="done"))

    def running(self) -> list[Entry]:
        """Jobs a process accepted and did not finish, oldest first."""
        found = [entry for entry in map(self._read, self._by_age()) if entry is not None]
        return [entry for entry in found if entry.state == "running"]

    def prune(self) -> None:
        """Forget the oldest finished jobs beyond :data:`REMEMBERED`."""
        paths = self._by_age()
        for path in paths[: max(0, len(paths) - self._remembered)]:
            entry = self._read(path)
            if entry is not None and entry.state == "done":
                with contextlib.suppress(OSError):
                    path.unlink()

    def _by_age(self) -> list[Path]:
        found = []
        for path in self.directory.glob("*.json"):
            with contextlib.suppress(OSError):
                found.append((path.stat().st_mtime_ns, path.name, path))
        return [path for _, _, path in sorted(found)]

    @staticmethod
    def _read(path: Path) -> Entry | None:
        try:
            data = json.loads(path.read_bytes())
            return Entry(
                job_id=str(data["job_id"]),
                session_id=str(data["session_id"]),
                context=dict(data.get("context") or {}),
                seq=int(data.get("seq") or 0),
                state="done" if data.get("state") == "done" else "running",
                accepted_at=float(data.get("accepted_at") or 0.0),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            logger.error("job journal: %s is unreadable (%s); ignored", path.name, exc)
            return None
