"""Trees on disk for the repository-work tests: file views read from disk, the runtime's real patch of a
change (``runtime/workspace/baseline.py``), and ``git diff`` of a change in a plain repository."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from runtime.guard.policy import is_sensitive_name
from runtime.workspace.baseline import Baseline
from runtime.workspace.protected_paths import NAMES
from webhook.repo.files import MODE_EXECUTABLE, MODE_FILE, MODE_SYMLINK, FileEntry

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": "/nonexistent",
}


def write_tree(
    root: Path,
    files: Mapping[str, bytes | str],
    *,
    executable: tuple[str, ...] = (),
    links: dict[str, str] | None = None,
) -> None:
    for path, data in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)
        if path in executable:
            target.chmod(0o755)
    for path, link in (links or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link, root / path)


def view_of(root: Path) -> dict[str, FileEntry]:
    """The file view of a directory (no ``.git``): bytes and git mode, links as their target."""
    out: dict[str, FileEntry] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git" and not (Path(dirpath) / d).is_symlink()]
        names = filenames + [
            d for d in os.listdir(dirpath) if (Path(dirpath) / d).is_symlink() and d not in filenames
        ]
        for name in names:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                out[rel] = FileEntry(os.readlink(full).encode(), MODE_SYMLINK)
            else:
                mode = MODE_EXECUTABLE if full.stat().st_mode & stat.S_IXUSR else MODE_FILE
                out[rel] = FileEntry(full.read_bytes(), mode)
    return out


def runtime_patch(
    tmp: Path, files: Mapping[str, bytes | str], change: Callable[[Path], object], **tree: object
) -> tuple[dict[str, FileEntry], str, dict[str, FileEntry]]:
    """``(view before, the runtime's patch, view after)``: ``files`` recorded by the runtime's
    :class:`Baseline`, ``change`` applied to the workspace, then the patch the runtime returns."""
    work = tmp / "ws"
    work.mkdir()
    write_tree(work, files, **tree)  # type: ignore[arg-type]
    before = view_of(work)
    # every protected class allowed: these tests are about the patch format, the policy has its own
    baseline = Baseline(
        git_dir=tmp / "snap",
        work_tree=work,
        withhold=is_sensitive_name,
        max_patch_bytes=20 << 20,
        allow_protected=frozenset(NAMES),
    )
    baseline.record()
    change(work)
    return before, baseline.changes().patch, view_of(work)


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, check=True)
    return done.stdout.decode("utf-8", "surrogateescape")


def git_diff(
    tmp: Path, files: Mapping[str, bytes | str], change: Callable[[Path], object], *flags: str
) -> tuple[dict[str, FileEntry], str, dict[str, FileEntry]]:
    """``(view before, git diff <flags> of the staged change, view after)`` in a plain repository."""
    work = tmp / "repo"
    work.mkdir()
    git(work, "init", "-q")
    write_tree(work, files)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    before = view_of(work)
    change(work)
    git(work, "add", "-A")
    return before, git(work, "diff", "--cached", "--binary", *flags), view_of(work)
