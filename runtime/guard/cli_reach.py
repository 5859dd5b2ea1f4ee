"""A root runtime's CLI, where the unprivileged user it runs the CLI as can execute it.

A root runtime starts the CLI as uid 10001 (:mod:`runtime.guard.confine`). In the image the CLI sits in the
system site-packages, which every user may enter. In a checkout under a private directory (a container's
``/root``, a ``0700`` parent) the virtualenv's bundled CLI is out of that user's reach: every directory on the
path needs its execute bit for "others". Rather than switch command tools off, the runtime gives the CLI a second
name in a directory that user can enter: a hard link (the same file, no copy) in
``/tmp/agentkit-cli-<runtime uid>/<digest>/``, or a copy when ``/tmp`` is another file system. The directories are
made by this process with mode 0755 and checked (owner, no symlink) when they already exist, so nobody else can
swap the binary; the file keeps its owner and mode, so that user can run it but not change it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import stat
from pathlib import Path

logger = logging.getLogger(__name__)

BASE = Path("/tmp")  # noqa: S108 - the directories below are created 0755 by this uid and checked when present


def reachable_by_others(path: Path) -> bool:
    """Whether a user with no relation to the owners can execute ``path``: every parent directory has ``o+x``
    and the file ``o+x`` (ACLs are not consulted; they only add to this)."""
    try:
        if not os.stat(path).st_mode & stat.S_IXOTH:
            return False
        # the path as the wrapper will name it (not resolved): a symlink on the way does not lift a 0700 parent
        return all(os.stat(parent).st_mode & stat.S_IXOTH for parent in Path(path).absolute().parents)
    except OSError:
        return False


def _own_directory(path: Path) -> None:
    """``path`` exists as a directory of this uid, mode 0755, not a symlink."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o755)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise PermissionError(f"{path} exists and is not a directory of uid {os.geteuid()}")
    os.chmod(path, 0o755)  # noqa: S103 - to be entered (not written) by the CLI's user: that is the point


def reachable_cli(cli: str, *, base: Path = BASE) -> str:
    """``cli`` when others can execute it, else a hard link (or copy) of it they can. Never raises: on any failure
    the original path is returned (the confinement's start-up check then says what is wrong)."""
    source = Path(cli)
    if reachable_by_others(source):
        return cli
    try:
        info = os.stat(source)
        if not info.st_mode & stat.S_IXOTH:
            return cli  # the file itself is private: not ours to publish
        digest = hashlib.sha256(f"{source.resolve()}:{info.st_size}:{info.st_mtime_ns}".encode()).hexdigest()[
            :16
        ]
        top = base / f"agentkit-cli-{os.geteuid()}"
        _own_directory(top)
        directory = top / digest
        _own_directory(directory)
        target = directory / source.name
        if not target.exists():
            staging = directory / f".{source.name}.{os.getpid()}"
            try:
                os.link(source, staging)
            except OSError:  # another file system: a copy, once per CLI version
                shutil.copy2(source, staging)
            os.replace(staging, target)
        if not reachable_by_others(target):
            return cli
    except OSError as exc:
        logger.warning("could not give the CLI %s a path its unprivileged user can reach: %s", cli, exc)
        return cli
    logger.info(
        "the CLI at %s is out of reach of the CLI's unprivileged user (a parent directory lacks o+x): running it as "
        "%s (the same file)",
        cli,
        target,
    )
    return str(target)
