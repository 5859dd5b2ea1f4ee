"""Turn a tracker's repository archive into the runtime's workspace snapshot, and a file view of it.

GitHub (``GET /repos/{o}/{r}/tarball/{ref}``) and GitLab (``GET /projects/:id/repository/archive.tar.gz``)
both send a tar.gz whose entries sit below one top-level directory (``owner-repo-<sha>/``,
``project-<ref>-<sha>/``). The runtime wants entries relative to the root (``docs/repository-work.md``,
"The invocation contract"), so :func:`repack` strips that directory, checks every entry as the runtime
does (``runtime/workspace/archive.py``), and writes a new tar.gz holding regular files and symbolic links
only (modes ``0644``/``0755``, owner 0, time 0, so the same tree gives the same bytes).

The archive comes from the tracker, but the repository's content is anyone's who can push to it: names,
links and sizes are checked before anything is kept, and the decompressed stream is bounded, so a gzip
bomb stops at :attr:`SnapshotLimits.max_unpacked_bytes`. :func:`repack` works in memory; :func:`repack_file`
reads from and writes to files, spooling the contents to disk, so the worker's memory holds names and modes
only, whatever the repository's size; :func:`read_view` checks an archive read from a file the same way and
keeps the bytes of the files a patch reads only (the reporter's :class:`.files.SparseView`).

Raises :class:`repo.errors.SnapshotError` or :class:`repo.errors.SnapshotTooLarge` naming the entry.
"""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import IO

from .errors import SnapshotError, SnapshotTooLarge
from .files import (
    MODE_EXECUTABLE,
    MODE_FILE,
    MODE_SYMLINK,
    FileEntry,
    SparseView,
    clean_path,
    link_stays_inside,
    resolve_link,
)

MIB = 1024 * 1024
#: What tar adds around each entry's data (header, padding, long-name and pax records).
HEADER_ALLOWANCE = 2048
#: How much of a file's contents a streamed repack copies at a time.
SPOOL_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class SnapshotLimits:
    """Caps for one repository snapshot.

    ``max_archive_bytes`` is the repacked snapshot's size: keep it at or under the runtime's
    ``AGENTKIT_WORKSPACE_MAX_BYTES`` (20 MiB by default), or the runtime refuses it. ``max_download_bytes``
    bounds the tracker's archive as downloaded (the worker and the reporter spool it to ``/tmp``);
    ``max_unpacked_bytes`` what it unpacks to (the worker spools the contents to disk, :func:`repack_file`; the
    reporter reads past all but the files its patch reads, :func:`read_view`); ``max_files`` and
    ``max_file_bytes`` as the runtime's.
    """

    max_download_bytes: int = 40 * MIB
    max_archive_bytes: int = 20 * MIB
    max_unpacked_bytes: int = 64 * MIB
    max_files: int = 50_000
    max_file_bytes: int = 25 * MIB


DEFAULT_LIMITS = SnapshotLimits()


@dataclass(frozen=True)
class Snapshot:
    """A repository at one commit: the runtime's snapshot (``archive``) and the same files in memory.

    ``commit_sha`` is the commit the archive was made from (the base of the change); ``tree_sha`` its root
    tree when the tracker said (GitHub; the ``base_tree`` of the change), ``ref`` what was asked for.
    """

    commit_sha: str
    archive: bytes
    files: Mapping[str, FileEntry]
    ref: str = ""
    tree_sha: str | None = None
    archive_comment: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Repacked:
    archive: bytes
    files: dict[str, FileEntry]
    #: The pax global header's ``comment`` (``git archive`` writes the commit id there), if any.
    comment: str | None


def repack(tarball: bytes, *, limits: SnapshotLimits = DEFAULT_LIMITS, archive: bool = True) -> Repacked:
    """Check the tracker's tar.gz ``tarball``, strip its top-level directory, and write the snapshot.

    ``archive=False`` checks the entries and keeps the file view only (``Repacked.archive`` is ``b""``): the
    reporter applies a patch to the files and never sends a snapshot, so it neither compresses one again nor
    holds it, nor is it bound by the runtime's cap on one.

    Raises:
        SnapshotTooLarge: over a limit of ``limits``.
        SnapshotError: not a tar.gz archive, entries not below one top-level directory, or an unsafe entry
            (absolute path, ``..``, ``.git``, not UTF-8, a link leaving the tree, a hard link, a device
            file or FIFO, a name twice, an entry below a file or link).
    """
    if len(tarball) > limits.max_download_bytes:
        raise SnapshotTooLarge(
            f"the repository archive is {len(tarball)} bytes; the limit is {limits.max_download_bytes}"
        )
    reader = _Reader(limits)
    comment = _read(io.BytesIO(tarball), reader, limits)
    if not archive:
        return Repacked(archive=b"", files=reader.files, comment=comment)
    written = write_snapshot(reader.files)
    if len(written) > limits.max_archive_bytes:
        raise SnapshotTooLarge(
            f"the repository's snapshot is {len(written)} bytes compressed; the limit is "
            f"{limits.max_archive_bytes} (the runtime's AGENTKIT_WORKSPACE_MAX_BYTES)"
        )
    return Repacked(archive=written, files=reader.files, comment=comment)


def _read(source: IO[bytes], reader: _Reader, limits: SnapshotLimits) -> str | None:
    """Check every entry of the tar.gz ``source`` with ``reader``; the pax ``comment``. Raises as :func:`repack`."""
    budget = limits.max_unpacked_bytes + HEADER_ALLOWANCE * (limits.max_files + 2)
    stream = _Bounded(gzip.GzipFile(fileobj=source), budget, limits.max_unpacked_bytes)
    try:
        with tarfile.open(fileobj=stream, mode="r|", errors="surrogateescape") as tar:
            while (member := tar.next()) is not None:
                reader.add(member, tar)
                # tarfile keeps every member it read (TarFile.members): the reader keeps what it needs.
                tar.members.clear()  # type: ignore[attr-defined]  # a plain attribute typeshed omits
            comment = tar.pax_headers.get("comment")
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise SnapshotError(f"the repository archive is not a valid tar.gz archive ({exc})") from None
    if not reader.files:
        raise SnapshotError("the repository archive holds no files (an empty repository or ref?)")
    reader.check_links()
    return comment


@dataclass(frozen=True)
class RepackedFile:
    """A snapshot written to a file: its size in bytes and the pax ``comment`` of the tracker's archive."""

    size: int
    comment: str | None


def repack_file(
    source: IO[bytes],
    out: IO[bytes],
    *,
    limits: SnapshotLimits = DEFAULT_LIMITS,
    spool_dir: str | None = None,
) -> RepackedFile:
    """:func:`repack` from disk to disk: the tracker's tar.gz read from ``source`` (a spool file), every
    entry checked as :func:`repack` checks it, and the runtime's snapshot written to ``out`` — the same
    bytes :func:`write_snapshot` gives for the same files. File contents go through a spool file in
    ``spool_dir`` (removed on return), so memory holds the entries' names and modes, never their data: peak
    memory does not grow with the repository's size. Raises as :func:`repack`."""
    with tempfile.TemporaryFile(dir=spool_dir) as spool:
        reader = _Reader(limits, spool=spool)
        comment = _read(source, reader, limits)
        spool.flush()
        start = out.tell()
        _write_tar(reader.files, out, data=lambda path: reader.spooled(path))
        size = out.tell() - start
    if size > limits.max_archive_bytes:
        raise SnapshotTooLarge(
            f"the repository's snapshot is {size} bytes compressed; the limit is "
            f"{limits.max_archive_bytes} (the runtime's AGENTKIT_WORKSPACE_MAX_BYTES)"
        )
    return RepackedFile(size=size, comment=comment)


def read_view(
    source: IO[bytes], *, reads: Collection[str], limits: SnapshotLimits = DEFAULT_LIMITS
) -> tuple[SparseView, str | None]:
    """The file view a patch needs of the tracker's tar.gz read from ``source`` (a spool file), and the pax
    ``comment``: every entry checked as :func:`repack` checks it (the same refusals), every name and mode and
    every link's target kept, but the bytes of the regular files named in ``reads`` only — the others are read
    past without being held, so memory grows with the number of entries, not with the repository's size.
    Raises as :func:`repack`."""
    reader = _Reader(limits, keep=frozenset(reads))
    comment = _read(source, reader, limits)
    return SparseView(reader.files, reader.dirs, reader.kept), comment


def write_snapshot(files: Mapping[str, FileEntry]) -> bytes:
    """The runtime's snapshot format for ``files``: a tar.gz of regular files and links, sorted, owner 0,
    time 0 (the same files give the same bytes)."""
    raw = io.BytesIO()
    _write_tar(files, raw, data=lambda path: (len(files[path].data), io.BytesIO(files[path].data)))
    return raw.getvalue()


def _write_tar(
    files: Mapping[str, FileEntry], out: IO[bytes], *, data: Callable[[str], tuple[int, IO[bytes]]]
) -> None:
    """The snapshot format into ``out``; ``data(path)`` gives a regular file's size and contents."""
    with (
        # filename="": a real file's name would go into the gzip header (the same files, different bytes).
        gzip.GzipFile(filename="", fileobj=out, mode="wb", mtime=0, compresslevel=6) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for path in sorted(files):
            entry = files[path]
            info = tarfile.TarInfo(path)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if entry.mode == MODE_SYMLINK:
                info.type = tarfile.SYMTYPE
                info.linkname = entry.data.decode("utf-8")
                info.mode = 0o777
                tar.addfile(info)
            else:
                info.mode = 0o755 if entry.mode == MODE_EXECUTABLE else 0o644
                info.size, content = data(path)
                tar.addfile(info, content)
            # tarfile keeps every member it wrote (a plain attribute typeshed omits); nothing reads them back
            tar.members.clear()  # type: ignore[attr-defined]


class _Bounded(io.RawIOBase):
    """The decompressed stream, refusing to yield more than ``limit`` bytes (a gzip bomb ends here)."""

    def __init__(self, inner: gzip.GzipFile, limit: int, shown_limit: int) -> None:
        self._inner, self._left, self._shown = inner, limit, shown_limit

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = self._left + 1 if size is None or size < 0 else min(size, self._left + 1)
        chunk = self._inner.read(want)
        if len(chunk) > self._left:
            raise SnapshotTooLarge(f"the repository archive unpacks to more than {self._shown} bytes")
        self._left -= len(chunk)
        return chunk


#: The entry of a regular file whose bytes :func:`read_view` did not keep (see :meth:`.files.SparseView.read`).
_UNREAD = {MODE_FILE: FileEntry(b"", MODE_FILE), MODE_EXECUTABLE: FileEntry(b"", MODE_EXECUTABLE)}


class _Reader:
    """Checks entries one by one and keeps files and links, paths relative to the archive's top directory."""

    def __init__(
        self, limits: SnapshotLimits, *, spool: IO[bytes] | None = None, keep: Collection[str] | None = None
    ) -> None:
        """With ``spool`` (a file) regular files' contents are appended there and kept as (offset, size). With
        ``keep`` only the regular files it names keep their contents (listed in :attr:`kept`); the others are
        recorded by name and mode and their data is never read out of the stream."""
        self.limits = limits
        self.spool = spool
        self.keep = keep
        self.kept: set[str] = set()
        self.offsets: dict[str, tuple[int, int]] = {}
        self.top: str | None = None
        self.count = 0
        self.total = 0
        self.files: dict[str, FileEntry] = {}
        self.dirs: set[str] = set()

    def add(self, member: tarfile.TarInfo, tar: tarfile.TarFile) -> None:
        self.count += 1
        if self.count > self.limits.max_files:
            raise SnapshotTooLarge(f"the repository archive has more than {self.limits.max_files} entries")
        name = self._relative(member)
        if name is None:
            return
        if name in self.files or name in self.dirs:
            raise SnapshotError(f"repository entry {name!r} appears twice in the archive")
        self._below_no_file(name)
        if member.isdir():
            self.dirs.add(name)
            return
        self._parents(name)
        if member.issym():
            target = member.linkname
            try:
                data = target.encode("utf-8")
            except UnicodeEncodeError:
                raise SnapshotError(
                    f"repository entry {name!r} is a link whose target is not UTF-8"
                ) from None
            if not link_stays_inside(name, target):
                raise SnapshotError(
                    f"repository entry {name!r} is a symbolic link to {target!r}, which points outside the "
                    "repository or into .git"
                )
            self.files[name] = FileEntry(data, MODE_SYMLINK)
        elif member.type in (tarfile.REGTYPE, tarfile.AREGTYPE):
            if member.size > self.limits.max_file_bytes:
                raise SnapshotTooLarge(
                    f"repository file {name!r} is {member.size} bytes; the limit is {self.limits.max_file_bytes}"
                )
            self.total += member.size
            if self.total > self.limits.max_unpacked_bytes:
                raise SnapshotTooLarge(
                    f"the repository archive unpacks to more than {self.limits.max_unpacked_bytes} bytes"
                )
            mode = MODE_EXECUTABLE if member.mode & 0o111 else MODE_FILE
            if self.keep is not None and name not in self.keep:
                # Not read: tarfile skips the data when it moves to the next member (still decompressed, and
                # so still counted against the unpacked budget). One shared entry per mode: nothing per file.
                self.files[name] = _UNREAD[mode]
                return
            source = tar.extractfile(member)
            if self.keep is not None:
                self.kept.add(name)
            if self.spool is None:
                self.files[name] = FileEntry(source.read() if source is not None else b"", mode)
                return
            offset = self.spool.tell()
            if source is not None:
                shutil.copyfileobj(source, self.spool, SPOOL_CHUNK)
            self.offsets[name] = (offset, self.spool.tell() - offset)
            self.files[name] = FileEntry(b"", mode)  # the contents are in the spool
        else:
            kind = "a hard link" if member.islnk() else f"of tar type {member.type!r} (device, FIFO, ...)"
            raise SnapshotError(
                f"repository entry {name!r} is {kind}; only regular files, directories and symbolic links "
                "are accepted"
            )

    def spooled(self, name: str) -> tuple[int, IO[bytes]]:
        """A spooled file's size and a reader of its contents (the spool, positioned at them)."""
        assert self.spool is not None
        offset, size = self.offsets[name]
        self.spool.seek(offset)
        return size, self.spool

    def _relative(self, member: tarfile.TarInfo) -> str | None:
        """The entry's path below the top-level directory (``None`` for that directory itself)."""
        name = clean_path(member.name, SnapshotError, "repository entry")
        top, _, rest = name.partition("/")
        if self.top is None:
            self.top = top
        if top != self.top:
            raise SnapshotError(
                f"repository entry {name!r} is not below the archive's top-level directory {self.top!r}"
            )
        if not rest:
            if not member.isdir():
                raise SnapshotError(
                    f"repository entry {name!r} lies outside the archive's top-level directory"
                )
            return None
        return rest

    def _below_no_file(self, name: str) -> None:
        parts = name.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in self.files:
                raise SnapshotError(f"repository entry {name!r} lies below the file or link {prefix!r}")

    def _parents(self, name: str) -> None:
        parts = name.split("/")
        for i in range(1, len(parts)):
            self.dirs.add("/".join(parts[:i]))

    def check_links(self) -> None:
        """Links were checked one by one; a chain (``a -> .``, ``b -> a/../..``) is resolved once all exist."""
        for name, entry in self.files.items():
            if entry.mode == MODE_SYMLINK and resolve_link(self.files, name) is None:
                raise SnapshotError(
                    f"repository entry {name!r} is a symbolic link that resolves outside the repository"
                )
