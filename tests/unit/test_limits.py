"""AGENTKIT_MAX_SESSIONS's default comes from the container's cgroup memory limit (v2, v1 fallback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.config.settings import Settings
from runtime.process.limits import (
    MAX_DEFAULT_SESSIONS,
    MIB,
    PER_SESSION_BYTES,
    RUNTIME_RESERVE_BYTES,
    cgroup_memory_limit,
    default_max_sessions,
    sessions_for,
)

GIB = 1024 * MIB


def v2(root: Path, value: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "memory.max").write_text(value + "\n")
    return root


def v1(root: Path, value: str) -> Path:
    (root / "memory").mkdir(parents=True, exist_ok=True)
    (root / "memory" / "memory.limit_in_bytes").write_text(value + "\n")
    return root


def test_cgroup_v2_limit_is_read(tmp_path: Path) -> None:
    assert cgroup_memory_limit(v2(tmp_path, str(2 * GIB))) == 2 * GIB


def test_cgroup_v2_max_means_no_limit(tmp_path: Path) -> None:
    assert cgroup_memory_limit(v2(tmp_path, "max")) is None


def test_cgroup_v1_is_the_fallback(tmp_path: Path) -> None:
    assert cgroup_memory_limit(v1(tmp_path, str(4 * GIB))) == 4 * GIB
    # v1's "unlimited" is a page-rounded LONG_MAX (this machine reports 9223372036854771712).
    assert cgroup_memory_limit(v1(tmp_path / "u", "9223372036854771712")) is None


def test_no_cgroup_files_means_no_limit(tmp_path: Path) -> None:
    assert cgroup_memory_limit(tmp_path) is None


def test_garbage_is_treated_as_no_limit(tmp_path: Path) -> None:
    assert cgroup_memory_limit(v2(tmp_path, "lots")) is None


@pytest.mark.parametrize(
    ("limit", "sessions"),
    [
        (None, MAX_DEFAULT_SESSIONS),
        (512 * MIB, 1),  # never zero: one session always runs
        (2 * GIB, (2 * GIB - RUNTIME_RESERVE_BYTES) // PER_SESSION_BYTES),
        (8 * GIB, (8 * GIB - RUNTIME_RESERVE_BYTES) // PER_SESSION_BYTES),
        (64 * GIB, MAX_DEFAULT_SESSIONS),
    ],
)
def test_sessions_fit_the_limit(limit: int | None, sessions: int) -> None:
    assert sessions_for(limit) == sessions


def test_2_gib_container_gets_a_handful_not_32() -> None:
    assert sessions_for(2 * GIB) == 5  # 5 x 320 MiB + 384 MiB = 1984 MiB <= 2048 MiB


def test_default_reads_the_injected_root(tmp_path: Path) -> None:
    assert default_max_sessions(v2(tmp_path, str(2 * GIB))) == 5


def test_explicit_setting_wins_and_unset_means_derived() -> None:
    assert Settings.from_env({"AGENTKIT_MAX_SESSIONS": "3"}).max_sessions == 3
    assert Settings.from_env({}).max_sessions is None
