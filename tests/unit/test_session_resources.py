"""Per-session limits (``runtime.guard.resources``, ``runtime.guard.limit_hook``), the wrapper lines they add, and
``/ping``'s ``limits``.

The cgroup files are written into a directory laid out as cgroupfs is (v2 and v1), since the kernel's enforcement
is what ``tests/e2e/test_session_limits.py`` checks with the real CLI; here: which files get which values, how hits
are counted, what the model is told, and when the runtime falls back to rlimits or reports ``none``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from runtime.guard import resources
from runtime.guard.confine import Confinement, wrapper_script
from runtime.guard.limit_hook import make_limit_hook
from runtime.guard.resources import MIB, ResourceLimits, SessionCgroup, decide, open_session


def _v2_tree(tmp_path: Path, controllers: str = "cpu memory pids") -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    own = root / "ctr"
    own.mkdir(parents=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (own / "cgroup.controllers").write_text(controllers + "\n")
    (own / "cgroup.subtree_control").write_text("")
    (own / "cgroup.procs").write_text("")
    proc = tmp_path / "self-cgroup"
    proc.write_text("0::/ctr\n")
    return root, proc


def test_v2_parent_gets_memory_and_pids_and_a_session_gets_its_limits(tmp_path: Path) -> None:
    root, proc = _v2_tree(tmp_path)
    found = resources._parents(root, proc)
    assert found is not None
    kind, (parent,) = found
    assert kind == "cgroup-v2" and parent == root / "ctr" / f"agentkit-{os.getpid()}"
    assert (root / "ctr" / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (parent / "cgroup.subtree_control").read_text() == "+memory +pids"
    group = open_session(ResourceLimits(1024, 300, "cgroup-v2", (parent,)), "sess-1")
    d = parent / "sess-1"
    assert (d / "memory.max").read_text() == str(1024 * MIB)
    assert (d / "pids.max").read_text() == "300"
    assert group.procs_env == str(d / "cgroup.procs")


def test_v2_without_the_memory_controller_is_not_used(tmp_path: Path) -> None:
    root, proc = _v2_tree(tmp_path, controllers="cpu pids")
    with pytest.raises(OSError, match="need memory and pids"):
        resources._parents(root, proc)
    # decide() turns that into the rlimit fallback, or none without prlimit
    assert decide(1024, 512, wrapped=True, prlimit=True, root=root, proc_cgroup=proc).enforcement == "rlimit"
    assert decide(1024, 512, wrapped=True, prlimit=False, root=root, proc_cgroup=proc).enforcement == "none"


def test_a_cgroup_the_probe_process_does_not_land_in_is_not_trusted(tmp_path: Path) -> None:
    """A tree that only looks like cgroupfs accepts the writes, but the probe's own /proc/self/cgroup shows it
    never moved: the runtime falls back instead of believing it."""
    root, proc = _v2_tree(tmp_path)
    limits = decide(1024, 512, wrapped=True, prlimit=True, root=root, proc_cgroup=proc)
    assert limits.enforcement == "rlimit" and limits.data_rlimit_bytes == 1024 * MIB


def test_not_wrapped_means_none(tmp_path: Path) -> None:
    limits = decide(1024, 512, wrapped=False, prlimit=True, root=tmp_path, proc_cgroup=tmp_path / "x")
    assert limits.enforcement == "none" and limits.data_rlimit_bytes is None


def test_v1_writes_memory_swap_and_pids_limits(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    for controller in ("memory", "pids"):
        (root / controller / "a").mkdir(parents=True)
        (root / controller / "cgroup.procs").write_text("")
    proc = tmp_path / "self-cgroup"
    proc.write_text("9:pids:/\n4:memory:/a\n0::/\n")
    found = resources._parents(root, proc)
    assert found is not None and found[0] == "cgroup-v1"
    memory_parent, pids_parent = found[1]
    (memory_parent / "s").mkdir()
    (memory_parent / "s" / "memory.memsw.limit_in_bytes").write_text("")
    group = open_session(ResourceLimits(800, 256, "cgroup-v1", found[1]), "s")
    assert (memory_parent / "s" / "memory.limit_in_bytes").read_text() == str(800 * MIB)
    assert (memory_parent / "s" / "memory.memsw.limit_in_bytes").read_text() == str(800 * MIB)
    assert (pids_parent / "s" / "pids.max").read_text() == "256"
    assert group.procs_env.split(":") == [
        str(memory_parent / "s" / "cgroup.procs"),
        str(pids_parent / "s" / "cgroup.procs"),
    ]


def test_stale_parents_of_runtimes_that_are_gone_are_removed(tmp_path: Path) -> None:
    base = tmp_path / "own"
    gone = base / "agentkit-999999999" / "some-session"
    gone.mkdir(parents=True)
    parent = resources._parent_dir(base)
    assert parent.name == f"agentkit-{os.getpid()}" and not gone.parent.exists()


def test_hits_count_only_what_rose_since_the_last_look(tmp_path: Path) -> None:
    d = tmp_path / "s"
    d.mkdir()
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n")
    (d / "pids.events").write_text("max 0\n")
    group = SessionCgroup((d,), "cgroup-v2")
    assert group.new_hits() == {}  # the first look: what happened before is not new
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 3\noom_kill 3\n")
    (d / "pids.events").write_text("max 4\n")
    assert group.new_hits() == {"memory": 2, "processes": 4}
    assert group.new_hits() == {}


def test_the_hook_tells_the_model_and_records_each_hit(tmp_path: Path) -> None:
    d = tmp_path / "s"
    d.mkdir()
    (d / "memory.events").write_text("oom_kill 0\n")
    (d / "pids.events").write_text("max 0\n")
    limits = ResourceLimits(1024, 512, "cgroup-v2", (tmp_path,))
    group = SessionCgroup((d,), "cgroup-v2")
    group.new_hits()
    seen: list[tuple[str, int]] = []
    hook = make_limit_hook(group, limits, lambda limit, times, _: seen.append((limit, times)))
    call: dict[str, Any] = {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash"}
    assert asyncio.run(hook(call, "t1", None)) == {}
    (d / "memory.events").write_text("oom_kill 1\n")
    out = asyncio.run(hook(call, "t2", None))
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "PostToolUseFailure"
    assert "memory limit (1024 MiB" in specific["additionalContext"]
    assert seen == [("memory", 1)]


def test_the_wrapper_moves_into_the_cgroups_first_or_adds_rlimit_data(tmp_path: Path) -> None:
    c = Confinement(own_namespaces=True, setpriv="/usr/bin/setpriv", unshare="/usr/bin/unshare", prlimit="/p")
    cgroup = wrapper_script(c, "/cli", tmp_path, ResourceLimits(1024, 300, "cgroup-v1", (tmp_path,)))
    first = cgroup.splitlines()[1]
    assert resources.ENV_SESSION_CGROUPS in first and "exit 125" in first
    assert "--nproc=300:300" in cgroup and "--data=" not in cgroup
    rlimit = wrapper_script(c, "/cli", tmp_path, ResourceLimits(1024, 300, "rlimit"))
    assert f"--data={1024 * MIB}:{1024 * MIB}" in rlimit and resources.ENV_SESSION_CGROUPS not in rlimit
    # tmpfs and memfd files are memory RLIMIT_DATA does not count: each file is bounded by the limit too
    assert f"--fsize={1024 * MIB}:{1024 * MIB}" in rlimit and "--fsize=" not in cgroup
    unlimited = wrapper_script(c, "/cli", tmp_path, ResourceLimits(0, 300, "rlimit"))
    assert "--data=" not in unlimited and "--fsize=" not in unlimited


def test_ping_shows_the_limits_once_decided() -> None:
    from runtime.config.settings import Settings
    from runtime.http.server import build_app

    app = build_app(Settings.from_env({}), services_factory=lambda s: None)  # type: ignore[arg-type,return-value]
    saved, hits = list(resources._decided), resources._hits.copy()
    try:
        resources._decided.clear()
        resources._hits.clear()
        with TestClient(app) as client:
            assert "limits" not in client.get("/ping").json()
            resources.set_decided(ResourceLimits(1024, 512, "rlimit"))
            body = client.get("/ping").json()
        assert body["status"] in ("Healthy", "HealthyBusy") and isinstance(body["time_of_last_update"], int)
        assert body["limits"] == {
            "enforcement": "rlimit",
            "memory_mb": 1024,
            "processes": 512,
            "hits": {"memory": 0, "processes": 0},
        }
    finally:
        resources._decided[:] = saved
        resources._hits.update(hits)


def test_a_limit_below_what_the_cli_needs_is_refused() -> None:
    from runtime.config.settings import Settings
    from runtime.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="AGENTKIT_SESSION_MEMORY_MB=512 is below 768"):
        Settings.from_env({"AGENTKIT_SESSION_MEMORY_MB": "512"})
    assert Settings.from_env({"AGENTKIT_SESSION_MEMORY_MB": "0"}).session_memory_mb == 0


# -- the tool disk as seen from the runtime (runtime.guard.tool_disk) ----------------------------------------------


def test_no_live_tool_disk_means_the_host_copy(tmp_path: Path) -> None:
    from runtime.guard import tool_disk

    host = tmp_path / "workspaces" / "s"
    view = tool_disk.view_for(tmp_path, Path("/ws"), lambda sid: tmp_path / "workspaces" / sid)
    assert view("s").files == host and view("s").enter == ()  # no pid file
    tool_disk.pid_file(tmp_path, "s").parent.mkdir(parents=True)
    tool_disk.pid_file(tmp_path, "s").write_text(f"{os.getpid()}\n")  # a process in our own mount namespace
    assert view("s").files == host
    tool_disk.pid_file(tmp_path, "s").write_text("999999999\n")  # gone
    assert view("s").files == host
    tool_disk.release(tmp_path, "s")
    assert not tool_disk.pid_file(tmp_path, "s").exists()


def test_a_live_tool_disk_is_reached_through_the_wrappers_namespace(tmp_path: Path) -> None:
    """A process in a mount namespace of its own (as the wrapper is) with a tmpfs over the workspace: the view's
    files path reaches the tmpfs, and a program run with its prefix sees the same directory."""
    import subprocess

    from runtime.guard import tool_disk

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "on-host").write_text("host")
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    holder = subprocess.Popen(
        [
            "unshare",
            *user,
            "--mount",
            "--",
            "/bin/sh",
            "-c",
            f'mount -t tmpfs t "{ws}" && echo in > "{ws}/in-ns"; echo ready; exec sleep 30',
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
        tool_disk.pid_file(tmp_path, "s").parent.mkdir(parents=True)
        tool_disk.pid_file(tmp_path, "s").write_text(str(holder.pid))
        view = tool_disk.view_for(tmp_path, ws, lambda sid: tmp_path / "host" / sid)("s")
        assert sorted(p.name for p in view.files.iterdir()) == ["in-ns"]
        seen = subprocess.run(
            [*view.enter, "ls", str(view.tree)], capture_output=True, check=True, timeout=10
        )
        assert seen.stdout.split() == [b"in-ns"]
    finally:
        holder.kill()
        holder.wait()
    assert sorted(p.name for p in ws.iterdir()) == ["on-host"]


def test_a_session_cgroup_that_cannot_be_made_stops_the_cli_start(tmp_path: Path) -> None:
    from runtime.errors import AgentProcessError

    saved, groups = list(resources._decided), dict(resources._groups)
    try:
        missing = tmp_path / "gone"  # the parent cgroup vanished: mkdir of the session's one fails
        resources.set_decided(ResourceLimits(1024, 512, "cgroup-v2", (missing,)))
        with pytest.raises(AgentProcessError, match="could not set up the session's cgroup"):
            resources.session_cgroup("s-broken")
        assert resources.limit_hits_of("s-broken") is None  # nothing half-made is kept
        parent = tmp_path / "parent"
        parent.mkdir()
        resources.set_decided(ResourceLimits(1024, 512, "cgroup-v2", (parent,)))
        group = resources.session_cgroup("s-ok")
        assert group is not None and (parent / "s-ok" / "memory.max").read_text() == str(1024 * MIB)
        (parent / "s-ok" / "memory.events").write_text("oom_kill 2\n")
        assert resources.limit_hits_of("s-ok") == ({"memory": 2}, resources.decided())
    finally:
        resources._decided[:] = saved
        resources._groups.clear()
        resources._groups.update(groups)
