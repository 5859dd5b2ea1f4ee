"""The CLI's long-lived helpers die with the CLI: ``PATH`` shims that start them with a parent-death signal.

A stand-in "CLI" (a Python process) starts a helper found on ``PATH`` and is SIGKILLed, as the kernel kills the
real CLI when the runtime dies; ``/proc`` then tells whether the helper is still running. The real CLI and its
``socat`` are checked in ``tests/e2e/test_orphans_real_cli.py``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runtime.agent.orphan_guard import HELPER_DIR_NAME, helper_path_env

SETPRIV = shutil.which("setpriv")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def helper_dir(tmp_path: Path) -> Path:
    """A directory on ``PATH`` with a long-lived helper ``sleeper`` (it prints its pid, then sleeps)."""
    bin_dir = tmp_path / "usr-bin"
    bin_dir.mkdir()
    helper = bin_dir / "sleeper"
    helper.write_text("#!/bin/sh\necho $$\nexec sleep 60\n")
    helper.chmod(0o755)
    return bin_dir


def _helper_after_parent_sigkill(path: str, wait_s: float = 5.0) -> int | None:
    """Start a parent that runs ``sleeper`` from ``path``, SIGKILL the parent; the helper's pid if it survives."""
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleeper']); time.sleep(60)"],
        env={**os.environ, "PATH": path},
        stdout=subprocess.PIPE,
    )
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    assert _alive(pid)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + wait_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)  # leave nothing running on a shared machine
        return pid
    return None


def test_a_helper_started_through_the_shim_dies_with_its_parent(tmp_path: Path, helper_dir: Path) -> None:
    base = f"{helper_dir}:/usr/bin:/bin"
    assert _helper_after_parent_sigkill(base, wait_s=0.5) is not None, (
        "control: without the shim the helper outlives it"
    )
    env = helper_path_env(tmp_path / "state-bin", path=base, helpers=("sleeper",))
    assert env["PATH"] == f"{tmp_path / 'state-bin' / HELPER_DIR_NAME}:{base}"
    assert _helper_after_parent_sigkill(env["PATH"]) is None


def test_the_shim_execs_the_real_helper_under_setpriv(tmp_path: Path, helper_dir: Path) -> None:
    base = f"{helper_dir}:/usr/bin:/bin"
    env = helper_path_env(tmp_path, path=base, helpers=("sleeper", "not-installed-anywhere"))
    shims = tmp_path / HELPER_DIR_NAME
    assert sorted(p.name for p in shims.iterdir()) == ["sleeper"]
    assert (shims / "sleeper").read_text() == (
        f'#!/bin/sh\nexec {SETPRIV} --pdeathsig KILL -- {helper_dir / "sleeper"} "$@"\n'
    )
    # Built again from a PATH that already holds the shims (a nested start): no loop, no duplicate entry.
    again = helper_path_env(tmp_path, path=env["PATH"], helpers=("sleeper",))
    assert again == env
    assert (shims / "sleeper").read_text().count(str(helper_dir / "sleeper")) == 1


def test_nothing_changes_without_setpriv_or_helpers(
    tmp_path: Path, helper_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert helper_path_env(tmp_path, path="/nonexistent", helpers=("sleeper",)) == {}
    monkeypatch.setattr("runtime.agent.orphan_guard.shutil.which", lambda *a, **k: None)
    assert helper_path_env(tmp_path / "x", path=str(helper_dir), helpers=("sleeper",)) == {}
    assert not (tmp_path / "x").exists()
