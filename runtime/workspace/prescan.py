"""What git must never open in an agent's workspace, found with ``lstat`` before git reads the tree.

``git add`` opens more than the files it stages: the ``HEAD`` of any directory that looks like a nested
repository (a FIFO there blocks it until killed), the target of a gitfile (``.git`` holding ``gitdir: <path>``, any
host path the agent names), every ``.gitignore`` and ``.gitattributes`` on its way (a FIFO named so blocks it too),
and the whole of each changed file (a sparse file of 1 GiB costs the sandbox nothing and git a gigabyte). So,
before git runs, :func:`prescan` walks the work tree without opening or following anything and lists:

- every ``.git`` entry below the top (directory, gitfile or anything else): the workspace's own ``.git`` is never
  used (the runtime's git directory lies elsewhere) and git skips that one by name;
- FIFOs, sockets, character and block devices;
- regular files larger than the per-file limit, by their apparent size (``st_size``): a sparse file counts at the
  size it claims, whatever blocks it occupies.

:meth:`Prescan.aside` moves them into one fresh directory at the top of the tree, which the caller's git is told to
ignore, and moves each back when the block ends, so the agent's tree is as it left it. No agent command runs while
the runtime computes a turn's patch (a command and what it forks end with its tool call), so nothing races the
moves. Directories named like the caches git is told to ignore (``node_modules``, ``__pycache__``, …) are not
walked unless the snapshot tracks files in them: git does not enter an ignored directory that holds nothing tracked.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: Directory names :data:`runtime.workspace.baseline.CACHE_PATTERNS` ignores (git never enters them untracked).
CACHE_DIRS = frozenset(
    {
        b"__pycache__",
        b".pytest_cache",
        b".mypy_cache",
        b".ruff_cache",
        b".hypothesis",
        b".tox",
        b".nox",
        b"node_modules",
        b".npm",
        b".cache",
    }
)
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}
ASIDE_PREFIX = ".agentkit-aside-"


@dataclass
class Prescan:
    """What to keep from git: ``withheld`` maps each path (relative, bytes) to why."""

    root: Path
    withheld: dict[bytes, str] = field(default_factory=dict)

    @contextlib.contextmanager
    def aside(self) -> Iterator[bytes]:
        """Move every withheld path out of git's way for the block; yields the exclude file's content (gitignore
        syntax) that hides holding directories from git (also one a runtime that died mid-turn left behind)."""
        ignore = b"/" + ASIDE_PREFIX.encode() + b"*/\n"
        if not self.withheld:
            yield ignore
            return
        name = (ASIDE_PREFIX + secrets.token_hex(8)).encode()
        holder = os.path.join(os.fsencode(self.root), name)
        os.mkdir(holder, 0o700)
        moved: list[tuple[bytes, bytes]] = []
        try:
            for i, path in enumerate(self.withheld):
                where = os.path.join(os.fsencode(self.root), path)
                parked = os.path.join(holder, str(i).encode())
                os.rename(where, parked)
                moved.append((parked, where))
            yield ignore
        finally:
            for parked, where in reversed(moved):
                os.rename(parked, where)
            os.rmdir(holder)


def prescan(
    root: Path, *, max_file_bytes: int | None, tracked_dirs: frozenset[bytes] = frozenset()
) -> Prescan:
    """Walk ``root`` with ``lstat`` only (see the module's docstring). ``tracked_dirs``: the snapshot's
    directories (relative, bytes), walked even when named like a cache."""
    found = Prescan(root)
    top = os.fsencode(root)
    pending: list[bytes] = [b""]
    while pending:
        rel = pending.pop()
        with os.scandir(os.path.join(top, rel) if rel else top) as listing:
            entries = list(listing)
        if rel and rel not in tracked_dirs and any(e.name == b".git" for e in entries):
            # git takes an untracked directory holding .git for a nested repository (and reads its HEAD, or the
            # gitdir a gitfile names): the whole directory stays out, as a gitlink would
            found.withheld[rel] = "a git repository"
            continue
        for entry in entries:
            path = rel + b"/" + entry.name if rel else entry.name
            if entry.name == b".git":
                if rel:  # the top's own .git is never used (and git skips it by name)
                    found.withheld[path] = "a git repository"
                continue
            if rel == b"" and entry.name.startswith(ASIDE_PREFIX.encode()):
                continue  # left by a runtime that died mid-turn: git is told to ignore such names
            info = entry.stat(follow_symlinks=False)
            mode = stat.S_IFMT(info.st_mode)
            if mode == stat.S_IFDIR:
                if entry.name in CACHE_DIRS and path not in tracked_dirs:
                    continue
                pending.append(path)
            elif mode in _KINDS:
                found.withheld[path] = f"{_KINDS[mode]}, not a file"
            elif mode == stat.S_IFREG and max_file_bytes is not None and info.st_size > max_file_bytes:
                found.withheld[path] = (
                    f"{info.st_size} bytes, over the per-file limit of {max_file_bytes} "
                    "(AGENTKIT_WORKSPACE_MAX_FILE_BYTES)"
                )
    return found
