"""The patch of a workspace against its snapshot (runtime.workspace.baseline): it applies with ``git apply`` to
the original tree and gives exactly the agent's tree; it never carries ``.git``, secret-named files, links leaving
the workspace or content a JSON reply cannot hold; and the workspace's own git configuration is never used."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from harness.archives import Entry, tar_gz
from runtime.errors import PatchTooLarge
from runtime.guard.policy import is_sensitive_name
from runtime.workspace import SnapshotLimits, Workspaces

LIMITS = SnapshotLimits(1_000_000, 5_000_000, 100, 1_000_000)
ORIGINAL = [
    ("README.md", b"# project\n"),
    ("src/app.py", b"def add(a, b):\n    return a - b\n"),
    ("src/old.py", b"gone = True\n"),
    ("tool.sh", b"#!/bin/sh\n"),
    (".gitignore", b"__pycache__/\n*.log\n"),
    ("build.log", b"tracked although ignored\n"),
    ("config/.env", b"SECRET=1\n"),
    ("logo.bin", bytes(range(256))),
]


def make(
    tmp_path: Path,
    entries: list[Entry | tuple[str, bytes]] | None = None,
    *,
    allow: frozenset[str] = frozenset(),
    **kw: int,
) -> Workspaces:
    ws = Workspaces(
        trusted_root=tmp_path / "snapshots",
        tree_for=lambda sid: tmp_path / "workspaces" / sid,
        limits=LIMITS,
        max_patch_bytes=kw.get("max_patch_bytes", 1_000_000),
        withhold=is_sensitive_name,
        allow_protected=allow,
    )
    ws.install("s", tar_gz(entries if entries is not None else ORIGINAL))
    return ws


def tree_of(root: Path) -> dict[str, bytes | str]:
    """Every file (content) and link (``-> target``) under ``root``, by relative path."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            out[rel] = f"-> {os.readlink(path)}" if path.is_symlink() else path.read_bytes()
    return out


def apply_to_original(tmp_path: Path, patch: str) -> Path:
    """``git apply`` the patch to a fresh copy of the original snapshot (a git work tree, as a CI checkout is)."""
    target = tmp_path / "checkout"
    target.mkdir()
    for name, data in ORIGINAL:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(data)
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)
    subprocess.run(["git", "apply", "--check", "-"], cwd=target, input=patch.encode(), check=True)
    subprocess.run(["git", "apply", "-"], cwd=target, input=patch.encode(), check=True)
    return target


def test_unchanged_workspace_gives_an_empty_patch(tmp_path: Path) -> None:
    changes = make(tmp_path).changes("s")
    assert changes.patch == "" and changes.changed_files == [] and changes.withheld_files == []


def test_patch_applies_to_the_original_and_gives_the_agents_tree(tmp_path: Path) -> None:
    ws = make(tmp_path, allow=frozenset({"executable"}))  # the mode change is a protected class, allowed here
    tree = ws.tree_for("s")
    (tree / "src" / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (tree / "src" / "old.py").unlink()
    (tree / "tests").mkdir()
    (tree / "tests" / "test_app.py").write_text(
        "from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    (tree / "tool.sh").chmod(0o755)
    (tree / "logo.bin").write_bytes(bytes(range(255, -1, -1)))
    (tree / "docs").mkdir()
    (tree / "docs" / "app.md").symlink_to("../README.md")
    (tree / "__pycache__").mkdir()
    (tree / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0junk")  # ignored: not in the patch
    (tree / "build.log").write_text("tracked, so its change is kept\n")
    changes = ws.changes("s")
    assert changes.changed_files == [
        "build.log",
        "docs/app.md",
        "logo.bin",
        "src/app.py",
        "src/old.py",
        "tests/test_app.py",
        "tool.sh",
    ]
    assert changes.patch.startswith("diff --git a/build.log b/build.log\n")
    assert "GIT binary patch" in changes.patch and "old mode 100644\nnew mode 100755" in changes.patch
    applied = apply_to_original(tmp_path, changes.patch)
    expected = {k: v for k, v in tree_of(tree).items() if not k.startswith("__pycache__/")}
    assert tree_of(applied) == expected
    assert os.access(applied / "tool.sh", os.X_OK)


def test_later_turns_see_the_change_against_the_snapshot_not_the_last_turn(tmp_path: Path) -> None:
    ws = make(tmp_path)
    (ws.tree_for("s") / "README.md").write_text("# one\n")
    first = ws.changes("s")
    (ws.tree_for("s") / "NEW.md").write_text("two\n")
    second = ws.changes("s")
    assert first.changed_files == ["README.md"] and second.changed_files == ["NEW.md", "README.md"]


def test_secrets_git_dirs_outside_links_and_non_utf8_are_withheld(tmp_path: Path) -> None:
    ws = make(tmp_path)
    tree = ws.tree_for("s")
    (tree / "config" / ".env").write_text("SECRET=2\n")  # a changed secret: withheld, snapshot version kept
    (tree / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (tree / ".aws").mkdir()
    (tree / ".aws" / "credentials").write_text("[default]\naws_access_key_id=AKIA\n")
    (tree / "passwd").symlink_to("/etc/passwd")
    (tree / "up").symlink_to("../../outside")
    (tree / "loop").symlink_to(".")
    (tree / "sneaky").symlink_to("loop/../escape")  # textually inside, really outside
    nested = tree / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=nested, check=True)
    (nested / "x.py").write_text("x = 1\n")
    subprocess.run(["git", "-C", str(nested), "add", "x.py"], check=True)
    subprocess.run(
        ["git", "-C", str(nested), "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "x"],
        check=True,
    )
    (tree / "latin1.txt").write_bytes(b"caf\xe9\n")
    (tree / b"bad-\xff-name".decode("utf-8", "surrogateescape")).write_text("x")
    (tree / "ok.txt").write_text("kept\n")
    changes = ws.changes("s")
    assert changes.changed_files == ["loop", "ok.txt"]
    withheld = "\n".join(changes.withheld_files)
    for path in (
        "config/.env",
        "id_rsa",
        ".aws/credentials",
        "passwd",
        "up",
        "sneaky",
        "vendor/lib",
        "latin1.txt",
        "bad-\\xff-name",
    ):
        assert path in withheld, path
    for secret in ("SECRET", "OPENSSH", "AKIA", "/etc/passwd", "outside", "x = 1", "caf"):
        assert secret not in changes.patch, secret
    assert ".git" not in changes.patch


def test_the_workspaces_own_git_config_and_attributes_are_never_used(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    ws = make(tmp_path)
    tree = ws.tree_for("s")
    # What an agent (or a snapshot) could plant: a .git with hooks and fsmonitor, filters in .gitattributes.
    (tree / ".git" / "hooks").mkdir(parents=True)
    (tree / ".git" / "config").write_text(
        f'[core]\n\tfsmonitor = touch {marker}\n\thooksPath = .git/hooks\n[filter "x"]\n\tclean = touch {marker}\n'
    )
    (tree / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (tree / ".gitattributes").write_text("* filter=x diff=x -text\n*.py -diff\n")
    (tree / "src" / "app.py").write_text("def add(a, b):\n    return a + b\n")
    changes = ws.changes("s")
    assert not marker.exists()
    assert changes.changed_files == [".gitattributes", "src/app.py"]
    assert "+    return a + b" in changes.patch  # a text diff, although the attributes say binary
    assert ".git/config" not in changes.patch


def test_patch_over_the_limit_is_a_typed_error_and_the_workspace_stays(tmp_path: Path) -> None:
    ws = make(tmp_path, max_patch_bytes=2_000)
    (ws.tree_for("s") / "big.txt").write_text("line\n" * 1000)
    with pytest.raises(PatchTooLarge) as err:
        ws.changes("s")
    assert err.value.http_status == 422 and "AGENTKIT_WORKSPACE_MAX_PATCH_BYTES" in err.value.message
    assert (ws.tree_for("s") / "big.txt").exists()


def test_inner_links_of_the_snapshot_survive_unchanged(tmp_path: Path) -> None:
    ws = make(tmp_path, [("a.txt", b"a\n"), Entry("l", kind="symlink", target="a.txt")])
    assert ws.changes("s").patch == ""
    (ws.tree_for("s") / "l").unlink()
    (ws.tree_for("s") / "l").symlink_to("/etc/shadow")
    changes = ws.changes("s")
    assert changes.patch == "" and changes.withheld_files == [
        "l (symbolic link pointing outside the workspace)"
    ]


def test_caches_of_test_runs_stay_out_even_when_not_ignored(tmp_path: Path) -> None:
    ws = make(tmp_path, [("app.py", b"x = 1\n"), ("node_modules/kept.js", b"tracked\n")])
    tree = ws.tree_for("s")
    (tree / "__pycache__").mkdir()
    (tree / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    (tree / ".pytest_cache").mkdir()
    (tree / ".pytest_cache" / "README.md").write_text("cache\n")
    (tree / "node_modules" / "new.js").write_text("installed\n")
    (tree / "node_modules" / "kept.js").write_text("changed\n")  # a tracked file's change is still proposed
    (tree / "app.py").write_text("x = 2\n")
    assert ws.changes("s").changed_files == ["app.py", "node_modules/kept.js"]


def test_a_same_size_edit_in_the_second_of_the_snapshot_is_in_every_later_patch(tmp_path: Path) -> None:
    """Git may compare file times in whole seconds: an edit that keeps the size, made in the second the snapshot
    was recorded, has the recorded stat. It must still be in the patch when the patch is computed seconds later
    (on the next turn), not only within that second."""
    while time.time() % 1 > 0.3:  # start early in a second: install and edit land in the same one
        time.sleep(0.05)
    ws = make(tmp_path)
    app = tmp_path / "workspaces" / "s" / "src" / "app.py"
    app.write_bytes(app.read_bytes().replace(b"a - b", b"a + b"))  # same size
    edited = int(os.stat(app).st_mtime)
    while int(time.time()) == edited:  # the patch is computed in a later second, as on a later turn
        time.sleep(0.05)
    for _ in range(2):
        changes = ws.changes("s")
        assert changes.changed_files == ["src/app.py"]
        assert "-    return a - b\n+    return a + b\n" in changes.patch
