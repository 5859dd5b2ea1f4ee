"""How much memory and how many processes one session's CLI process tree (the CLI, its sandboxes, every command)
may use, and how that is enforced.

Decided once at start (:func:`decide`), in this order:

- **cgroup v2** (``/sys/fs/cgroup/cgroup.controllers`` with ``memory`` and ``pids`` available to the runtime's own
  cgroup, and the runtime allowed to create child cgroups: a root runtime, or a cgroup delegated to its user).
  Each session gets ``<own cgroup>/agentkit/<claude session id>`` with ``memory.max``, ``memory.swap.max=0`` and
  ``pids.max``. cgroup v2 lets a cgroup hand controllers to its children only while it holds no process itself
  (the "no internal processes" rule, kernel ``Documentation/admin-guide/cgroup-v2.rst``), so when the runtime's
  own cgroup holds processes they are first moved into a leaf ``<own cgroup>/runtime``.
- **cgroup v1** (a hybrid host: ``memory`` and ``pids`` hierarchies mounted under ``/sys/fs/cgroup/<controller>``):
  ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes`` where swap accounting exists) and ``pids.max`` in
  ``agentkit/<claude session id>`` under the runtime's own cgroup of each hierarchy.
- **rlimit**: ``RLIMIT_DATA`` for every process of the tree (``prlimit --data``; per process, not per tree) next to
  the ``RLIMIT_NPROC`` the wrapper always sets (counted per user namespace, so per tree: ``runtime.guard.confine``).
  ``RLIMIT_AS`` is not used: a JavaScript engine reserves far more address space than it uses. ``RLIMIT_RSS`` has
  no effect on Linux (getrlimit(2)). With ``RLIMIT_DATA`` a command that allocates past the limit gets ``ENOMEM``
  (``MemoryError``, "Cannot allocate memory") instead of being killed; several processes together can still use
  more than the limit, up to the process limit times it.
- **none**: the CLI is not started through the confinement wrapper (no user namespaces, no util-linux).

Each step is probed with a real process (a shell moved into a probe cgroup), not inferred from permissions.
The wrapper (``runtime.guard.confine``) moves itself into the session's cgroups before anything else runs
(:data:`ENV_SESSION_CGROUPS`), so every process of the tree is inside from its start and cannot leave (the
cgroup files belong to root, or to the runtime's user, never to a sandboxed command's view).

When a command hits a cgroup limit the kernel kills it (memory: the out-of-memory killer picks the largest process
in the session's cgroup, the command rather than the ~250 MB CLI once the limit is well above that) or refuses its
``fork`` (processes). :meth:`SessionCgroup.new_hits` reads the cgroup's event counters (``memory.events`` /
``memory.oom_control`` ``oom_kill``, ``pids.events`` ``max``) after each tool call, so the runtime can say so to
the model, log it and count it (``runtime.guard.limit_hook``).

Environment: none read here (the settings ``AGENTKIT_SESSION_MEMORY_MB`` and ``AGENTKIT_SESSION_PROCESSES`` arrive as
arguments).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import errno
import logging
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from runtime.errors import AgentProcessError

logger = logging.getLogger(__name__)
_lock = threading.Lock()

Enforcement = Literal["cgroup-v2", "cgroup-v1", "rlimit", "none"]
MIB = 1024 * 1024
DEFAULT_CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Set by the runtime in the CLI's environment: the ``cgroup.procs`` files (``:``-separated) the wrapper writes its
#: own pid to before it starts anything (read by the wrapper script only; not on the tool env allowlist).
ENV_SESSION_CGROUPS = "AGENTKIT_SESSION_CGROUPS"
#: Shell that moves the shell itself into every cgroup named by :data:`ENV_SESSION_CGROUPS` (exit 125 when one
#: move fails: a CLI must not start outside its limits). Used by the wrapper and by the start-up probe.
MOVE_INTO_CGROUPS = (
    f'if [ -n "${{{ENV_SESSION_CGROUPS}:-}}" ]; then IFS=:; for f in ${ENV_SESSION_CGROUPS}; do '
    'echo $$ > "$f" || exit 125; done; unset IFS; fi'
)
#: The parent of every session's cgroup, under the runtime's own cgroup: ``agentkit-<pid of the runtime>``, so two
#: runtimes on one host (local runs, tests) never share a session's cgroup, and the ones of a runtime that is gone
#: are recognised and removed by the next start (:func:`_sweep`).
GROUP_PREFIX = "agentkit-"


@dataclass(frozen=True)
class ResourceLimits:
    """The limits in force for every session of this process and how they are enforced."""

    memory_mb: int  # 0: no memory limit
    processes: int
    enforcement: Enforcement
    #: Parent cgroup directories (v2: one; v1: the memory one, then the pids one).
    parents: tuple[Path, ...] = ()

    @property
    def cgroup(self) -> bool:
        return self.enforcement in ("cgroup-v2", "cgroup-v1")

    @property
    def data_rlimit_bytes(self) -> int | None:
        """``RLIMIT_DATA`` for each process of the tree (rlimit enforcement with a memory limit only)."""
        return self.memory_mb * MIB if self.enforcement == "rlimit" and self.memory_mb > 0 else None

    @property
    def fsize_rlimit_bytes(self) -> int | None:
        """``RLIMIT_FSIZE`` for each process of the tree (rlimit enforcement with a memory limit only): the largest
        file a process may write or extend. ``RLIMIT_DATA`` counts private memory only; a file on a tmpfs (the
        sandbox's ``/tmp`` and ``/dev/shm``, which bubblewrap mounts without a size) or a ``memfd_create`` file is
        memory too, and without this one process held twice the limit in each (measured with the bundled CLI:
        1536 MiB against a 768 MiB limit). With it, one such file stops at the limit (``EFBIG``; a process that does
        not ignore ``SIGXFSZ`` is ended by it)."""
        return self.data_rlimit_bytes

    def describe(self) -> dict[str, object]:
        """What ``/ping`` shows: the limits, how they are enforced, and how often commands of this process's
        sessions hit them (cgroup enforcement only: nothing counts an rlimit hit)."""
        with _lock:
            hits = dict(_hits)
        return {
            "enforcement": self.enforcement,
            "memory_mb": self.memory_mb,
            "processes": self.processes,
            "hits": {"memory": hits.get("memory", 0), "processes": hits.get("processes", 0)},
        }


def _own_paths(proc_cgroup: Path) -> dict[str, str]:
    """``controller -> path`` of this process's cgroups (``""`` is the v2 unified hierarchy)."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in proc_cgroup.read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                paths[controller] = path
    return paths


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:  # one write() per value: cgroup files take one value per call
        f.write(value)


def _enable_v2(own: Path) -> None:
    """Give ``memory`` and ``pids`` to ``own``'s children, moving its processes into a leaf first if needed."""
    try:
        _write(own / "cgroup.subtree_control", "+memory +pids")
        return
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            raise
    leaf = own / "runtime"
    leaf.mkdir(exist_ok=True)
    for pid in (own / "cgroup.procs").read_text().split():
        with contextlib.suppress(ProcessLookupError):  # gone meanwhile
            _write(leaf / "cgroup.procs", pid)
    logger.info("moved the processes of %s into %s (cgroup v2 has no processes in inner nodes)", own, leaf)
    _write(own / "cgroup.subtree_control", "+memory +pids")


def _parents(root: Path, proc_cgroup: Path) -> tuple[Enforcement, tuple[Path, ...]] | None:
    """The parent cgroup(s) sessions go under, made and ready for children; ``None`` when there is none."""
    own = _own_paths(proc_cgroup)
    if (root / "cgroup.controllers").is_file() and "" in own:
        base = root / own[""].lstrip("/")
        available = (base / "cgroup.controllers").read_text().split()
        if not {"memory", "pids"} <= set(available):
            raise OSError(f"cgroup v2 controllers available to {base}: {available}, need memory and pids")
        _enable_v2(base)
        parent = _parent_dir(base)
        _write(parent / "cgroup.subtree_control", "+memory +pids")
        return "cgroup-v2", (parent,)
    dirs = []
    for controller in ("memory", "pids"):
        if controller not in own or not (root / controller / "cgroup.procs").is_file():
            return None
        dirs.append(_parent_dir(root / controller / own[controller].lstrip("/")))
    return "cgroup-v1", tuple(dirs)


def _parent_dir(base: Path) -> Path:
    """``base/agentkit-<our pid>``, made; the ones of runtimes that are gone are removed first."""
    for stale in base.glob(f"{GROUP_PREFIX}*"):
        pid = stale.name[len(GROUP_PREFIX) :]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            for child in [c for c in stale.iterdir() if c.is_dir()]:
                _remove(child)
            _remove(stale)
    parent = base / f"{GROUP_PREFIX}{os.getpid()}"
    parent.mkdir(exist_ok=True)
    return parent


def _probe(limits: ResourceLimits, timeout_s: float) -> None:
    """Move a real process into a probe cgroup with the limits set; raises when anything of it fails."""
    probe = open_session(limits, f"probe-{os.getpid()}")
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", f"{MOVE_INTO_CGROUPS}; cat /proc/self/cgroup"],
            env={**os.environ, ENV_SESSION_CGROUPS: probe.procs_env},
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
        inside = done.stdout.decode(errors="replace")
        if done.returncode != 0 or not all(f"/{probe.dirs[0].name}" in line for line in _limited(inside)):
            raise OSError(done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}: {inside}")
    finally:
        probe.close()


def _limited(proc_cgroup_text: str) -> list[str]:
    """The lines of a ``/proc/<pid>/cgroup`` for the hierarchies the limits use."""
    lines = proc_cgroup_text.splitlines()
    v1 = [line for line in lines if line.split(":")[1:2] in (["memory"], ["pids"])]
    return v1 or [line for line in lines if line.startswith("0::")]


def decide(
    memory_mb: int,
    processes: int,
    *,
    wrapped: bool,
    prlimit: bool,
    root: Path = DEFAULT_CGROUP_ROOT,
    proc_cgroup: Path = Path("/proc/self/cgroup"),
    timeout_s: float = 10.0,
) -> ResourceLimits:
    """The limits for this process (see the module docstring). ``wrapped``: the CLI starts through the
    confinement wrapper (the only place a cgroup move or an rlimit can be applied); ``prlimit``: util-linux's
    ``prlimit`` is there."""
    if not wrapped:
        return ResourceLimits(memory_mb, processes, "none")
    try:
        found = _parents(root, proc_cgroup)
        if found is not None:
            limits = ResourceLimits(memory_mb, processes, found[0], found[1])
            _probe(limits, timeout_s)
            return limits
        reason = "no cgroup v2 with memory and pids, no cgroup v1 memory and pids hierarchies"
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        reason = str(exc)
    logger.info("session limits: no cgroup for sessions (%s)", reason)
    return ResourceLimits(memory_mb, processes, "rlimit" if prlimit else "none")


# -- one session's cgroup -----------------------------------------------------------------------------------------


@dataclass
class SessionCgroup:
    """One session's cgroup(s): limits written, emptied and removed by :meth:`close`."""

    dirs: tuple[Path, ...]
    enforcement: Enforcement
    _seen: dict[str, int] = field(default_factory=dict)

    @property
    def procs_env(self) -> str:
        """:data:`ENV_SESSION_CGROUPS`'s value for the wrapper."""
        return ":".join(str(d / "cgroup.procs") for d in self.dirs)

    def counters(self) -> dict[str, int]:
        """``memory``: processes the out-of-memory killer ended; ``processes``: forks refused at ``pids.max``."""
        memory_file = "memory.events" if self.enforcement == "cgroup-v2" else "memory.oom_control"
        pids_dir = self.dirs[-1]
        return {
            "memory": _field(self.dirs[0] / memory_file, "oom_kill"),
            "processes": _field(pids_dir / "pids.events", "max"),
        }

    def new_hits(self) -> dict[str, int]:
        """How often each limit was hit since the last call (only the ones that were)."""
        now = self.counters()
        hits = {k: v - self._seen.get(k, 0) for k, v in now.items() if v > self._seen.get(k, 0)}
        first = not self._seen
        self._seen = now
        if first:  # a reused cgroup's past events are not new
            return {}
        with _lock:
            _hits.update(hits)
        return hits

    def close(self) -> None:
        """Kill what is left in the cgroup and remove it (safe to call twice)."""
        for d in reversed(self.dirs):
            _remove(d)


def _field(path: Path, name: str) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    return 0


def _remove(d: Path) -> None:
    for _ in range(50):
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                logger.warning("could not remove cgroup %s: %s", d, exc)
                return
        if (d / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                _write(d / "cgroup.kill", "1")
        else:
            with contextlib.suppress(OSError, ValueError):
                for pid in (d / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.02)
    logger.warning("cgroup %s still busy; left in place", d)


def open_session(limits: ResourceLimits, key: str) -> SessionCgroup:
    """Make (or reuse) ``key``'s cgroup(s) with the limits written. Raises ``OSError`` when that fails."""
    dirs = tuple(parent / key for parent in limits.parents)
    for d in dirs:
        d.mkdir(exist_ok=True)
    memory = str(limits.memory_mb * MIB) if limits.memory_mb > 0 else None
    if limits.enforcement == "cgroup-v2":
        (d,) = dirs
        if memory is not None:
            _write(d / "memory.max", memory)
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", "0")  # a hog must not spill into swap instead
        _write(d / "pids.max", str(limits.processes))
    else:
        memory_dir, pids_dir = dirs
        if memory is not None:
            _write(memory_dir / "memory.limit_in_bytes", memory)
            if (memory_dir / "memory.memsw.limit_in_bytes").exists():
                _write(memory_dir / "memory.memsw.limit_in_bytes", memory)
        _write(pids_dir / "pids.max", str(limits.processes))
    group = SessionCgroup(dirs, limits.enforcement)
    group.new_hits()  # reads the counters as they are now
    return group


# -- the cgroups of live sessions ---------------------------------------------------------------------------------

_decided: list[ResourceLimits] = []
_groups: dict[str, SessionCgroup] = {}
_hits: collections.Counter[str] = collections.Counter()


def set_decided(limits: ResourceLimits) -> None:
    with _lock:
        _decided[:] = [limits]


def decided() -> ResourceLimits | None:
    """What start-up decided (``None`` before, or when no wiring ran)."""
    with _lock:
        return _decided[0] if _decided else None


def session_cgroup(claude_session_id: str) -> SessionCgroup | None:
    """The session's cgroup (made at its CLI's start) when cgroups enforce the limits.

    Raises:
        AgentProcessError: the cgroup could not be made or its limits written.
    """
    limits = decided()
    if limits is None or not limits.cgroup:
        return None
    with _lock:
        group = _groups.get(claude_session_id)
    if group is None:
        try:
            group = open_session(limits, claude_session_id)
        except OSError as exc:
            # never a CLI outside the limits start-up promised (and /ping shows)
            raise AgentProcessError(
                f"could not set up the session's cgroup ({exc}); its CLI was not started. Retry the invocation; "
                "if it persists, the runtime log says why"
            ) from exc
        with _lock:
            _groups[claude_session_id] = group
    return group


@atexit.register
def release_all_session_cgroups() -> None:
    """Remove every session cgroup of this process and their parents (at interpreter exit)."""
    with _lock:
        keys = list(_groups)
    for key in keys:
        release_session_cgroup(key)
    limits = decided()
    for parent in limits.parents if limits is not None else ():
        with contextlib.suppress(OSError):
            parent.rmdir()


def limit_hits_of(claude_session_id: str) -> tuple[dict[str, int], ResourceLimits] | None:
    """New limit hits of the session's existing cgroup (none is made), with the limits; ``None`` without one."""
    limits = decided()
    with _lock:
        group = _groups.get(claude_session_id)
    if group is None or limits is None:
        return None
    return group.new_hits(), limits


def release_session_cgroup(claude_session_id: str) -> None:
    """Remove the session's cgroup (its CLI process is closed)."""
    with _lock:
        group = _groups.pop(claude_session_id, None)
    if group is not None:
        group.close()
