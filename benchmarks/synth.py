"""Measure `cdk synth` of the app as `make synth` runs it (CDK CLI, offline, no Docker) and print the time.

Usage: python benchmarks/synth.py [--runs N] [--stage dev|prod]
Prints each run's wall time, the median, and the ratio to the 10 s target. Run from the repository root.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 10.0


def synth_once(stage: str, outdir: str) -> float:
    env = {
        **os.environ,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    cmd = [
        str(ROOT / "node_modules" / ".bin" / "cdk"),
        "synth",
        "--quiet",
        "-c",
        f"stage={stage}",
        "-o",
        outdir,
    ]
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"cdk synth failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stage", default="dev", choices=["dev", "prod"])
    args = parser.parse_args()
    times = []
    with tempfile.TemporaryDirectory() as outdir:
        for n in range(args.runs):
            times.append(synth_once(args.stage, outdir))
            print(f"run {n + 1}: cdk synth ({args.stage}, with cdk-nag) {times[-1]:.2f} s")
    median = statistics.median(times)
    print(
        f"median {median:.2f} s over {len(times)} runs; target {TARGET_S:.0f} s; ratio {median / TARGET_S:.2f}"
    )
    print(f"cpu cores: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
