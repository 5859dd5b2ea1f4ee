"""A root runtime's CLI under a private directory (a checkout under ``/root`` or a ``0700`` parent) gets a path its
unprivileged user can execute, instead of command tools switched off (``runtime/guard/cli_reach.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli_user import reachable_tmp
from runtime.guard.cli_reach import reachable_by_others, reachable_cli

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only a root runtime runs its CLI as another user")


@pytest.fixture
def world() -> Iterator[Path]:
    """A directory everyone may enter (pytest's own tmp_path is under a 0700 directory)."""
    with reachable_tmp("ak-reach-") as root:
        yield root


def _make_cli(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    cli = directory / "claude"
    cli.write_text("#!/bin/sh\necho ran\n")
    cli.chmod(0o755)
    return cli


def _as_cli_user(path: str) -> bool:
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed"
    done = subprocess.run(
        [setpriv, "--reuid", "10001", "--regid", "10001", "--clear-groups", path],
        capture_output=True,
        timeout=30,
    )
    return done.returncode == 0 and b"ran" in done.stdout


def test_a_cli_under_a_private_directory_gets_a_path_its_user_can_run(world: Path) -> None:
    private = world / "priv"
    private.mkdir(mode=0o700)
    cli = private / "kit" / ".venv" / "claude"
    cli.parent.mkdir(parents=True)
    cli.write_text("#!/bin/sh\necho ran\n")
    cli.chmod(0o755)
    assert not reachable_by_others(cli) and not _as_cli_user(str(cli))

    (world / "base").mkdir()
    reached = reachable_cli(str(cli), base=world / "base")
    assert reached != str(cli) and _as_cli_user(reached)
    assert os.stat(reached).st_ino == os.stat(cli).st_ino  # the same file, not a copy
    assert reachable_cli(str(cli), base=world / "base") == reached  # once per CLI version


def test_a_reachable_or_private_file_is_left_alone(world: Path) -> None:
    cli = world / "claude"
    cli.write_text("#!/bin/sh\necho ran\n")
    cli.chmod(0o755)
    assert reachable_cli(str(cli), base=world / "base") == str(cli)
    private = world / "priv"
    private.mkdir(mode=0o700)
    secret = private / "claude"
    secret.write_text("#!/bin/sh\necho ran\n")
    secret.chmod(0o700)  # the file itself is not for others: not published
    assert reachable_cli(str(secret), base=world / "base") == str(secret)


def test_a_directory_planted_by_someone_else_is_not_used(world: Path) -> None:
    base = world / "base"
    base.mkdir()
    planted = base / f"agentkit-cli-{os.geteuid()}"
    planted.mkdir()
    os.chown(planted, 10001, 10001)
    private = world / "priv"
    private.mkdir(mode=0o700)
    cli = private / "claude"
    cli.write_text("#!/bin/sh\necho ran\n")
    cli.chmod(0o755)
    assert reachable_cli(str(cli), base=base) == str(cli)


def test_a_private_directory_reached_through_a_symlinked_venv_is_still_private(world: Path) -> None:
    real = world / "shared-venv"
    _make_cli(real)
    private = world / "priv"
    private.mkdir(mode=0o700)
    (private / ".venv").symlink_to(real)  # a checkout in a 0700 directory whose .venv links elsewhere
    through = private / ".venv" / "claude"
    assert not reachable_by_others(through) and not _as_cli_user(str(through))
    (world / "base").mkdir()
    reached = reachable_cli(str(through), base=world / "base")
    assert reached != str(through) and _as_cli_user(reached)
