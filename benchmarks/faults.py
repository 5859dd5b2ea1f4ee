"""The kill -9 loop at full size: 20 SIGKILLs of the runtime at random points while a client drives turns on
one session; afterwards every turn that got a result must be in the session's history and in the store.

Prints the kills, the completed turns and the history a fresh runtime resumes with (the in-suite test,
``tests/functional/test_faults.py``, runs 3 rounds).

    .venv/bin/python benchmarks/faults.py [--kills 20] [--seed 10]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _harness import banner  # puts the repository root on sys.path for the import below

from harness.faults import history, kill9_loop, stored_prompts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=10)
    args = parser.parse_args(argv)
    banner(f"kill -9 loop: {args.kills} kills, fake CLI, SQLite store")
    with tempfile.TemporaryDirectory(prefix="agentkit-kill9-") as tmp:
        completed, after = kill9_loop(Path(tmp), args.kills, seed=args.seed)
        missing = set(completed) - stored_prompts(Path(tmp) / "state" / "sessions.db")
    resumed_history = history(after) if after.status == 200 else -1
    print(f"kills                       {args.kills}")
    print(f"turns completed             {len(completed)}")
    print(
        f"history in a fresh runtime  {resumed_history} (≥ completed: turns cut off after their result count too)"
    )
    print(f"completed turns missing     {len(missing)}")
    ok = after.status == 200 and resumed_history >= len(completed) and not missing
    print("target (every completed turn resumable):", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
