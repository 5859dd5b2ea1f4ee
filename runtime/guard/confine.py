"""Who the Claude Code CLI process runs as, in which namespaces, and its per-session directories.

The runtime starts the CLI through a wrapper script (:func:`wrapper_script`, util-linux ``unshare``, ``mount`` and
``setpriv``). What it gives, and why (each point is attacked in ``tests/e2e/test_sandbox_escapes.py``):

- **Never a root CLI.** Claude Code's sandbox puts each command in a new user namespace. When the CLI runs as root
  that namespace maps uid 0 to host uid 0 and ``/proc/sys`` is the host's; the kernel's sysctl permission check
  compares the caller's euid with global root (``test_perm`` in ``fs/proc/proc_sysctl.c``), so a sandboxed command
  could rename the host or open ``/proc/sys/kernel/core_pattern`` for writing (the kernel runs the program named
  there as host root on the next crash). So a root runtime drops the CLI with ``setpriv`` to
  :data:`UNPRIVILEGED_UID` (the image's user), or to the workspace's owner when that is a non-root user, with no
  supplementary groups, no capabilities and an empty bounding set. When that is impossible (no util-linux, or
  that user cannot execute the CLI or enter the workspace), command tools are switched off at start with a message
  saying why (:func:`root_problem`).
- **Own mount, IPC and UTS namespaces.** Claude Code's sandbox does not unshare SysV IPC: a command could read the
  runtime's shared-memory segments and leave new ones behind. A non-root runtime cannot create these namespaces
  directly, so the wrapper first enters a user namespace mapping only root (to the runtime's uid) to make the bind
  mount below, then a nested one mapping the runtime's own uid and gid, so the CLI keeps its uid and has no
  capability; the sandbox's user namespaces nest inside. Probed at start: without user namespaces the CLI runs
  without this layer (one warning).
- **One workspace per session.** The session's own copy of the configured workspace (:func:`session_workspace`) is
  bound over the configured path inside the CLI's mount namespace (``AGENTKIT_SESSION_WORKSPACE`` tells the
  wrapper which), so the agent, the permission policy and the sandbox settings all use one path while what one
  session writes never reaches another.
- **A private temp root per CLI process**: ``/tmp/ak-<runtime pid>-XXXXXXXX`` (mode 0700, :func:`tempfile.mkdtemp`) as
  ``CLAUDE_CODE_TMPDIR``. Short on purpose: the CLI puts its sandbox's proxy sockets in
  ``<CLAUDE_CODE_TMPDIR>/claude-<uid>/`` and falls back to one ``/tmp/claude-<uid>`` shared by every session when
  that path is too long for an ``AF_UNIX`` address. Removed when the CLI process is closed
  (:func:`release_session_dirs`), at exit, or, after a crash, by the next start (:func:`sweep_stale_temp_roots`).
- **A process limit per CLI process tree** (``AGENTKIT_SESSION_PROCESSES``, ``prlimit`` inside the CLI's own user
  namespace): a fork bomb in one session stops there, and other sessions' CLIs still start. Memory and, where
  cgroups can be used, processes too are limited per session as :mod:`runtime.guard.resources` decides: the
  wrapper first moves itself into the session's cgroups (``AGENTKIT_SESSION_CGROUPS``), or adds ``RLIMIT_DATA``.
- ``--pdeathsig=KILL``: the CLI dies with the runtime. setpriv sets it after changing the uid (a uid change clears
  it, prctl(2)); every step of the wrapper ``exec``s, so the runtime stays the CLI's parent.

Environment: ``AGENTKIT_SESSION_WORKSPACE`` is set by the runtime for the wrapper; nothing is read here.
"""

from __future__ import annotations

import atexit
import logging
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from runtime.guard.resources import MOVE_INTO_CGROUPS, ResourceLimits

logger = logging.getLogger(__name__)

#: The unprivileged user the CLI runs as when the runtime is root: the image's ``agent`` user (see Dockerfile).
UNPRIVILEGED_UID = 10001
#: Where per-session temp roots go: short, so ``<root>/claude-<uid>/<socket>`` fits an ``AF_UNIX`` address.
TEMP_BASE = "/tmp"  # noqa: S108 - private 0700 directories made by mkdtemp, removed with the session
#: The longest ``<CLAUDE_CODE_TMPDIR>/claude-<uid>`` the CLI accepts before falling back to a shared directory.
CLI_TMP_PREFIX_LIMIT = 44
#: Processes and threads one CLI process tree (the CLI, its sandboxes, every command) may have at once
#: (``RLIMIT_NPROC`` in the CLI's own user namespace) when no setting says otherwise
#: (``AGENTKIT_SESSION_PROCESSES``). The CLI itself uses a few dozen threads.
PROCESS_LIMIT = 512
WRAPPER_PREFIX = "claude-wrapper"


@dataclass(frozen=True)
class Confinement:
    """How the CLI process is started.

    ``run_as``: the uid (and gid) a root runtime drops the CLI to (``None`` when not root). ``own_namespaces``: the
    CLI gets its own IPC and UTS namespaces (a non-root runtime needs a user namespace for that, mapping only its
    own uid, so the CLI keeps its uid and gains no privilege: :func:`wrapper_argv`)."""

    run_as: int | None = None
    own_namespaces: bool = False
    setpriv: str | None = None
    unshare: str | None = None
    prlimit: str | None = None

    @property
    def drops(self) -> bool:
        return self.run_as is not None

    @property
    def wraps(self) -> bool:
        return self.drops or self.own_namespaces


def is_root() -> bool:
    return sys.platform.startswith("linux") and os.geteuid() == 0


def confinement_for(workspace: Path, *, root: bool | None = None, timeout_s: float = 10.0) -> Confinement:
    """The confinement for this process (see the module docstring); probes the namespaces it asks for."""
    if not sys.platform.startswith("linux"):
        return Confinement()
    setpriv, unshare, prlimit = shutil.which("setpriv"), shutil.which("unshare"), shutil.which("prlimit")
    if is_root() if root is None else root:
        try:
            owner = workspace.stat().st_uid
        except OSError:
            owner = 0
        run_as = owner if owner != 0 else UNPRIVILEGED_UID
        return Confinement(
            run_as=run_as, own_namespaces=True, setpriv=setpriv, unshare=unshare, prlimit=prlimit
        )
    if setpriv is None or unshare is None:
        logger.warning("setpriv/unshare missing: the CLI shares the runtime's IPC and UTS namespaces")
        return Confinement()
    candidate = Confinement(own_namespaces=True, setpriv=setpriv, unshare=unshare, prlimit=prlimit)
    ok, detail = _run_wrapped(candidate, workspace, ["/bin/true"], timeout_s)
    if not ok:
        logger.warning(
            "no user namespace for the CLI (%s): it shares the runtime's IPC and UTS namespaces", detail
        )
        return Confinement()
    return candidate


def root_problem(
    confinement: Confinement, cli: str | None, workspace: Path, *, timeout_s: float = 10.0
) -> str | None:
    """Why commands cannot run safely under this root runtime (``None``: the drop works): the tools are missing,
    or the unprivileged user cannot execute the CLI or enter the workspace."""
    if not confinement.drops:
        return None
    if confinement.setpriv is None or confinement.unshare is None:
        return "the runtime runs as root and setpriv/unshare (util-linux) are missing, so the CLI cannot drop root"
    if cli is None:
        return "the runtime runs as root and no Claude Code CLI was found to check"
    for what, test in (
        (f"execute the CLI at {cli}", 'test -x "$1"'),
        (f"enter the workspace {workspace}", 'cd "$2"'),
    ):
        ok, _ = _run_wrapped(
            confinement, workspace, ["/bin/sh", "-c", test, "sh", cli, str(workspace)], timeout_s
        )
        if not ok:
            return (
                f"the runtime runs as root; its CLI runs as uid {confinement.run_as}, which cannot {what} "
                "(make the path and its parent directories readable by that user, or run the runtime as non-root)"
            )
    return None


#: Set by the runtime in the CLI's environment: the session's own workspace, bound over the configured one inside
#: the CLI's mount namespace (read by the wrapper script only; commands never see it: it is not on the tool env
#: allowlist).
ENV_SESSION_WORKSPACE = "AGENTKIT_SESSION_WORKSPACE"
#: Set by the runtime with a tool disk: where the wrapper mounts the session's size-limited tmpfs (an empty
#: directory under the state dir, which commands cannot see), and its size in MiB.
ENV_SESSION_DISK = "AGENTKIT_SESSION_DISK"
ENV_SESSION_DISK_MB = "AGENTKIT_SESSION_DISK_MB"


def wrapper_script(c: Confinement, cli: str, workspace: Path, limits: ResourceLimits | None = None) -> str:
    """The wrapper that starts ``cli``: into the session's cgroups (when ``limits`` uses them), new namespaces
    (mount, IPC, UTS; a user namespace when not root), the session's workspace bound over ``workspace``, then the
    CLI as an unprivileged user with parent-death KILL, under the process (and, with rlimit enforcement, data)
    limit."""
    assert c.setpriv is not None and c.unshare is not None and c.wraps
    q = shlex.quote
    mount = shutil.which("mount") or "/bin/mount"
    uid, gid = (c.run_as, c.run_as) if c.run_as is not None else (os.getuid(), os.getgid())
    # The CLI's own user namespace, created before the process limit is lowered. Linux counts RLIMIT_NPROC per user
    # namespace (kernel/ucount.c): the processes inside count against the CLI's limit, the namespace as a whole
    # against the limit its creator had (unlimited here). So the limit holds per CLI process tree; with a plain
    # per-uid limit one session's fork bomb would starve every other session of the same uid (both measured:
    # tests/e2e/test_sandbox_escapes.py, docs/security.md).
    own_userns = [c.unshare, "--user", f"--map-user={uid}", f"--map-group={gid}", "--"]
    nproc = limits.processes if limits is not None else PROCESS_LIMIT
    data = limits.data_rlimit_bytes if limits is not None else None
    fsize = limits.fsize_rlimit_bytes if limits is not None else None
    rlimits = [
        f"--nproc={nproc}:{nproc}",
        *([f"--data={data}:{data}"] if data else []),
        *([f"--fsize={fsize}:{fsize}"] if fsize else []),
    ]
    limit = [c.prlimit, *rlimits, "--"] if c.prlimit else []
    start = [*own_userns, *limit, c.setpriv, "--pdeathsig=KILL", "--", cli]
    if c.run_as is not None:
        outer = [c.unshare, "--mount", "--ipc", "--uts", "--"]
        drop = [
            c.setpriv,
            f"--reuid={c.run_as}",
            f"--regid={c.run_as}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ]
        inner = [*drop, *start]
        drop_only = drop
    else:
        # This user namespace maps only root (to our uid) so that the bind mount can be made; the CLI's own one
        # (above) turns the process back into our own uid, without capabilities, before the CLI starts.
        outer = [c.unshare, "--user", "--map-root-user", "--mount", "--ipc", "--uts", "--"]
        inner = start
        drop_only = []
    var, disk, size = ENV_SESSION_WORKSPACE, ENV_SESSION_DISK, ENV_SESSION_DISK_MB
    m, ws, run = q(mount), q(str(workspace)), " ".join(q(a) for a in inner)
    # As the CLI's user (root runtime) or as ourselves (the user namespace maps only our uid): the copy back never
    # runs with more rights than the CLI had.
    as_cli = " ".join(q(a) for a in drop_only) + " " if c.run_as is not None else ""
    owner = (
        f'chown {uid}:{gid} "$d" "$d/ws" "$d/tmp" "$d/home" "$d/back" || exit 125; '
        if c.run_as is not None
        else ""
    )
    # A resume from the session store: the SDK writes the transcript into a new root-owned 0700 temp dir
    # (claude_agent_sdk/_internal/session_resume.py, mkdtemp "claude-resume-") and points CLAUDE_CONFIG_DIR at it;
    # the CLI's user must be able to read it, before any untrusted code runs.
    resume = (
        f'case "${{CLAUDE_CONFIG_DIR:-}}" in */claude-resume-*) chown -R {uid}:{gid} -- "$CLAUDE_CONFIG_DIR" '
        "|| exit 125;; esac; "
        if c.run_as is not None
        else ""
    )
    body = resume + (
        # The session's tool disk (AGENTKIT_TOOL_DISK_MB): one size-limited tmpfs holds the workspace, the temp root
        # and the tool HOME, so a command that writes until ENOSPC fills only that, never the volume the CLI's
        # transcripts, sessions.db and the spool are on.
        f'if [ -n "${{{disk}:-}}" ] && [ -n "${{{var}:-}}" ]; then '
        f'd="${disk}"; src="${var}"; '
        f'{m} -t tmpfs -o "size=${{{size}}}m,mode=0700" agentkit-tools "$d" || exit 125; '
        'mkdir "$d/ws" "$d/tmp" "$d/home" "$d/back" && cp -a "$src/." "$d/ws/" && cp -a "$HOME/." "$d/home/" '
        '&& chmod --reference="$src" "$d/ws" && chmod 0700 "$d/tmp" "$d/home" || exit 125; '
        f"{owner}"
        f'{m} --bind "$d/ws" {ws} && {m} --bind "$d/tmp" "$CLAUDE_CODE_TMPDIR" && {m} --bind "$d/home" "$HOME" '
        "|| exit 125; "
        # Only now, with the tool disk in place, the runtime may find it through this process
        # (runtime.guard.tool_disk: a workspace snapshot is unpacked into it, the turn's patch read from it).
        'echo $$ > "$d.pid" || exit 125; '
        # not exec: the workspace is copied back when the CLI ends; SIGTERM is passed on
        # an asynchronous command's stdin is /dev/null unless redirected explicitly: keep the SDK's pipe
        f'exec 3<&0; {run} "$@" <&3 3<&- & pid=$!; exec 3<&-; '
        "trap 'kill -TERM $pid 2>/dev/null' TERM INT; "
        "wait $pid; rc=$?; while kill -0 $pid 2>/dev/null; do wait $pid; rc=$?; done; "
        # Read-only first: nothing left in the sandbox can swap a path while it is copied. The session's
        # workspace outlives this CLI process (kept for its later connects), so what the commands left is kept.
        f'{m} -t tmpfs -o remount,ro agentkit-tools "$d" && {m} --bind "$src" "$d/back" && '
        f'{as_cli}/bin/sh -c \'find "$1" -mindepth 1 -maxdepth 1 -exec rm -rf -- {{}} + && '
        f'cp -a "$2/." "$1/"\' sh "$d/back" "$d/ws" || rc=125; '
        'rm -f "$d.pid"; exit $rc; fi; '
        f'if [ -n "${{{var}:-}}" ]; then {m} --bind -- "${var}" {ws} || exit 125; fi; '
        f'exec {run} "$@"'
    )
    # parent-death KILL on the shell too: it stays the CLI's parent while it waits to copy the workspace back
    guard = [c.setpriv, "--pdeathsig=KILL", "--"]
    # Into the session's cgroups first, while the wrapper still has the runtime's rights over them: every process
    # of the tree is inside from its start and none can move itself out.
    move = f"{MOVE_INTO_CGROUPS}\n" if limits is not None and limits.cgroup else ""
    return f'#!/bin/sh\n{move}exec {" ".join(q(a) for a in [*outer, *guard])} /bin/sh -c {q(body)} sh "$@"\n'


def _run_wrapped(c: Confinement, workspace: Path, argv: list[str], timeout_s: float) -> tuple[bool, str]:
    """Run ``argv`` through the wrapper, without a session workspace (the start-up checks)."""
    env = {k: v for k, v in os.environ.items() if k != ENV_SESSION_WORKSPACE}
    with tempfile.TemporaryDirectory(prefix="ak-probe-") as probe:
        script = Path(probe) / "wrapper"
        script.write_text(wrapper_script(c, argv[0], workspace))
        script.chmod(0o755)
        try:
            done = subprocess.run(
                [str(script), *argv[1:]], capture_output=True, timeout=timeout_s, check=False, env=env
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, str(exc)
        return done.returncode == 0, done.stderr.decode(errors="replace").strip()


def cli_wrapper(
    cli: str,
    directory: Path,
    confinement: Confinement,
    workspace: Path,
    limits: ResourceLimits | None = None,
) -> str:
    """A script that starts ``cli`` as :func:`wrapper_script` says (only when ``confinement.wraps``)."""
    content = wrapper_script(confinement, cli, workspace, limits)
    script = directory / f"{WRAPPER_PREFIX}-{confinement.run_as if confinement.drops else 'ns'}"
    directory.mkdir(parents=True, exist_ok=True)
    if not script.is_file() or script.read_text() != content:
        tmp = script.with_suffix(".tmp")
        tmp.write_text(content)
        tmp.chmod(0o755)
        tmp.replace(script)
    return str(script)


def give_to(path: Path, confinement: Confinement, *, recursive: bool = False) -> None:
    """Make ``path`` (and, with ``recursive``, everything under it) owned by the CLI's user."""
    uid = confinement.run_as
    if uid is None:
        return
    targets = [path]
    if (
        recursive and path.lstat().st_uid != uid
    ):  # a tree handed over before keeps its owner: no walk each time
        for parent, dirs, files in os.walk(path):
            targets += [Path(parent, name) for name in dirs + files]
    for target in targets:
        os.lchown(target, uid, uid)


# -- per-session temp roots -------------------------------------------------------------------------------------

_temp_roots: dict[str, Path] = {}
_lock = threading.Lock()
#: Temp roots are named ``ak-<pid of the runtime>-<random>``: the ones of a runtime that died without closing its
#: sessions (SIGKILL, out of memory) are recognised and removed by the next start (:func:`sweep_stale_temp_roots`).
_TEMP_PREFIX = "ak-"


def session_temp_root(claude_session_id: str, confinement: Confinement) -> Path:
    """A new private temp root for one CLI process of a session (the previous one of that session is removed)."""
    release_session_dirs(claude_session_id)
    root = Path(tempfile.mkdtemp(prefix=f"{_TEMP_PREFIX}{os.getpid()}-", dir=TEMP_BASE))
    uid = confinement.run_as if confinement.run_as is not None else os.getuid()
    if len(str(root / f"claude-{uid}")) > CLI_TMP_PREFIX_LIMIT:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"temp root {root} is too long for the CLI's sockets")
    give_to(root, confinement)
    with _lock:
        _temp_roots[claude_session_id] = root
    return root


def release_session_dirs(claude_session_id: str) -> None:
    """Remove the session's temp root (called when its CLI process is closed). Safe to call twice."""
    with _lock:
        root = _temp_roots.pop(claude_session_id, None)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)
        logger.debug("removed temp root %s of session %s", root, claude_session_id)


@atexit.register
def release_all_session_dirs() -> None:
    """Remove every temp root of this process (at interpreter exit; the registry removes them one by one)."""
    for claude_session_id in list(live_temp_roots()):
        release_session_dirs(claude_session_id)


def sweep_stale_temp_roots(base: str = TEMP_BASE) -> list[Path]:
    """Remove temp roots left by runtimes that are gone (their pid no longer exists), owned by this user (a root
    runtime: by root or :data:`UNPRIVILEGED_UID`). Called once at start; returns what it removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not name.startswith(_TEMP_PREFIX):
            continue
        pid = name[len(_TEMP_PREFIX) :].split("-", 1)[0]
        try:
            if not pid.isdigit() or Path(f"/proc/{pid}").exists() or not entry.is_dir(follow_symlinks=False):
                continue
            owner = entry.stat(follow_symlinks=False).st_uid
            if owner not in ({0, UNPRIVILEGED_UID} if os.geteuid() == 0 else {os.geteuid()}):
                continue
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    if removed:
        logger.info("removed %d temp roots of runtimes that are gone", len(removed))
    return removed


def live_temp_roots() -> dict[str, Path]:
    """The temp roots of the CLI processes alive now (for tests and diagnostics)."""
    with _lock:
        return dict(_temp_roots)


@dataclass(frozen=True)
class CliConfinement:
    """What start-up decided for this process: the confinement to apply, or why commands must stay off."""

    confinement: Confinement
    problem: str | None = None

    @property
    def commands_allowed(self) -> bool:
        return self.problem is None


_decided: dict[tuple[Path, str | None], CliConfinement] = {}


def cli_confinement(workspace: Path, cli: str | None) -> CliConfinement:
    """Decided once per (workspace, CLI): a root runtime drops the CLI to an unprivileged user or, when it
    cannot, keeps command tools off (the CLI then runs as root without any command tool)."""
    key = (workspace, cli)
    with _lock:
        decided = _decided.get(key)
    if decided is not None:
        return decided
    confinement = confinement_for(workspace)
    # The workspace is handed over only once the user can run the CLI at all ("/" can always be entered).
    problem = root_problem(confinement, cli, Path("/"))
    if confinement.drops and problem is None:
        _hand_over_workspace(workspace, confinement)
        problem = root_problem(confinement, cli, workspace)
    decided = CliConfinement(confinement if problem is None else Confinement(), problem)
    with _lock:
        _decided[key] = decided
    return decided


def decided_confinement(workspace: Path, cli: str | None) -> Confinement:
    """What start-up (:func:`cli_confinement`, called by :mod:`runtime.wiring` with the sandbox probe) decided for
    this workspace and CLI; no drop when nothing was decided (an SDK client built outside the runtime's wiring)."""
    with _lock:
        decided = _decided.get((workspace, cli))
    return decided.confinement if decided is not None else Confinement()


def _hand_over_workspace(workspace: Path, confinement: Confinement) -> None:
    """A root-owned workspace is given to the CLI's user (git refuses a repository owned by someone else)."""
    try:
        if workspace.stat().st_uid == 0:
            give_to(workspace, confinement, recursive=True)
            logger.warning("workspace %s handed to uid %s (the CLI's user)", workspace, confinement.run_as)
    except OSError as exc:
        logger.warning("could not hand workspace %s to uid %s: %s", workspace, confinement.run_as, exc)


# -- per-session workspaces -------------------------------------------------------------------------------------


def session_workspace(
    state_dir: Path, template: Path, claude_session_id: str, confinement: Confinement
) -> Path:
    """The session's own workspace: a copy of the configured one (``template``) made at the session's first
    connect in this process and kept for its later ones. The wrapper binds it over the configured path inside the
    CLI's mount namespace, so every path the agent, the policy and the sandbox settings name stays the same while
    nothing one session writes reaches another session's commands."""
    dest = state_dir / "workspaces" / claude_session_id
    if not dest.is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        staging = Path(tempfile.mkdtemp(prefix=f".{claude_session_id}-", dir=dest.parent))
        shutil.copytree(template, staging, symlinks=True, dirs_exist_ok=True, copy_function=_copy_regular)
        os.chmod(staging, template.stat().st_mode & 0o7777)
        try:
            staging.rename(dest)
        except OSError:  # made by a concurrent connect of the same session: keep that one
            shutil.rmtree(staging, ignore_errors=True)
    give_to(dest, confinement, recursive=True)
    return dest


def _copy_regular(src: str, dst: str) -> None:
    """Copy regular files only: opening a FIFO would block the copy; sockets and devices have no content."""
    if stat.S_ISREG(os.lstat(src).st_mode):
        shutil.copy2(src, dst)
