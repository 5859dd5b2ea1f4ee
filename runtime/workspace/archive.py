"""Unpack a workspace snapshot (a tar.gz archive) safely: nothing is ever written outside the target directory.

The archive comes from outside (a CI runner, a webhook worker), so every entry is checked before a byte is
written, and the archive is read as a stream through a bounded decompressor:

- **names**: UTF-8 only, relative, no ``..`` component, no ``.git`` component (the runtime keeps its own
  history of the snapshot; a ``.git`` from outside could carry hooks or config), at most 4096 bytes
  (255 per component), each name once;
- **types**: regular files, directories and symbolic links whose target stays inside the tree. Hard links
  are copied from an earlier regular file of the archive; any other hard link, device file, FIFO or sparse
  file is refused;
- **no writing through links**: a symbolic link is created only after every file and directory, and no
  entry may lie below a link of the archive, so a link can never redirect a write;
- **limits** (:class:`SnapshotLimits`): compressed size, unpacked bytes (checked against the decompressed
  stream itself, so a gzip bomb or an oversized pax header stops at the limit), number of entries, size of
  one file;
- **modes**: files ``0644`` or ``0755`` (any execute bit kept, set-uid/gid and sticky bits dropped),
  directories ``0755``; owners and times from the archive are ignored.

Raises :class:`~runtime.errors.InvalidWorkspace` or :class:`~runtime.errors.WorkspaceTooLarge` (a subclass)
naming the offending entry. The caller unpacks into an empty staging directory and removes it on error.
Environment variables: none read here.
"""

from __future__ import annotations

import gzip
import io
import os
import posixpath
import re
import shutil
import stat
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from runtime.errors import InvalidWorkspace, WorkspaceTooLarge

MAX_NAME_BYTES = 4096
MAX_COMPONENT_BYTES = 255
#: What tar adds around the data of each entry (a 512-byte header, padding, long-name and pax records):
#: the decompressed stream may exceed the unpacked-bytes limit by this much per entry.
HEADER_ALLOWANCE = 2048
_COPY_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class SnapshotLimits:
    """What one snapshot may be (``AGENTKIT_WORKSPACE_MAX_*``, :class:`runtime.config.settings.Settings`)."""

    max_archive_bytes: int
    max_unpacked_bytes: int
    max_files: int
    max_file_bytes: int


@dataclass(frozen=True)
class Unpacked:
    files: int
    bytes: int


def unpack(archive: bytes, dest: Path, limits: SnapshotLimits) -> Unpacked:
    """Unpack a tar.gz ``archive`` into the existing, empty directory ``dest``.

    Raises:
        WorkspaceTooLarge: over a limit of ``limits``.
        InvalidWorkspace: not a tar.gz archive, or an entry that is unsafe (see the module docstring).
    """
    if len(archive) > limits.max_archive_bytes:
        raise WorkspaceTooLarge(
            f"the workspace archive is {len(archive)} bytes; the limit is {limits.max_archive_bytes} "
            "(AGENTKIT_WORKSPACE_MAX_BYTES). Send fewer files (.gitignore build output) or raise the limit."
        )
    budget = limits.max_unpacked_bytes + HEADER_ALLOWANCE * (limits.max_files + 2)
    stream = _Bounded(gzip.GzipFile(fileobj=io.BytesIO(archive)), budget, limits)
    writer = _Writer(dest, limits)
    try:
        with tarfile.open(fileobj=stream, mode="r|", errors="surrogateescape") as tar:
            for member in tar:
                writer.add(member, tar)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        if isinstance(exc, OSError) and not isinstance(exc, gzip.BadGzipFile) and exc.errno is not None:
            raise  # a local I/O failure (disk full), not a bad archive
        raise InvalidWorkspace(
            f"the workspace is not a valid tar.gz archive ({exc}). Create it with e.g. "
            "'git ls-files -z | tar --null -czf ws.tgz -T -'."
        ) from None
    writer.finish()
    return Unpacked(files=writer.count, bytes=writer.total)


class _Bounded(io.RawIOBase):
    """The decompressed stream, refusing to yield more than ``limit`` bytes (a gzip bomb ends here, however the
    tar reader asks for the bytes: data, long names or pax headers)."""

    def __init__(self, inner: gzip.GzipFile, limit: int, limits: SnapshotLimits) -> None:
        self._inner, self._left, self._limits = inner, limit, limits

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = self._left + 1 if size is None or size < 0 else min(size, self._left + 1)
        chunk = self._inner.read(want)
        if len(chunk) > self._left:
            raise WorkspaceTooLarge(
                f"the workspace archive unpacks to more than {self._limits.max_unpacked_bytes} bytes "
                "(AGENTKIT_WORKSPACE_MAX_UNPACKED_BYTES); send fewer files or raise the limit"
            )
        self._left -= len(chunk)
        return chunk


class _Writer:
    """Checks and writes entries one by one; symbolic links last."""

    def __init__(self, dest: Path, limits: SnapshotLimits) -> None:
        self.dest, self.limits = dest, limits
        self.count = 0
        self.total = 0
        self.seen: set[str] = set()
        self.files: set[str] = set()  # regular files written (hard-link sources)
        self.dirs: set[str] = {""}
        self.links: dict[str, str] = {}  # name → target, created by finish()

    def add(self, member: tarfile.TarInfo, tar: tarfile.TarFile) -> None:
        self.count += 1
        if self.count > self.limits.max_files:
            raise WorkspaceTooLarge(
                f"the workspace archive has more than {self.limits.max_files} entries "
                "(AGENTKIT_WORKSPACE_MAX_FILES); send fewer files or raise the limit"
            )
        name = safe_name(member.name)
        if name in self.seen:
            raise InvalidWorkspace(f"workspace entry {name!r} appears twice in the archive")
        self.seen.add(name)
        self._below_no_link(name)
        if member.isdir():
            self._mkdirs(name)
            return
        self._mkdirs(posixpath.dirname(name))
        if member.issym():
            self.links[name] = link_target(name, member.linkname)
        elif member.islnk():
            source = safe_name(member.linkname)
            if source not in self.files:
                raise InvalidWorkspace(
                    f"workspace entry {name!r} is a hard link to {member.linkname!r}, which is not a file "
                    "earlier in the archive; send the file itself"
                )
            self._count_bytes(name, (self.dest / source).stat().st_size)
            shutil.copyfile(self.dest / source, self.dest / name, follow_symlinks=False)
            os.chmod(self.dest / name, stat.S_IMODE((self.dest / source).stat().st_mode))
            self.files.add(name)
        elif member.type in (tarfile.REGTYPE, tarfile.AREGTYPE):
            self._count_bytes(name, member.size)
            reader = tar.extractfile(member)
            if reader is None:  # pragma: no cover - a regular member always has a reader
                raise InvalidWorkspace(f"workspace entry {name!r} could not be read")
            self._write(name, reader, member.mode)
            self.files.add(name)
        else:
            kind = {
                tarfile.CHRTYPE: "a character device",
                tarfile.BLKTYPE: "a block device",
                tarfile.FIFOTYPE: "a FIFO",
                tarfile.GNUTYPE_SPARSE: "a sparse file",
                tarfile.CONTTYPE: "a contiguous file",
            }.get(member.type, f"of tar type {member.type!r}")
            raise InvalidWorkspace(
                f"workspace entry {name!r} is {kind}; only regular files, directories and symbolic links "
                "inside the workspace are accepted"
            )

    def finish(self) -> None:
        for name, target in sorted(self.links.items()):
            os.symlink(target, self.dest / name)
        # Targets were checked one by one; a chain of links can still climb out (``a -> .`` then
        # ``b -> a/../x``), so each link is resolved once all exist.
        root = os.path.realpath(self.dest)
        for name, target in sorted(self.links.items()):
            if not inside(root, os.path.realpath(self.dest / name)):
                raise InvalidWorkspace(
                    f"workspace entry {name!r} is a symbolic link to {target!r}, which resolves outside the "
                    "workspace"
                )

    def _count_bytes(self, name: str, size: int) -> None:
        if size > self.limits.max_file_bytes:
            raise WorkspaceTooLarge(
                f"workspace file {name!r} is {size} bytes; the limit is {self.limits.max_file_bytes} "
                "(AGENTKIT_WORKSPACE_MAX_FILE_BYTES). Leave it out of the snapshot (e.g. git LFS objects, build "
                "output) or raise the limit"
            )
        self.total += size
        if self.total > self.limits.max_unpacked_bytes:
            raise WorkspaceTooLarge(
                f"the workspace archive unpacks to more than {self.limits.max_unpacked_bytes} bytes "
                "(AGENTKIT_WORKSPACE_MAX_UNPACKED_BYTES); send fewer files or raise the limit"
            )

    def _below_no_link(self, name: str) -> None:
        parts = name.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in self.links:
                raise InvalidWorkspace(
                    f"workspace entry {name!r} lies below the symbolic link {prefix!r}; a link may not "
                    "redirect other entries of the archive"
                )
            if prefix in self.files:
                raise InvalidWorkspace(f"workspace entry {name!r} lies below the file {prefix!r}")

    def _mkdirs(self, name: str) -> None:
        if name in self.dirs:
            return
        parts = name.split("/")
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if prefix in self.dirs:
                continue
            if prefix in self.files or prefix in self.links:
                raise InvalidWorkspace(f"workspace entry {name!r} needs {prefix!r} to be a directory")
            os.mkdir(self.dest / prefix, 0o755)
            self.dirs.add(prefix)

    def _write(self, name: str, source: IO[bytes], mode: int) -> None:
        # O_EXCL | O_NOFOLLOW: the file is new and its name is not a link (no link exists yet: they come last).
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.dest / name, flags, 0o755 if mode & 0o111 else 0o644)
        with os.fdopen(fd, "wb") as out:
            while chunk := source.read(_COPY_CHUNK):
                out.write(chunk)


def inside(root: str, path: str) -> bool:
    """Whether the resolved ``path`` is ``root`` or below it (both absolute, resolved)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def safe_name(raw: str) -> str:
    """An archive entry name as a clean relative POSIX path, or :class:`InvalidWorkspace` saying why not."""
    try:
        encoded = raw.encode("utf-8")
    except UnicodeEncodeError:
        shown = raw.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
        raise InvalidWorkspace(
            f"workspace entry name {shown!r} is not valid UTF-8; rename the file (names must be UTF-8)"
        ) from None
    if len(encoded) > MAX_NAME_BYTES:
        raise InvalidWorkspace(f"workspace entry name {raw[:80]!r}... is longer than {MAX_NAME_BYTES} bytes")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:([/\\]|$)", raw):  # POSIX root, or a Windows drive
        raise InvalidWorkspace(
            f"workspace entry {raw!r} has an absolute path; use paths relative to the root"
        )
    if "\\" in raw or "\x00" in raw:
        raise InvalidWorkspace(f"workspace entry {raw!r} contains a backslash or NUL; use POSIX names")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if not parts:
        raise InvalidWorkspace(f"workspace entry {raw!r} names the root itself")
    for part in parts:
        if part == "..":
            raise InvalidWorkspace(f"workspace entry {raw!r} climbs out of the workspace ('..')")
        if part == ".git":
            raise InvalidWorkspace(
                f"workspace entry {raw!r} is inside a .git directory; send the working tree only "
                "(git ls-files), not the repository's history or config"
            )
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise InvalidWorkspace(f"workspace entry {raw[:80]!r} has a name part over 255 bytes")
    return "/".join(parts)


def link_target(name: str, target: str) -> str:
    """A symbolic link's target if it stays inside the workspace (relative, never climbing above the root)."""
    shown = f"workspace entry {name!r} is a symbolic link to {target!r}"
    if not target or target.startswith("/"):
        raise InvalidWorkspace(f"{shown}: absolute link targets are refused; use a relative link inside it")
    try:
        target.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidWorkspace(f"workspace entry {name!r} is a link whose target is not UTF-8") from None
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    if resolved == ".." or resolved.startswith("../") or "\x00" in target:
        raise InvalidWorkspace(f"{shown}, which points outside the workspace")
    if resolved.split("/")[0] == ".git" or "/.git/" in f"/{resolved}/":
        raise InvalidWorkspace(f"{shown}, which points into a .git directory")
    return target
