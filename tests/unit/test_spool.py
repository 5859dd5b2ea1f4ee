"""SpoolingSessionStore: a store that fails N times then recovers loses nothing and keeps order."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk.types import SessionKey

from runtime.session_store import SessionStoreError, SqliteSessionStore
from runtime.session_store.spool import SpoolingSessionStore

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


# ---------------------------------------------------------------------------- the SDK's mirror path
def mirror(store: Any, projects: Path, send_timeout: float) -> Any:
    """The SDK's own batcher (what the CLI's transcript frames go through), with a shorter timeout."""
    from claude_agent_sdk._internal.transcript_mirror_batcher import TranscriptMirrorBatcher

    errors: list[str] = []

    async def on_error(key: Any, message: str) -> None:
        errors.append(message)

    batcher = TranscriptMirrorBatcher(
        store=store, projects_dir=str(projects), on_error=on_error, send_timeout=send_timeout
    )
    batcher.errors = errors  # type: ignore[attr-defined]
    return batcher


class SlowThenFailing(SqliteSessionStore):
    """The first append runs longer than the SDK allows (in a worker thread, as boto3 calls do) and then
    fails, like four throttled attempts with backoff; later appends work."""

    def __init__(self, path: Path, slow_s: float) -> None:
        super().__init__(path)
        self.slow_s = slow_s
        self.calls = 0

    async def append(self, key: Any, entries: list[Any]) -> None:
        self.calls += 1
        if self.calls == 1:
            await asyncio.to_thread(__import__("time").sleep, self.slow_s)
            raise SessionStoreError("throttled", aws_code="ThrottledException", retryable=True)
        await super().append(key, entries)


@pytest.mark.parametrize("call_timeout_s", [0.2, None], ids=["bounded-call", "sdk-cancels-first"])
def test_a_store_call_slower_than_the_sdk_timeout_loses_nothing(
    tmp_path: Path, call_timeout_s: float
) -> None:
    """The SDK cancels an append after its timeout: the batch was journaled first, so it is delivered later."""
    inner = SlowThenFailing(tmp_path / "s.db", slow_s=1.0)
    projects = tmp_path / "projects"

    async def scenario() -> list[Any] | None:
        bound: dict[str, Any] = (
            {} if call_timeout_s is None else {"call_timeout_s": call_timeout_s}
        )  # default 20 s
        store = SpoolingSessionStore(inner, spool_dir=tmp_path / "spool", retry_initial_s=0.05, **bound)
        batcher = mirror(store, projects, send_timeout=0.5)
        answered = [*batch(0), *batch(2)]
        batcher.enqueue(str(projects / "proj" / "sess.jsonl"), answered[:2])
        await batcher.flush()  # the turn's result is yielded after this
        batcher.enqueue(str(projects / "proj" / "sess.jsonl"), answered[2:])
        await batcher.flush()
        for _ in range(200):
            if store.pending_count == 0:
                break
            await asyncio.sleep(0.02)
        await store.close()
        return await SqliteSessionStore(tmp_path / "s.db").load(KEY)  # the next microVM's resume

    assert asyncio.run(scenario()) == [*batch(0), *batch(2)]


class Rejecting(SqliteSessionStore):
    """Rejects for good any batch holding a ``poison`` entry (a validation error), takes the others."""

    async def append(self, key: Any, entries: list[Any]) -> None:
        if any(e.get("poison") for e in entries):
            raise SessionStoreError(
                "ValidationException: too big", aws_code="ValidationException", retryable=False
            )
        await super().append(key, entries)


def test_a_batch_rejected_for_good_is_dead_lettered_and_later_turns_are_kept(tmp_path: Path) -> None:
    events: list[str] = []
    poison: Any = {"type": "user", "uuid": "bad", "poison": True}

    async def scenario() -> list[Any] | None:
        inner = Rejecting(tmp_path / "s.db")
        store = SpoolingSessionStore(
            inner,
            spool_dir=tmp_path / "spool",
            on_event=events.append,
            retry_initial_s=0.01,
            retry_max_s=0.02,
        )
        await store.append(KEY, batch(0))
        await store.append(KEY, [poison])
        for turn in range(1, 6):  # turns 2-6 of the report: answered, and must survive the microVM
            await store.append(KEY, batch(2 * turn))
        await asyncio.sleep(0.2)
        await store.close()
        return await SqliteSessionStore(tmp_path / "s.db").load(KEY)

    assert asyncio.run(scenario()) == batch(0, 12)
    assert events == ["SessionStoreDeadLetters"]
    dead = [json.loads(line) for line in (tmp_path / "spool" / "dead-letter.jsonl").read_text().splitlines()]
    assert [d["entries"] for d in dead] == [[poison]] and "ValidationException" in dead[0]["error"]


def test_strict_mode_returns_only_once_the_batch_is_stored(tmp_path: Path) -> None:
    inner = FlakyStore(tmp_path / "s.db", failures=3)

    async def scenario() -> None:
        store = SpoolingSessionStore(inner, spool_dir=tmp_path / "spool", strict=True, retry_initial_s=0.01)
        await store.append(KEY, batch(0))  # three throttled tries, then stored, before append returns
        assert await SqliteSessionStore(tmp_path / "s.db").load(KEY) == batch(0)
        assert store.pending_count == 0
        await store.close()

    asyncio.run(scenario())


def test_strict_mode_raises_after_its_deadline_and_still_keeps_the_batch(tmp_path: Path) -> None:
    inner = FlakyStore(tmp_path / "s.db", failures=10_000)
    projects = tmp_path / "projects"

    async def scenario() -> None:
        store = SpoolingSessionStore(
            inner, spool_dir=tmp_path / "spool", strict=True, strict_deadline_s=0.3, retry_initial_s=0.02
        )
        batcher = mirror(store, projects, send_timeout=5)
        batcher.enqueue(str(projects / "proj" / "sess.jsonl"), batch(0))
        await batcher.flush()
        assert batcher.errors and "kept on this microVM" in batcher.errors[0]  # → mirror_error, no ack
        assert store.pending_count == 1  # the SDK's three attempts did not queue three copies
        inner.failures = 0
        assert await store.flush()
        assert await SqliteSessionStore(tmp_path / "s.db").load(KEY) == batch(0)
        await store.close()

    asyncio.run(scenario())


def test_a_lone_surrogate_neither_fails_the_turn_nor_poisons_the_store(tmp_path: Path) -> None:
    odd: Any = {"type": "user", "uuid": "odd", "text": "ls: bad\udcffname"}

    async def scenario() -> None:
        inner = FlakyStore(tmp_path / "s.db", failures=1)  # the first write goes through the journal
        store = SpoolingSessionStore(inner, spool_dir=tmp_path / "spool", retry_initial_s=0.01)
        await store.append(KEY, [odd])
        await store.append(KEY, batch(0))
        assert await store.flush()
        await store.close()

    asyncio.run(scenario())
    assert asyncio.run(SqliteSessionStore(tmp_path / "s.db").load(KEY)) == [odd, *batch(0)]


def test_a_mirror_error_is_recovered_from_the_cli_transcript(tmp_path: Path) -> None:
    """The SDK gave a batch up (mirror_error): what the CLI's local transcript holds and the store lacks is
    appended, once, whatever was stored already."""
    projects = tmp_path / "projects"
    title: Any = {"type": "custom-title", "title": "t"}  # no uuid: matched on the whole entry
    local = [*batch(0, 3), title, *batch(3)]
    path = projects / "proj" / "sess.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in local) + '{"torn": ')

    async def scenario() -> list[Any] | None:
        store = SpoolingSessionStore(SqliteSessionStore(tmp_path / "s.db"), spool_dir=tmp_path / "spool")
        await store.append(KEY, [*batch(0), title])  # what reached the store before the failure
        store.recover_from_transcript(KEY, projects)
        store.recover_from_transcript(None, projects)  # a mirror_error without a key: nothing to do
        await asyncio.gather(*store._recoveries)
        await store.close()
        return await SqliteSessionStore(tmp_path / "s.db").load(KEY)

    assert asyncio.run(scenario()) == [*batch(0), title, *batch(2, 3)]


def test_strict_and_write_behind_together_are_refused(tmp_path: Path) -> None:
    from runtime.config.settings import Settings
    from runtime.errors import ConfigurationError
    from runtime.wiring import build_store

    settings = Settings.from_env(
        {
            "AGENTKIT_STATE_DIR": str(tmp_path),
            "AGENTKIT_STORE_STRICT": "1",
            "AGENTKIT_STORE_WRITE_BEHIND": "1",
        }
    )
    with pytest.raises(ConfigurationError, match="exclude each other"):
        build_store(settings)
    with pytest.raises(ValueError, match="exclude each other"):
        SpoolingSessionStore(object(), spool_dir=tmp_path, strict=True, write_behind=True)


def test_a_dead_processs_journal_on_a_read_only_volume_is_delivered_before_newer_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import pathlib

    from runtime.session_store import journal as journal_module

    inner = FlakyStore(tmp_path / "s.db", failures=100)
    spool = tmp_path / "spool"

    async def dead_process() -> None:
        store = SpoolingSessionStore(inner, spool_dir=spool, retry_initial_s=60)
        await store.append(KEY, batch(0))  # answered, journaled, not stored
        assert store._journal._file is not None
        store._journal._file.close()  # killed: its lock goes with it, the journal stays

    asyncio.run(dead_process())
    inner.failures = 0

    # The volume is read-only for the next process: every open for writing and every unlink fails as the kernel
    # says it (EROFS); reads work.
    real_open, real_unlink = open, pathlib.Path.unlink

    def read_only_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if str(file).startswith(str(spool)) and any(c in mode for c in "wa+x"):
            raise OSError(errno.EROFS, "Read-only file system", str(file))
        return real_open(file, mode, *args, **kwargs)

    def read_only_unlink(self: pathlib.Path, missing_ok: bool = False) -> None:
        if str(self).startswith(str(spool)) and self.exists():
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(journal_module, "open", read_only_open, raising=False)
    monkeypatch.setattr(pathlib.Path, "unlink", read_only_unlink)

    async def next_process() -> None:
        store = SpoolingSessionStore(inner, spool_dir=spool, retry_initial_s=60)
        assert await store.load(KEY) == batch(0)  # the first load works and sees the dead process's turn
        await store.append(KEY, batch(2))  # a newer turn
        assert await store.flush()
        assert await store.load(KEY) == batch(0, 4)
        await store.close()

    asyncio.run(next_process())
    assert asyncio.run(inner.load(KEY)) == batch(0, 4)  # once each, the older turn first


def test_close_keeps_redelivering_through_a_throttling_episode_within_its_window(tmp_path: Path) -> None:
    """SIGTERM while the store throttles: the turns answered are delivered by the shutdown flush when the store
    recovers within the window (one try used to leave them on a disk that goes with the microVM)."""
    inner = FlakyStore(tmp_path / "s.db", failures=0)

    async def scenario() -> None:
        store = SpoolingSessionStore(
            inner, spool_dir=tmp_path / "spool", retry_initial_s=0.02, retry_max_s=0.05
        )
        inner.failures = 2
        await store.append(KEY, batch(0))  # throttled: queued
        await store.append(KEY, batch(2))  # queued behind it
        inner.failures = 4  # still throttled when the shutdown starts: the first flush tries fail
        await store.close()

    asyncio.run(scenario())
    assert asyncio.run(inner.load(KEY)) == batch(0, 4)
    assert not list((tmp_path / "spool").glob("*.jsonl"))


def test_close_gives_up_after_its_window_and_keeps_the_journal(tmp_path: Path) -> None:
    inner = FlakyStore(tmp_path / "s.db", failures=10**6)

    async def scenario() -> None:
        store = SpoolingSessionStore(
            inner, spool_dir=tmp_path / "spool", retry_initial_s=0.02, retry_max_s=0.05, shutdown_flush_s=0.3
        )
        await store.append(KEY, batch(0))
        await store.close()

    asyncio.run(scenario())
    assert inner.write_calls > 3  # it kept trying within the window
    assert len(list((tmp_path / "spool").glob("*.jsonl"))) == 1  # then left it on disk for the next process


def test_close_flushes_for_the_time_it_is_given_not_its_default(tmp_path: Path) -> None:
    """The server gives the store its share of the shutdown budget (runtime.process.shutdown.close_together):
    that window, not the store's own default of an hour here, bounds the redelivery."""
    inner = FlakyStore(tmp_path / "s.db", failures=10**6)

    async def scenario() -> None:
        store = SpoolingSessionStore(
            inner,
            spool_dir=tmp_path / "spool",
            retry_initial_s=0.02,
            retry_max_s=0.05,
            shutdown_flush_s=3600.0,
        )
        await store.append(KEY, batch(0))
        async with asyncio.timeout(60):  # a close that used its default would fail here, not hang the suite
            await store.close(flush_s=0.3)

    asyncio.run(scenario())
    assert inner.write_calls > 3  # it kept trying within the window
    assert len(list((tmp_path / "spool").glob("*.jsonl"))) == 1  # then left it on disk for the next process


class FencedStore(SqliteSessionStore):
    """Records the ``fence`` of each batch delivery (the AgentCore store re-reads the session when it is set)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.fences: list[bool] = []
        self.failing = True

    async def append_batch(self, key: Any, entries: list[Any], *, batch_id: str, fence: bool = False) -> None:
        self.fences.append(fence)
        if self.failing:
            raise SessionStoreError("throttled", aws_code="ThrottledException", retryable=True)
        await super().append(key, entries)


def test_a_round_of_late_batches_rereads_each_session_once(tmp_path: Path) -> None:
    inner = FencedStore(tmp_path / "s.db")

    async def scenario() -> None:
        store = SpoolingSessionStore(inner, spool_dir=tmp_path / "spool", retry_initial_s=60)
        for start in (0, 2, 4):
            await store.append(KEY, batch(start))
        inner.fences.clear()
        inner.failing = False
        assert await store.flush()
        await store.close()

    asyncio.run(scenario())
    assert inner.fences == [True, False, False]
    assert asyncio.run(inner.load(KEY)) == batch(0, 6)
