"""What installing the slim client costs a CI job: ``pip install ./client`` into an empty virtualenv.

Prints the time and disk size of an empty venv, of ``pip install ./client`` into it, the size added, and the
distributions installed. ``--compare-full`` also installs the container package (``pip install .``, what CI
used before) into a second venv and prints the ratios. Uses pip's cache as it is (warm on a CI runner with
caching, as the composite action sets up):

    .venv/bin/python benchmarks/client_install.py [--compare-full]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIP = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]


def size_mb(path: Path) -> float:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            full = Path(dirpath) / name
            if not full.is_symlink():
                total += full.stat().st_size
    return total / 1e6


def timed(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def venv_with(target: str, where: Path) -> tuple[float, float, float, float, list[str]]:
    """(venv seconds, empty MB, install seconds, MB after) and the installed distributions."""
    venv_s = timed([sys.executable, "-m", "venv", str(where)])
    empty = size_mb(where)
    python = str(where / "bin" / "python")
    install_s = timed([python, *PIP, target])
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True
    )
    dists = sorted(d["name"].lower() for d in json.loads(listed.stdout))
    return venv_s, empty, install_s, size_mb(where), dists


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare-full", action="store_true", help="also time `pip install .` (large)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentkit-install-") as tmp:
        venv_s, empty, install_s, after, dists = venv_with(str(ROOT / "client"), Path(tmp) / "client")
        print(f"empty venv:               {empty:6.1f} MB, created in {venv_s:5.1f} s")
        print(
            f"pip install ./client:     {after:6.1f} MB, installed in {install_s:5.1f} s  (+{after - empty:.1f} MB)"
        )
        print(f"distributions:            {', '.join(dists)}")
        agentkit = Path(tmp) / "client" / "bin" / "agentkit"
        print(
            f"agentkit --version:       {subprocess.run([str(agentkit), '--version'], capture_output=True, text=True).stdout.strip()}"
        )
        if args.compare_full:
            _v, f_empty, f_install, f_after, _d = venv_with(str(ROOT), Path(tmp) / "full")
            print(
                f"pip install . (runtime):  {f_after:6.1f} MB, installed in {f_install:5.1f} s  (+{f_after - f_empty:.1f} MB)"
            )
            print(
                f"ratio full / client:      size added {(f_after - f_empty) / (after - empty):.1f}x, "
                f"install time {f_install / install_s:.1f}x"
            )


if __name__ == "__main__":
    main()
