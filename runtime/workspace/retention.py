"""Retention of each session's own directories: removed once the session has gone unused for a while.

A session that was sent a snapshot, or whose CLI runs confined (:func:`runtime.guard.confine.session_workspace`),
has directories of its own under the state dir that outlive its CLI process:

    <state dir>/workspaces/<claude session id>/   its workspace (the agent's cwd)
    <state dir>/snapshots/<claude session id>/    the snapshot's history, and this module's two small files
    <state dir>/tool-disk/<claude session id>/    the empty mount point of its tool disk (AGENTKIT_TOOL_DISK_MB)

On AgentCore they go with the session's microVM; a long-lived local or self-hosted runtime would keep them until the
disk is full. :class:`Retention` removes them once the session has not been used for ``retention_s``:

- "Used" is what the runtime itself records, never a file time the agent can change: each turn
  (:meth:`Retention.touch`, before the turn runs), each sweep that finds the session warm, and the session's close
  (:meth:`Retention.note_used`) write the wall-clock time to ``snapshots/<id>/last-used``, a directory the agent
  cannot reach. A directory with no such record (made by an older runtime) starts its clock when a sweep first
  sees it.
- A session that is warm (its CLI process open or closing), busy, or has a job queued or running (``in_use``) is
  never touched, however old its record.
- Nothing is followed through a symbolic link: a link where a directory should be is removed as a link, and the
  trees are removed with :func:`shutil.rmtree`, which does not follow links (its fd-based walk on Linux), or past
  Python's recursion limit with coreutils' ``rm -rf --one-file-system``, which does not either.
- A removed snapshot session keeps a small marker, ``snapshots/<id>/expired``, so its next turn without a snapshot
  is told to send it again (:class:`runtime.errors.WorkspaceExpired`) instead of quietly running somewhere else;
  a turn with a snapshot works as before (the conversation is in the session store, not in these directories).
  The marker itself goes after :data:`MARKER_KEEP_S`.
- Sweeps run at start and then every ``interval_s`` on the event loop that owns the sessions; the file work runs
  in a thread. One log line per removal says what was freed.

Environment variables: none read here (``AGENTKIT_WORKSPACE_RETENTION_HOURS`` reaches it through
:class:`runtime.config.settings.Settings`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import stat
import subprocess
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

#: The runtime's record of a session's last use (epoch seconds), in the session's trusted snapshot directory.
LAST_USED = "last-used"
#: Left in place of a removed snapshot (epoch seconds of the removal): the session's next turn is told why.
EXPIRED = "expired"
#: How long the marker of a removed snapshot is kept (it is a few bytes; a session older than this is forgotten).
MARKER_KEEP_S = 30 * 86_400.0
#: Bounds of the time between two sweeps (a sweep lists two directories and reads one small file per session).
MIN_INTERVAL_S, MAX_INTERVAL_S = 1.0, 3600.0
#: Claude session ids are UUIDs (runtime.identity); anything else in these directories is not a session's.
_SESSION_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Removal:
    """One session's directories removed by a sweep."""

    claude_session_id: str
    freed_bytes: int
    unused_s: float
    had_snapshot: bool


def interval_for(retention_s: float) -> float:
    """Sweep a day's retention every hour; shorter ones proportionally more often (at least a second apart)."""
    return min(max(retention_s / 24, MIN_INTERVAL_S), MAX_INTERVAL_S)


class Retention:
    """Removes the workspaces and snapshots of sessions unused for ``retention_s``.

    Args:
        state_dir: the runtime's state dir (``AGENTKIT_STATE_DIR``).
        retention_s: seconds a session's directories are kept after its last use (> 0).
        in_use: the Claude session ids that must not be touched now (warm, busy, with a job); called on the loop.
        wall: epoch seconds (injected in tests); the record outlives the process, so not a monotonic clock.
        interval_s: seconds between two sweeps (default :func:`interval_for`).
    """

    def __init__(
        self,
        *,
        state_dir: Path,
        retention_s: float,
        in_use: Callable[[], Collection[str]],
        wall: Callable[[], float] = time.time,
        interval_s: float | None = None,
    ) -> None:
        if retention_s <= 0:
            raise ValueError(f"retention_s must be positive, got {retention_s}")
        self.workspaces = state_dir / "workspaces"
        self.snapshots = state_dir / "snapshots"
        self.disks = state_dir / "tool-disk"
        self.retention_s = retention_s
        self.interval_s = interval_s if interval_s is not None else interval_for(retention_s)
        self._in_use = in_use
        self._wall = wall
        self._seen: dict[str, float] = {}  # last uses noted on the loop, written by the next sweep
        self._removing: dict[str, asyncio.Event] = {}
        self._task: asyncio.Task[None] | None = None
        self._stopped = False
        self._lock: asyncio.Lock | None = None

    # -- on the event loop --------------------------------------------------------------------------------------

    def note_used(self, claude_session_id: str) -> None:
        """The session was used now (e.g. its CLI process just closed); recorded on disk by the next sweep."""
        self._seen[claude_session_id] = self._wall()

    async def settled(self, claude_session_id: str) -> None:
        """Wait until a removal of the session's directories that is under way has finished (a turn of the
        session must see them either whole or gone)."""
        event = self._removing.get(claude_session_id)
        if event is not None:
            await event.wait()

    def expired(self, claude_session_id: str) -> bool:
        """Whether the session's snapshot was removed by a sweep (and no new one was sent since)."""
        return _is_file(self.snapshots / claude_session_id / EXPIRED)

    def start(self) -> None:
        """Sweep now and then every ``interval_s`` (idempotent; call on the loop that owns the sessions)."""
        if self._task is None and not self._stopped:
            self._task = asyncio.create_task(self._run(), name="workspace-retention")

    async def stop(self) -> None:
        """Stop sweeping for good (a removal already under way completes first)."""
        self._stopped = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def aclose(self) -> None:
        """Stop sweeping and record the last uses noted since the last sweep (call after the sessions closed)."""
        await self.stop()
        seen, self._seen = self._seen, {}
        await asyncio.to_thread(self._record, seen)

    async def sweep(self) -> list[Removal]:
        """Remove what is due now; returns what was removed. One sweep at a time."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            now = self._wall()
            for sid in self._in_use():
                self._seen[sid] = now
            seen, self._seen = self._seen, {}
            due = await asyncio.to_thread(self._due, seen, now)
            # Decided on the loop, with no await between the check and the mark: a turn of the session that
            # arrives from here on waits in settled() until its directories are gone, then finds the marker.
            in_use = set(self._in_use())
            due = [(sid, unused) for sid, unused in due if sid not in in_use]
            for sid, _ in due:
                self._removing[sid] = asyncio.Event()
            work = asyncio.ensure_future(asyncio.to_thread(self._remove_all, due))
            try:
                return await asyncio.shield(work)
            finally:
                if not work.done():
                    # cancelled (shutdown): the thread goes on, and its sessions' turns wait until it is done
                    await asyncio.wait({work})
                for sid, _ in due:
                    self._removing.pop(sid).set()

    async def _run(self) -> None:
        while True:
            try:
                await self.sweep()
            except Exception:  # a sweep that failed is tried again next time; the runtime goes on
                logger.exception("workspace retention sweep failed")
            await asyncio.sleep(self.interval_s)

    # -- in a thread --------------------------------------------------------------------------------------------

    def touch(self, claude_session_id: str) -> None:
        """Record that the session is used now, if it has directories of its own. Blocking: run it in a thread."""
        self._record({claude_session_id: self._wall()})

    def _record(self, seen: dict[str, float]) -> None:
        for sid, at in seen.items():
            if _SESSION_RE.match(sid) and (_is_dir(self.workspaces / sid) or _is_dir(self.snapshots / sid)):
                self._write(sid, LAST_USED, at)

    def _write(self, sid: str, name: str, value: float) -> None:
        home = self.snapshots / sid
        if not _is_dir(home):
            if os.path.lexists(home):
                return  # not a directory the runtime made: leave it alone
            home.mkdir(parents=True, exist_ok=True, mode=0o700)  # exist_ok: a snapshot being installed now
        tmp = home / f".{name}.tmp"
        tmp.unlink(missing_ok=True)
        tmp.write_text(f"{value:.3f}\n", encoding="ascii")
        os.replace(tmp, home / name)

    def _read(self, sid: str, name: str) -> float | None:
        path = self.snapshots / sid / name
        if not _is_file(path):
            return None
        try:
            return float(path.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            return None

    def _due(self, seen: dict[str, float], now: float) -> list[tuple[str, float]]:
        """Record the uses noted since the last sweep; the sessions not used for ``retention_s`` (with how long)."""
        self._record(seen)
        due: list[tuple[str, float]] = []
        for sid in sorted(_sessions(self.workspaces) | _sessions(self.snapshots)):
            has_tree = os.path.lexists(self.workspaces / sid)
            expired_at = self._read(sid, EXPIRED)
            if expired_at is not None and not has_tree:
                if now - expired_at > MARKER_KEEP_S:
                    shutil.rmtree(self.snapshots / sid, ignore_errors=True)
                continue
            last = self._read(sid, LAST_USED)
            if last is None:  # first seen by this runtime: its clock starts now
                self._write(sid, LAST_USED, now)
                continue
            if now - last >= self.retention_s:
                due.append((sid, now - last))
        return due

    def _remove_all(self, due: list[tuple[str, float]]) -> list[Removal]:
        removed = []
        for sid, unused in due:
            try:
                removed.append(self._remove(sid, unused))
            except Exception as exc:  # one session's directories must not keep the others from going
                logger.warning("could not remove the workspace of session %s: %r", sid, exc)
        return removed

    def _remove(self, sid: str, unused_s: float) -> Removal:
        tree, home, disk = self.workspaces / sid, self.snapshots / sid, self.disks / sid
        had_snapshot = _is_dir(home / "base.git")
        freed = _usage(tree) + _usage(home)
        _remove_tree(tree)
        _remove_tree(home)
        if _is_dir(disk):
            with contextlib.suppress(OSError):
                disk.rmdir()  # an empty mount point; never anything inside it
        if had_snapshot:
            self._write(sid, EXPIRED, self._wall())
        logger.info(
            "workspace retention: removed the %s of session %s, unused for %.1f h: %.1f MiB freed",
            "workspace and snapshot" if had_snapshot else "workspace",
            sid,
            unused_s / 3600,
            freed / 2**20,
        )
        return Removal(claude_session_id=sid, freed_bytes=freed, unused_s=unused_s, had_snapshot=had_snapshot)


def _sessions(root: Path) -> set[str]:
    try:
        with os.scandir(root) as entries:
            return {e.name for e in entries if _SESSION_RE.match(e.name)}
    except OSError:
        return set()


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _usage(path: Path) -> int:
    """Bytes of disk ``path`` occupies (allocated blocks, as ``du``), without following links. Iterative: the agent
    can nest directories deeper than Python's recursion limit."""
    total, stack = 0, [path]
    while stack:
        top = stack.pop()
        try:
            st = os.lstat(top)
        except OSError:
            continue
        total += st.st_blocks * 512
        if stat.S_ISDIR(st.st_mode):
            try:
                with os.scandir(top) as entries:
                    stack.extend(Path(e.path) for e in entries)
            except OSError:
                continue
    return total


def _remove_tree(path: Path) -> None:
    """Remove ``path`` without following links: a link (or file) is unlinked, a directory removed with its content,
    even where the agent made parts of it read-only."""
    if not os.path.lexists(path):
        return
    if not _is_dir(path):
        path.unlink()
        return
    try:
        _rmtree(path)
    except PermissionError:
        # a non-root runtime, and the agent made a directory read-only: open them up first
        _open_up(path)
        _rmtree(path)


def _rmtree(path: Path) -> None:
    try:
        shutil.rmtree(path)
    except RecursionError:
        # Python 3.11's rmtree recurses per level and the agent can nest deeper than that; coreutils' rm walks any
        # depth, never through a link, and stays on this filesystem.
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], check=True, timeout=600)


def _open_up(path: Path) -> None:
    """Make ``path`` and every directory below it the owner's to write (links are not followed: only entries that
    are directories themselves, by ``lstat``, are changed)."""
    stack = [path]
    while stack:
        top = stack.pop()
        # O_PATH opens a directory its owner may not read; O_NOFOLLOW fails on a link, so nothing is followed; the
        # chmod goes through the descriptor (/proc/self/fd, proc(5)), not through the name again.
        fd = os.open(top, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.chmod(f"/proc/self/fd/{fd}", 0o700)
        finally:
            os.close(fd)
        with os.scandir(top) as entries:
            stack.extend(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
