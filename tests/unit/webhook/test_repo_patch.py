"""The pure-Python patch application against patches the REAL runtime (``runtime/workspace/baseline.py``)
and git itself produce on real trees, and hostile patches it must refuse whole."""

from __future__ import annotations

import io
import os
import random
import tarfile
from pathlib import Path

import pytest

from tests.unit.webhook.repo_trees import git_diff, runtime_patch
from webhook.repo import (
    FileChange,
    FileEntry,
    PatchRefused,
    apply_parsed,
    apply_patch,
    parse_patch,
    read_view,
)
from webhook.repo.files import MODE_EXECUTABLE, MODE_SYMLINK
from webhook.repo.protected_paths import NAMES

BASE: dict[str, bytes | str] = {
    "README.md": "# demo\n",
    "src/calc.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    "src/util.py": "".join(f"line {i}\n" for i in range(60)),
    "scripts/run.sh": "#!/bin/sh\necho run\n",
    "no-newline.txt": "last line without newline",
    "crlf.txt": "one\r\ntwo\r\nthree\r\n",
    "data.bin": b"\0" + bytes(random.Random(7).randrange(256) for _ in range(6000)),
    "old.txt": "to be deleted\n",
    "dir with space/file name.txt": "spaces\n",
    "ünïcode/名前.txt": "unicode\n",
}


def _archive(view: dict[str, FileEntry]) -> bytes:
    """``view`` as a tracker's archive: a tar.gz with every entry below one top-level directory."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for path, entry in view.items():
            info = tarfile.TarInfo(f"top/{path}")
            if entry.mode == MODE_SYMLINK:
                info.type, info.linkname = tarfile.SYMTYPE, entry.data.decode()
                tar.addfile(info)
            else:
                info.size, info.mode = len(entry.data), 0o755 if entry.mode == MODE_EXECUTABLE else 0o644
                tar.addfile(info, io.BytesIO(entry.data))
    return raw.getvalue()


def _reporters_changes(before: dict[str, FileEntry], patch: str) -> list[FileChange]:
    """The reporter's way: the patch read first, the archive read keeping the bytes of its reads only."""
    parsed = parse_patch(patch)
    view, _ = read_view(io.BytesIO(_archive(before)), reads=parsed.reads)
    return apply_parsed(view, parsed, allow_protected=frozenset(NAMES))


def _applied(before: dict[str, FileEntry], patch: str) -> dict[str, FileEntry]:
    after = dict(before)
    changes = apply_patch(before, patch, allow_protected=frozenset(NAMES))
    assert _reporters_changes(before, patch) == changes  # the same change from the partial view
    for change in changes:
        if change.action == "delete":
            del after[change.path]
        else:
            assert change.content is not None and change.mode is not None
            after[change.path] = FileEntry(change.content, change.mode)
    return after


def _edit(work: Path) -> None:
    calc = work / "src/calc.py"
    calc.write_text(calc.read_text().replace("return a - b\n\n\ndef sub", "return a + b\n\n\ndef sub", 1))
    util = work / "src/util.py"
    lines = util.read_text().splitlines(keepends=True)
    lines[3] = "changed 3\n"
    lines[40:42] = ["inserted\n", "lines\n", "here\n"]
    util.write_text("".join(lines) + "appended\n")
    (work / "no-newline.txt").write_text("last line without newline\nnow with one\n")
    (work / "crlf.txt").write_bytes(b"one\r\nTWO\r\nthree\r\n")
    data = bytearray((work / "data.bin").read_bytes())
    data[1000:1004] = b"\x00\x01\x02\x03"
    (work / "data.bin").write_bytes(bytes(data))  # a small change to a binary file: a git delta
    (work / "new.bin").write_bytes(
        b"\0" + bytes(random.Random(3).randrange(256) for _ in range(300))
    )  # a new binary file: a literal
    (work / "old.txt").unlink()
    (work / "scripts/run.sh").chmod(0o644)  # mode change only
    (work / "src/tool.py").write_text("print('tool')\n")
    (work / "src/tool.py").chmod(0o755)
    (work / "empty.txt").write_text("")
    (work / "dir with space/file name.txt").write_text("spaces\nmore\n")
    (work / "ünïcode/名前.txt").write_text("unicode changed")  # loses its final newline
    (work / 'quote"d.txt').write_text("quoted name\n")
    os.symlink("src/calc.py", work / "calc-link")
    (work / "README.md").unlink()
    os.symlink("src/util.py", work / "README.md")  # a file becomes a link: git writes delete + create


def test_every_kind_of_change_the_runtime_reports_applies_to_the_same_tree(tmp_path: Path) -> None:
    before, patch, after = runtime_patch(tmp_path, BASE, _edit, executable=("scripts/run.sh",))
    assert "GIT binary patch" in patch and "delta " in patch and "literal " in patch
    assert "\\ No newline at end of file" in patch and 'diff --git "a/quote\\"d.txt"' in patch
    assert "new file mode 120000" in patch and "old mode 100755" in patch
    assert _applied(before, patch) == after


def test_changes_are_listed_by_kind_with_modes(tmp_path: Path) -> None:
    before, patch, _ = runtime_patch(tmp_path, BASE, _edit, executable=("scripts/run.sh",))
    allowed = frozenset(NAMES)
    kinds = {
        c.path: (c.action, c.mode, c.old_mode) for c in apply_patch(before, patch, allow_protected=allowed)
    }
    assert kinds["old.txt"] == ("delete", None, "100644")
    assert kinds["src/tool.py"] == ("create", "100755", None)
    assert kinds["scripts/run.sh"] == ("update", "100644", "100755")
    assert kinds["README.md"] == ("update", MODE_SYMLINK, "100644")
    assert kinds["empty.txt"] == ("create", "100644", None)


def test_renames_and_copies_from_git_itself_apply(tmp_path: Path) -> None:
    files = {"a/long.py": "".join(f"value_{i} = {i}\n" for i in range(40)), "keep.txt": "k\n"}

    def change(work: Path) -> None:
        text = (work / "a/long.py").read_text()
        (work / "a/long.py").unlink()
        (work / "b").mkdir()
        (work / "b/moved.py").write_text(text.replace("value_5 = 5", "value_5 = 55"))
        (work / "b/copy.py").write_text(text)

    before, patch, after = git_diff(tmp_path, files, change, "-M", "-C", "--find-copies-harder")
    assert "rename from a/long.py" in patch and "copy from a/long.py" in patch
    assert _applied(before, patch) == after


def test_an_empty_patch_changes_nothing() -> None:
    assert apply_patch({"a": FileEntry(b"x")}, "") == []


# ---------------------------------------------------------------------------------------------- hostile
def _one_file_patch(tmp_path: Path) -> tuple[dict[str, FileEntry], str]:
    before, patch, _ = runtime_patch(
        tmp_path, {"f.txt": "a\nb\nc\n"}, lambda w: (w / "f.txt").write_text("a\nB\nc\n")
    )
    return before, patch


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("a/f.txt", "a/../../etc/passwd", "climbs out"),
        ("a/f.txt", "a//etc/passwd", "absolute"),
        ("a/f.txt", "a/.git/hooks/pre-commit", ".git"),
        ("a/f.txt", "a/sub/.GIT/config", ".git"),
        ("a/f.txt", "a/.env", "secret file name"),
        ("a/f.txt", "a/deploy/id_rsa", "secret file name"),
        ("a/f.txt", "a/home/.aws/credentials", "secret file name"),
        ("a/f.txt", "a/x\\y", "backslash"),
    ],
)
def test_paths_outside_the_tree_in_git_or_withheld_by_the_runtime_are_refused(
    tmp_path: Path, old: str, new: str, reason: str
) -> None:
    before, patch = _one_file_patch(tmp_path)
    name = new[2:]
    hostile = patch.replace("diff --git a/f.txt b/f.txt", f"diff --git a/{name} b/{name}")
    hostile = hostile.replace("--- a/f.txt", f"--- a/{name}").replace("+++ b/f.txt", f"+++ b/{name}")
    with pytest.raises(PatchRefused, match=reason):
        apply_patch(before, hostile)


def test_a_hunk_that_does_not_match_the_snapshot_is_refused(tmp_path: Path) -> None:
    before, patch = _one_file_patch(tmp_path)
    moved = dict(before, **{"f.txt": FileEntry(b"a\nX\nc\n")})
    with pytest.raises(PatchRefused, match=r"another version|does not match"):
        apply_patch(moved, patch)
    no_index = "\n".join(line for line in patch.split("\n") if not line.startswith("index "))
    with pytest.raises(PatchRefused, match="does not match the file at line 1"):
        apply_patch(moved, no_index)


def test_a_hunk_at_another_line_than_it_names_is_refused_no_fuzz(tmp_path: Path) -> None:
    before, patch = _one_file_patch(tmp_path)
    shifted = dict(before, **{"f.txt": FileEntry(b"0\na\nb\nc\n")})
    no_index = "\n".join(line for line in patch.split("\n") if not line.startswith("index "))
    with pytest.raises(PatchRefused, match="does not match"):
        apply_patch(shifted, no_index)  # git apply would find it one line down; we do not


def test_a_result_that_is_not_the_blob_the_index_line_names_is_refused(tmp_path: Path) -> None:
    before, patch = _one_file_patch(tmp_path)
    lied = patch.replace("+B", "+Q")
    with pytest.raises(PatchRefused, match="not what its index line names"):
        apply_patch(before, lied)


def test_counts_that_lie_and_text_outside_sections_are_refused(tmp_path: Path) -> None:
    before, patch = _one_file_patch(tmp_path)
    with pytest.raises(PatchRefused, match="counts"):
        apply_patch(before, patch.replace("@@ -1,3 +1,3 @@", "@@ -1,3 +1,4 @@"))
    with pytest.raises(PatchRefused, match="not part of a 'diff --git' section"):
        apply_patch(before, "From: mallory\n" + patch)
    with pytest.raises(PatchRefused, match="not part of a 'diff --git' section"):
        apply_patch(before, patch + "trailing garbage\n")


def test_a_link_pointing_outside_the_tree_is_refused_also_through_another_link(tmp_path: Path) -> None:
    before, patch, _ = runtime_patch(tmp_path, {"f.txt": "x\n"}, lambda w: os.symlink("f.txt", w / "link"))
    assert apply_patch(before, patch)[0].mode == MODE_SYMLINK  # a link inside is fine
    no_index = "\n".join(line for line in patch.split("\n") if not line.startswith("index "))
    with pytest.raises(PatchRefused, match="'link' a symbolic link pointing outside"):
        apply_patch(before, no_index.replace("+f.txt", "+../../etc/passwd"))
    chain = (
        "diff --git a/a b/a\nnew file mode 120000\n--- /dev/null\n+++ b/a\n@@ -0,0 +1 @@\n+.\n"
        "\\ No newline at end of file\n"
        "diff --git a/b b/b\nnew file mode 120000\n--- /dev/null\n+++ b/b\n@@ -0,0 +1 @@\n+a/../..\n"
        "\\ No newline at end of file\n"
    )
    with pytest.raises(PatchRefused, match="'b' a symbolic link pointing outside"):
        apply_patch(before, chain)


def test_writing_below_a_file_or_link_and_creating_what_exists_are_refused() -> None:
    view = {"f": FileEntry(b"x\n"), "link": FileEntry(b"f", MODE_SYMLINK)}
    below = (
        "diff --git a/link/x b/link/x\nnew file mode 100644\n--- /dev/null\n+++ b/link/x\n@@ -0,0 +1 @@\n+x\n"
    )
    with pytest.raises(PatchRefused, match="below the file or link 'link'"):
        apply_patch(view, below)
    twice = "diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+y\n"
    with pytest.raises(PatchRefused, match="exists already"):
        apply_patch(view, twice)
    missing = (
        "diff --git a/nope b/nope\ndeleted file mode 100644\n--- a/nope\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    with pytest.raises(PatchRefused, match="not in the snapshot"):
        apply_patch(view, missing)


def test_a_file_may_replace_a_directory_only_once_everything_below_it_is_gone() -> None:
    view = {"d/a": FileEntry(b"a\n"), "d/b": FileEntry(b"b\n"), "e": FileEntry(b"e\n")}
    create = "diff --git a/d b/d\nnew file mode 100644\n--- /dev/null\n+++ b/d\n@@ -0,0 +1 @@\n+d\n"

    def delete(path: str) -> str:
        line = view[path].data.decode()
        return f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n--- a/{path}\n+++ /dev/null\n@@ -1 +0,0 @@\n-{line}"

    for way in (lambda p: apply_patch(view, p), lambda p: _reporters_changes(view, p)):
        with pytest.raises(PatchRefused, match="makes 'd' a file, but it is a directory"):
            way(create + delete("d/a"))
        changes = way(create + delete("d/a") + delete("d/b"))
        assert [(c.path, c.action) for c in changes] == [
            ("d", "create"),
            ("d/a", "delete"),
            ("d/b", "delete"),
        ]
        with pytest.raises(PatchRefused, match="below the file or link 'e'"):
            way("diff --git a/e/x b/e/x\nnew file mode 100644\n--- /dev/null\n+++ b/e/x\n@@ -0,0 +1 @@\n+x\n")


def test_a_delete_that_leaves_content_and_a_gitlink_are_refused() -> None:
    view = {"f": FileEntry(b"x\ny\n")}
    partial = "diff --git a/f b/f\ndeleted file mode 100644\n--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    with pytest.raises(PatchRefused, match="leave content"):
        apply_patch(view, partial)
    gitlink = (
        "diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000..1234567\n--- /dev/null\n+++ b/sub\n"
        "@@ -0,0 +1 @@\n+Subproject commit 1234567890123456789012345678901234567890\n"
    )
    with pytest.raises(PatchRefused, match="submodule"):
        apply_patch(view, gitlink)


def test_binary_content_left_out_or_corrupt_is_refused(tmp_path: Path) -> None:
    data = b"\0" + bytes(random.Random(1).randrange(256) for _ in range(200))
    before, patch, _ = runtime_patch(tmp_path, {"f": "x\n"}, lambda w: (w / "d.bin").write_bytes(data))
    assert "GIT binary patch" in patch
    lines = patch.split("\n")
    data_line = next(i for i, line in enumerate(lines) if line.startswith("literal ")) + 1
    corrupt = "\n".join([*lines[:data_line], lines[data_line][:-5] + "00000", *lines[data_line + 1 :]])
    with pytest.raises(PatchRefused, match=r"binary patch of 'd\.bin' is invalid"):
        apply_patch(before, corrupt)
    header = (
        "diff --git a/d.bin b/d.bin\nindex 1111111..2222222 100644\nBinary files a/d.bin and b/d.bin differ\n"
    )
    with pytest.raises(PatchRefused, match="--binary"):
        apply_patch(before, header)


def test_a_binary_bomb_stops_at_the_file_limit(tmp_path: Path) -> None:
    before, patch, _ = runtime_patch(
        tmp_path, {"z": "x\n"}, lambda w: (w / "big.bin").write_bytes(b"\0" * 3_000_000)
    )
    with pytest.raises(PatchRefused, match="over the limit"):
        apply_patch(before, patch, max_file_bytes=1_000_000)
    assert len(apply_patch(before, patch)[0].content or b"") == 3_000_000


def test_the_snapshot_view_is_not_modified_by_a_refused_patch(tmp_path: Path) -> None:
    before, patch = _one_file_patch(tmp_path)
    copy = dict(before)
    bad = (
        patch
        + "diff --git a/.env b/.env\nnew file mode 100644\n--- /dev/null\n+++ b/.env\n@@ -0,0 +1 @@\n+K=v\n"
    )
    with pytest.raises(PatchRefused):
        apply_patch(before, bad)
    assert before == copy
