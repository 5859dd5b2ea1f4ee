"""The retention sweep of sessions' own directories (``runtime.workspace.retention``), on a real state dir with an
injected wall clock: what is due goes (with one log line saying what was freed), what is in use or recent stays,
nothing is followed through a link, a removed snapshot leaves a marker the runner turns into ``workspace_expired``,
and a new snapshot brings the session back."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import boto3
import pytest

from harness.archives import tar_gz
from runtime.errors import SessionBusy, WorkspaceExpired
from runtime.guard.policy import is_sensitive_name
from runtime.jobs.outbox import Outbox
from runtime.jobs.service import Jobs
from runtime.jobs.sink import SqsEvents
from runtime.protocol import JobSpec
from runtime.sessions import SessionRegistry
from runtime.turn_request import TurnRequest
from runtime.workspace import SnapshotLimits, Workspaces, default_tree_for
from runtime.workspace.retention import EXPIRED, LAST_USED, MARKER_KEEP_S, Retention, _open_up, interval_for
from tests.unit.test_sessions import RecordingRunner, _collect, until
from tests.unit.test_workspace_runner import SID
from tests.unit.test_workspace_runner import make as make_runner

pytestmark = pytest.mark.anyio

OLD = "0a0a0a0a-1111-5222-8333-444455556666"
NEW = "0b0b0b0b-1111-5222-8333-444455556666"
WARM = "0c0c0c0c-1111-5222-8333-444455556666"
DAY = 86_400.0


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def workspaces_for(state: Path) -> Workspaces:
    return Workspaces(
        trusted_root=state / "snapshots",
        tree_for=default_tree_for(state),
        limits=SnapshotLimits(10**6, 10**7, 100, 10**6),
        max_patch_bytes=10**6,
        withhold=is_sensitive_name,
    )


def make(
    tmp_path: Path, in_use: set[str] | None = None, retention_s: float = DAY
) -> tuple[Retention, Workspaces, Clock, Path]:
    state = tmp_path / "state"
    clock = Clock()
    used = in_use if in_use is not None else set()
    retention = Retention(state_dir=state, retention_s=retention_s, in_use=lambda: used, wall=clock)
    return retention, workspaces_for(state), clock, state


def snapshot_session(workspaces: Workspaces, retention: Retention, sid: str, size: int = 50_000) -> None:
    """A session that was sent a snapshot and used once (its turn records the use, as the runner does)."""
    workspaces.install(sid, tar_gz([("src/a.py", b"x = 1\n"), ("data.bin", os.urandom(size))]))
    retention.touch(sid)


async def test_an_unused_sessions_workspace_and_snapshot_go_and_one_line_says_what_was_freed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    retention, workspaces, clock, state = make(tmp_path)
    snapshot_session(workspaces, retention, OLD)
    clock.now += DAY / 2
    snapshot_session(workspaces, retention, NEW)
    clock.now += DAY / 2 + 1  # OLD: a day and a second unused; NEW: half a day
    caplog.set_level(logging.INFO, logger="runtime.workspace.retention")
    removed = await retention.sweep()
    assert [r.claude_session_id for r in removed] == [OLD]
    assert removed[0].had_snapshot and removed[0].freed_bytes >= 50_000
    assert not (state / "workspaces" / OLD).exists() and not (state / "snapshots" / OLD / "base.git").exists()
    assert (state / "workspaces" / NEW / "src" / "a.py").is_file() and workspaces.has_snapshot(NEW)
    lines = [r.getMessage() for r in caplog.records if OLD in r.getMessage()]
    assert len(lines) == 1 and "MiB freed" in lines[0] and "24.0 h" in lines[0]
    # what stays of it is the marker: the session's next turn is told why its workspace is gone
    assert retention.expired(OLD) and not retention.expired(NEW)
    assert sorted(p.name for p in (state / "snapshots" / OLD).iterdir()) == [EXPIRED]


async def test_a_session_in_use_is_never_removed_however_old(tmp_path: Path) -> None:
    in_use = {WARM}
    retention, workspaces, clock, _ = make(tmp_path, in_use)
    snapshot_session(workspaces, retention, WARM)
    clock.now += 10 * DAY
    assert await retention.sweep() == []
    assert workspaces.has_snapshot(WARM)
    # the sweep recorded the warm session's use: once it is closed, its day starts from the last sweep that saw it
    in_use.clear()
    clock.now += DAY - 1
    assert await retention.sweep() == []
    clock.now += 2
    assert [r.claude_session_id for r in await retention.sweep()] == [WARM]


async def test_a_session_that_becomes_busy_while_the_sweep_reads_the_disk_is_kept(tmp_path: Path) -> None:
    calls = 0

    def in_use() -> set[str]:
        nonlocal calls
        calls += 1
        return set() if calls == 1 else {OLD}  # a turn arrived between the scan and the removal

    state = tmp_path / "state"
    clock = Clock()
    retention = Retention(state_dir=state, retention_s=DAY, in_use=in_use, wall=clock)
    workspaces = workspaces_for(state)
    snapshot_session(workspaces, retention, OLD)
    clock.now += 2 * DAY
    assert await retention.sweep() == []
    assert workspaces.has_snapshot(OLD)


async def test_the_close_of_a_session_counts_as_its_last_use(tmp_path: Path) -> None:
    retention, workspaces, clock, _ = make(tmp_path)
    snapshot_session(workspaces, retention, OLD)
    clock.now += DAY - 10
    retention.note_used(OLD)  # its CLI closed now (the registry's on_finished)
    clock.now += 20
    assert await retention.sweep() == []
    clock.now += DAY
    assert len(await retention.sweep()) == 1


async def test_agent_file_times_do_not_count_only_the_runtimes_record(tmp_path: Path) -> None:
    retention, workspaces, clock, state = make(tmp_path)
    snapshot_session(workspaces, retention, OLD)
    clock.now += 2 * DAY
    tree = state / "workspaces" / OLD
    (tree / "fresh.txt").write_text("the agent keeps writing")  # mtimes are "now" on the real clock
    os.utime(tree, (clock.now, clock.now))
    assert len(await retention.sweep()) == 1


async def test_a_directory_with_no_record_starts_its_clock_when_first_seen(tmp_path: Path) -> None:
    retention, _, clock, state = make(tmp_path)
    tree = state / "workspaces" / OLD  # e.g. made by an older runtime, years ago by its mtime
    tree.mkdir(parents=True)
    (tree / "f").write_text("x")
    os.utime(tree, (0, 0))
    assert await retention.sweep() == []
    assert (state / "snapshots" / OLD / LAST_USED).is_file()
    clock.now += DAY
    removed = await retention.sweep()
    assert [(r.claude_session_id, r.had_snapshot) for r in removed] == [(OLD, False)]
    assert not tree.exists() and not retention.expired(OLD)  # no snapshot: nothing to send again


async def test_nothing_is_followed_through_a_link(tmp_path: Path) -> None:
    retention, workspaces, clock, state = make(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the session's")
    snapshot_session(workspaces, retention, OLD)
    os.symlink(outside, state / "workspaces" / OLD / "link-to-outside")
    os.symlink(outside / "keep.txt", state / "workspaces" / OLD / "file-link")
    (state / "workspaces").mkdir(exist_ok=True)
    os.symlink(outside, state / "workspaces" / NEW)  # a link where a session's directory should be
    assert await retention.sweep() == []  # NEW: first seen, its clock starts
    clock.now += 2 * DAY
    removed = await retention.sweep()
    assert sorted(r.claude_session_id for r in removed) == sorted([OLD, NEW])
    assert not os.path.lexists(state / "workspaces" / NEW) and not os.path.lexists(state / "workspaces" / OLD)
    assert (outside / "keep.txt").read_text() == "not the session's"
    assert removed[[r.claude_session_id for r in removed].index(OLD)].freed_bytes < 1_000_000


async def test_a_tree_nested_deeper_than_the_recursion_limit_goes_and_does_not_hold_back_the_others(
    tmp_path: Path,
) -> None:
    retention, workspaces, clock, state = make(tmp_path)
    snapshot_session(workspaces, retention, OLD)
    snapshot_session(workspaces, retention, NEW)
    fd = os.open(state / "workspaces" / OLD, os.O_RDONLY)
    for _ in range(
        1500
    ):  # what an agent's `mkdir -p a/a/a/...` makes; Python 3.11's rmtree recurses per level
        os.mkdir("a", dir_fd=fd)
        deeper = os.open("a", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(fd)
    clock.now += 2 * DAY
    try:
        removed = await retention.sweep()
        assert sorted(r.claude_session_id for r in removed) == sorted([OLD, NEW])
        assert removed[0].freed_bytes > 1500 * 512
        assert not (state / "workspaces" / OLD).exists() and not (state / "workspaces" / NEW).exists()
    finally:  # pytest's own clean-up of old temp dirs is the same recursive rmtree: never leave the tree behind
        subprocess.run(["rm", "-rf", "--", str(state / "workspaces")], check=True)


def test_opening_up_read_only_directories_changes_nothing_through_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o500)
    tree = tmp_path / "tree"
    (tree / "locked" / "inner").mkdir(parents=True)
    os.symlink(outside, tree / "locked" / "link")
    os.chmod(tree / "locked" / "inner", 0o500)
    os.chmod(tree / "locked", 0o000)
    _open_up(tree)
    assert (tree / "locked").stat().st_mode & 0o777 == 0o700
    assert (tree / "locked" / "inner").stat().st_mode & 0o777 == 0o700
    assert outside.stat().st_mode & 0o777 == 0o500


async def test_other_entries_and_the_empty_tool_disk_mount_point(tmp_path: Path) -> None:
    retention, workspaces, clock, state = make(tmp_path)
    snapshot_session(workspaces, retention, OLD)
    (state / "tool-disk" / OLD).mkdir(parents=True)
    (state / "tool-disk" / f"{OLD}.pid").write_text("1")
    (state / "workspaces" / f".{OLD}-staging").mkdir()  # not a session id: not the sweep's
    clock.now += 2 * DAY
    assert len(await retention.sweep()) == 1
    assert not (state / "tool-disk" / OLD).exists()
    assert (state / "workspaces" / f".{OLD}-staging").is_dir()


async def test_a_new_snapshot_brings_an_expired_session_back_and_the_marker_goes_in_time(
    tmp_path: Path,
) -> None:
    retention, workspaces, clock, state = make(tmp_path)
    snapshot_session(workspaces, retention, OLD)
    snapshot_session(workspaces, retention, NEW)
    clock.now += 2 * DAY
    assert len(await retention.sweep()) == 2
    snapshot_session(workspaces, retention, NEW)
    assert workspaces.has_snapshot(NEW) and not retention.expired(NEW)
    clock.now += MARKER_KEEP_S + 1
    retention.touch(NEW)
    await retention.sweep()
    assert not (state / "snapshots" / OLD).exists()  # the marker, kept long enough, is gone too
    assert workspaces.has_snapshot(NEW)


async def test_a_turn_waits_for_a_removal_under_way(tmp_path: Path) -> None:
    retention, workspaces, clock, state = make(tmp_path)
    snapshot_session(workspaces, retention, OLD, size=10)
    for i in range(300):  # enough files that the removal takes a moment
        (state / "workspaces" / OLD / f"f{i}").write_bytes(b"x")
    clock.now += 2 * DAY
    sweep = asyncio.create_task(retention.sweep())
    async with asyncio.timeout(5):
        while OLD not in retention._removing:  # the sweep has decided (polled at every step of the loop)
            await asyncio.sleep(0)
    await retention.settled(OLD)
    assert not (state / "workspaces" / OLD).exists() and retention.expired(OLD)
    await sweep


async def test_sweeps_run_at_start_and_periodically_until_stopped_and_the_last_uses_are_kept(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    clock = Clock()
    retention = Retention(state_dir=state, retention_s=DAY, in_use=set, wall=clock, interval_s=0.01)
    workspaces = workspaces_for(state)
    snapshot_session(workspaces, retention, OLD)
    snapshot_session(workspaces, retention, NEW)
    clock.now += 2 * DAY
    retention.start()
    await until(lambda: retention.expired(OLD) and retention.expired(NEW))  # the sweep at start
    snapshot_session(workspaces, retention, NEW)
    clock.now += 2 * DAY
    await until(lambda: retention.expired(NEW))  # a later, periodic one
    snapshot_session(workspaces, retention, NEW)
    await retention.stop()
    retention.start()  # stopped for good (a late invocation at shutdown does not restart it)
    clock.now += 2 * DAY
    retention.note_used(NEW)  # e.g. its session closed during shutdown
    await retention.aclose()
    await asyncio.sleep(0.05)
    assert workspaces.has_snapshot(NEW)
    assert float((state / "snapshots" / NEW / LAST_USED).read_text()) == clock.now


async def test_the_runner_tells_a_turn_without_snapshot_to_send_it_again(tmp_path: Path) -> None:
    runner, session = make_runner(tmp_path)
    clock = Clock()
    state = tmp_path / "state"
    retention = Retention(state_dir=state, retention_s=DAY, in_use=set, wall=clock)
    runner.deps.retention = retention
    await runner.prepare(session, TurnRequest(prompt="fix", workspace_archive=tar_gz([("a.py", b"x\n")])))
    assert (state / "snapshots" / SID / LAST_USED).read_text().strip() == f"{clock.now:.3f}"
    clock.now += 2 * DAY
    assert len(await retention.sweep()) == 1
    with pytest.raises(WorkspaceExpired, match="send the snapshot again") as caught:
        await runner.prepare(session, TurnRequest(prompt="and now the tests"))
    assert caught.value.http_status == 410 and "AGENTKIT_WORKSPACE_RETENTION_HOURS" in str(caught.value)
    assert not (state / "workspaces" / SID).exists()  # the refused turn made nothing
    await runner.prepare(session, TurnRequest(prompt="again", workspace_archive=tar_gz([("a.py", b"y\n")])))
    assert runner.deps.workspaces is not None and runner.deps.workspaces.has_snapshot(SID)
    assert not retention.expired(SID)


async def test_the_registry_counts_a_session_in_use_until_its_client_is_closed() -> None:
    finished: list[str] = []
    registry = SessionRegistry(
        runner=RecordingRunner(),
        idle_timeout_s=0.05,
        max_queued=4,
        on_finished=lambda session: finished.append(session.claude_session_id),
    )
    await _collect(registry, OLD, "hello")
    assert registry.claude_session_ids_in_use() == {OLD}
    await until(lambda: finished == [OLD])
    assert registry.claude_session_ids_in_use() == set()
    await registry.close_all()


def test_the_sweep_interval_follows_the_retention() -> None:
    assert interval_for(DAY) == 3600.0
    assert interval_for(3600.0) == 150.0
    assert interval_for(2.0) == 1.0
    assert interval_for(365 * DAY) == 3600.0
    with pytest.raises(ValueError):
        Retention(state_dir=Path("/nonexistent"), retention_s=0, in_use=set)


async def test_a_session_with_a_job_counts_as_in_use_from_its_acceptance(tmp_path: Path) -> None:
    """A job is reserved before its turn is queued on the session: from then on the sweep must leave it alone
    (wiring adds ``Jobs.session_keys`` to the registry's sessions in use)."""
    sqs = boto3.client("sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    jobs = Jobs(
        events=SqsEvents(client=sqs, queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/q"),
        outbox=Outbox(tmp_path / "outbox"),
        patches=None,
        progress_s=10,
    )
    queued = asyncio.Event()

    async def submit() -> Any:
        assert jobs.session_keys() == {OLD}  # reserved while the turn is being queued
        queued.set()
        raise SessionBusy("full")  # refused: nothing is queued, the reservation goes

    with pytest.raises(SessionBusy):
        await jobs.accept(
            JobSpec(id="gh-1"),
            session_key=OLD,
            session_id="s" * 40,
            request=TurnRequest(prompt="x"),
            submit=submit,
        )
    assert queued.is_set() and jobs.session_keys() == set()
    await jobs.close(timeout_s=1)
