"""Session stores: SDK conformance for SQLite and AgentCore Memory (moto), plus the properties moto hides.

moto's ``list_events`` never pages and returns events in write order; the wrapper clients below page its
answer and reverse it so the store must follow ``nextToken`` and order by its own sequence numbers.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import multiprocessing
import re
import sqlite3
from pathlib import Path
from typing import Any

import boto3
import botocore
import pytest
from botocore.exceptions import ClientError
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.types import SessionKey
from moto import mock_aws

from runtime.session_store import (
    AgentCoreMemorySessionStore,
    SessionStoreError,
    SqliteSessionStore,
    actor_id_for,
    session_id_for,
    store_from_url,
)
from runtime.session_store.agentcore.ids import MAX_EVENT_BYTES, MAX_ITEM_BYTES

_ids = itertools.count()
KEY: SessionKey = {"project_key": "proj", "session_id": "0b7f2a56-5d1e-5c8f-9a53-1f0c2b9d4e11"}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def memory_id() -> str:
    return f"mem-{next(_ids):010d}"


def entries(n: int, start: int = 0) -> list[Any]:  # transcript lines: blobs to a store (SessionStoreEntry)
    return [{"type": "user", "uuid": f"u{i}", "n": i} for i in range(start, start + n)]


@pytest.fixture
def moto_client():
    with mock_aws():
        yield boto3.client("bedrock-agentcore", region_name="us-east-1")


class PagingClient:
    """Pages moto's (unpaged) list_events answer ``page`` events at a time, newest first, with nextToken."""

    def __init__(self, inner: Any, page: int = 2, reverse: bool = True) -> None:
        self.inner, self.page, self.reverse = inner, page, reverse
        self.list_calls: list[dict[str, Any]] = []
        self.create_calls: list[dict[str, Any]] = []
        self.fail_creates: list[int] = []  # 1-based create_event call numbers that raise ThrottledException

    def list_events(self, **kw: Any) -> dict[str, Any]:
        self.list_calls.append(dict(kw))
        token = kw.pop("nextToken", None)
        kw.pop("maxResults", None)
        events = self.inner.list_events(**kw)["events"]
        if self.reverse:
            events = events[::-1]
        start = int(token) if token else 0
        out: dict[str, Any] = {"events": events[start : start + self.page]}
        if start + self.page < len(events):
            out["nextToken"] = str(start + self.page)
        return out

    def create_event(self, **kw: Any) -> dict[str, Any]:
        self.create_calls.append(kw)
        if len(self.create_calls) in self.fail_creates:
            raise ClientError(
                {
                    "Error": {"Code": "ThrottledException", "Message": "Rate exceeded"},
                    "ResponseMetadata": {"HTTPStatusCode": 429},
                },
                "CreateEvent",
            )
        return self.inner.create_event(**kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


# ---------------------------------------------------------------------------- conformance
def test_sqlite_conformance(tmp_path: Path) -> None:
    counter = itertools.count()
    run(run_session_store_conformance(lambda: SqliteSessionStore(tmp_path / f"{next(counter)}.db")))


def test_agentcore_conformance_on_moto(moto_client: Any) -> None:
    run(run_session_store_conformance(lambda: AgentCoreMemorySessionStore(memory_id(), client=moto_client)))


def test_agentcore_conformance_with_paging_and_reversed_order(moto_client: Any) -> None:
    run(
        run_session_store_conformance(
            lambda: AgentCoreMemorySessionStore(memory_id(), client=PagingClient(moto_client, page=1))
        )
    )


# ---------------------------------------------------------------------------- paging / order
def test_load_follows_next_token_across_pages(moto_client: Any) -> None:
    paging = PagingClient(moto_client, page=3)
    mid = memory_id()
    writer = AgentCoreMemorySessionStore(mid, client=paging)
    for i in range(10):
        run(writer.append(KEY, entries(1, start=i)))
    # The wrapper really pages: a single call sees only the first 3 events.
    first = paging.list_events(
        memoryId=mid, actorId=actor_id_for("proj"), sessionId=session_id_for(KEY["session_id"])
    )
    assert len(first["events"]) == 3 and "nextToken" in first
    paging.list_calls.clear()
    reader = AgentCoreMemorySessionStore(mid, client=paging)  # fresh process: no cache
    assert run(reader.load(KEY)) == entries(10)
    assert sum(1 for c in paging.list_calls if "nextToken" in c) == 3  # 10 events / 3 per page → 4 pages


def test_equal_timestamps_keep_append_order_across_processes(moto_client: Any) -> None:
    paging = PagingClient(moto_client, page=2)  # reversed service order too
    mid = memory_id()
    frozen = lambda: 1_800_000_000.0  # noqa: E731 - every event gets the same timestamp
    a = AgentCoreMemorySessionStore(mid, client=paging, clock=frozen)
    run(a.append(KEY, entries(3)))
    run(a.append(KEY, entries(2, start=3)))
    b = AgentCoreMemorySessionStore(mid, client=paging, clock=frozen)  # another process, same clock
    run(b.append(KEY, entries(2, start=5)))
    stamps = {
        e["eventTimestamp"]
        for e in moto_client.list_events(
            memoryId=mid,
            actorId=actor_id_for("proj"),
            sessionId=session_id_for(KEY["session_id"]),
            includePayloads=True,
        )["events"]
    }
    assert len(stamps) == 1
    assert run(AgentCoreMemorySessionStore(mid, client=paging).load(KEY)) == entries(7)


# ---------------------------------------------------------------------------- limits
def test_large_entry_is_chunked_and_reassembled(moto_client: Any) -> None:
    spy = PagingClient(moto_client, page=100, reverse=False)
    mid = memory_id()
    store = AgentCoreMemorySessionStore(mid, client=spy)
    big: Any = {"type": "assistant", "uuid": "big", "text": "é" * 250_001}
    run(store.append(KEY, [entries(1)[0], big, *entries(1, start=1)]))
    items = [p["blob"] for call in spy.create_calls for p in call["payload"]]
    chunks = [i for i in items if i.get("u") == "big"]
    # "é" travels as a 6-byte \u escape: 1.5 MB on the wire, so 16 chunks of at most 100,000 bytes.
    assert len(chunks) == 16
    assert all(len(json.dumps(i["d"])) <= 100_000 for i in items if i["k"] == "e")
    assert all(list(p) == ["blob"] for call in spy.create_calls for p in call["payload"])
    assert all(call["extractionMode"] == "SKIP" for call in spy.create_calls)
    assert run(AgentCoreMemorySessionStore(mid, client=spy).load(KEY)) == [
        entries(1)[0],
        big,
        *entries(1, start=1),
    ]


def test_many_entries_split_into_events_of_at_most_100_items(moto_client: Any) -> None:
    spy = PagingClient(moto_client, page=100, reverse=False)
    mid = memory_id()
    store = AgentCoreMemorySessionStore(mid, client=spy, max_chunk_bytes=20, max_event_bytes=10_000)
    batch: list[Any] = [
        {"type": "user", "uuid": f"u{i}", "text": "x" * 25} for i in range(120)
    ]  # ≥ 4 chunks each
    run(store.append(KEY, batch))
    transcript_calls = [c for c in spy.create_calls if c["sessionId"] != "index"]
    assert len(transcript_calls) > 4
    assert all(len(c["payload"]) <= 100 for c in transcript_calls)
    assert run(AgentCoreMemorySessionStore(mid, client=spy).load(KEY)) == batch


def test_ids_fit_the_service_patterns_and_are_distinct() -> None:
    model_dir = Path(botocore.__file__).parent / "data" / "bedrock-agentcore"
    model_file = next(model_dir.glob("*/service-2.json*"))
    opener = gzip.open if model_file.suffix == ".gz" else open
    with opener(model_file, "rt") as f:
        shapes = json.load(f)["shapes"]

    def fits(shape: str, value: str) -> bool:
        spec = shapes[shape]
        return spec["min"] <= len(value) <= spec["max"] and re.fullmatch(spec["pattern"], value) is not None

    keys = ["proj", "-work-main", "a/b:c d", "ü" * 120, "x" * 300, "p_1", "p-1"]
    actors = [actor_id_for(k) for k in keys]
    assert all(fits("ActorId", a) for a in actors) and len(set(actors)) == len(keys)
    sessions = [
        session_id_for("0b7f2a56-5d1e-5c8f-9a53-1f0c2b9d4e11"),
        session_id_for("0b7f2a56-5d1e-5c8f-9a53-1f0c2b9d4e11", "subagents/agent-a1b2c3d4e5f6"),
        session_id_for("s" * 99),
        session_id_for("s", "_x"),
        session_id_for("s_x", None),
        session_id_for("weird id/ü"),
    ]
    assert all(fits("SessionId", s) for s in sessions) and len(set(sessions)) == len(sessions)
    assert "index" not in sessions
    with pytest.raises(ValueError, match="subpath"):
        session_id_for("s", "")


# ---------------------------------------------------------------------------- idempotency / errors
def test_reappend_is_idempotent_on_uuid(moto_client: Any, tmp_path: Path) -> None:
    mid = memory_id()
    for make in (
        lambda: AgentCoreMemorySessionStore(mid, client=moto_client),
        lambda: SqliteSessionStore(tmp_path / "s.db"),
    ):
        store = make()
        run(store.append(KEY, entries(3)))
        run(store.append(KEY, entries(4)))  # u0..u2 again plus u3
        run(make().append(KEY, entries(2, start=1)))  # another process re-sends u1 and u2
        no_uuid: Any = {"type": "title", "text": "t"}
        run(store.append(KEY, [no_uuid]))
        run(store.append(KEY, [no_uuid]))
        assert run(make().load(KEY)) == [*entries(4), no_uuid, no_uuid]


def test_throttling_surfaces_and_retry_loses_nothing(moto_client: Any) -> None:
    spy = PagingClient(moto_client, page=100, reverse=False)
    mid = memory_id()
    store = AgentCoreMemorySessionStore(mid, client=spy, max_chunk_bytes=20, max_event_bytes=20)
    run(store.append(KEY, entries(1)))
    # Next batch needs several events; the 2nd of them is throttled after the 1st landed.
    spy.fail_creates = [len(spy.create_calls) + 2]
    batch: list[Any] = [{"type": "user", "uuid": f"v{i}", "text": "y" * 8} for i in range(4)]
    with pytest.raises(SessionStoreError) as info:
        run(store.append(KEY, batch))
    assert info.value.retryable and info.value.aws_code == "ThrottledException"
    assert "CreateEvent" in str(info.value) or "create_event" in str(info.value)
    assert isinstance(info.value.__cause__, ClientError)
    run(store.append(KEY, batch))  # the SDK / spool retries the same batch
    assert run(AgentCoreMemorySessionStore(mid, client=spy).load(KEY)) == [*entries(1), *batch]


def test_non_retryable_error_is_marked(moto_client: Any) -> None:
    class Denied(PagingClient):
        def create_event(self, **kw: Any) -> dict[str, Any]:
            raise ClientError(
                {
                    "Error": {"Code": "AccessDeniedException", "Message": "no"},
                    "ResponseMetadata": {"HTTPStatusCode": 403},
                },
                "CreateEvent",
            )

    store = AgentCoreMemorySessionStore(memory_id(), client=Denied(moto_client))
    with pytest.raises(SessionStoreError) as info:
        run(store.append(KEY, entries(1)))
    assert not info.value.retryable and info.value.aws_code == "AccessDeniedException"


# ---------------------------------------------------------------------------- state
def test_state_last_write_wins_and_outlives_the_instance(moto_client: Any, tmp_path: Path) -> None:
    mid = memory_id()
    for make in (
        lambda: AgentCoreMemorySessionStore(mid, client=moto_client),
        lambda: SqliteSessionStore(tmp_path / "state.db"),
    ):
        store = make()
        assert run(store.get_state("s1")) is None
        run(store.put_state("s1", {"cost_usd": 0.01}))
        run(store.put_state("s1", {"cost_usd": 0.03}))
        run(store.put_state("s2", {"cost_usd": 9.0}))
        fresh = make()
        assert run(fresh.get_state("s1")) == {"cost_usd": 0.03}
        run(fresh.put_state("s1", {"cost_usd": 0.05}))
        assert run(make().get_state("s1")) == {"cost_usd": 0.05}
        assert run(make().get_state("s2")) == {"cost_usd": 9.0}
    # AgentCore prunes superseded state events so get_state stays one short read.
    left = moto_client.list_events(memoryId=mid, actorId="agentkit-state", sessionId=session_id_for("s1"))[
        "events"
    ]
    assert len(left) == 1


def sent_state_items(client: Any) -> list[list[dict[str, Any]]]:
    """The blob items of every CreateEvent ``client`` sends, read from the request body botocore built."""
    sent: list[list[dict[str, Any]]] = []

    def record(request: Any, **_: Any) -> None:
        sent.append([p["blob"] for p in json.loads(request.body)["payload"]])

    client.meta.events.register("before-send.bedrock-agentcore.CreateEvent", record)
    return sent


BIG_STATE = {"v": 1, "patch": "".join(f'line {i}: "é" ünïcödé 😀 \\ plain\n' for i in range(6000))}


def test_a_state_larger_than_one_item_is_sent_in_chunks_of_one_event_and_read_back(moto_client: Any) -> None:
    mid = memory_id()
    sent = sent_state_items(moto_client)
    text = json.dumps(BIG_STATE)
    assert 250_000 < len(json.dumps(text)) < 1_000_000  # over one item, within one event, as sent
    run(AgentCoreMemorySessionStore(mid, client=moto_client).put_state("s1", BIG_STATE))
    assert len(sent) == 1 and len(sent[0]) > 2  # one CreateEvent: a restore sees all of it or none
    # Every item within the bound as botocore sent it (the chunk's escapes included), in one event's bound.
    assert all(len(json.dumps(item)) <= MAX_ITEM_BYTES for item in sent[0])
    assert sum(len(json.dumps(item)) for item in sent[0]) <= MAX_EVENT_BYTES
    assert [item["i"] for item in sent[0]] == list(range(len(sent[0])))
    assert {item["n"] for item in sent[0]} == {len(sent[0])}
    # A new instance (a new microVM) reads it back, paging the events one at a time.
    fresh = AgentCoreMemorySessionStore(mid, client=PagingClient(moto_client, page=1), page_size=1)
    assert run(fresh.get_state("s1")) == BIG_STATE


def test_a_state_of_one_item_written_by_an_earlier_version_is_still_read(moto_client: Any) -> None:
    mid = memory_id()
    moto_client.create_event(
        memoryId=mid,
        actorId="agentkit-state",
        sessionId=session_id_for("s1"),
        eventTimestamp=1_700_000_000,
        payload=[{"blob": {"k": "state", "s": f"{1_700_000_000 * 10**9:020d}", "d": {"cost_usd": 0.5}}}],
    )
    store = AgentCoreMemorySessionStore(mid, client=moto_client)
    assert run(store.get_state("s1")) == {"cost_usd": 0.5}
    run(store.put_state("s1", BIG_STATE))  # a newer chunked write replaces it (and prunes the old event)
    assert run(AgentCoreMemorySessionStore(mid, client=moto_client).get_state("s1")) == BIG_STATE


def test_a_torn_chunked_state_falls_back_to_the_previous_complete_one(moto_client: Any) -> None:
    mid = memory_id()
    run(AgentCoreMemorySessionStore(mid, client=moto_client).put_state("s1", BIG_STATE))
    newer = f"{(1 << 62):020d}"
    chunks = ['{"v": 2, ', '"patch": "', 'lost"}']
    moto_client.create_event(  # a newer write of which one chunk is missing
        memoryId=mid,
        actorId="agentkit-state",
        sessionId=session_id_for("s1"),
        eventTimestamp=1_700_000_000,
        payload=[{"blob": {"k": "state", "s": newer, "i": i, "n": 3, "c": chunks[i]}} for i in (0, 2)],
    )
    assert run(AgentCoreMemorySessionStore(mid, client=moto_client).get_state("s1")) == BIG_STATE


def test_a_state_over_one_event_is_refused_clearly_and_the_stored_one_is_kept(moto_client: Any) -> None:
    mid = memory_id()
    store = AgentCoreMemorySessionStore(mid, client=moto_client)
    run(store.put_state("s1", {"cost_usd": 0.5}))
    sent = sent_state_items(moto_client)
    huge = {"patch": "é" * 200_000}  # 1.4 MB as sent: each é is a \\u00e9 escape inside the chunk's string
    with pytest.raises(SessionStoreError, match="too large for one AgentCore Memory event") as info:
        run(store.put_state("s1", huge))
    assert not info.value.retryable and sent == []
    assert run(AgentCoreMemorySessionStore(mid, client=moto_client).get_state("s1")) == {"cost_usd": 0.5}


# ---------------------------------------------------------------------------- SQLite processes
def _writer(path: str, tag: str, n: int) -> None:
    store = SqliteSessionStore(Path(path))
    for i in range(n):
        line: Any = {"type": "user", "uuid": f"{tag}{i}", "i": i}
        asyncio.run(store.append(KEY, [line]))


def test_sqlite_is_safe_for_several_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    SqliteSessionStore(Path(path))
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, tag, 40)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    loaded = run(SqliteSessionStore(Path(path)).load(KEY))
    for tag in ("a", "b"):
        mine = [e["i"] for e in loaded if e["uuid"].startswith(tag)]
        assert mine == list(range(40))  # all there, each writer's order kept
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_sqlite_delete_failure_rolls_back_and_leaves_the_connection_usable(tmp_path: Path) -> None:
    path = tmp_path / "del.db"
    store = SqliteSessionStore(path)

    async def go() -> None:
        await store.append(KEY, entries(3))
        with sqlite3.connect(path) as other:  # fail the delete after its first statement (entries)
            other.execute(
                "CREATE TRIGGER no_delete BEFORE DELETE ON sessions BEGIN SELECT RAISE(ABORT, 'boom'); END"
            )
        with pytest.raises(SessionStoreError, match="boom"):
            await store.delete(KEY)
        # Rolled back: the entries deleted before the failure are back, and the same connection can write.
        assert [dict(e)["n"] for e in (await store.load(KEY)) or []] == [0, 1, 2]
        other_key: SessionKey = {"project_key": "proj", "session_id": "1c8e3b67-6e2f-5d90-8b64-2a1d3cae5f22"}
        await store.append(other_key, entries(1, start=7))
        assert [dict(e)["n"] for e in (await SqliteSessionStore(path).load(other_key)) or []] == [7]

    run(go())


# ---------------------------------------------------------------------------- factory
def test_store_from_url(tmp_path: Path, moto_client: Any) -> None:
    default = store_from_url("", state_dir=tmp_path)
    assert isinstance(default, SqliteSessionStore) and default.path == tmp_path / "sessions.db"
    explicit = store_from_url(f"sqlite://{tmp_path}/x/s.db", state_dir=tmp_path)
    assert isinstance(explicit, SqliteSessionStore) and explicit.path == tmp_path / "x" / "s.db"
    ac = store_from_url("agentcore://agentkit_mem-AbCdEf1234", state_dir=tmp_path, client=moto_client)
    assert isinstance(ac, AgentCoreMemorySessionStore) and ac.memory_id == "agentkit_mem-AbCdEf1234"
    arn = "arn:aws:bedrock-agentcore:us-east-1:123456789012:memory/agentkit_mem-AbCdEf1234"
    by_arn = store_from_url(f"agentcore://{arn}", state_dir=tmp_path)
    assert isinstance(by_arn, AgentCoreMemorySessionStore) and by_arn.memory_id == arn
    for bad, message in [
        ("sqlite://relative.db", "absolute path"),
        ("sqlite:///", "absolute path"),
        ("agentcore://", "memory-id"),
        ("agentcore://bad id", "memory-id"),
        ("redis://localhost", "unsupported"),
        ("/abs/path.db", "unsupported"),
    ]:
        with pytest.raises(ValueError, match=message):
            store_from_url(bad, state_dir=tmp_path)


# ---------------------------------------------------------------------------- several writers, retries
class TokenHonouring(PagingClient):
    """Like the service: a CreateEvent whose clientToken was seen before returns the first event, stores
    nothing; ``land_then_fail`` call numbers store the event and then raise (an acknowledgement lost)."""

    def __init__(self, inner: Any, **kw: Any) -> None:
        super().__init__(inner, **kw)
        self.tokens: dict[str, Any] = {}
        self.land_then_fail: list[int] = []

    def create_event(self, **kw: Any) -> dict[str, Any]:
        token = str(kw.get("clientToken"))
        if token in self.tokens:
            self.create_calls.append(kw)
            return dict(self.tokens[token])
        response = super().create_event(**kw)
        self.tokens[token] = response
        if len(self.create_calls) in self.land_then_fail:
            raise ClientError(
                {
                    "Error": {"Code": "ServiceException", "Message": "timeout"},
                    "ResponseMetadata": {"HTTPStatusCode": 500},
                },
                "CreateEvent",
            )
        return response


def chain(entries_: list[Any]) -> list[str]:
    """What Claude Code resumes: the parentUuid chain ending at the last entry, root first."""
    by_uuid = {e["uuid"]: e for e in entries_ if e.get("uuid")}
    out: list[str] = []
    node = entries_[-1] if entries_ else None
    while node is not None:
        out.append(node["uuid"])
        node = by_uuid.get(node.get("parentUuid"))
    return out[::-1]


def turn(prefix: str, parent: str | None, size: int = 0) -> list[Any]:
    """A prompt and its answer, chained like the CLI chains them."""
    q = {"type": "user", "uuid": f"{prefix}q", "parentUuid": parent, "text": "q" + "x" * size}
    a = {"type": "assistant", "uuid": f"{prefix}a", "parentUuid": f"{prefix}q", "text": "a" + "y" * size}
    return [q, a]


def test_skewed_writers_with_equal_seqs_neither_merge_nor_break_the_load(moto_client: Any) -> None:
    """Two microVMs pick the same seq (one clock ran ahead): each keeps its entries, every later load works."""
    client = TokenHonouring(moto_client, page=3)
    mid = memory_id()
    skewed = lambda: 1_800_000_030.0  # noqa: E731 - both clocks read the same instant
    a = AgentCoreMemorySessionStore(mid, client=client, clock=skewed)
    b = AgentCoreMemorySessionStore(mid, client=client, clock=skewed)
    run(a.load(KEY))
    run(b.load(KEY))
    one, two = turn("a1", None, size=150_000), turn("b1", None, size=350_000)  # 2 and 4 chunks per entry
    run(a.append(KEY, one))
    run(b.append(KEY, two))
    loaded = run(AgentCoreMemorySessionStore(mid, client=client).load(KEY))

    def body(e: Any) -> Any:
        return {k: v for k, v in e.items() if k != "parentUuid"}

    # Every entry whole (none merged with the other writer's chunks), and all in the resumed chain.
    assert sorted(map(json.dumps, map(body, loaded))) == sorted(map(json.dumps, map(body, [*one, *two])))
    assert sorted(chain(loaded)) == sorted(e["uuid"] for e in [*one, *two])


def test_one_unreadable_group_does_not_fail_the_load(moto_client: Any) -> None:
    mid = memory_id()
    store = AgentCoreMemorySessionStore(mid, client=moto_client)
    run(store.append(KEY, entries(2)))
    bad = {
        "k": "e",
        "s": f"{2 * 10**18:020d}",
        "w": "x",
        "b": "y",
        "x": 0,
        "u": "bad",
        "i": 0,
        "n": 1,
        "d": "{no",
    }
    moto_client.create_event(
        memoryId=mid,
        actorId=actor_id_for("proj"),
        sessionId=session_id_for(KEY["session_id"]),
        eventTimestamp=1_800_000_000,
        payload=[{"blob": bad}, {"blob": {"k": "e", "s": "oops"}}],
    )
    run(store.append(KEY, entries(1, start=2)))
    assert run(AgentCoreMemorySessionStore(mid, client=moto_client).load(KEY)) == entries(3)


def test_a_retried_batch_is_stored_once_even_without_uuids(moto_client: Any) -> None:
    client = TokenHonouring(moto_client, page=100, reverse=False)
    mid = memory_id()
    store = AgentCoreMemorySessionStore(mid, client=client)
    run(store.append(KEY, entries(1)))
    titles: list[Any] = [{"type": "custom-title", "title": "t1"}, {"type": "tag", "tag": "x"}]
    client.land_then_fail = [len(client.create_calls) + 1]  # stored, but the answer is lost
    with pytest.raises(SessionStoreError):
        run(store.append_batch(KEY, titles, batch_id="batch-1"))
    run(store.append_batch(KEY, titles, batch_id="batch-1"))  # the spool's retry: same batch id
    # A spool adopted by another process sends the batch again under its id: dropped on load.
    run(AgentCoreMemorySessionStore(mid, client=client).append_batch(KEY, titles, batch_id="batch-1"))
    assert run(AgentCoreMemorySessionStore(mid, client=client).load(KEY)) == [*entries(1), *titles]


def test_a_late_batch_from_an_older_writer_stays_in_the_resumed_conversation(moto_client: Any) -> None:
    """microVM A answers turn 2 but its write fails; B resumes from turn 1 and answers turn 3; then A's spool
    delivers turn 2. The resumed chain holds all three turns in the order they were answered, and the late
    write is reported."""
    client = PagingClient(moto_client, page=2)
    mid = memory_id()
    late: list[str] = []
    ticks = iter(range(1_800_000_000, 1_800_001_000))
    a = AgentCoreMemorySessionStore(
        mid, client=client, clock=lambda: float(next(ticks)), on_event=late.append
    )
    b = AgentCoreMemorySessionStore(mid, client=client, clock=lambda: float(next(ticks)))
    t1, t2, t3 = turn("t1", None), turn("t2", "t1a"), turn("t3", "t1a")
    run(a.append(KEY, t1))
    client.fail_creates = [len(client.create_calls) + 1]
    with pytest.raises(SessionStoreError):
        run(a.append_batch(KEY, t2, batch_id="a-2"))  # answered, but the write fails: the spool keeps it
    assert run(b.load(KEY)) == t1  # B resumes without turn 2
    run(b.append(KEY, t3))
    run(a.append_batch(KEY, t2, batch_id="a-2", fence=True))  # the spool's late redelivery
    assert late == ["SessionStoreLateWrites"]
    resumed = run(AgentCoreMemorySessionStore(mid, client=client).load(KEY))
    assert chain(resumed) == ["t1q", "t1a", "t2q", "t2a", "t3q", "t3a"]
    assert [e["uuid"] for e in resumed] == chain(resumed)


def test_requests_are_sized_by_the_bytes_sent(moto_client: Any) -> None:
    spy = PagingClient(moto_client, page=100, reverse=False)
    mid = memory_id()
    store = AgentCoreMemorySessionStore(mid, client=spy)
    emoji: Any = {"type": "user", "uuid": "e", "text": "😀" * 200_000}  # 2.4 MB once botocore escapes it
    run(store.append(KEY, [emoji]))
    for call in spy.create_calls:
        assert len(json.dumps(call["payload"])) <= 1_000_000 + 100 * 200  # chunk data plus item fields
        assert all(len(json.dumps(p["blob"].get("d", ""))) <= 100_000 for p in call["payload"])
    assert run(AgentCoreMemorySessionStore(mid, client=spy).load(KEY)) == [emoji]


def test_the_factory_reads_a_long_session_in_few_calls(moto_client: Any, tmp_path: Path) -> None:
    class ServicePaging(PagingClient):  # pages like the service: 20 by default, up to maxResults
        def list_events(self, **kw: Any) -> dict[str, Any]:
            self.page = kw.get("maxResults") or 20
            return super().list_events(**kw)

    client = ServicePaging(moto_client, reverse=False)
    mid = memory_id()
    writer = AgentCoreMemorySessionStore(mid, client=client)
    for i in range(300):
        run(writer.append(KEY, entries(1, start=i)))
    client.list_calls.clear()
    store = store_from_url(f"agentcore://{mid}", state_dir=tmp_path, client=client)
    assert run(store.load(KEY)) == entries(300)
    assert len(client.list_calls) == 3  # 300 events at 100 per call (the service default of 20: 15 calls)
