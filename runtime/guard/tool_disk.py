"""Where the runtime finds a session's workspace while its CLI works on the session's tool disk.

With ``AGENTKIT_TOOL_DISK_MB`` the confinement wrapper (``runtime.guard.confine``) mounts one size-limited tmpfs per
CLI process inside the CLI's own mount namespace, copies the session's workspace into it, binds it over the
configured workspace path, and copies it back to the host when the CLI ends. While the CLI runs, that tmpfs is the
session's workspace: a workspace snapshot sent with a turn must be unpacked into it, and the turn's patch read from
it. The runtime reaches it through the wrapper's process: ``/proc/<pid>/root`` resolves paths in that process's
mount namespace (proc(5)), for the runtime's own user too (the wrapper runs as it, in a user namespace the
runtime's user owns, so the kernel's ptrace access check passes; root passes anyway). The wrapper writes its pid to
``<state>/tool-disk/<claude session id>.pid`` before it mounts anything and removes the file when it has copied
the workspace back; the runtime removes it too when it closes the CLI (a killed wrapper cannot).

:func:`view_for` is the ``Workspaces`` seam: the live workspace while a CLI of the session runs, else the host copy.

Environment: none (paths come from the settings).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from runtime.workspace.sessions import WorkspaceView

#: Where the wrapper mounts each session's tool disk (an empty directory under the state dir) and writes its pid.
DISK_DIR = "tool-disk"


def mount_point(state_dir: Path, claude_session_id: str) -> Path:
    return state_dir / DISK_DIR / claude_session_id


def pid_file(state_dir: Path, claude_session_id: str) -> Path:
    """The wrapper's pid while the session's CLI runs on its tool disk (a sibling of :func:`mount_point`)."""
    return state_dir / DISK_DIR / f"{claude_session_id}.pid"


def live_root(state_dir: Path, claude_session_id: str) -> Path | None:
    """``/proc/<wrapper pid>/root`` while the session's CLI runs on its tool disk, else ``None``.

    The pid is trusted only while that process is in a mount namespace other than ours (a pid file left by a
    wrapper that was killed may name a process that reused the pid)."""
    try:
        pid = int(pid_file(state_dir, claude_session_id).read_text().strip())
        theirs = os.readlink(f"/proc/{pid}/ns/mnt")
    except (OSError, ValueError):
        return None
    if theirs == os.readlink("/proc/self/ns/mnt"):
        return None
    return Path(f"/proc/{pid}/root")


def release(state_dir: Path, claude_session_id: str) -> None:
    """The session's CLI process is closed: forget its pid."""
    with contextlib.suppress(OSError):
        pid_file(state_dir, claude_session_id).unlink()


def view_for(
    state_dir: Path, configured_workspace: Path, host_tree: Callable[[str], Path]
) -> Callable[[str], WorkspaceView]:
    """The session's workspace as the runtime must reach it now: inside the running CLI's tool disk (at the
    configured path, which the wrapper binds the tool disk's copy over; programs such as git are run there with
    ``nsenter``, since a path through ``/proc/<pid>/root`` resolves back to this namespace as soon as a program
    canonicalises it), or ``host_tree(id)`` when no CLI of the session runs on one."""

    def view(claude_session_id: str) -> WorkspaceView:
        root = live_root(state_dir, claude_session_id)
        if root is None:
            return WorkspaceView.here(host_tree(claude_session_id))
        inside = configured_workspace.relative_to(configured_workspace.anchor)
        pid = root.parent.name
        # A non-root runtime's wrapper is in a user namespace of its own (owned by this user): join it first to
        # have the right to join its mount namespace, keeping this process's credentials.
        user = os.readlink(f"/proc/{pid}/ns/user") != os.readlink("/proc/self/ns/user")
        enter = (
            shutil.which("nsenter") or "nsenter",
            "-t",
            pid,
            *(("-U", "--preserve-credentials") if user else ()),
            "-m",
            f"--wd={configured_workspace}",
            "--",
        )
        return WorkspaceView(files=root / inside, tree=configured_workspace, enter=enter)

    return view
