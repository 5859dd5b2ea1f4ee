"""The CLI's confinement: a root runtime drops it to an unprivileged user, private namespaces, per-process temp.

Runs the real ``setpriv``/``unshare`` where the test runs as root (the attack suites in tests/e2e run the real CLI
through the same wrapper, as root and as uid 10001).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from runtime.agent.definition import AgentDefinitionSpec
from runtime.guard.confine import (
    CLI_TMP_PREFIX_LIMIT,
    ENV_SESSION_WORKSPACE,
    UNPRIVILEGED_UID,
    Confinement,
    cli_wrapper,
    confinement_for,
    live_temp_roots,
    release_session_dirs,
    root_problem,
    session_temp_root,
    session_workspace,
    sweep_stale_temp_roots,
)
from runtime.guard.policy import PermissionPolicy
from runtime.guard.profiles import HOST_FILE_TOOLS, SandboxStatus


def test_a_root_runtime_drops_the_cli_to_the_workspace_owner_or_the_image_user(tmp_path: Path) -> None:
    assert confinement_for(tmp_path, root=False).run_as is None
    root_owned = confinement_for(tmp_path, root=True)
    assert root_owned.run_as == (tmp_path.stat().st_uid or UNPRIVILEGED_UID) and root_owned.own_namespaces


def test_the_wrapper_drops_every_privilege_and_keeps_parent_death(tmp_path: Path) -> None:
    c = Confinement(
        run_as=10001,
        own_namespaces=True,
        setpriv="/usr/bin/setpriv",
        unshare="/usr/bin/unshare",
        prlimit="/usr/bin/prlimit",
    )
    script = Path(cli_wrapper("/opt/claude", tmp_path, c, Path("/srv/ws"))).read_text()
    for flag in ("--ipc", "--uts", "--reuid=10001", "--regid=10001", "--clear-groups", "--inh-caps=-all"):
        assert flag in script
    assert "--bounding-set=-all" in script and "--pdeathsig=KILL -- /opt/claude" in script
    assert "--bind" in script and "/srv/ws" in script
    # the process limit is set inside the CLI's own user namespace, created after the privilege drop
    order = [
        script.index(x)
        for x in ("--reuid=10001", "--map-user=10001", "--nproc=512:512", "--pdeathsig=KILL -- /opt/claude")
    ]
    assert order == sorted(order)


def test_root_problem_names_what_is_missing(tmp_path: Path) -> None:
    missing = Confinement(run_as=10001, own_namespaces=True, setpriv=None, unshare="/usr/bin/unshare")
    assert "setpriv/unshare" in (root_problem(missing, "/opt/claude", tmp_path) or "")
    assert root_problem(Confinement(), "/opt/claude", tmp_path) is None


def test_the_wrapped_cli_has_no_privilege_and_its_own_namespaces(tmp_path: Path) -> None:
    """As root: another uid, no capabilities. As non-root: its own uid in a user namespace. Both: own IPC/UTS."""
    c = confinement_for(tmp_path)
    assert c.wraps, "this machine supports user namespaces (the sandbox needs them too)"
    os.chmod(tmp_path, 0o755)
    script = cli_wrapper("/bin/sh", tmp_path / "bin", c, tmp_path)
    probe = "id -u; grep CapEff /proc/self/status; readlink /proc/self/ns/ipc /proc/self/ns/uts"
    out = subprocess.run([script, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == str(c.run_as if c.drops else os.getuid())
    assert out[2] == "0000000000000000"
    assert out[3] != os.readlink("/proc/self/ns/ipc") and out[4] != os.readlink("/proc/self/ns/uts")
    if c.drops:
        private = tmp_path / "private"
        private.mkdir(mode=0o700)
        assert "cannot enter the workspace" in (root_problem(c, "/bin/true", private) or "")
        reachable = Path(tempfile.mkdtemp(dir="/tmp"))  # /tmp/pytest-of-root is private to root
        try:
            reachable.chmod(0o755)
            assert root_problem(c, "/bin/true", reachable) is None
        finally:
            reachable.rmdir()


def test_temp_roots_are_short_private_and_removed(tmp_path: Path) -> None:
    root = session_temp_root("sess-1", Confinement())
    try:
        assert stat.S_IMODE(root.stat().st_mode) == 0o700
        assert len(f"{root}/claude-{UNPRIVILEGED_UID}") <= CLI_TMP_PREFIX_LIMIT
        assert live_temp_roots()["sess-1"] == root
        again = session_temp_root("sess-1", Confinement())  # a reconnect replaces the old one
        assert again != root and not root.exists()
    finally:
        release_session_dirs("sess-1")
        release_session_dirs("sess-1")  # twice is fine
    assert not again.exists() and "sess-1" not in live_temp_roots()


def test_developer_profile_has_no_host_side_file_tools() -> None:
    dev = AgentDefinitionSpec(builtin_tools=("Read", "Glob", "Grep", "Bash")).with_profile("developer")
    on = dev.for_sandbox(SandboxStatus("required", available=True))
    assert not HOST_FILE_TOOLS & (set(on.builtin_tools) | on.permitted_tools) and "Bash" in on.builtin_tools
    readonly = AgentDefinitionSpec().for_sandbox(SandboxStatus("required", available=True))
    assert {"Read", "Glob", "Grep"} <= set(readonly.builtin_tools)


def test_blocked_commands_switch_bash_off_even_with_the_sandbox_off() -> None:
    blocked = SandboxStatus("off", available=False, blocked="root cannot drop")
    assert not blocked.commands_enabled
    assert "Bash" not in AgentDefinitionSpec().for_sandbox(blocked).builtin_tools


def test_policy_refuses_background_commands(tmp_path: Path) -> None:
    policy = PermissionPolicy(allowed_tools={"Bash"}, workspace=tmp_path)
    assert policy.decide("Bash", {"command": "ls"}).allowed
    refused = policy.decide("Bash", {"command": "ls", "run_in_background": True})
    assert not refused.allowed and "background" in refused.message


def test_unshare_and_setpriv_are_installed() -> None:
    """The image and `make setup` install util-linux; without it a root runtime keeps commands off."""
    assert shutil.which("setpriv") and shutil.which("unshare")


def test_each_session_writes_its_own_workspace_at_the_configured_path(tmp_path: Path) -> None:
    """The wrapper binds the session's copy over the configured workspace inside the CLI's mount namespace."""
    template = Path(tempfile.mkdtemp(dir="/tmp"))  # reachable by the unprivileged user of a root runtime
    try:
        template.chmod(0o755)
        (template / "README").write_text("shared start\n")
        c = confinement_for(template)
        script = cli_wrapper("/bin/sh", tmp_path / "bin", c, template)
        state = Path(tempfile.mkdtemp(dir="/tmp"))
        state.chmod(0o755)
        outputs = {}
        for sid in ("session-a", "session-b"):
            own = session_workspace(state, template, sid, c)
            done = subprocess.run(
                [
                    script,
                    "-c",
                    f'cat "{template}/README"; ls "{template}"; echo {sid} > "{template}/planted"',
                ],
                capture_output=True,
                text=True,
                check=True,
                env={"PATH": os.environ["PATH"], ENV_SESSION_WORKSPACE: str(own)},
            )
            outputs[sid] = done.stdout
            assert (own / "planted").read_text() == f"{sid}\n"  # observed on the host
        assert not (template / "planted").exists()
        assert "planted" not in outputs["session-b"] and "shared start" in outputs["session-b"]
    finally:
        shutil.rmtree(template, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)


def test_fifos_are_refused_by_file_tools_and_never_copied_into_a_session(tmp_path: Path) -> None:
    template = tmp_path / "ws"
    template.mkdir()
    (template / "notes.txt").write_text("hello\n")
    os.mkfifo(template / "pipe")
    policy = PermissionPolicy(allowed_tools={"Read", "Grep"}, workspace=template)
    refused = policy.decide("Read", {"file_path": str(template / "pipe")})
    assert not refused.allowed and "FIFO" in refused.message
    assert not policy.decide("Grep", {"pattern": "x", "path": "pipe"}).allowed
    assert policy.decide("Read", {"file_path": str(template / "notes.txt")}).allowed
    assert policy.decide("Read", {"file_path": str(template / "missing.txt")}).allowed  # the tool says so
    own = session_workspace(tmp_path / "state", template, "s", Confinement())  # would block on the FIFO
    assert (own / "notes.txt").read_text() == "hello\n" and not (own / "pipe").exists()


def test_temp_roots_of_a_runtime_that_is_gone_are_swept(tmp_path: Path) -> None:
    """A SIGKILLed runtime cannot remove its temp roots; their names carry its pid, so the next start does."""
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid no longer exists
    base = tmp_path / "tmp"
    base.mkdir()
    stale = base / f"ak-{dead.pid}-abcdefgh"
    live = base / f"ak-{os.getpid()}-abcdefgh"
    unrelated = base / "ak-escapes-1234"
    for path in (stale, live, unrelated):
        (path / "claude-0").mkdir(parents=True)
    assert sweep_stale_temp_roots(str(base)) == [stale]
    assert not stale.exists() and live.exists() and unrelated.exists()
    root = session_temp_root("named", Confinement())
    try:
        assert root.name.startswith(f"ak-{os.getpid()}-")
        assert (
            len(f"/tmp/ak-4194304-{root.name.rsplit('-', 1)[1]}/claude-{UNPRIVILEGED_UID}")
            <= CLI_TMP_PREFIX_LIMIT
        )
    finally:
        release_session_dirs("named")


def test_the_tool_disk_and_workspace_snapshots_go_together() -> None:
    """Snapshots are unpacked into, and patches read from, the running CLI's tool disk (runtime.guard.tool_disk)."""
    from runtime.config.settings import Settings

    both = Settings.from_env({"AGENTKIT_TOOL_DISK_MB": "32"})
    assert both.tool_disk_mb == 32 and both.workspace_max_bytes > 0
