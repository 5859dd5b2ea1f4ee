"""``python -m runtime`` run by a Python that is not the kit's virtualenv (a system ``python``, a CI job's) says
which one to use, instead of failing with a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_python_without_the_dependencies_gets_a_sentence_not_a_traceback(tmp_path: Path) -> None:
    """``python -m runtime`` with a Python outside the kit's virtualenv (a fresh venv has none of its packages)."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "runtime", "--help"],
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "`.venv/bin/python -m runtime`" in done.stderr and "pydantic" in done.stderr
