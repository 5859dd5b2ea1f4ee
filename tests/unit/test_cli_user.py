"""The session-start check (``harness/cli_user.py``, said by ``tests/conftest.py``): a root run whose CLI user
cannot reach the CLI or a test workspace is told so once, with the fix."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli_user import cli_user_problem, reachable_tmp

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only a root run drops its CLI to another user")


@pytest.fixture
def world() -> Iterator[Path]:
    with reachable_tmp("ak-cli-user-") as root:
        yield root


def _cli(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    cli = directory / "claude"
    cli.write_text("#!/bin/sh\n")
    cli.chmod(0o755)
    return cli


def test_everything_reachable_says_nothing(world: Path) -> None:
    assert cli_user_problem(str(_cli(world / "bin")), temp_base=str(world)) is None


def test_a_cli_under_a_private_directory_is_named_with_the_fix(world: Path) -> None:
    private = world / "priv"
    private.mkdir(mode=0o700)
    problem = cli_user_problem(str(_cli(private / "kit")), temp_base=str(world))
    assert problem and "cannot reach the CLI" in problem and "Fix: clone the kit under" in problem


def test_a_private_temp_base_is_named(world: Path) -> None:
    private = world / "tmp"
    private.mkdir(mode=0o700)
    problem = cli_user_problem(str(_cli(world / "bin")), temp_base=str(private))
    assert problem and f"a test workspace under {private}" in problem


def test_this_machine_is_fine() -> None:
    assert cli_user_problem() is None  # the suite's own run: the runtime reaches its CLI and /tmp
