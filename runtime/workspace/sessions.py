"""Per-session workspaces made from snapshots: where they live, how a snapshot replaces one, and its patch.

A session that was sent a snapshot works in its own directory (:attr:`Workspaces.tree_for`), not in the shared
``AGENTKIT_WORKSPACE``; later turns of the session keep it, and a snapshot sent with a later turn replaces its
content. The trusted side of each workspace (the snapshot's history, the staging directory an archive is
unpacked into) lives under a separate root the agent's sandbox cannot reach:

    <state dir>/workspaces/<claude session id>/       the agent's working directory (its cwd)
    <state dir>/snapshots/<claude session id>/base.git  the snapshot's history (runtime.workspace.baseline)
    <state dir>/snapshots/<claude session id>/incoming  an archive being unpacked
    <state dir>/snapshots/<claude session id>/installing  present while a snapshot replaces the workspace

Both are on local disk and outlive the session's warm CLI process (an idle session that comes back finds its
workspace) until :mod:`runtime.workspace.retention` removes them after ``AGENTKIT_WORKSPACE_RETENTION_HOURS`` unused. Unpacking runs in the runtime process, outside the sandbox, before the CLI sees the directory.

Replacing a workspace is not atomic (the directory itself stays: a warm CLI may have it as its cwd, or it is bound
into a CLI's mount namespace), so it is marked: ``installing`` is written (and synced) before the first file of
the old snapshot is removed and removed only once the new snapshot is recorded. A process that dies in between
leaves it, and the session's next turn is refused with ``410 workspace_incomplete`` unless it sends a snapshot:
a patch computed there would propose deleting files the agent never touched, or the difference between two
snapshots as the agent's change.

Environment variables: none read here (the limits come from :class:`runtime.config.settings.Settings`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import InvalidWorkspace, WorkspaceIncomplete, WorkspaceTooLarge
from runtime.workspace.archive import SnapshotLimits, Unpacked, unpack
from runtime.workspace.baseline import Baseline, Changes
from runtime.workspace.retention import EXPIRED
from runtime.workspace.s3 import S3Snapshots

#: The marker of a snapshot install under way (see the module's docstring).
INSTALLING = "installing"


def default_tree_for(state_dir: Path) -> Callable[[str], Path]:
    """The default place of a session's workspace: ``<state dir>/workspaces/<claude session id>``, the directory
    :func:`runtime.guard.confine.session_workspace` binds over the configured workspace for a confined CLI, so a
    snapshot unpacked here is what that session's CLI sees."""
    return lambda claude_session_id: state_dir / "workspaces" / claude_session_id


@dataclass(frozen=True)
class WorkspaceView:
    """How the runtime reaches a session's workspace: ``files`` for its own file operations, ``tree`` as a program
    started with the ``enter`` prefix sees the same directory (git, ``realpath``). Both are one path, with no
    prefix, unless the workspace is inside a running CLI's mount namespace (``runtime.guard.tool_disk``)."""

    files: Path
    tree: Path
    enter: tuple[str, ...] = ()

    @classmethod
    def here(cls, path: Path) -> WorkspaceView:
        return cls(path, path)


class Workspaces:
    """The snapshot workspaces of this runtime.

    Args:
        trusted_root: where each session's snapshot history and staging directory live (outside any
            directory the agent can read or write).
        tree_for: the session's workspace directory (its CLI's cwd), from the Claude session id.
        limits: what a snapshot may be.
        max_patch_bytes: the largest patch returned.
        withhold: whether a changed path must stay out of the patch (the secret-name rules).
        on_installed: called with the workspace directory after a snapshot was unpacked into it, e.g. to hand
            it to the user the CLI runs as when that is not the runtime's own user.
        s3: where snapshots too large to send inline are read from; None: inline snapshots only.
        view_for: where the session's workspace is right now (default: :attr:`tree_for` itself); with a tool
            disk, inside the session's running CLI (``runtime.guard.tool_disk``).
        allow_protected: protected-path classes a patch may carry (:mod:`runtime.workspace.protected_paths`).
    """

    def __init__(
        self,
        *,
        trusted_root: Path,
        tree_for: Callable[[str], Path],
        limits: SnapshotLimits,
        max_patch_bytes: int,
        withhold: Callable[[str], bool],
        on_installed: Callable[[Path], None] = lambda tree: None,
        s3: S3Snapshots | None = None,
        view_for: Callable[[str], WorkspaceView] | None = None,
        allow_protected: frozenset[str] = frozenset(),
    ) -> None:
        self.allow_protected = allow_protected
        self.view_for = view_for
        self.s3 = s3
        self.on_installed = on_installed
        self.trusted_root = trusted_root
        self.tree_for = tree_for
        self.limits = limits
        self.max_patch_bytes = max_patch_bytes
        self.withhold = withhold

    def view(self, claude_session_id: str) -> WorkspaceView:
        """Where the session's workspace is right now (see :class:`WorkspaceView`)."""
        if self.view_for is not None:
            return self.view_for(claude_session_id)
        return WorkspaceView.here(self.tree_for(claude_session_id))

    def baseline(self, claude_session_id: str, view: WorkspaceView | None = None) -> Baseline:
        view = view or self.view(claude_session_id)
        return Baseline(
            git_dir=self.trusted_root / claude_session_id / "base.git",
            work_tree=view.tree,
            withhold=self.withhold,
            max_patch_bytes=self.max_patch_bytes,
            enter=view.enter,
            files=view.files,
            max_file_bytes=self.limits.max_file_bytes,
            allow_protected=self.allow_protected,
        )

    def has_snapshot(self, claude_session_id: str) -> bool:
        """Whether the session works on a snapshot (then its cwd is :attr:`tree_for` and turns return patches)."""
        if self.interrupted_install(claude_session_id):
            return False
        view = self.view(claude_session_id)
        return self.baseline(claude_session_id, view).recorded and view.files.is_dir()

    def interrupted_install(self, claude_session_id: str) -> bool:
        """Whether a process died while it replaced this session's workspace (it is then part of two snapshots)."""
        return (self.trusted_root / claude_session_id / INSTALLING).exists()

    def install(self, claude_session_id: str, archive: bytes) -> Unpacked:
        """Unpack ``archive`` as the session's workspace, replacing what was there, and record it as the snapshot.

        The archive is unpacked into a staging directory first: a bad archive leaves the session's current
        workspace untouched. The workspace directory itself is kept (a warm CLI may have it as its cwd); only its
        content is replaced. Blocking: run it in a thread.

        Raises:
            InvalidWorkspace / WorkspaceTooLarge: the archive is unsafe or over a limit (nothing was changed).
            WorkspaceError: git could not record the snapshot.
        """
        staging = self.trusted_root / claude_session_id / "incoming"
        _remove(staging)
        staging.mkdir(parents=True, mode=0o755)
        try:
            unpacked = unpack(archive, staging, self.limits)
        except BaseException:
            _remove(staging)
            raise
        view = self.view(claude_session_id)
        tree = view.files
        if tree.is_symlink() or (tree.exists() and not tree.is_dir()):
            _remove(staging)
            raise InvalidWorkspace(f"the session's workspace {tree} is not a directory")
        tree.mkdir(parents=True, exist_ok=True, mode=0o755)
        try:
            _check_room(tree, staging, unpacked)
        except BaseException:
            _remove(staging)
            raise
        marker = self.trusted_root / claude_session_id / INSTALLING
        _write_synced(marker)
        for child in list(tree.iterdir()):
            _remove(child)
        for child in list(staging.iterdir()):
            # a move within one filesystem; onto a session's tool disk (another filesystem) a copy
            shutil.move(child, tree / child.name)
        _remove(staging)
        self.baseline(claude_session_id, view).record()
        # a snapshot sent after the retention sweep removed the previous one: the session works again
        (self.trusted_root / claude_session_id / EXPIRED).unlink(missing_ok=True)
        self.on_installed(tree)
        marker.unlink()
        _sync_dir(marker.parent)
        return unpacked

    def snapshot_tree(self, claude_session_id: str) -> str | None:
        """The git tree id of the session's recorded snapshot (None: none), to tell one snapshot from another."""
        return self.baseline(claude_session_id).tree

    def apply(self, claude_session_id: str, patch: str) -> None:
        """Apply ``patch``, a change made against the session's current snapshot (the work of a paused turn,
        :mod:`runtime.workspace.paused`), to its workspace. Blocking: run it in a thread.

        Raises: WorkspaceError: git could not apply it (the workspace is then the snapshot alone).
        """
        view = self.view(claude_session_id)
        self.baseline(claude_session_id, view).apply(patch)
        self.on_installed(view.files)

    def forget(self, claude_session_id: str) -> None:
        """Drop the record of the session's snapshot (:meth:`has_snapshot` is then False), e.g. one installed for an
        answer whose paused work could not be restored on it: it is not the workspace the session paused in, and a
        later answer must not go on in it as if it were. Blocking: run it in a thread."""
        self.baseline(claude_session_id).forget()

    def check_s3_uri(self, uri: str) -> None:
        """Raises :class:`InvalidWorkspace` unless ``uri`` may be read (S3 configured, under its location)."""
        if self.s3 is None:
            raise InvalidWorkspace(
                "this runtime reads no snapshots from S3 (AGENTKIT_WORKSPACE_S3_URI is not set); send the archive "
                "inline as workspace.tar_gz_b64"
            )
        self.s3.check(uri)

    def install_from_s3(self, claude_session_id: str, uri: str) -> Unpacked:
        """Read the archive at ``uri`` and :meth:`install` it. Blocking: run it in a thread.

        Raises: as :meth:`check_s3_uri`, :meth:`runtime.workspace.s3.S3Snapshots.fetch` and :meth:`install`.
        """
        self.check_s3_uri(uri)
        assert self.s3 is not None
        return self.install(claude_session_id, self.s3.fetch(uri))

    def changes(
        self,
        claude_session_id: str,
        timeout_s: float | None = None,
        hold: Callable[[str], str | None] | None = None,
    ) -> Changes:
        """The session's workspace against its snapshot, within ``timeout_s``; ``hold`` as
        :meth:`Baseline.changes`'s. Blocking: run it in a thread.

        Raises:
            PatchTooLarge: the patch is over ``max_patch_bytes`` (the workspace is kept).
            WorkspaceIncomplete: a snapshot install was interrupted (no patch is made from a half-replaced tree).
            WorkspaceError: git failed or ran out of time.
        """
        if self.interrupted_install(claude_session_id):
            raise self.incomplete()
        return self.baseline(claude_session_id).changes(timeout_s=timeout_s, hold=hold)

    @staticmethod
    def incomplete() -> WorkspaceIncomplete:
        """The error of a turn on a workspace whose install was interrupted (:meth:`interrupted_install`)."""
        return WorkspaceIncomplete(
            "the runtime stopped while it replaced this session's workspace with a new snapshot; send the snapshot "
            "again with this turn (agentkit invoke --workspace DIR) to go on: the conversation is kept"
        )


def _write_synced(path: Path) -> None:
    """Create ``path`` (empty) and make its existence durable before anything it guards starts."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    _sync_dir(path.parent)


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: What a file costs beyond its bytes on the smallest filesystem it may land on (a tmpfs page).
_BLOCK = 4096


def _check_room(tree: Path, staging: Path, unpacked: Unpacked) -> None:
    """Refuse a snapshot that cannot fit where the session's workspace is (only a session's tool disk, a small
    filesystem of its own, can be too small) before anything of the current workspace is removed.

    Raises:
        WorkspaceTooLarge: the snapshot needs more than the free space plus what the current workspace frees.
    """
    if os.stat(tree).st_dev == os.stat(staging).st_dev:
        return  # renamed within one filesystem: no space needed
    vfs = os.statvfs(tree)
    freed = sum(
        (e.stat(follow_symlinks=False).st_size + _BLOCK)
        for e in _walk(tree)
        if not e.is_dir(follow_symlinks=False)
    )
    need = unpacked.bytes + unpacked.files * _BLOCK
    room = vfs.f_bavail * vfs.f_frsize + freed
    if need > room:
        raise WorkspaceTooLarge(
            f"the workspace snapshot needs about {need // 2**20} MiB and the session's tool disk has "
            f"{room // 2**20} MiB for it (AGENTKIT_TOOL_DISK_MB); send a smaller snapshot or raise the tool disk"
        )


def _walk(top: Path) -> list[os.DirEntry[str]]:
    entries: list[os.DirEntry[str]] = []
    with os.scandir(top) as it:
        for entry in it:
            entries.append(entry)
            if entry.is_dir(follow_symlinks=False):
                entries.extend(_walk(Path(entry.path)))
    return entries


def _remove(path: Path) -> None:
    """Remove a file, link or directory tree without following links."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
