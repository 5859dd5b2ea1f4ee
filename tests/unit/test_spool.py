"""SpoolingSessionStore: a store that fails N times then recovers loses nothing and keeps order."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk.types import SessionKey

from runtime.session_store import SessionStoreError, SqliteSessionStore
from runtime.store.spool import SpoolingSessionStore

KEY: SessionKey = {"project_key": "proj", "session_id": "sess"}
SUB: SessionKey = {**KEY, "subpath": "subagents/agent-1"}


def batch(start: int, n: int = 2) -> list[Any]:  # transcript lines: blobs to a store (SessionStoreEntry)
    return [{"type": "user", "uuid": f"u{i}", "n": i} for i in range(start, start + n)]


class FlakyStore(SqliteSessionStore):
    """A real SQLite store whose writes raise a throttling error the first ``failures`` times."""

    def __init__(self, path: Path, failures: int) -> None:
        super().__init__(path)
        self.failures = failures
        self.write_calls = 0

    def _maybe_fail(self) -> None:
        self.write_calls += 1
        if self.failures > 0:
            self.failures -= 1
            raise SessionStoreError("throttled", aws_code="ThrottledException", retryable=True)

    async def append(self, key: Any, entries: list[Any]) -> None:
        if entries:
            self._maybe_fail()
        await super().append(key, entries)

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None:
        self._maybe_fail()
        await super().put_state(session_id, state)


def test_store_failing_n_times_then_recovering_loses_nothing(tmp_path: Path) -> None:
    inner = FlakyStore(tmp_path / "s.db", failures=4)
    errors: list[BaseException] = []

    async def scenario() -> None:
        store = SpoolingSessionStore(
            inner,
            spool_dir=tmp_path / "spool",
            on_error=errors.append,
            retry_initial_s=0.01,
            retry_max_s=0.02,
        )
        for i in range(5):  # five turns; the first ones fail, later ones queue behind them
            await store.append(KEY, batch(2 * i))
        await store.append(SUB, batch(100))
        # While spooled, load already shows everything in order.
        assert await store.load(KEY) == batch(0, 10)
        for _ in range(200):
            if store.pending_count == 0:
                break
            await asyncio.sleep(0.01)
        assert store.pending_count == 0  # the background task delivered without a flush
        await store.close()

    asyncio.run(scenario())
    assert asyncio.run(inner.load(KEY)) == batch(0, 10)
    assert asyncio.run(inner.load(SUB)) == batch(100)
    assert len(errors) == 4 and all(isinstance(e, SessionStoreError) for e in errors)
    assert not list((tmp_path / "spool").glob("*.jsonl"))  # journal removed once empty


def test_flush_at_close_delivers_and_load_merges_partial_delivery(tmp_path: Path) -> None:
    inner = FlakyStore(tmp_path / "s.db", failures=1)

    async def scenario() -> None:
        store = SpoolingSessionStore(inner, spool_dir=tmp_path / "spool", retry_initial_s=60)
        await store.append(KEY, batch(0))  # fails → spooled; retry task sleeps 60 s
        # Simulate a batch that landed before the failure was reported: no duplicate on load.
        await SqliteSessionStore(tmp_path / "s.db").append(KEY, batch(0, 1))
        assert await store.load(KEY) == batch(0)
        await store.close()  # cancels the sleeping task and flushes

    asyncio.run(scenario())
    assert asyncio.run(inner.load(KEY)) == batch(0)


def test_undelivered_batches_survive_a_process_and_are_adopted(tmp_path: Path) -> None:
    inner = FlakyStore(tmp_path / "s.db", failures=100)
    spool = tmp_path / "spool"

    async def first_process() -> None:
        store = SpoolingSessionStore(inner, spool_dir=spool, retry_initial_s=60)
        await store.append(KEY, batch(0))
        await store.append(KEY, batch(2))
        await store.put_state("sess", {"cost_usd": 0.5})
        assert await store.get_state("sess") == {"cost_usd": 0.5}
        await store.close()  # still failing: journal kept

    asyncio.run(first_process())
    journals = list(spool.glob("*.jsonl"))
    assert len(journals) == 1
    assert [json.loads(line)["op"] for line in journals[0].read_text().splitlines()].count("batch") == 3
    inner.failures = 0

    async def second_process() -> None:
        store = SpoolingSessionStore(inner, spool_dir=spool)
        assert await store.flush()
        assert await store.load(KEY) == batch(0, 4)
        assert await store.get_state("sess") == {"cost_usd": 0.5}
        await store.close()

    asyncio.run(second_process())
    assert asyncio.run(inner.load(KEY)) == batch(0, 4)
    assert not list(spool.glob("*.jsonl"))


def test_delete_drops_spooled_batches(tmp_path: Path) -> None:
    inner = FlakyStore(tmp_path / "s.db", failures=2)

    async def scenario() -> None:
        store = SpoolingSessionStore(inner, spool_dir=tmp_path / "spool", retry_initial_s=60)
        await store.append(KEY, batch(0))
        await store.append(SUB, batch(5))
        await store.delete(KEY)  # main key cascades to the subagent batch
        assert store.pending_count == 0
        assert await store.load(KEY) is None and await store.load(SUB) is None
        await store.close()

    asyncio.run(scenario())


def test_other_methods_delegate_and_errors_propagate(tmp_path: Path) -> None:
    inner = FlakyStore(tmp_path / "s.db", failures=0)

    async def scenario() -> None:
        store = SpoolingSessionStore(inner, spool_dir=tmp_path / "spool")
        await store.append(KEY, batch(0))
        await store.append(SUB, batch(2))
        assert [s["session_id"] for s in await store.list_sessions("proj")] == ["sess"]
        assert [s["session_id"] for s in await store.list_session_summaries("proj")] == ["sess"]
        assert await store.list_subkeys(KEY) == ["subagents/agent-1"]
        with pytest.raises(ValueError, match="subpath"):
            await store.load({**KEY, "subpath": ""})
        await store.close()

    asyncio.run(scenario())


class SlowStore(SqliteSessionStore):
    """A real SQLite store whose appends wait for a gate: a remote store that is slow right now."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.gate = asyncio.Event()

    async def append(self, key: Any, entries: list[Any]) -> None:
        await self.gate.wait()
        await super().append(key, entries)


def test_write_behind_returns_before_the_remote_write_and_loses_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        inner = SlowStore(tmp_path / "s.db")
        store = SpoolingSessionStore(inner, spool_dir=tmp_path / "spool", write_behind=True)
        for i in range(3):
            await asyncio.wait_for(store.append(KEY, batch(2 * i)), timeout=1)  # would hang if it waited
        await store.put_state("sess", {"spent_usd": 0.5})
        assert await inner.load(KEY) is None  # nothing delivered yet ...
        assert [dict(e)["n"] for e in await store.load(KEY) or []] == list(
            range(6)
        )  # ... but nothing is missing
        assert await store.get_state("sess") == {"spent_usd": 0.5}
        inner.gate.set()
        for _ in range(100):
            if store.pending_count == 0:
                break
            await asyncio.sleep(0.01)
        assert [dict(e)["n"] for e in await inner.load(KEY) or []] == list(range(6))
        assert await inner.get_state("sess") == {"spent_usd": 0.5}
        await store.close()

    asyncio.run(scenario())
