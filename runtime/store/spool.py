"""Nothing lost: a ``SessionStore`` wrapper that spools failed appends to local disk and redelivers them.

When the inner store's ``append`` (or ``put_state``) raises — throttled, down, timing out — the batch goes to
an append-only JSONL journal under ``spool_dir`` and the call returns normally, so the turn completes. A
background asyncio task (started lazily on the running loop) redelivers spooled batches in FIFO order with
exponential backoff; ``flush()`` / ``close()`` try once more at shutdown. While a key has undelivered batches,
new batches for that key are spooled behind them, so order is kept. ``load()`` returns the inner store's
entries followed by the undelivered ones (deduplicated on ``uuid``), so a resume sees everything.

Every failed inner call is logged and reported through ``on_error(exc)`` (the runtime maps it to the
``SessionStoreErrors`` metric). A journal left by a dead process (its ``flock`` is free) is adopted on first
use. The journal is truncated once everything in it is delivered.

Assumes one event loop uses the wrapper at a time (the runtime's worker loop). Environment: none.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # importing claude_agent_sdk costs ~1 s: only for type checking here
    from claude_agent_sdk.types import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

log = logging.getLogger(__name__)


@dataclass
class _Batch:
    id: str
    key: SessionKey
    entries: list[SessionStoreEntry] | None = None  # a transcript batch ...
    state: dict[str, Any] | None = None  # ... or a per-session state write (key["session_id"] only)


def _ck(key: SessionKey | SessionListSubkeysKey) -> tuple[str, str, str | None]:
    return (key["project_key"], key["session_id"], key.get("subpath"))  # type: ignore[return-value]


class SpoolingSessionStore:
    """Wrap ``inner`` (a ``SessionStore`` with ``get_state``/``put_state``) so failed writes are never lost.

    Args:
        inner: the real store.
        spool_dir: directory for the journal ``spool-<pid>-<rand>.jsonl`` (created).
        on_error: called with each exception of a failed inner write (initial or retry); must not raise.
        retry_initial_s / retry_max_s: backoff of the background redelivery (doubles per failure).
        write_behind: journal every write locally and deliver it in the background at once, so a turn never
            waits for the remote store (``AGENTKIT_STORE_WRITE_BEHIND``). The SDK then sees the transcript as
            saved once it is on local disk; a microVM lost in the delivery window loses that tail.

    Other ``SessionStore`` methods delegate to ``inner``; their exceptions propagate.
    """

    def __init__(
        self,
        inner: Any,
        *,
        spool_dir: Path,
        on_error: Callable[[BaseException], None] | None = None,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 30.0,
        write_behind: bool = False,
    ) -> None:
        self.inner = inner
        self.spool_dir = Path(spool_dir)
        self._on_error = on_error
        self._initial = retry_initial_s
        self._max = retry_max_s
        self._pending: deque[_Batch] = deque()
        self._file: IO[str] | None = None
        self._path = self._journal_name()
        self._task: asyncio.Task[None] | None = None
        self._delivering = False
        self._adopted = False
        self._write_behind = write_behind

    # ------------------------------------------------------------------ journal
    def _journal_name(self) -> Path:
        return self.spool_dir / f"spool-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"

    def after_restore(self) -> None:
        """A snapshot restore (:mod:`runtime.restore`): a journal not opened yet gets a name of its own (the pid is
        the image's, the same in every restored process), and the inner store renews what it holds."""
        if self._file is None:
            self._path = self._journal_name()
        inner = getattr(self.inner, "after_restore", None)
        if callable(inner):
            inner()

    def _journal(self) -> IO[str]:
        if self._file is None:
            self.spool_dir.mkdir(parents=True, exist_ok=True)
            self._file = open(self._path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the wrapper's life
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return self._file

    def _write(self, record: dict[str, Any]) -> None:
        f = self._journal()
        f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())

    def _spool(self, batch: _Batch) -> None:
        """Queue ``batch`` for delivery and journal it. A journal that cannot be written (disk full, read-only
        volume) does not lose the batch: it stays queued in memory and is delivered when the store is back;
        only a process death before then loses it, and the failure is logged and reported."""
        self._pending.append(batch)
        try:
            self._write(
                {
                    "op": "batch",
                    "id": batch.id,
                    "key": batch.key,
                    "entries": batch.entries,
                    "state": batch.state,
                }
            )
        except OSError as exc:
            log.error(
                "spool journal %s could not be written (%s); %d batch(es) are held in memory until the store "
                "is back",
                self._path,
                exc,
                len(self._pending),
            )
            if self._on_error is not None:
                with contextlib.suppress(Exception):
                    self._on_error(exc)

    def _adopt_orphans(self) -> None:
        """Take over journals of dead processes (their lock is free) and queue what they had not delivered."""
        if self._adopted:
            return
        self._adopted = True
        if not self.spool_dir.is_dir():
            return
        for path in sorted(self.spool_dir.glob("spool-*.jsonl")):
            if path == self._path or path.stat().st_size == 0:
                continue  # ours, or just created by a live process that has not locked it yet
            with open(path, "r+", encoding="utf-8") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # a live process owns it
                batches: dict[str, _Batch] = {}
                for line in f:
                    with contextlib.suppress(json.JSONDecodeError):  # a torn last line from a crash
                        rec = json.loads(line)
                        if rec.get("op") == "batch":
                            batches[rec["id"]] = _Batch(
                                rec["id"], rec["key"], rec.get("entries"), rec.get("state")
                            )
                        elif rec.get("op") == "done":
                            batches.pop(rec["id"], None)
                for batch in batches.values():
                    self._spool(batch)
                log.warning("adopted %d undelivered session-store batches from %s", len(batches), path)
            path.unlink()

    def _has_pending(self, key: SessionKey) -> bool:
        ck = _ck(key)
        return any(b.entries is not None and _ck(b.key) == ck for b in self._pending)

    def _report(self, exc: BaseException, what: str) -> None:
        log.warning("session store %s failed, spooled for retry: %s", what, exc)
        if self._on_error is not None:
            try:
                self._on_error(exc)
            except Exception:
                log.exception("on_error callback raised")

    @property
    def pending_count(self) -> int:
        """Batches (transcript or state) spooled and not yet delivered."""
        return len(self._pending)

    # ------------------------------------------------------------------ delivery
    async def _deliver(self) -> bool:
        """Deliver pending batches in order until one fails; True when the spool is empty."""
        if self._delivering:
            return not self._pending
        self._delivering = True
        try:
            while self._pending:
                batch = self._pending[0]
                try:
                    if batch.entries is not None:
                        await self.inner.append(batch.key, batch.entries)
                    else:
                        await self.inner.put_state(batch.key["session_id"], batch.state or {})
                except Exception as exc:
                    self._report(exc, "retry")
                    return False
                self._pending.popleft()
                with contextlib.suppress(
                    OSError
                ):  # a full disk: the batch is delivered, the mark is optional
                    self._write({"op": "done", "id": batch.id})
            if self._file is not None:
                with contextlib.suppress(OSError):
                    self._file.truncate(0)
            return True
        finally:
            self._delivering = False

    async def _retry_loop(self) -> None:
        delay = self._initial
        while self._pending:
            await asyncio.sleep(delay)
            if await self._deliver():
                return
            delay = min(delay * 2, self._max)

    def _ensure_task(self) -> None:
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._task = loop.create_task(self._retry_loop(), name="session-store-spool-retry")

    async def _deliver_now(self) -> None:
        if not await self._deliver():
            await self._retry_loop()

    async def _write_or_spool(self, batch: _Batch, blocked: bool) -> None:
        self._adopt_orphans()
        if self._write_behind:
            # Journal locally and return; delivery starts at once in the background.
            self._spool(batch)
            loop = asyncio.get_running_loop()
            if self._task is None or self._task.done() or self._task.get_loop() is not loop:
                self._task = loop.create_task(self._deliver_now(), name="session-store-write-behind")
            return
        if not blocked:
            try:
                if batch.entries is not None:
                    await self.inner.append(batch.key, batch.entries)
                else:
                    await self.inner.put_state(batch.key["session_id"], batch.state or {})
                return
            except Exception as exc:
                self._report(exc, "append" if batch.entries is not None else "put_state")
        self._spool(batch)
        self._ensure_task()

    # ------------------------------------------------------------------ SessionStore protocol
    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Append through ``inner``; on failure (or behind earlier failures of this key) spool. Never raises
        for store failures, nor for a full spool disk (the batch is then held in memory)."""
        if not entries:
            return
        batch = _Batch(uuid.uuid4().hex, dict(key), list(entries))  # type: ignore[arg-type]
        await self._write_or_spool(batch, blocked=self._has_pending(key))

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Inner entries followed by undelivered spooled ones (dedup on ``uuid``). Inner errors propagate."""
        self._adopt_orphans()
        stored = await self.inner.load(key)
        ck = _ck(key)
        spooled = [e for b in self._pending if b.entries is not None and _ck(b.key) == ck for e in b.entries]
        if not spooled:
            return stored
        merged = list(stored or [])
        seen = {e.get("uuid") for e in merged if e.get("uuid") is not None}
        for entry in spooled:
            uid = entry.get("uuid")
            if uid is not None:
                if uid in seen:
                    continue
                seen.add(uid)
            merged.append(entry)
        return merged

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        return list(await self.inner.list_sessions(project_key))

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        return list(await self.inner.list_session_summaries(project_key))

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        return list(await self.inner.list_subkeys(key))

    async def delete(self, key: SessionKey) -> None:
        """Drop undelivered batches of the key (a main key also its subkeys), then delete in ``inner``."""
        pk, sid, sub = _ck(key)

        def doomed(b: _Batch) -> bool:
            same_session = b.entries is not None and b.key["project_key"] == pk and b.key["session_id"] == sid
            return same_session and (sub is None or b.key.get("subpath") == sub)

        for batch in [b for b in self._pending if doomed(b)]:
            self._pending.remove(batch)
            self._write({"op": "done", "id": batch.id})
        await self.inner.delete(key)

    async def get_state(self, session_id: str) -> dict[str, Any] | None:
        """The newest undelivered state if any, else the inner store's."""
        for batch in reversed(self._pending):
            if batch.state is not None and batch.key["session_id"] == session_id:
                return dict(batch.state)
        result: dict[str, Any] | None = await self.inner.get_state(session_id)
        return result

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None:
        """Write through ``inner``; on failure spool it (last write wins). Never raises for store failures."""
        blocked = any(b.state is not None and b.key["session_id"] == session_id for b in self._pending)
        batch = _Batch(uuid.uuid4().hex, {"project_key": "", "session_id": session_id}, None, dict(state))
        await self._write_or_spool(batch, blocked=blocked)

    # ------------------------------------------------------------------ shutdown
    async def flush(self) -> bool:
        """Try to deliver everything spooled now; True when nothing is left."""
        self._adopt_orphans()
        return await self._deliver()

    async def close(self) -> None:
        """Stop the retry task, flush once more and release the journal (kept on disk if not empty)."""
        if (
            self._task is not None
            and not self._task.done()
            and self._task.get_loop() is asyncio.get_running_loop()
        ):
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None
        delivered = await self.flush()
        if delivered:
            log.info("session store spool empty at close")
        else:
            log.error(
                "%d session-store batches still undelivered at close; kept in %s",
                len(self._pending),
                self._path,
            )
        if self._file is not None:
            self._file.close()
            self._file = None
        inner_close = getattr(self.inner, "close", None)
        if inner_close is not None:
            result = inner_close()
            if asyncio.iscoroutine(result):
                await result
            if delivered:
                with contextlib.suppress(FileNotFoundError):
                    self._path.unlink()
