"""Warm-turn benchmark: a warm turn through our runtime vs a per-call ``query()``.

In one run, with the same CLI for both:

- **warm turn through HTTP**: ``python -m runtime`` as a subprocess; one runtime session, one warm-up turn
  (spawns the CLI), then ``-n`` streamed turns (``POST /invocations`` → last SSE event);
- **per-call query()**: what published AgentCore samples do, a new SDK client (so a new CLI process) per
  invocation. Measured in-process, without HTTP, so the baseline is if anything flattered.

The two are interleaved (one of each per round) so machine noise hits both alike. Prints both medians and
the ratio per-call / warm. Target: ≥ 3 with the fake CLI (the real CLI's spawn is far dearer).

Run: ``.venv/bin/python benchmarks/warm_turn.py [--cli fake|real] [-n 20]``
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from _harness import (
    banner,
    cli_setup,
    describe,
    median,
    per_call_query,
    start_server,
    verdict,
    warm_turn,
    workdir,
)

from harness.runtime_server import session_id

TARGET_RATIO = 3.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", choices=("fake", "real"), default="fake")
    parser.add_argument("-n", type=int, default=20, help="measured turns of each kind (default 20)")
    args = parser.parse_args()
    if args.n < 1:
        parser.error("-n must be at least 1")

    banner(f"warm turn vs per-call query() — {args.cli} CLI, n={args.n}")
    loop = asyncio.new_event_loop()
    with (
        workdir("agentkit-bench-") as tmp,
        cli_setup(args.cli, Path(tmp)) as setup,
    ):
        server = start_server(setup, "runtime")
        try:
            session = session_id("bench-warm")
            warm_turn(server, session, setup.text_turn())  # spawns the CLI: not measured
            loop.run_until_complete(per_call_query(setup, setup.text_turn()))  # imports the SDK here
            warm, per_call = [], []
            for _ in range(args.n):
                warm.append(warm_turn(server, session, setup.text_turn()))
                per_call.append(loop.run_until_complete(per_call_query(setup, setup.text_turn())))
        finally:
            server.stop()
            loop.close()

    ratio = median(per_call) / median(warm)
    print(describe("warm turn through HTTP (our runtime)", warm))
    print(describe("per-call query() (new CLI process per invocation)", per_call))
    print(f"ratio per-call / warm: {ratio:.1f}x  ({verdict(ratio, at_least=TARGET_RATIO)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
