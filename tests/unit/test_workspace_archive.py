"""Unpacking workspace snapshots (runtime.workspace.archive, Workspaces.install): good archives arrive intact,
hostile ones get a typed error naming the entry, and nothing is ever written outside the target directory."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from harness.archives import Entry, tar_gz
from runtime.errors import InvalidWorkspace, WorkspaceTooLarge
from runtime.guard.policy import is_sensitive_name
from runtime.workspace import SnapshotLimits, Workspaces, unpack

LIMITS = SnapshotLimits(
    max_archive_bytes=1_000_000, max_unpacked_bytes=2_000_000, max_files=50, max_file_bytes=500_000
)


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    """An empty target inside a parent that also holds a sentinel: anything written beside it is an escape."""
    target = tmp_path / "box" / "dest"
    target.mkdir(parents=True)
    return target


def outside_untouched(dest: Path) -> None:
    """Nothing but ``dest`` exists in its parent, and nothing anywhere under the test's tmp dir but the box."""
    assert sorted(p.name for p in dest.parent.iterdir()) == ["dest"]
    assert sorted(p.name for p in dest.parent.parent.iterdir()) == ["box"]


def test_good_archive_unpacks_files_dirs_modes_and_inner_links(dest: Path) -> None:
    archive = tar_gz(
        [
            ("README.md", b"# hi\n"),
            Entry("src/", kind="dir", mode=0o700),
            Entry("src/run.sh", b"#!/bin/sh\necho hi\n", mode=0o4755),  # set-uid dropped
            Entry("src/link.md", kind="symlink", target="../README.md"),
            Entry("copy.md", kind="hardlink", target="README.md"),
            Entry("empty/", kind="dir"),
        ]
    )
    done = unpack(archive, dest, LIMITS)
    assert done.files == 6
    assert (dest / "README.md").read_bytes() == b"# hi\n"
    assert stat.S_IMODE((dest / "src" / "run.sh").stat().st_mode) == 0o755
    assert os.readlink(dest / "src" / "link.md") == "../README.md"
    assert (dest / "copy.md").read_bytes() == b"# hi\n" and not (dest / "copy.md").is_symlink()
    assert (dest / "copy.md").stat().st_ino != (dest / "README.md").stat().st_ino
    assert (dest / "empty").is_dir()
    outside_untouched(dest)


@pytest.mark.parametrize(
    ("entries", "needle"),
    [
        ([("../escape.txt", b"x")], "climbs out"),
        ([("a/../../escape.txt", b"x")], "climbs out"),
        ([("/etc/escape.txt", b"x")], "absolute path"),
        ([Entry("l", kind="symlink", target="/etc/passwd")], "absolute link"),
        ([Entry("l", kind="symlink", target="../../escape")], "points outside"),
        ([Entry("d/l", kind="symlink", target="../../x")], "points outside"),
        (
            [Entry("a", kind="symlink", target="."), Entry("b", kind="symlink", target="a/../escape")],
            "resolves outside",
        ),
        (
            [Entry("d", kind="symlink", target="sub"), Entry("sub/", kind="dir"), ("d/x.txt", b"x")],
            "below the symbolic link",
        ),
        ([Entry("h", kind="hardlink", target="/etc/passwd")], "absolute path"),
        ([Entry("h", kind="hardlink", target="../outside")], "climbs out"),
        ([Entry("h", kind="hardlink", target="later.txt"), ("later.txt", b"x")], "not a file earlier"),
        ([Entry("dev", kind="chr")], "character device"),
        ([Entry("pipe", kind="fifo")], "FIFO"),
        ([(".git/config", b"[core]\n\tfsmonitor = touch /tmp/pwned\n")], ".git directory"),
        ([("sub/.git/hooks/post-checkout", b"#!/bin/sh\n")], ".git directory"),
        ([Entry("l", kind="symlink", target=".git/config")], ".git directory"),
        ([("a.txt", b"1"), ("a.txt", b"2")], "appears twice"),
        ([("a\\..\\..\\x", b"1")], "backslash"),
        ([("C:/x", b"1")], "absolute path"),
        ([("f", b"1"), ("f/g", b"2")], "below the file"),
    ],
)
def test_hostile_entries_are_refused_and_nothing_escapes(
    dest: Path, entries: list[Entry | tuple[str, bytes]], needle: str
) -> None:
    with pytest.raises(InvalidWorkspace) as err:
        unpack(tar_gz(entries), dest, LIMITS)
    assert err.value.code == "invalid_workspace" and err.value.http_status == 400
    assert needle in err.value.message
    outside_untouched(dest)


def test_non_utf8_name_is_refused(dest: Path) -> None:
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    archive = tar_gz([(name, b"x")], fmt=tarfile.GNU_FORMAT)
    with pytest.raises(InvalidWorkspace, match="not valid UTF-8"):
        unpack(archive, dest, LIMITS)


def test_archive_over_the_inline_cap_is_refused_before_unpacking(dest: Path) -> None:
    small = SnapshotLimits(
        max_archive_bytes=100, max_unpacked_bytes=10**6, max_files=10, max_file_bytes=10**6
    )
    with pytest.raises(WorkspaceTooLarge) as err:
        unpack(tar_gz([("a", os.urandom(1000))]), dest, small)
    assert err.value.http_status == 413 and "AGENTKIT_WORKSPACE_MAX_BYTES" in err.value.message
    assert list(dest.iterdir()) == []


def test_gzip_bomb_stops_at_the_unpacked_limit(dest: Path) -> None:
    # 64 MB of zeros compress to about 64 kB: the decompressed stream is cut at the limit, not read whole.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("zeros")
        info.size = 64 * 1024 * 1024

        class Zeros(io.RawIOBase):
            left = info.size

            def read(self, n: int = -1) -> bytes:
                n = min(n if n >= 0 else self.left, self.left)
                self.left -= n
                return bytes(n)

        tar.addfile(info, Zeros())
    archive = buf.getvalue()
    assert len(archive) < LIMITS.max_archive_bytes
    big_files = SnapshotLimits(1_000_000, 2_000_000, 50, 10**9)  # only the total limit can stop it
    with pytest.raises(WorkspaceTooLarge, match="AGENTKIT_WORKSPACE_MAX_UNPACKED_BYTES"):
        unpack(archive, dest, big_files)


def test_oversized_pax_header_is_cut_by_the_stream_limit(dest: Path) -> None:
    # A pax header the tar reader would read into memory whole: the bounded stream refuses it first.
    header = tarfile.TarInfo("x")
    header.type = tarfile.XHDTYPE
    header.size = 16 * 1024 * 1024
    raw = header.tobuf(format=tarfile.USTAR_FORMAT) + b"9 a=b\n".ljust(header.size, b"\n")
    archive = gzip.compress(raw + bytes(1024))
    with pytest.raises(WorkspaceTooLarge):
        unpack(archive, dest, LIMITS)


def test_huge_single_file_is_refused(dest: Path) -> None:
    with pytest.raises(WorkspaceTooLarge, match="AGENTKIT_WORKSPACE_MAX_FILE_BYTES") as err:
        unpack(tar_gz([("big.bin", bytes(600_000))]), dest, LIMITS)
    assert "big.bin" in err.value.message


def test_too_many_entries_are_refused(dest: Path) -> None:
    with pytest.raises(WorkspaceTooLarge, match="AGENTKIT_WORKSPACE_MAX_FILES"):
        unpack(tar_gz([(f"f{i}", b"") for i in range(51)]), dest, LIMITS)


def test_hardlink_copies_count_against_the_total(dest: Path) -> None:
    limits = SnapshotLimits(1_000_000, 450_000, 50, 400_000)
    entries: list[Entry | tuple[str, bytes]] = [
        ("a", bytes(300_000)),
        Entry("b", kind="hardlink", target="a"),
    ]
    with pytest.raises(WorkspaceTooLarge):
        unpack(tar_gz(entries), dest, limits)


# mtime=0: the same bytes, so the same test id, in every process that collects the suite (its workers too).
@pytest.mark.parametrize(
    "archive",
    [b"not an archive", gzip.compress(b"not a tar" * 100, mtime=0), b""],
    ids=["not-an-archive", "gzip-not-a-tar", "empty"],
)
def test_garbage_is_a_clear_error(dest: Path, archive: bytes) -> None:
    with pytest.raises(InvalidWorkspace, match=r"not a valid tar\.gz"):
        unpack(archive, dest, LIMITS)


def test_truncated_archive_is_a_clear_error(dest: Path) -> None:
    archive = tar_gz([("a.txt", os.urandom(20_000))])
    with pytest.raises(InvalidWorkspace, match=r"not a valid tar\.gz"):
        unpack(archive[: len(archive) // 2], dest, LIMITS)


# -- Workspaces.install: a bad snapshot leaves the session's workspace as it was ---------------------------------


def workspaces(tmp_path: Path) -> Workspaces:
    return Workspaces(
        trusted_root=tmp_path / "snapshots",
        tree_for=lambda sid: tmp_path / "workspaces" / sid,
        limits=LIMITS,
        max_patch_bytes=1_000_000,
        withhold=is_sensitive_name,
    )


def test_a_new_snapshot_replaces_the_content_and_keeps_the_directory(tmp_path: Path) -> None:
    ws = workspaces(tmp_path)
    ws.install("s", tar_gz([("old.txt", b"old"), ("keep/a", b"a")]))
    tree = ws.tree_for("s")
    inode = tree.stat().st_ino
    (tree / "agent-made.txt").write_text("left over")
    ws.install("s", tar_gz([("new.txt", b"new")]))
    assert sorted(p.name for p in tree.iterdir()) == ["new.txt"]
    assert tree.stat().st_ino == inode  # a warm CLI keeps a valid cwd
    assert ws.has_snapshot("s") and ws.changes("s").patch == ""
    assert not (tmp_path / "snapshots" / "s" / "incoming").exists()


def test_a_bad_snapshot_changes_nothing(tmp_path: Path) -> None:
    ws = workspaces(tmp_path)
    ws.install("s", tar_gz([("good.txt", b"good")]))
    (ws.tree_for("s") / "good.txt").write_text("edited")
    with pytest.raises(InvalidWorkspace):
        ws.install("s", tar_gz([("fine.txt", b"x"), ("../../escape", b"x")]))
    assert sorted(p.name for p in ws.tree_for("s").iterdir()) == ["good.txt"]
    assert (ws.tree_for("s") / "good.txt").read_text() == "edited"
    assert ws.changes("s").changed_files == ["good.txt"]  # the snapshot's history is the old one still
    assert not (tmp_path / "snapshots" / "s" / "incoming").exists()
    assert not (tmp_path / "escape").exists() and not (tmp_path / "snapshots" / "escape").exists()


def test_a_first_bad_snapshot_leaves_no_workspace(tmp_path: Path) -> None:
    ws = workspaces(tmp_path)
    with pytest.raises(InvalidWorkspace):
        ws.install("s", tar_gz([Entry("l", kind="symlink", target="/etc")]))
    assert not ws.has_snapshot("s")


def test_colons_and_dots_in_ordinary_names_are_fine(dest: Path) -> None:
    names = ["a:b.txt", "C:notes", "..hidden", "...", "x/.../y", ".github/workflows/ci.yml"]
    unpack(tar_gz([(n, b"ok") for n in names]), dest, LIMITS)
    assert all((dest / n).read_bytes() == b"ok" for n in names)
