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


def _demo(
    *argv: str, env: dict[str, str] | None = None, timeout: int = 240
) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, str(DEMO), "--skip-synth", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_the_demo_runs_your_agent_directory_and_shows_its_tool_called(tmp_path: Path) -> None:
    from harness.custom_agent import GATEWAY_TOOL, SDK_TOOL, write_custom_agent

    agent = write_custom_agent(tmp_path / "team-repo")
    run = _demo("--dir", str(tmp_path / "demo"), env={"AGENTKIT_AGENT_DIR": str(agent)})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"→ tool {SDK_TOOL}(" in run.stdout and "← ok: queue" in run.stdout
    assert "Three invoices are overdue" not in run.stdout  # none of the sample's scripted answers
    # the Gateway tool, served from the directory's own Lambda by the gateway stand-in
    run = _demo("--dir", str(tmp_path / "demo2"), "--agent-dir", str(agent), "--prefer-tool", "get_ticket")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"→ tool {GATEWAY_TOOL}(" in run.stdout and "platform-team" in run.stdout


def test_the_demo_fails_when_the_agent_has_no_such_tool(tmp_path: Path) -> None:
    agent_file = tmp_path / "my-agent.json"
    agent_file.write_text('{"include_sample_tools": false}')
    run = _demo("--dir", str(tmp_path / "demo"), env={"AGENTKIT_AGENT_FILE": str(agent_file)}, timeout=60)
    assert run.returncode != 0 and "has no tool to show" in run.stderr
    # a tool named but not there: the turn runs, the tool is not called, the demo says so and fails
    run = _demo("--dir", str(tmp_path / "demo"), "--prefer-tool", "mcp__kit__no_such_tool")
    assert run.returncode != 0, run.stdout[-2000:]
    assert "did not call mcp__kit__no_such_tool" in run.stderr
    assert "Three invoices are overdue" not in run.stdout


def test_two_demos_at_once_keep_their_own_files(tmp_path: Path) -> None:
    import fcntl

    out_dir = tmp_path / "demo"
    with open(tmp_path / ".demo.lock", "w") as held:  # as a demo that is running holds it
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        (out_dir).mkdir()
        (out_dir / ".agentkit-demo").write_text("")
        (out_dir / "metrics.emf.jsonl").write_text("the running demo's metrics\n")
        run = _demo("--dir", str(out_dir))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (out_dir / "metrics.emf.jsonl").read_text() == "the running demo's metrics\n"
    (other,) = tmp_path.glob("demo-*")
    assert f"another demo is using {out_dir}" in run.stdout and (other / "report.html").is_file()
