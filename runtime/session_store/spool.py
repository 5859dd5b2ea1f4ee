"""Nothing lost on this microVM's disk: a ``SessionStore`` wrapper with a write-ahead journal and redelivery.

Every transcript batch (and ``put_state``) is journaled to local disk *before* the remote store is called
(:mod:`runtime.session_store.journal`), so neither a slow call cut off by the SDK's 60 s mirror timeout (which
reaches here as ``CancelledError``) nor a failing store loses it. The remote call is bounded by
``call_timeout_s`` (default 20 s, well under the SDK's limit); a call that fails or runs over leaves the
batch queued, and a background asyncio task redelivers queued batches in FIFO order with exponential
backoff (``flush()`` tries once more; ``close()`` keeps trying for up to ``shutdown_flush_s``, default 10 s, of
the 15 s AgentCore gives a terminating session). A late batch is fenced (the AgentCore store re-reads the session
to learn about a newer writer) once per session per delivery round, not once per batch. While a key has undelivered batches, new
batches for that key queue behind them, so order is kept. ``load_all()`` returns the inner store's entries
followed by the undelivered ones (deduplicated on ``uuid``), so a resume on this microVM sees everything;
``load()`` (what the SDK resumes from) gives a main transcript from its last compact boundary on
(:mod:`runtime.session_store.compaction`).

- A batch the store rejects for good (``SessionStoreError.retryable`` false, e.g. a validation error) is
  dead-lettered: kept in ``dead-letter.jsonl``, logged at ERROR, counted as ``SessionStoreDeadLetters``;
  later batches carry on.
- ``mirror_error`` (the SDK gave a batch up): :meth:`recover_from_transcript` appends what the CLI's local
  transcript holds and the store lacks (uuid dedup).
- ``strict``: the write is retried (bounded by ``strict_deadline_s``) before the call returns, so the SDK
  yields the turn's result only once the batch is in the remote store; when the deadline passes the batch
  stays queued and the call raises, so the SDK reports ``mirror_error`` and the turn fails instead of being
  acknowledged (``AGENTKIT_STORE_STRICT``).
- ``write_behind``: journal and return at once; delivery runs in the background (``AGENTKIT_STORE_WRITE_BEHIND``).
- :attr:`pending_count` tells the runtime to keep ``/ping`` busy until the queue is empty, so AgentCore does not
  reap the microVM while its disk holds the only copy.

Every failed inner call is logged and reported through ``on_error(exc)`` (``SessionStoreErrors``); named
events (``SessionStoreDeadLetters``) go to ``on_event(name)``. A journal left by a dead process is adopted on
first use. Assumes one event loop uses the wrapper at a time (the runtime's worker loop). Environment: none.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import SessionStoreError
from runtime.session_store.codec import dumps_entry
from runtime.session_store.compaction import resume_view
from runtime.session_store.journal import Batch, Journal, read_transcript_file

if TYPE_CHECKING:  # importing claude_agent_sdk costs ~1 s: only for type checking here
    from claude_agent_sdk.types import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

log = logging.getLogger(__name__)

#: The SDK gives each mirror append 60 s and does not retry a timeout (``SEND_TIMEOUT_SECONDS`` in
#: ``claude_agent_sdk/_internal/transcript_mirror_batcher.py``); one inner call must end well before.
DEFAULT_CALL_TIMEOUT_S = 20.0
DEFAULT_STRICT_DEADLINE_S = 30.0
#: How long ``close()`` keeps redelivering (with the usual backoff) before it leaves the rest on disk. AgentCore gives
#: a session's termination "up to 15 seconds due to logging and other process completion" (developer guide,
#: runtime-lifecycle-settings); the sessions close in that time too, and the jobs alongside the flush
#: (``runtime.process.shutdown.close_together``, which passes its own budget).
DEFAULT_SHUTDOWN_FLUSH_S = 10.0


def _ck(key: SessionKey | SessionListSubkeysKey) -> tuple[str, str, str | None]:
    return (key["project_key"], key["session_id"], key.get("subpath"))  # type: ignore[return-value]


def _digest(key: SessionKey, entries: list[SessionStoreEntry]) -> str:
    return hashlib.sha256(dumps_entry([_ck(key), entries]).encode()).hexdigest()


class SpoolingSessionStore:
    """Wrap ``inner`` (a ``SessionStore`` with ``get_state``/``put_state``) so accepted writes are never lost.

    Args:
        inner: the real store. When it has ``append_batch(key, entries, *, batch_id, fence)`` (the AgentCore
            store), batches keep their identity across retries and late deliveries are fenced.
        spool_dir: directory for the journal and the dead-letter file (created).
        on_error: called with each exception of a failed inner write (initial or retry); must not raise.
        on_event: called with a metric name (``SessionStoreDeadLetters``); must not raise.
        retry_initial_s / retry_max_s: backoff of the background redelivery (doubles per failure).
        call_timeout_s: bound on one inner write.
        write_behind / strict: see the module docstring (mutually exclusive).
        strict_deadline_s: how long a strict write retries before it raises.

    Raises:
        ValueError: ``write_behind`` and ``strict`` together, or a timeout not above 0.
    Other ``SessionStore`` methods delegate to ``inner``; their exceptions propagate.
    """

    def __init__(
        self,
        inner: Any,
        *,
        spool_dir: Path,
        on_error: Callable[[BaseException], None] | None = None,
        on_event: Callable[[str], None] | None = None,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 30.0,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        write_behind: bool = False,
        strict: bool = False,
        strict_deadline_s: float = DEFAULT_STRICT_DEADLINE_S,
        shutdown_flush_s: float = DEFAULT_SHUTDOWN_FLUSH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if write_behind and strict:
            raise ValueError("write-behind and strict store modes exclude each other")
        if call_timeout_s <= 0 or strict_deadline_s <= 0:
            raise ValueError("store timeouts must be above 0")
        self.inner = inner
        self.spool_dir = Path(spool_dir)
        self._on_error = on_error
        self._on_event = on_event
        self._initial = retry_initial_s
        self._max = retry_max_s
        self._call_timeout = call_timeout_s
        self._write_behind = write_behind
        self._strict = strict
        self._strict_deadline = strict_deadline_s
        self._shutdown_flush = shutdown_flush_s
        self._fenced: set[tuple[str, str, str | None]] = set()  # keys re-read in this delivery round
        self._clock = clock
        self._pending: deque[Batch] = deque()
        self._journal = Journal(self.spool_dir)
        self._task: asyncio.Task[None] | None = None
        self._delivering = False
        self._adopted = False
        self.dead_letters = 0
        self._recoveries: set[asyncio.Task[None]] = set()
        self._closing = False

    @property
    def _path(self) -> Path:
        return self._journal.path

    def after_restore(self) -> None:
        """A snapshot restore (:mod:`runtime.process.restore`): a journal not opened yet gets a name of its own (the pid is
        the image's, the same in every restored process), and the inner store renews what it holds."""
        self._journal.renew_name()
        inner = getattr(self.inner, "after_restore", None)
        if callable(inner):
            inner()

    # ------------------------------------------------------------------ journal
    def _write_ahead(self, batch: Batch) -> None:
        """Journal ``batch`` before anything else happens to it. A journal that cannot be written (disk full,
        read-only volume) does not lose the batch while the process lives: it is delivered from memory."""
        try:
            self._journal.write(batch.record())
            batch.journaled = True
        except OSError as exc:
            log.error(
                "spool journal %s could not be written (%s); the batch is held in memory until delivered",
                self._path,
                exc,
            )
            self._call(self._on_error, exc)

    def _mark_done(self, batch: Batch) -> None:
        if batch.journaled:
            with contextlib.suppress(OSError):  # a full disk: the batch is delivered, the mark is optional
                self._journal.write({"op": "done", "id": batch.id})

    def _enqueue(self, batch: Batch, *, late: bool = True) -> None:
        batch.late = batch.late or late
        if batch not in self._pending:
            self._pending.append(batch)

    def _adopt_orphans(self) -> None:
        if self._adopted:
            return
        # Read every orphan journal first, then queue its batches ahead of anything this process accepts: a turn
        # answered here is never delivered before an older one a dead process left.
        orphans = self._journal.adopt_orphans()
        self._adopted = True
        for batch in orphans:
            self._write_ahead(batch)
            self._enqueue(batch)
        if self._pending:
            with contextlib.suppress(RuntimeError):  # no running loop: flush() delivers them
                self._ensure_task()

    def _has_pending(self, key: SessionKey) -> bool:
        ck = _ck(key)
        return any(b.entries is not None and _ck(b.key) == ck for b in self._pending)

    @staticmethod
    def _call(callback: Callable[[Any], None] | None, arg: Any) -> None:
        if callback is not None:
            try:
                callback(arg)
            except Exception:
                log.exception("session store callback raised")

    def _report(self, exc: BaseException, what: str) -> None:
        log.warning("session store %s failed, kept in the spool for retry: %s", what, exc)
        self._call(self._on_error, exc)

    @property
    def pending_count(self) -> int:
        """Batches (transcript or state) accepted and not yet delivered."""
        return len(self._pending)

    # ------------------------------------------------------------------ delivery
    async def _send(self, batch: Batch) -> None:
        """One bounded inner write. Raises what the store raises, or TimeoutError."""
        async with asyncio.timeout(self._call_timeout):
            if batch.entries is None:
                await self.inner.put_state(batch.key["session_id"], batch.state or {})
            elif hasattr(self.inner, "append_batch"):
                # One re-read of a session per round: the store's view of the key is fresh for its later batches.
                fence = batch.late and _ck(batch.key) not in self._fenced
                await self.inner.append_batch(batch.key, batch.entries, batch_id=batch.id, fence=fence)
                if fence:
                    self._fenced.add(_ck(batch.key))
            else:
                await self.inner.append(batch.key, batch.entries)

    def _dead_letter(self, batch: Batch, exc: BaseException) -> None:
        """Give up a batch the store rejected for good; later batches carry on."""
        with contextlib.suppress(ValueError):
            self._pending.remove(batch)
        try:
            where = str(self._journal.dead_letter(batch, exc))
        except OSError as write_error:
            where = f"nowhere (the dead-letter file could not be written: {write_error})"
        self._mark_done(batch)
        self.dead_letters += 1
        log.error(
            "session store rejected a batch for good (%s); %d entries of session %s dead-lettered to %s",
            exc,
            len(batch.entries or []),
            batch.key.get("session_id"),
            where,
        )
        self._call(self._on_event, "SessionStoreDeadLetters")

    async def _try(self, batch: Batch, what: str) -> bool:
        """Deliver ``batch`` once: True when it is delivered or dead-lettered (no longer pending)."""
        try:
            await self._send(batch)
        except asyncio.CancelledError:
            self._enqueue(batch)  # already journaled: the retry task (or the next process) delivers it
            self._ensure_task_soon()
            raise
        except Exception as exc:
            if isinstance(exc, SessionStoreError) and not exc.retryable:
                self._dead_letter(batch, exc)
                return True
            self._report(exc, what)
            self._enqueue(batch)
            return False
        with contextlib.suppress(ValueError):
            self._pending.remove(batch)
        self._mark_done(batch)
        return True

    async def _deliver(self) -> bool:
        """Deliver pending batches in order until one fails; True when the spool is empty."""
        if self._delivering:
            return not self._pending
        self._delivering = True
        self._fenced.clear()
        try:
            while self._pending:
                if not await self._try(self._pending[0], "retry"):
                    return False
            self._journal.truncate()
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

    def _ensure_task_soon(self) -> None:
        """After a cancelled write: make sure a retry task exists (not while closing: close() flushes)."""
        if self._closing:
            return
        with contextlib.suppress(RuntimeError):
            self._ensure_task()

    async def _deliver_now(self) -> None:
        if not await self._deliver():
            await self._retry_loop()

    async def _strict_write(self, batch: Batch) -> None:
        """Deliver everything queued for the key and then ``batch``, retrying until the deadline; raise
        SessionStoreError when it passes (the batch stays queued)."""
        deadline = self._clock() + self._strict_deadline
        delay = self._initial
        self._enqueue(batch)
        while batch in self._pending:
            if await self._deliver():
                return
            if self._clock() + delay > deadline:
                raise SessionStoreError(
                    f"the session store did not take the batch within {self._strict_deadline:.0f} s; it is kept "
                    "on this microVM and retried",
                    aws_code="StrictDeadline",
                    retryable=True,
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._max)

    async def _accept(self, batch: Batch, *, blocked: bool) -> None:
        self._adopt_orphans()
        self._write_ahead(batch)
        if self._write_behind:
            self._enqueue(batch, late=False)
            loop = asyncio.get_running_loop()
            if self._task is None or self._task.done() or self._task.get_loop() is not loop:
                self._task = loop.create_task(self._deliver_now(), name="session-store-write-behind")
            return
        if self._strict:
            await self._strict_write(batch)
            return
        if blocked:
            self._enqueue(batch)
        elif await self._try(batch, "append" if batch.entries is not None else "put_state"):
            return
        self._ensure_task()

    # ------------------------------------------------------------------ SessionStore protocol
    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Journal, then append through ``inner``; on failure (or behind earlier failures of this key) keep it
        queued. Raises only in strict mode (SessionStoreError once the strict deadline passed)."""
        if not entries:
            return
        digest = _digest(key, entries)
        for queued in self._pending:  # the SDK retrying a batch this spool already holds
            if queued.entries is not None and _digest(queued.key, queued.entries) == digest:
                if self._strict:  # its strict deadline has passed: no second wait inside the SDK's 60 s
                    raise SessionStoreError(
                        "the session store has not taken this batch yet; it is kept on this microVM and retried",
                        aws_code="StrictDeadline",
                        retryable=True,
                    )
                return
        batch = Batch(uuid.uuid4().hex, dict(key), list(entries))  # type: ignore[arg-type]
        await self._accept(batch, blocked=self._has_pending(key))

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """What a resuming CLI is given: :meth:`load_all`, for a main transcript cut to its last compact boundary
        with no pointer to the compacting process's local file (:func:`runtime.session_store.compaction.resume_view`).
        Inner errors propagate."""
        entries = await self.load_all(key)
        if key.get("subpath"):
            return entries
        return resume_view(entries)

    async def load_all(self, key: SessionKey) -> list[SessionStoreEntry] | None:
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

        def doomed(b: Batch) -> bool:
            same_session = b.entries is not None and b.key["project_key"] == pk and b.key["session_id"] == sid
            return same_session and (sub is None or b.key.get("subpath") == sub)

        for batch in [b for b in self._pending if doomed(b)]:
            self._pending.remove(batch)
            self._mark_done(batch)
        await self.inner.delete(key)

    async def get_state(self, session_id: str) -> dict[str, Any] | None:
        """The newest undelivered state if any, else the inner store's."""
        for batch in reversed(self._pending):
            if batch.state is not None and batch.key["session_id"] == session_id:
                return dict(batch.state)
        result: dict[str, Any] | None = await self.inner.get_state(session_id)
        return result

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None:
        """Write through ``inner``; on failure keep it queued (last write wins). Never raises for store
        failures, in strict mode neither (state is not part of a turn's acknowledgement)."""
        blocked = any(b.state is not None and b.key["session_id"] == session_id for b in self._pending)
        batch = Batch(uuid.uuid4().hex, {"project_key": "", "session_id": session_id}, None, dict(state))
        if self._strict:  # strict covers transcripts; state takes the default path
            self._adopt_orphans()
            self._write_ahead(batch)
            if blocked:
                self._enqueue(batch)
            elif await self._try(batch, "put_state"):
                return
            self._ensure_task()
            return
        await self._accept(batch, blocked=blocked)

    # ------------------------------------------------------------------ recovery
    def recover_from_transcript(self, key: SessionKey | None, projects_dir: Path) -> None:
        """The SDK reported ``mirror_error`` (it dropped a batch): in the background, append every entry of the
        CLI's local transcript for ``key`` that neither the store nor the spool holds (matched on ``uuid``, or
        on the whole entry when it has none). Logs and counts failures; never raises."""
        if not key or not key.get("project_key") or not key.get("session_id"):
            return
        sub = key.get("subpath")
        base = Path(projects_dir) / key["project_key"]
        path = base / f"{key['session_id']}.jsonl" if not sub else base / key["session_id"] / f"{sub}.jsonl"
        own: SessionKey = dict(key)  # type: ignore[assignment]
        task = asyncio.get_running_loop().create_task(self._recover(own, path), name="session-store-recover")
        self._recoveries.add(task)
        task.add_done_callback(self._recoveries.discard)

    async def _recover(self, key: SessionKey, path: Path) -> None:
        try:
            local = await asyncio.to_thread(read_transcript_file, path)
            have = await self.load_all(key) or []
            uuids = {e.get("uuid") for e in have if e.get("uuid") is not None}
            bodies = {dumps_entry(e) for e in have if e.get("uuid") is None}
            missing = [
                e
                for e in local
                if (e.get("uuid") is not None and e.get("uuid") not in uuids)
                or (e.get("uuid") is None and dumps_entry(e) not in bodies)
            ]
            if missing:
                log.warning(
                    "recovering %d transcript entries of %s from %s", len(missing), key["session_id"], path
                )
                await self.append(key, missing)
        except Exception as exc:
            log.error("could not recover session %s from %s: %s", key.get("session_id"), path, exc)
            self._call(self._on_error, exc)

    # ------------------------------------------------------------------ shutdown
    async def flush(self) -> bool:
        """Try to deliver everything spooled now; True when nothing is left."""
        self._adopt_orphans()
        return await self._deliver()

    async def _flush_until(self, deadline: float) -> bool:
        """Redeliver with the usual backoff until nothing is left or ``deadline`` (``clock``) passes."""
        delay = self._initial
        while not await self.flush():
            if self._clock() + delay > deadline:
                return False
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._max)
        return True

    async def close(self, flush_s: float | None = None) -> None:
        """Stop the retry task, keep redelivering for up to ``flush_s`` (default ``shutdown_flush_s``) and release
        the journal (kept on disk if not empty)."""
        self._closing = True
        deadline = self._clock() + (self._shutdown_flush if flush_s is None else flush_s)
        if (
            self._task is not None
            and not self._task.done()
            and self._task.get_loop() is asyncio.get_running_loop()
        ):
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None
        if (
            self._recoveries
        ):  # a mirror_error recovery still reading the CLI's transcript: let it queue its batch
            await asyncio.wait(set(self._recoveries), timeout=max(0.0, min(5.0, deadline - self._clock())))
        delivered = await self._flush_until(deadline)
        if delivered:
            log.info("session store spool empty at close")
        else:
            log.error(
                "%d session-store batches still undelivered at close; kept in %s",
                len(self._pending),
                self._path,
            )
        self._journal.close(remove=False)
        inner_close = getattr(self.inner, "close", None)
        if inner_close is not None:
            result = inner_close()
            if asyncio.iscoroutine(result):
                await result
        if delivered:
            self._journal.close(remove=True)
