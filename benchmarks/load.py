"""Load through the real HTTP server with the fake CLI: N sessions x M turns, then idle eviction.

Prints turns lost / duplicated / interleaved (targets 0), latency p50 and p99, CLI processes spawned (target N)
and the runtime's RSS before, at the peak of, and after idle eviction (target: back within 10 %). Every figure
is measured in this run (:mod:`harness.load`).

    .venv/bin/python benchmarks/load.py [--sessions 20] [--turns 10] [--idle 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _harness import banner  # puts the repository root on sys.path for the import below

from harness.load import run_load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--idle", type=float, default=3.0, help="AGENTKIT_IDLE_TIMEOUT for the run (seconds)")
    args = parser.parse_args(argv)
    banner(f"load: {args.sessions} sessions x {args.turns} turns, fake CLI, real HTTP server")
    with tempfile.TemporaryDirectory(prefix="agentkit-load-") as tmp:
        result = run_load(Path(tmp), sessions=args.sessions, turns=args.turns, idle_timeout_s=args.idle)
    for line in result.lines():
        print(line)
    ok = (
        not result.lost
        and not result.duplicated
        and not result.interleaved
        and result.cli_spawned == args.sessions
        and result.rss_after_ratio <= 1.10
        and result.live_cli_after == 0
    )
    for problem in (result.lost + result.duplicated + result.interleaved)[:10]:
        print("  problem:", problem)
    print(
        "targets (0 lost / 0 duplicated / 0 interleaved, spawned = N, RSS after ≤ 1.10 x before):",
        "met" if ok else "MISSED",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
