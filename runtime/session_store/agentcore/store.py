"""Claude Agent SDK ``SessionStore`` on the AgentCore Memory data plane (short-term memory events).

Import it from :mod:`runtime.session_store`; this module holds the class, :mod:`runtime.session_store.agentcore.ids`
the id mapping and limits, :mod:`runtime.session_store.agentcore.groups` how a load reassembles entries.

==================================  ========================================================================
SDK / store concept                 Memory ids
==================================  ========================================================================
``project_key``                     actorId ``p-<esc(project_key)>``; over 255 chars: ``h-<sha256 hex>``
main transcript (no ``subpath``)    sessionId ``t-<esc(session_id)>``
subagent transcript                 sessionId ``t-<esc(session_id)>_x<esc(subpath)>`` (``_x`` never occurs
                                    inside an escaped string); over 100 chars either way:
                                    ``h-<sha256(session_id, subpath)[:64]>``
per-project index                   sessionId ``index`` under the project's actor (put / delete markers that
                                    back ``list_sessions`` / ``list_subkeys``)
per-session state (``put_state``)   actorId ``agentkit-state``, sessionId ``t-<esc(session_id)>``
==================================  ========================================================================

Per-session state (``get_state`` / ``put_state``: what must outlive a microVM, e.g. the session's cumulative cost)
is one ``CreateEvent`` per write: ``json.dumps(state)`` cut into chunks, one blob item each,
``{"k": "state", "s": seq, "i": index, "n": count, "c": chunk}``, every item at most 100 KB as botocore sends it and
1 MB in all (``MAX_EVENT_BYTES``; a larger state raises :class:`runtime.errors.SessionStoreError`). The newest
``seq`` whose chunks are all there wins (a partial set is skipped for an older complete one); an item
``{"k": "state", "s": seq, "d": state}`` written by an earlier version of the kit is read too. Older events are
pruned after a write.

Transcript events carry only ``blob`` payload items (never extracted to long-term memory; ``extractionMode``
is also ``SKIP``). Each entry is serialized to JSON (:func:`runtime.session_store.codec.dumps_entry`) and cut into
chunks of at most 100 KB *as botocore sends them*; an event holds at most 100 items and 1 MB of chunks, so
a large entry may span events. Every item names its writer (a random id per store instance), the writer's
epoch, its batch and its index in the batch; the rules that make a load correct with several writers, skewed
clocks and retried batches are in :mod:`runtime.session_store.agentcore.groups`. The SDK's session summary rides
along as an item ``{"k": "sum", ...}`` in the last event of each main-transcript batch, so appends cost one
``CreateEvent`` per ≤ 100 items.

Idempotency: an entry whose ``uuid`` was already stored under the key is skipped (the store reads the
transcript once per key and process to learn them). A batch keeps its identity across retries: the events
planned on its first try (their ``seq`` values and contents) are sent again unchanged, and each event's
``clientToken`` is a hash of its content, so a ``CreateEvent`` that landed but was not acknowledged is not
stored twice; a copy stored by another process (a spool adopted after a crash) is dropped on load by its
batch id and index. ``list_sessions`` ``mtime`` is the first append of the latest writing process.

IAM actions the runtime role needs on the memory ARN
(``arn:aws:bedrock-agentcore:<region>:<account>:memory/<memory-id>``):
``bedrock-agentcore:CreateEvent``, ``bedrock-agentcore:ListEvents``,
``bedrock-agentcore:DeleteEvent`` (transcripts, index, state) and, for :mod:`runtime.session_store.recall`,
``bedrock-agentcore:RetrieveMemoryRecords``.

Environment: none read here. Without an injected ``client`` the store builds one with
:func:`runtime.aws.agentcore_client`, which honours ``AWS_REGION`` and ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import BotoCoreError, ClientError

from runtime.errors import SessionStoreError
from runtime.session_store.agentcore.groups import assemble
from runtime.session_store.agentcore.ids import (
    INDEX_SESSION_ID,
    MAX_EVENT_BYTES,
    MAX_ITEM_BYTES,
    MAX_PAGE_SIZE,
    MAX_PAYLOAD_ITEMS,
    MEMORY_EVENTS_WRITTEN,
    MEMORY_ID_RE,
    STATE_ACTOR_ID,
    UsageMeter,
    actor_id_for,
    session_id_for,
    wrap_client_error,
)
from runtime.session_store.agentcore.plan import BatchPlan, KeyCache
from runtime.session_store.codec import dumps_entry, split_by_wire_bytes, wire_bytes

if TYPE_CHECKING:  # importing claude_agent_sdk costs ~1 s: only for type checking here
    from claude_agent_sdk.types import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

__all__ = ["AgentCoreMemorySessionStore"]

log = logging.getLogger(__name__)


def item_wire_bytes(item: dict[str, Any]) -> int:
    """Bytes a blob item takes in the request body: botocore's ``rest-json`` serializer sends a document shape
    inside the body's ``json.dumps`` (default separators, non-ASCII escaped), ``botocore/serialize.py``."""
    return len(json.dumps(item))


class AgentCoreMemorySessionStore:
    """``SessionStore`` backed by AgentCore Memory events; also keeps per-session state (``get/put_state``).

    Args:
        memory_id: the Memory id or ARN (``AGENTKIT_SESSION_STORE=agentcore://<memory-id>``).
        client: a boto3 ``bedrock-agentcore`` client; built lazily when omitted.
        max_chunk_bytes: bytes of one chunk item as sent (≤ 100 KB, see :mod:`runtime.session_store.agentcore.ids`).
        max_event_bytes: bytes of chunk data per ``CreateEvent`` (bounds request size).
        page_size: ``maxResults`` for ``ListEvents`` (1..100); ``None`` uses the service default of 20. moto
            truncates to ``maxResults`` without returning a ``nextToken``: test paging with a stand-in.
        clock: seconds since the epoch (injectable for tests).
        on_event: called with a metric name when something is worth counting (``SessionStoreLateWrites``);
            must not raise.
        on_usage: told about each ``CreateEvent`` that succeeded (``MemoryEventsWritten`` and the Claude session
            it was for): what AgentCore bills short-term memory by.

    Raises:
        ValueError: a malformed memory id or size parameter.
        SessionStoreError: any Memory call failed (``retryable`` false for errors a retry cannot cure);
            retrying the same batch (:meth:`append_batch` with its id) neither loses nor duplicates entries.
    """

    def __init__(
        self,
        memory_id: str,
        *,
        client: Any = None,
        max_chunk_bytes: int = MAX_ITEM_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
        page_size: int | None = None,
        clock: Callable[[], float] = time.time,
        on_event: Callable[[str], None] | None = None,
        on_usage: UsageMeter | None = None,
    ) -> None:
        if not MEMORY_ID_RE.match(memory_id):
            raise ValueError(
                f"invalid AgentCore Memory id {memory_id!r}: "
                "expected '<name>-<10 alphanumerics>' or a memory ARN"
            )
        if not 14 <= max_chunk_bytes <= MAX_ITEM_BYTES:
            raise ValueError(f"max_chunk_bytes must be within 14..{MAX_ITEM_BYTES}, got {max_chunk_bytes}")
        if max_event_bytes < max_chunk_bytes:
            raise ValueError("max_event_bytes must be at least max_chunk_bytes")
        if page_size is not None and not 1 <= page_size <= MAX_PAGE_SIZE:
            raise ValueError(f"page_size must be within 1..{MAX_PAGE_SIZE}, got {page_size}")
        self.memory_id = memory_id
        self.writer_id = secrets.token_hex(6)
        self._client = client
        self._chunk = max_chunk_bytes
        self._event_bytes = max_event_bytes
        self._page_size = page_size
        self._clock = clock
        self._on_event = on_event
        self._on_usage = on_usage
        self._keys: dict[tuple[str, str, str | None], KeyCache] = {}
        self._plans: dict[str, BatchPlan] = {}
        #: Ids of batches delivered lately: a retry that overlapped a call still running in its thread
        #: (the spool's bound cannot stop a thread) finds its batch done and sends nothing.
        self._done: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._state_events: dict[str, list[str]] = {}
        self._locks: dict[tuple[str, str, str | None], threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def after_restore(self) -> None:
        """A snapshot restore (:mod:`runtime.process.restore`): every restored process shares the image's memory, so the
        writer id (which keeps writers' entries apart) is drawn again and what the image knew is dropped."""
        self.writer_id = secrets.token_hex(6)
        self._keys.clear()
        self._plans.clear()
        self._done.clear()

    # ------------------------------------------------------------------ boto3 plumbing
    @property
    def client(self) -> Any:
        if self._client is None:
            from runtime.aws import agentcore_client

            self._client = agentcore_client(None)  # region from AWS_REGION, as boto3 resolves it
        return self._client

    def _call(self, action: str, **kwargs: Any) -> Any:
        try:
            return getattr(self.client, action)(memoryId=self.memory_id, **kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise wrap_client_error(exc, action) from exc

    def _list_all(self, actor_id: str, session_id: str) -> list[dict[str, Any]]:
        """Every event of one Memory session, following ``nextToken`` until it is absent."""
        events: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"actorId": actor_id, "sessionId": session_id, "includePayloads": True}
            if self._page_size:
                kwargs["maxResults"] = self._page_size
            if token:
                kwargs["nextToken"] = token
            page = self._call("list_events", **kwargs)
            events.extend(page.get("events", []))
            token = page.get("nextToken")
            if not token:
                return events

    def _create(
        self, actor_id: str, session_id: str, items: list[dict[str, Any]], token: str, *, owner: str | None
    ) -> Any:
        response = self._call(
            "create_event",
            actorId=actor_id,
            sessionId=session_id,
            eventTimestamp=datetime.fromtimestamp(self._clock(), tz=UTC),
            payload=[{"blob": item} for item in items],
            extractionMode="SKIP",
            clientToken=token,
        )
        self._count_event(owner)
        return response

    def _count_event(self, owner: str | None) -> None:
        """One billed ``CreateEvent`` for the Claude session ``owner`` (a retried batch whose event had landed
        is counted again: AgentCore deduplicates it by ``clientToken``, so the count errs high, never low)."""
        if self._on_usage is not None:
            try:
                self._on_usage(MEMORY_EVENTS_WRITTEN, owner)
            except Exception:  # a metrics failure must not fail the write
                log.exception("on_usage callback raised")

    def _lock(self, ck: tuple[str, str, str | None]) -> threading.Lock:
        """Per-key lock, taken in the worker thread (works whichever event loop calls the store)."""
        with self._locks_guard:
            return self._locks.setdefault(ck, threading.Lock())

    # ------------------------------------------------------------------ reading
    @staticmethod
    def _items(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for event in events:
            for payload in event.get("payload") or []:
                blob = payload.get("blob") if isinstance(payload, dict) else None
                if isinstance(blob, dict) and blob.get("k") in ("e", "sum", "ep"):
                    items.append(blob)
        return items

    def _read_key(self, key: SessionKey) -> tuple[list[SessionStoreEntry] | None, KeyCache]:
        """Blocking: read a transcript and reassemble it; returns (entries, cache). One bad group is skipped,
        never fails the load (:mod:`runtime.session_store.agentcore.groups`)."""
        subpath = key.get("subpath")
        events = self._list_all(actor_id_for(key["project_key"]), session_id_for(key["session_id"], subpath))
        got = assemble(self._items(events), where=f"{key['session_id']}/{subpath or ''}")
        cache = KeyCache(uuids=got.uuids, last_seq=got.last_seq, epoch=got.max_epoch + 1)
        if got.summary is not None and subpath is None:
            try:
                cache.summary = cast(
                    "SessionSummaryEntry",
                    {
                        "session_id": key["session_id"],
                        "mtime": int(got.summary["t"]),
                        "data": got.summary["d"],
                    },
                )
            except (KeyError, TypeError, ValueError):
                log.warning("ignoring a malformed summary item of %s", key["session_id"])
        if not events:
            return None, cache
        return cast("list[SessionStoreEntry]", got.entries), cache

    def _read_index(self, project_key: str) -> dict[str, dict[str, Any]]:
        """Fold the project's index into {session_id: {"mtime": ms, "subs": set of subpaths}}."""
        events = self._list_all(actor_id_for(project_key), INDEX_SESSION_ID)
        ops: list[dict[str, Any]] = []
        for event in events:
            for payload in event.get("payload") or []:
                blob = payload.get("blob")
                if isinstance(blob, dict) and blob.get("k") in ("put", "del"):
                    ops.append(blob)
        ops.sort(key=lambda op: int(op["s"]))
        sessions: dict[str, dict[str, Any]] = {}
        for op in ops:
            sid, sub = op["sid"], op.get("sub")
            if op["k"] == "put":
                info = sessions.setdefault(sid, {"mtime": 0, "subs": set(), "main": False})
                if sub is None:
                    info["main"] = True
                    info["mtime"] = max(info["mtime"], int(op["t"]))
                else:
                    info["subs"].add(sub)
            elif sub is None:
                sessions.pop(sid, None)
            elif sid in sessions:
                sessions[sid]["subs"].discard(sub)
        return sessions

    def _index_op(self, project_key: str, op: dict[str, Any]) -> None:
        seq = int(self._clock() * 1e9)
        item = {**op, "s": f"{seq:020d}", "t": int(self._clock() * 1000)}
        token = hashlib.sha256(json.dumps([project_key, item], sort_keys=True).encode()).hexdigest()
        self._create(actor_id_for(project_key), INDEX_SESSION_ID, [item], token, owner=op.get("sid"))

    # ------------------------------------------------------------------ writing
    def _append_sync(
        self, key: SessionKey, entries: list[SessionStoreEntry], batch_id: str, fence: bool
    ) -> None:
        ck = (key["project_key"], key["session_id"], key.get("subpath"))
        with self._lock(ck):
            self._append_locked(key, entries, batch_id, fence)

    def _fence(self, key: SessionKey, cache: KeyCache) -> None:
        """Before a late delivery: read the key again, learn what other writers stored, report a late write."""
        _, fresh = self._read_key(key)
        cache.uuids |= fresh.uuids
        cache.last_seq = max(cache.last_seq, fresh.last_seq)
        if fresh.epoch - 1 > cache.epoch:
            log.warning(
                "late write to session %s: a newer writer (epoch %d) resumed it after this one (epoch %d); the "
                "batch is stored, ordered before the newer writer's entries and linked into the conversation",
                key["session_id"],
                fresh.epoch - 1,
                cache.epoch,
            )
            if self._on_event is not None:
                try:
                    self._on_event("SessionStoreLateWrites")
                except Exception:  # a metrics failure must not fail the write
                    log.exception("on_event callback raised")

    def _claim_epoch(self, key: SessionKey, cache: KeyCache) -> None:
        """A resume: store this writer's epoch, so a writer resuming after it sorts after it even before this
        one writes (one small ``CreateEvent``). A failed claim only weakens that ordering: logged, not raised."""
        cache.last_seq = max(cache.last_seq + 1, int(self._clock() * 1e9))
        item = {"k": "ep", "s": f"{cache.last_seq:020d}", "ep": cache.epoch, "w": self.writer_id}
        actor, session = (
            actor_id_for(key["project_key"]),
            session_id_for(key["session_id"], key.get("subpath")),
        )
        token = hashlib.sha256(f"{actor}|{session}|".encode() + dumps_entry(item).encode()).hexdigest()
        try:
            self._create(actor, session, [item], token, owner=key["session_id"])
        except SessionStoreError as exc:
            log.warning("could not store the epoch claim of session %s: %s", key["session_id"], exc)

    def _plan(
        self, key: SessionKey, cache: KeyCache, entries: list[SessionStoreEntry], batch_id: str
    ) -> BatchPlan:
        """Cut the batch's new entries into events of ≤ 100 items (one slot kept for the summary) and
        ≤ ``max_event_bytes`` of chunk data; ``seq`` from the clock, never below what this writer has read."""
        fresh: list[SessionStoreEntry] = []
        batch_uuids: set[str] = set()
        for entry in entries:
            uuid = entry.get("uuid")
            if uuid is not None and (uuid in cache.uuids or uuid in batch_uuids):
                continue
            if uuid is not None:
                batch_uuids.add(uuid)
            fresh.append(entry)
        events: list[tuple[list[dict[str, Any]], list[SessionStoreEntry]]] = [([], [])]
        size = 0
        for index, entry in enumerate(fresh):
            cache.last_seq = max(cache.last_seq + 1, int(self._clock() * 1e9))
            seq = f"{cache.last_seq:020d}"
            chunks = split_by_wire_bytes(dumps_entry(entry), self._chunk)
            for i, chunk in enumerate(chunks):
                items, _ = events[-1]
                chunk_bytes = wire_bytes(chunk)
                if len(items) >= MAX_PAYLOAD_ITEMS - 1 or (items and size + chunk_bytes > self._event_bytes):
                    events.append(([], []))
                    size = 0
                events[-1][0].append(
                    {
                        "k": "e",
                        "s": seq,
                        "w": self.writer_id,
                        "ep": cache.epoch,
                        "b": batch_id,
                        "x": index,
                        "u": entry.get("uuid"),
                        "i": i,
                        "n": len(chunks),
                        "d": chunk,
                    }
                )
                size += chunk_bytes
            events[-1][1].append(entry)  # an entry counts as written once its last chunk's event lands
        return BatchPlan([e for e in events if e[0]])

    def _append_locked(
        self, key: SessionKey, entries: list[SessionStoreEntry], batch_id: str, fence: bool
    ) -> None:
        from claude_agent_sdk import fold_session_summary

        subpath = key.get("subpath")
        ck = (key["project_key"], key["session_id"], subpath)
        if batch_id in self._done:
            return
        cache = self._keys.get(ck)
        if cache is None:
            _, cache = self._read_key(key)
            self._keys[ck] = cache
        elif fence:
            self._fence(key, cache)
        plan = self._plans.get(batch_id)
        if plan is None:
            plan = self._plan(key, cache, entries, batch_id)
            self._plans[batch_id] = plan
            while len(self._plans) > 1024:  # plans of batches never retried (dead-lettered, deleted)
                del self._plans[next(iter(self._plans))]
        if plan.events and not cache.indexed:
            self._index_op(key["project_key"], {"k": "put", "sid": key["session_id"], "sub": subpath})
            cache.indexed = True
        actor, session = actor_id_for(key["project_key"]), session_id_for(key["session_id"], subpath)
        while plan.sent < len(plan.events):
            index = plan.sent
            items, done = plan.events[index]
            if subpath is None and done and index not in plan.summaries:
                folded = fold_session_summary(cache.summary, key, done)
                now_ms = int(self._clock() * 1000)
                plan.summaries[index] = cast("SessionSummaryEntry", {**folded, "mtime": now_ms})
                items.append(
                    {"k": "sum", "s": items[-1]["s"], "ep": cache.epoch, "t": now_ms, "d": folded["data"]}
                )
            token = hashlib.sha256(f"{actor}|{session}|".encode() + dumps_entry(items).encode()).hexdigest()
            self._create(actor, session, items, token, owner=key["session_id"])
            plan.sent += 1
            cache.summary = plan.summaries.get(index, cache.summary)
            cache.uuids.update(e["uuid"] for e in done if e.get("uuid") is not None)
        del self._plans[batch_id]
        self._done[batch_id] = None
        while len(self._done) > 4096:
            self._done.popitem(last=False)

    # ------------------------------------------------------------------ SessionStore protocol
    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Mirror a batch; skips entries whose ``uuid`` is already stored. Raises SessionStoreError."""
        await self.append_batch(key, entries, batch_id=secrets.token_hex(8))

    async def append_batch(
        self, key: SessionKey, entries: list[SessionStoreEntry], *, batch_id: str, fence: bool = False
    ) -> None:
        """Mirror a batch under a stable id: a retry with the same id resends the events of the first try
        (same ``seq`` values and ``clientToken`` s), so nothing is stored twice. ``fence``: the batch is late
        (redelivered from the spool): read the key first, and report it when a newer writer has resumed the
        session meanwhile. Raises SessionStoreError."""
        if not entries:
            return
        await asyncio.to_thread(self._append_sync, key, entries, batch_id, fence)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Entries in append order, ``None`` for a key never written or deleted. Raises SessionStoreError."""
        ck = (key["project_key"], key["session_id"], key.get("subpath"))

        def work() -> list[SessionStoreEntry] | None:
            with self._lock(ck):
                entries, cache = self._read_key(key)
                known = self._keys.get(ck)
                cache.indexed = known.indexed if known is not None else False
                self._keys[ck] = cache
                if entries:
                    self._claim_epoch(key, cache)
                return entries

        return await asyncio.to_thread(work)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        index = await asyncio.to_thread(self._read_index, project_key)
        return [{"session_id": sid, "mtime": info["mtime"]} for sid, info in index.items() if info["main"]]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """One transcript read per live session: meant for tooling, not for the turn path."""
        index = await asyncio.to_thread(self._read_index, project_key)
        out: list[SessionSummaryEntry] = []
        for sid, info in index.items():
            if not info["main"]:
                continue
            _, cache = await asyncio.to_thread(
                self._read_key, {"project_key": project_key, "session_id": sid}
            )
            if cache.summary is not None:
                out.append(cache.summary)
        return out

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        index = await asyncio.to_thread(self._read_index, key["project_key"])
        info = index.get(key["session_id"])
        return sorted(info["subs"]) if info else []

    def _delete_sync(self, key: SessionKey) -> None:
        project_key, sid, subpath = key["project_key"], key["session_id"], key.get("subpath")
        targets: list[str | None] = [subpath]
        if subpath is None:
            info = self._read_index(project_key).get(sid)
            targets = [*(sorted(info["subs"]) if info else []), None]
        actor = actor_id_for(project_key)
        for sub in targets:
            session = session_id_for(sid, sub)
            for event in self._list_all(actor, session):
                self._call("delete_event", actorId=actor, sessionId=session, eventId=event["eventId"])
            self._keys.pop((project_key, sid, sub), None)
        self._index_op(project_key, {"k": "del", "sid": sid, "sub": subpath})

    async def delete(self, key: SessionKey) -> None:
        """Delete a transcript; a main key cascades to its subagent transcripts. Raises SessionStoreError."""
        await asyncio.to_thread(self._delete_sync, key)

    # ------------------------------------------------------------------ per-session state (get_state / put_state)
    def _get_state_sync(self, session_id: str) -> dict[str, Any] | None:
        events = self._list_all(STATE_ACTOR_ID, session_id_for(session_id))
        ids: list[str] = []
        whole: dict[int, dict[str, Any]] = {}  # seq -> a state of one item (written by an earlier version)
        parts: dict[int, dict[int, str]] = {}  # seq -> index -> chunk
        counts: dict[int, int] = {}  # seq -> chunks it was cut into
        for event in events:
            ids.append(event["eventId"])
            for payload in event.get("payload") or []:
                blob = payload.get("blob") if isinstance(payload, dict) else None
                if not isinstance(blob, dict) or blob.get("k") != "state":
                    continue
                try:
                    seq = int(blob["s"])
                    if "d" in blob:
                        whole[seq] = blob["d"]
                    else:
                        parts.setdefault(seq, {})[int(blob["i"])] = str(blob["c"])
                        counts[seq] = int(blob["n"])
                except (KeyError, TypeError, ValueError):
                    log.warning("ignoring a malformed state item of %s", session_id)
        self._state_events[session_id] = ids
        for seq in sorted(set(whole) | set(parts), reverse=True):
            if seq in whole and isinstance(whole[seq], dict):
                return dict(whole[seq])
            chunks = parts.get(seq, {})
            # A ListEvents page holds whole events, so a set is only short when a write was torn or tampered with:
            # an older complete state is better than none.
            if sorted(chunks) != list(range(counts.get(seq, -1))):
                log.warning(
                    "ignoring state %s of %s: %d of %s chunks", seq, session_id, len(chunks), counts.get(seq)
                )
                continue
            try:
                state = json.loads("".join(chunks[i] for i in range(len(chunks))))
            except ValueError:
                log.warning("ignoring state %s of %s: its chunks are not JSON", seq, session_id)
                continue
            if isinstance(state, dict):
                return state
        return None

    def _state_items(self, session_id: str, seq: str, state: dict[str, Any]) -> list[dict[str, Any]]:
        """``state`` as chunk items of one event, each ≤ the item bound as sent (key, seq and index included).

        Raises SessionStoreError (not retryable): over ``max_event_bytes`` or 100 items."""
        text = json.dumps(state)
        count_digits = len(str(MAX_PAYLOAD_ITEMS))
        # Bytes an item takes besides its chunk's own (quotes included in wire_bytes): measured on the widest
        # index and count an event can hold, so every item's json.dumps is within self._chunk.
        overhead = item_wire_bytes(
            {"k": "state", "s": seq, "i": 10**count_digits, "n": 10**count_digits, "c": ""}
        ) - wire_bytes("")
        chunks = split_by_wire_bytes(text, max(14, self._chunk - overhead))
        items = [{"k": "state", "s": seq, "i": i, "n": len(chunks), "c": c} for i, c in enumerate(chunks)]
        size = sum(item_wire_bytes(item) for item in items)
        if len(items) > MAX_PAYLOAD_ITEMS or size > self._event_bytes:
            raise SessionStoreError(
                f"the state of session {session_id} is too large for one AgentCore Memory event: {size:,} bytes "
                f"in {len(items)} items as sent, at most {self._event_bytes:,} bytes and "
                f"{MAX_PAYLOAD_ITEMS} items",
                aws_code="StateTooLarge",
                retryable=False,
            )
        return items

    def _put_state_sync(self, session_id: str, state: dict[str, Any]) -> None:
        seq = int(self._clock() * 1e9)
        items = self._state_items(session_id, f"{seq:020d}", state)
        session = session_id_for(session_id)
        token = hashlib.sha256(f"{session}|{seq}".encode()).hexdigest()
        previous = self._state_events.get(session_id, [])
        response = self._call(
            "create_event",
            actorId=STATE_ACTOR_ID,
            sessionId=session,
            eventTimestamp=datetime.fromtimestamp(self._clock(), tz=UTC),
            payload=[{"blob": item} for item in items],
            extractionMode="SKIP",
            clientToken=token,
        )
        self._count_event(session_id)
        self._state_events[session_id] = [response["event"]["eventId"]]
        for event_id in previous:  # keep the state session short; a leftover only costs one more item to read
            try:
                self._call("delete_event", actorId=STATE_ACTOR_ID, sessionId=session, eventId=event_id)
            except SessionStoreError as exc:
                log.info("could not prune old state event %s: %s", event_id, exc)

    async def get_state(self, session_id: str) -> dict[str, Any] | None:
        """Latest state written with :meth:`put_state`, or ``None``. Raises SessionStoreError."""
        return await asyncio.to_thread(self._get_state_sync, session_id)

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None:
        """Store a JSON-serializable dict for the session (last write wins). Raises SessionStoreError."""
        json.dumps(state)  # fail fast on non-JSON state
        await asyncio.to_thread(self._put_state_sync, session_id, state)
