"""A cold ``make setup`` says what it installs as it goes (one line per package pip collects) instead of minutes of
silence, and pip's failure stays the recipe's failure."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PIP_OUTPUT = """Looking in indexes: https://pypi.org/simple
Collecting boto3==1.40.0 (from -r requirements/dev.txt (line 12))
  Downloading boto3-1.40.0-py3-none-any.whl (139 kB)
Collecting six==1.17.0 (from -r requirements/dev.txt (line 99))
  Using cached six-1.17.0-py2.py3-none-any.whl
Installing collected packages: six, boto3
Successfully installed boto3-1.40.0 six-1.17.0
"""


def _install_recipe() -> str:
    recipe = subprocess.run(
        ["make", "-n", "-B", ".venv/.installed"], cwd=ROOT, capture_output=True, text=True, timeout=60
    ).stdout
    joined = re.sub(r"\\\n", " ", recipe)
    (line,) = [ln for ln in joined.splitlines() if "-r requirements/dev.txt" in ln]
    return line


def test_pip_output_becomes_one_progress_line_per_package() -> None:
    line = _install_recipe()
    assert line.startswith("set -o pipefail;") and "--quiet" not in line
    # the recipe's own filter, fed what pip prints on a cold install
    program = line.split("| ", 1)[1]
    done = subprocess.run(
        ["bash", "-c", f"total=170; {program}"], input=PIP_OUTPUT, capture_output=True, text=True, timeout=30
    )
    assert done.stdout.splitlines() == [
        "setup: [1/~170] boto3==1.40.0",
        "setup: [2/~170] six==1.17.0",
        "setup: installing what was collected",
    ]


def test_a_failing_pip_fails_the_recipe() -> None:
    line = _install_recipe()
    pip = line.split("; ", 2)[2].split(" | ", 1)[0]
    failing = line.replace(pip, "false")
    assert subprocess.run(["bash", "-c", failing], capture_output=True, timeout=30).returncode != 0
