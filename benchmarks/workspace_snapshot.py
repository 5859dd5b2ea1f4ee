"""Workspace snapshot benchmark: what the safe unpack and the recorded baseline cost, and what a patch costs.

The snapshot is this repository's own working tree (``git ls-files -co --exclude-standard``, as
``agentkit invoke --workspace`` sends it). Measured, interleaved round by round:

- **plain**: ``tarfile.extractall`` of the archive into an empty directory (no checks, no history): the floor;
- **install**: :meth:`runtime.workspace.Workspaces.install`: every entry checked, staged, moved into the session's
  workspace, and recorded in a git directory outside it;
- **patch (none)** / **patch (one file)**: :meth:`Workspaces.changes` with nothing changed, and after one edit;
- **pre-scan**: :func:`runtime.workspace.prescan.prescan` alone, the ``lstat`` walk each patch now starts with (what
  git must not open is set aside before git runs), to show its share of a patch.

Prints medians, the archive's size and entries, and install / plain (the price of the checks and the history; the
install is paid once per snapshot, not per turn). No target: the figure tells what a snapshot adds to a turn.

Run: ``.venv/bin/python benchmarks/workspace_snapshot.py [-n 5]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from _harness import banner, describe, median

from runtime.guard.policy import is_sensitive_name
from runtime.workspace import SnapshotLimits, Workspaces
from runtime.workspace.prescan import prescan

ROOT = Path(__file__).resolve().parents[1]


def repository_archive() -> tuple[bytes, int]:
    """This repository's working tree as agentkit sends it (tracked and new non-ignored files)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    buf = BytesIO()
    count = 0
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for raw in sorted({n for n in listed.split(b"\0") if n}):
            path = ROOT / raw.decode()
            if path.is_symlink() or path.is_file():
                tar.add(path, arcname=raw.decode(), recursive=False)
                count += 1
    return buf.getvalue(), count


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=5, help="rounds (5)")
    args = parser.parse_args()
    banner("workspace snapshot: safe unpack + recorded baseline vs plain extraction; patch computation")
    archive, entries = repository_archive()
    print(
        f"archive: this repository's working tree, {entries} files, {len(archive) / 1024:.0f} KiB compressed"
    )
    limits = SnapshotLimits(100 * 2**20, 500 * 2**20, 100_000, 50 * 2**20)
    plain, install, none, one, scan = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for i in range(args.n):
            target = base / f"plain-{i}"
            target.mkdir()
            started = time.perf_counter()
            with tarfile.open(fileobj=BytesIO(archive), mode="r:gz") as tar:
                tar.extractall(target, filter="fully_trusted")
            plain.append(time.perf_counter() - started)
            shutil.rmtree(target)

            ws = Workspaces(
                trusted_root=base / f"snapshots-{i}",
                tree_for=(base / f"workspaces-{i}").joinpath,
                limits=limits,
                max_patch_bytes=50 * 2**20,
                withhold=is_sensitive_name,
            )
            started = time.perf_counter()
            ws.install("s", archive)
            install.append(time.perf_counter() - started)
            started = time.perf_counter()
            assert ws.changes("s").patch == ""
            none.append(time.perf_counter() - started)
            readme = ws.tree_for("s") / "README.md"
            readme.write_text(readme.read_text() + "\nOne more line.\n")
            started = time.perf_counter()
            assert ws.changes("s").changed_files == ["README.md"]
            one.append(time.perf_counter() - started)
            started = time.perf_counter()
            assert not prescan(ws.tree_for("s"), max_file_bytes=limits.max_file_bytes).withheld
            scan.append(time.perf_counter() - started)
            shutil.rmtree(base / f"snapshots-{i}")
            shutil.rmtree(base / f"workspaces-{i}")
    print(describe("plain tarfile.extractall (no checks, no history)", plain))
    print(describe("Workspaces.install (checked, staged, recorded)", install))
    print(describe("Workspaces.changes, nothing changed", none))
    print(describe("Workspaces.changes, one file changed", one))
    print(describe("prescan (the lstat walk each patch starts with)", scan))
    print(f"install / plain: {median(install) / median(plain):.2f}x · load average {os.getloadavg()[0]:.2f}")
    print(f"prescan / patch with one file changed: {median(scan) / median(one):.2f}x")


if __name__ == "__main__":
    main()
