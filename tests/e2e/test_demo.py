"""``make demo`` (``scripts/demo.py``, without the synth step) keeps the files it tells you to read again: the EMF
metrics, the spans and the report stay in its directory, and the ``agentkit`` commands it prints at the end work
on them as printed."""

from __future__ import annotations

import io
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from agentkit.cli import main as agentkit

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "scripts" / "demo.py"

pytestmark = pytest.mark.timeout(300)


def test_the_demo_keeps_its_files_and_prints_commands_that_read_them(tmp_path: Path) -> None:
    out_dir = tmp_path / "demo"
    run = subprocess.run(
        [sys.executable, str(DEMO), "--skip-synth", "--dir", str(out_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for name in ("metrics.emf.jsonl", "spans.jsonl", "report.html"):
        assert (out_dir / name).stat().st_size > 0, name
    assert run.stdout.rstrip().splitlines()[-1].endswith(str(out_dir / "report.html"))

    printed = [
        line.strip() for line in run.stdout.splitlines() if line.strip().startswith(".venv/bin/agentkit ")
    ]
    assert [shlex.split(line)[1] for line in printed] == ["cost", "cost", "report"]
    for line in printed:
        argv = shlex.split(line)[1:]
        if argv[0] == "report":
            argv[argv.index("--out") + 1] = str(tmp_path / "again.html")
        stdout = io.StringIO()
        assert agentkit(argv, stdout=stdout) == 0, line
        if argv[0] == "cost":  # by model, then by session: the run's figures, read from the kept EMF file
            expected = "demo-session-0001" if argv[-1] == "session" else "us.anthropic.claude"
            assert expected in stdout.getvalue() and "0.0000 " not in stdout.getvalue(), stdout.getvalue()
    assert (tmp_path / "again.html").read_text().lower().startswith("<!doctype html>")


def test_the_demo_never_empties_a_directory_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("someone's file")
    run = subprocess.run(
        [sys.executable, str(DEMO), "--skip-synth", "--dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0 and "was not made by the demo" in run.stderr
    assert (tmp_path / "mine.txt").read_text() == "someone's file"
