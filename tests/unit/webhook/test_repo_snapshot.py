"""Repacking a tracker's repository archive into the runtime's snapshot: real ``git archive`` output in, the
REAL runtime unpacker (``runtime/workspace/archive.py``) accepting what comes out, hostile archives refused."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import tempfile
from pathlib import Path

import pytest

from runtime.workspace.archive import SnapshotLimits as RuntimeLimits
from runtime.workspace.archive import unpack
from tests.unit.webhook.repo_trees import git, view_of, write_tree
from webhook.repo import (
    DEFAULT_LIMITS,
    SnapshotError,
    SnapshotLimits,
    SnapshotTooLarge,
    read_view,
    repack,
    repack_file,
)
from webhook.repo.files import MODE_EXECUTABLE, MODE_SYMLINK, NotRead

RUNTIME = RuntimeLimits(
    max_archive_bytes=20 << 20, max_unpacked_bytes=200 << 20, max_files=50_000, max_file_bytes=25 << 20
)


def _git_archive(tmp: Path, prefix: str = "octo-app-abc1234/") -> tuple[bytes, str, Path]:
    work = tmp / "repo"
    work.mkdir()
    git(work, "init", "-q")
    write_tree(
        work,
        {
            "src/app.py": "print('hi')\n",
            "run.sh": "#!/bin/sh\n",
            "ü/名前.txt": "x\n",
            "empty": "",
            "bin": os.urandom(999),
        },
        executable=("run.sh",),
        links={"docs/app-link.py": "../src/app.py"},
    )
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    sha = git(work, "rev-parse", "HEAD").strip()
    out = tmp / "a.tgz"
    git(work, "archive", "--format=tar.gz", f"--prefix={prefix}", "-o", str(out), "HEAD")
    return out.read_bytes(), sha, work


def test_a_git_archive_becomes_a_snapshot_the_runtime_unpacks_to_the_same_tree(tmp_path: Path) -> None:
    tarball, sha, work = _git_archive(tmp_path)
    repacked = repack(tarball)
    assert repacked.comment == sha  # git archive names the commit in the pax global header
    assert repacked.files == view_of(work)
    assert repacked.files["run.sh"].mode == MODE_EXECUTABLE
    assert repacked.files["docs/app-link.py"].mode == MODE_SYMLINK
    dest = tmp_path / "ws"
    dest.mkdir()
    unpacked = unpack(repacked.archive, dest, RUNTIME)
    assert view_of(dest) == view_of(work)
    assert unpacked.files == len(repacked.files)
    with tarfile.open(fileobj=io.BytesIO(repacked.archive)) as tar:
        names = tar.getnames()
    assert "src/app.py" in names and not any(n.startswith("octo-app") for n in names)


def test_the_same_tree_repacks_to_the_same_bytes(tmp_path: Path) -> None:
    tarball, _, _ = _git_archive(tmp_path)
    assert repack(tarball).archive == repack(tarball).archive


def streamed(tarball: bytes, *, limits: SnapshotLimits = DEFAULT_LIMITS) -> bytes:
    """:func:`repack_file` from a file to a file (the worker's path): the snapshot's bytes."""
    with tempfile.TemporaryFile() as source, tempfile.NamedTemporaryFile() as out:
        source.write(tarball)
        source.seek(0)
        written = repack_file(source, out, limits=limits)
        out.flush()
        data = Path(out.name).read_bytes()
    assert written.size == len(data)
    return data


def test_a_streamed_repack_writes_the_same_snapshot_from_disk(tmp_path: Path) -> None:
    """Same bytes as the in-memory repack (so a retried start sends the same workspace), and the spool of
    file contents is gone afterwards."""
    tarball, sha, work = _git_archive(tmp_path)
    spool = tmp_path / "spool"
    spool.mkdir()
    with io.BytesIO(tarball) as source, (tmp_path / "snap.tar.gz").open("w+b") as out:
        written = repack_file(source, out, spool_dir=str(spool))
    data = (tmp_path / "snap.tar.gz").read_bytes()
    assert written.comment == sha and written.size == len(data)
    assert data == repack(tarball).archive and list(spool.iterdir()) == []
    dest = tmp_path / "ws"
    dest.mkdir()
    unpack(data, dest, RUNTIME)
    assert view_of(dest) == view_of(work)


def test_a_streamed_repack_refuses_a_snapshot_over_the_runtime_cap(tmp_path: Path) -> None:
    tarball, _, _ = _git_archive(tmp_path)
    with pytest.raises(SnapshotTooLarge, match="AGENTKIT_WORKSPACE_MAX_BYTES"):
        streamed(tarball, limits=SnapshotLimits(max_archive_bytes=100))


def test_the_reporters_view_keeps_every_name_and_mode_and_the_bytes_it_was_asked_for_only(
    tmp_path: Path,
) -> None:
    tarball, sha, work = _git_archive(tmp_path)
    whole = repack(tarball).files
    view, comment = read_view(io.BytesIO(tarball), reads={"src/app.py", "not/there"})
    assert comment == sha and len(view) == len(whole) == len(view_of(work))
    for path, entry in whole.items():
        assert view.get(path) is not None and view[path].mode == entry.mode
    assert view.read("src/app.py") == whole["src/app.py"]
    assert view.read("docs/app-link.py") == whole["docs/app-link.py"]  # links keep their target
    assert view.read("absent") is None and view.get("absent") is None
    with pytest.raises(NotRead, match="'bin'"):
        view.read("bin")  # never an empty file in place of bytes that were not kept
    assert view.entries_below("ü") == 1 and view.entries_below("src/app.py") == 0


def _viewed(tarball: bytes, *, limits: SnapshotLimits = DEFAULT_LIMITS) -> None:
    """:func:`read_view` (the reporter's path), keeping no file's bytes."""
    read_view(io.BytesIO(tarball), reads=(), limits=limits)


def _both(tarball: bytes, limits: SnapshotLimits = DEFAULT_LIMITS) -> None:
    """The in-memory and the streamed repack, and the reporter's view, refuse ``tarball`` alike
    (``pytest.raises`` around the call)."""
    errors = []
    for way in (
        lambda: repack(tarball, limits=limits),
        lambda: streamed(tarball, limits=limits),
        lambda: _viewed(tarball, limits=limits),
    ):
        try:
            way()
        except SnapshotError as exc:
            errors.append((type(exc), str(exc)))
    assert len(errors) == 3 and errors[0] == errors[1] == errors[2], errors
    raise errors[0][0](errors[0][1])


def _tgz(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return raw.getvalue()


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _special(name: str, kind: bytes, link: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info, None


@pytest.mark.parametrize(
    ("members", "reason"),
    [
        ([_file("top/../../evil")], r"climbs out"),
        ([_file("/etc/passwd")], r"absolute path"),
        ([_file("top/a"), _file("other/b")], r"not below the archive's top-level directory"),
        ([_file("top")], r"outside the archive's top-level directory"),
        ([_file("top/.git/config")], r"\.git"),
        ([_file("top/a"), _file("top/a")], r"appears twice"),
        ([_special("top/l", tarfile.SYMTYPE, "/etc/passwd")], r"points outside"),
        ([_special("top/l", tarfile.SYMTYPE, "../../x")], r"points outside"),
        ([_special("top/l", tarfile.SYMTYPE, "x/.git/config")], r"into \.git"),
        (
            [_special("top/a", tarfile.SYMTYPE, "."), _special("top/b", tarfile.SYMTYPE, "a/../..")],
            r"'b' is a symbolic link to 'a/\.\./\.\.'|resolves outside",
        ),
        ([_file("top/a"), _special("top/h", tarfile.LNKTYPE, "top/a")], r"hard link"),
        ([_special("top/fifo", tarfile.FIFOTYPE)], r"device, FIFO"),
        ([_special("top/dev", tarfile.CHRTYPE)], r"device, FIFO"),
        ([_special("top/l", tarfile.SYMTYPE, "sub"), _file("top/l/x")], r"below the file or link"),
        ([_file("top/bad\x01name")], r"control character"),
    ],
)
def test_hostile_archives_are_refused_naming_the_entry(members: list, reason: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(SnapshotError, match=reason):
        _both(_tgz(*members))


def test_a_name_that_is_not_utf8_is_refused() -> None:
    info = tarfile.TarInfo("top/x")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.GNU_FORMAT, encoding="latin-1") as tar:
        info.name = "top/caf\xe9"
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(SnapshotError, match="not valid UTF-8"):
        _both(raw.getvalue())


def test_limits_files_bytes_one_file_and_a_gzip_bomb() -> None:
    small = SnapshotLimits(
        max_download_bytes=1 << 20,
        max_archive_bytes=1 << 20,
        max_unpacked_bytes=10_000,
        max_files=3,
        max_file_bytes=4_000,
    )
    with pytest.raises(SnapshotTooLarge, match="more than 3 entries"):
        _both(_tgz(*[_file(f"top/{i}") for i in range(5)]), limits=small)
    with pytest.raises(SnapshotTooLarge, match="'big' is 5000 bytes"):
        _both(_tgz(_file("top/big", b"x" * 5000)), limits=small)
    with pytest.raises(SnapshotTooLarge, match="unpacks to more than 10000 bytes"):
        _both(
            _tgz(_file("top/a", b"x" * 3900), _file("top/b", b"y" * 3900), _file("top/c", b"z" * 3900)),
            limits=small,
        )
    raw = io.BytesIO()  # 5 MiB of pax header compressing to a few KiB: stopped on the stream itself
    with tarfile.open(
        fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": "A" * (5 << 20)}
    ) as tar:
        tar.addfile(tarfile.TarInfo("top/a"))
    assert len(raw.getvalue()) < 50_000
    with pytest.raises(SnapshotTooLarge, match="unpacks to more than 10000 bytes"):
        _both(raw.getvalue(), limits=small)
    with pytest.raises(SnapshotTooLarge, match="repository archive is"):
        repack(b"\0" * ((1 << 20) + 1), limits=small)


def test_not_a_tar_gz_is_a_clear_error() -> None:
    with pytest.raises(SnapshotError, match=r"not a valid tar\.gz"):
        _both(b"<html>rate limited</html>")
    with pytest.raises(SnapshotError, match="holds no files"):
        _both(gzip.compress(b"\0" * 10240))  # an empty tar archive
