"""Claude Agent SDK ``SessionStore`` on the AgentCore Memory data plane (short-term memory events).

Import it from :mod:`runtime.store.sqlite`; this module holds the implementation.

Mapping of the SDK key to Memory ids
------------------------------------
Memory ids must match ``[a-zA-Z0-9][a-zA-Z0-9-_]*`` (sessionId, ≤ 100 chars) and the same with ``/`` and
``:`` allowed (actorId, ≤ 255 chars). Every string is *escaped*: ``[A-Za-z0-9-]`` stays, every other UTF-8
byte becomes ``_hh`` (lowercase hex), so escaping is injective and the result fits both patterns.

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

Transcript events carry only ``blob`` payload items (never extracted to long-term memory; ``extractionMode``
is also ``SKIP``). Each entry is serialized to JSON and cut into chunks of at most 100,000 characters; an item
is ``{"k": "e", "s": seq, "u": uuid, "i": part, "n": parts, "d": chunk}``. An event holds at most 100 items
and ``max_event_chars`` characters, so a large entry may span events. ``seq`` (a zero-padded decimal string,
JSON-number safe) is ``max(last seq + 1, now in ns)``: the load order is by ``seq`` then ``part``, never by
service order or event timestamp, so equal timestamps and paging cannot reorder entries. Chunk groups that
are incomplete (a half-written entry whose retry got a new ``seq``) are skipped on load. The SDK's session
summary rides along as an item ``{"k": "sum", "s": seq, "t": mtime_ms, "d": data}`` in the last event of
each main-transcript batch, so appends cost one ``CreateEvent`` per ≤ 100 items.

Idempotency: an entry whose ``uuid`` was already stored under the key is skipped (the store reads the
transcript once per key and process to learn them); ``load`` also drops later duplicates of a ``uuid``.
Entries without ``uuid`` are appended as they come. One writer per session at a time is assumed (the
runtime's session affinity); ``list_sessions`` ``mtime`` is the first append of the latest writing process.

IAM actions the runtime role needs on the memory ARN
(``arn:aws:bedrock-agentcore:<region>:<account>:memory/<memory-id>``):
``bedrock-agentcore:CreateEvent``, ``bedrock-agentcore:ListEvents``, ``bedrock-agentcore:GetEvent``,
``bedrock-agentcore:DeleteEvent`` (transcripts, index, state) and, for :mod:`runtime.store.recall`,
``bedrock-agentcore:RetrieveMemoryRecords``.

Environment: none read here. Without an injected ``client`` the store builds one with
:func:`runtime.aws.agentcore_client`, which honours ``AWS_REGION`` and ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import BotoCoreError, ClientError

from runtime.errors import SessionStoreError

if TYPE_CHECKING:  # importing claude_agent_sdk costs ~1 s: only for type checking here
    from claude_agent_sdk.types import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

log = logging.getLogger(__name__)

MAX_PAYLOAD_ITEMS = 100
MAX_TEXT_CHARS = 100_000
MAX_SESSION_ID_CHARS = 100
MAX_ACTOR_ID_CHARS = 255
STATE_ACTOR_ID = "agentkit-state"
INDEX_SESSION_ID = "index"
RETRYABLE_CODES = frozenset(
    {"ThrottledException", "ThrottlingException", "ServiceException", "RetryableConflictException"}
)
MEMORY_ID_RE = re.compile(
    r"^(arn:(aws|aws-cn|aws-us-gov):bedrock-agentcore:[a-z0-9-]+:[0-9]{12}:memory/)?"
    r"[a-zA-Z][a-zA-Z0-9-_]{0,99}-[a-zA-Z0-9]{10}$"
)
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


def escape_id(value: str) -> str:
    """Injective escape of any string into ``[A-Za-z0-9_-]*``: unsafe UTF-8 bytes become ``_hh``."""
    out: list[str] = []
    for ch in value:
        if ch in _SAFE:
            out.append(ch)
        else:
            out.extend(f"_{b:02x}" for b in ch.encode())
    return "".join(out)


def actor_id_for(project_key: str) -> str:
    """Memory actorId of a project key (see the module docstring)."""
    readable = "p-" + escape_id(project_key)
    if len(readable) <= MAX_ACTOR_ID_CHARS:
        return readable
    return "h-" + hashlib.sha256(project_key.encode()).hexdigest()


def session_id_for(session_id: str, subpath: str | None = None) -> str:
    """Memory sessionId of a transcript key (see the module docstring)."""
    if subpath == "":
        raise ValueError("subpath must be omitted for the main transcript, not empty")
    readable = "t-" + escape_id(session_id) + ("" if subpath is None else "_x" + escape_id(subpath))
    if len(readable) <= MAX_SESSION_ID_CHARS:
        return readable
    digest = hashlib.sha256(json.dumps([session_id, subpath]).encode()).hexdigest()
    return "h-" + digest[:64]


def wrap_client_error(exc: BaseException, action: str) -> SessionStoreError:
    """Turn a botocore failure into a :class:`SessionStoreError` naming the action and AWS code."""
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", "Unknown"))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        retryable = code in RETRYABLE_CODES or status in (429, 500, 502, 503, 504)
        return SessionStoreError(
            f"AgentCore Memory {action} failed: {code}: {exc}", aws_code=code, retryable=retryable
        )
    return SessionStoreError(
        f"AgentCore Memory {action} failed: {exc}", aws_code=type(exc).__name__, retryable=True
    )


@dataclass
class _KeyCache:
    """What this process knows about one transcript key after reading or writing it."""

    uuids: set[str] = field(default_factory=set)
    last_seq: int = 0
    summary: SessionSummaryEntry | None = None
    indexed: bool = False


class AgentCoreMemorySessionStore:
    """``SessionStore`` backed by AgentCore Memory events; also keeps per-session state (``get/put_state``).

    Args:
        memory_id: the Memory id or ARN (``AGENTKIT_SESSION_STORE=agentcore://<memory-id>``).
        client: a boto3 ``bedrock-agentcore`` client; built lazily when omitted.
        max_chunk_chars: chunk size of a serialized entry (≤ 100,000, the service's text limit).
        max_event_chars: characters of entry data per event (bounds request size).
        page_size: ``maxResults`` for ``ListEvents``; ``None`` uses the service default. Leave it ``None``
            against moto, which truncates to ``maxResults`` without returning a ``nextToken``.
        clock: seconds since the epoch (injectable for tests).

    Raises:
        ValueError: a malformed memory id or size parameter.
        SessionStoreError: any Memory call failed (``retryable`` set for throttling); caches stay consistent,
            so retrying the same batch neither loses nor duplicates entries that carry a ``uuid``.
    """

    def __init__(
        self,
        memory_id: str,
        *,
        client: Any = None,
        max_chunk_chars: int = MAX_TEXT_CHARS,
        max_event_chars: int = 1_000_000,
        page_size: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not MEMORY_ID_RE.match(memory_id):
            raise ValueError(
                f"invalid AgentCore Memory id {memory_id!r}: "
                "expected '<name>-<10 alphanumerics>' or a memory ARN"
            )
        if not 1 <= max_chunk_chars <= MAX_TEXT_CHARS:
            raise ValueError(f"max_chunk_chars must be within 1..{MAX_TEXT_CHARS}, got {max_chunk_chars}")
        if max_event_chars < max_chunk_chars:
            raise ValueError("max_event_chars must be at least max_chunk_chars")
        if page_size is not None and not 1 <= page_size <= 100:
            raise ValueError(f"page_size must be within 1..100, got {page_size}")
        self.memory_id = memory_id
        self._client = client
        self._chunk = max_chunk_chars
        self._event_chars = max_event_chars
        self._page_size = page_size
        self._clock = clock
        self._keys: dict[tuple[str, str, str | None], _KeyCache] = {}
        self._state_events: dict[str, list[str]] = {}
        self._locks: dict[tuple[str, str, str | None], threading.Lock] = {}
        self._locks_guard = threading.Lock()

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

    def _create(self, actor_id: str, session_id: str, items: list[dict[str, Any]], token: str) -> None:
        self._call(
            "create_event",
            actorId=actor_id,
            sessionId=session_id,
            eventTimestamp=datetime.fromtimestamp(self._clock(), tz=UTC),
            payload=[{"blob": item} for item in items],
            extractionMode="SKIP",
            clientToken=token,
        )

    def _next_seq(self, cache: _KeyCache) -> int:
        cache.last_seq = max(cache.last_seq + 1, int(self._clock() * 1e9))
        return cache.last_seq

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
                blob = payload.get("blob")
                if isinstance(blob, dict) and blob.get("k") in ("e", "sum"):
                    items.append(blob)
        return items

    def _read_key(self, key: SessionKey) -> tuple[list[SessionStoreEntry] | None, _KeyCache]:
        """Blocking: read a transcript, reassemble entries in ``seq`` order; returns (entries, cache)."""
        subpath = key.get("subpath")
        events = self._list_all(actor_id_for(key["project_key"]), session_id_for(key["session_id"], subpath))
        cache = _KeyCache()
        groups: dict[int, dict[str, Any]] = {}
        best_summary: tuple[int, dict[str, Any]] | None = None
        for item in self._items(events):
            seq = int(item["s"])
            cache.last_seq = max(cache.last_seq, seq)
            if item["k"] == "sum":
                if best_summary is None or seq >= best_summary[0]:
                    best_summary = (seq, item)
                continue
            group = groups.setdefault(seq, {"u": item.get("u"), "n": int(item["n"]), "parts": {}})
            group["parts"][int(item["i"])] = item["d"]
        entries: list[SessionStoreEntry] = []
        for seq in sorted(groups):
            group = groups[seq]
            if len(group["parts"]) != group["n"]:
                log.warning(
                    "skipping incomplete entry seq=%s in %s (%d/%d parts)",
                    seq,
                    key,
                    len(group["parts"]),
                    group["n"],
                )
                continue
            uuid = group["u"]
            if uuid is not None:
                if uuid in cache.uuids:
                    continue
                cache.uuids.add(uuid)
            entries.append(json.loads("".join(group["parts"][i] for i in range(group["n"]))))
        if best_summary is not None and subpath is None:
            item = best_summary[1]
            cache.summary = cast(
                "SessionSummaryEntry",
                {"session_id": key["session_id"], "mtime": int(item["t"]), "data": item["d"]},
            )
        if not events:
            return None, cache
        return entries, cache

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
        self._create(actor_id_for(project_key), INDEX_SESSION_ID, [item], token)

    # ------------------------------------------------------------------ writing
    def _append_sync(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        ck = (key["project_key"], key["session_id"], key.get("subpath"))
        with self._lock(ck):
            self._append_locked(key, entries)

    def _append_locked(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        from claude_agent_sdk import fold_session_summary

        subpath = key.get("subpath")
        ck = (key["project_key"], key["session_id"], subpath)
        cache = self._keys.get(ck)
        if cache is None:
            _, cache = self._read_key(key)
            self._keys[ck] = cache
        fresh: list[SessionStoreEntry] = []
        batch_uuids: set[str] = set()
        for entry in entries:
            uuid = entry.get("uuid")
            if uuid is not None and (uuid in cache.uuids or uuid in batch_uuids):
                continue
            if uuid is not None:
                batch_uuids.add(uuid)
            fresh.append(entry)
        if not fresh:
            return
        if not cache.indexed:
            self._index_op(key["project_key"], {"k": "put", "sid": key["session_id"], "sub": subpath})
            cache.indexed = True
        actor, session = actor_id_for(key["project_key"]), session_id_for(key["session_id"], subpath)
        # Pack (entry, its items) into events of ≤ 100 items (one slot kept for the summary) and ≤ max chars.
        events: list[tuple[list[dict[str, Any]], list[SessionStoreEntry]]] = [([], [])]
        chars = 0
        for entry in fresh:
            seq = f"{self._next_seq(cache):020d}"
            text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
            chunks = [text[i : i + self._chunk] for i in range(0, len(text), self._chunk)] or [""]
            for i, chunk in enumerate(chunks):
                items, _ = events[-1]
                if len(items) >= MAX_PAYLOAD_ITEMS - 1 or (items and chars + len(chunk) > self._event_chars):
                    events.append(([], []))
                    chars = 0
                events[-1][0].append(
                    {"k": "e", "s": seq, "u": entry.get("uuid"), "i": i, "n": len(chunks), "d": chunk}
                )
                chars += len(chunk)
            events[-1][1].append(entry)  # an entry counts as written once its last chunk's event lands
        for items, done in events:
            summary = cache.summary
            if subpath is None and done:
                summary = fold_session_summary(cache.summary, key, done)
                now_ms = int(self._clock() * 1000)
                summary = cast("SessionSummaryEntry", {**summary, "mtime": now_ms})
                items = [*items, {"k": "sum", "s": items[-1]["s"], "t": now_ms, "d": summary["data"]}]
            token = hashlib.sha256(
                f"{actor}|{session}|{items[0]['s']}|{items[0]['i']}|{len(items)}".encode()
            ).hexdigest()
            self._create(actor, session, items, token)
            cache.summary = summary
            cache.uuids.update(e["uuid"] for e in done if e.get("uuid") is not None)

    # ------------------------------------------------------------------ SessionStore protocol
    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Mirror a batch; skips entries whose ``uuid`` is already stored. Raises SessionStoreError."""
        if not entries:
            return
        await asyncio.to_thread(self._append_sync, key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Entries in append order, ``None`` for a key never written or deleted. Raises SessionStoreError."""
        ck = (key["project_key"], key["session_id"], key.get("subpath"))

        def work() -> list[SessionStoreEntry] | None:
            with self._lock(ck):
                entries, cache = self._read_key(key)
                known = self._keys.get(ck)
                cache.indexed = known.indexed if known is not None else False
                self._keys[ck] = cache
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

    # ------------------------------------------------------------------ per-session state
    def _get_state_sync(self, session_id: str) -> dict[str, Any] | None:
        events = self._list_all(STATE_ACTOR_ID, session_id_for(session_id))
        best: tuple[int, dict[str, Any]] | None = None
        ids: list[str] = []
        for event in events:
            ids.append(event["eventId"])
            for payload in event.get("payload") or []:
                blob = payload.get("blob")
                if isinstance(blob, dict) and blob.get("k") == "state":
                    seq = int(blob["s"])
                    if best is None or seq >= best[0]:
                        best = (seq, blob["d"])
        self._state_events[session_id] = ids
        return dict(best[1]) if best else None

    def _put_state_sync(self, session_id: str, state: dict[str, Any]) -> None:
        seq = int(self._clock() * 1e9)
        item = {"k": "state", "s": f"{seq:020d}", "d": state}
        session = session_id_for(session_id)
        token = hashlib.sha256(f"{session}|{seq}".encode()).hexdigest()
        previous = self._state_events.get(session_id, [])
        response = self._call(
            "create_event",
            actorId=STATE_ACTOR_ID,
            sessionId=session,
            eventTimestamp=datetime.fromtimestamp(self._clock(), tz=UTC),
            payload=[{"blob": item}],
            extractionMode="SKIP",
            clientToken=token,
        )
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
