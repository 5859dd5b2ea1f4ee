"""A small load run in the suite (``benchmarks/load.py`` runs N=20 x M=10): concurrent sessions through the real
HTTP server with the fake CLI lose, duplicate and interleave no turn, spawn one CLI per session, and the idle
timeout ends every CLI process. How much memory the runtime gives back depends on the machine (allocator,
page size, what else runs): that target (RSS after eviction within 10 % of before) is checked by
``benchmarks/load.py``, not here."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.load import run_load

pytestmark = pytest.mark.timeout(180)


def test_concurrent_sessions_lose_nothing_and_eviction_ends_every_cli(tmp_path: Path) -> None:
    result = run_load(tmp_path, sessions=4, turns=3, idle_timeout_s=2.0)
    print("\n".join(result.lines()))
    assert result.lost == [] and result.duplicated == [] and result.interleaved == []
    assert len(result.latencies_ms) == 12
    assert result.cli_spawned == 4  # one warm CLI per session, reused for every turn
    assert result.live_cli_after == 0  # idle eviction closed every CLI
