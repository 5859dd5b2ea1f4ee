"""``make webhook-demo`` (``scripts/webhook_demo.py``): a signed issue comment goes through the real receiver,
worker, runtime and reporter, and the user is shown the receiver's answer, the progress comment, the diff and the
draft pull request, with exit status 0. The script starts and stops everything itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "scripts" / "webhook_demo.py"

pytestmark = pytest.mark.timeout(180)


def test_the_webhook_demo_shows_the_issue_becoming_a_draft_pull_request(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(DEMO), "--keep", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert "receiver answered 202" in out and '"status": "queued"' in out
    assert "progress comment on #7:" in out and "> Working on it" in out
    assert "tests/test_calc.py on main: FAILS" in out
    # The diff the pull request's branch carries, exactly the fix.
    diff = out[out.index("--- a/src/calc.py") :]
    assert diff.splitlines()[:6] == [
        "--- a/src/calc.py",
        "+++ b/src/calc.py",
        "@@ -1,2 +1,2 @@",
        " def add(a, b):",
        "-    return a - b",
        "+    return a + b",
    ]
    assert "tests/test_calc.py on the pull request's branch: passes" in out
    assert "draft PR #1 opened: Agent fix for #7: add() returns the wrong sum" in out
    assert "**Draft pull request:** https://github.example/octo/calc/pull/1" in out
    # The Lambdas' EMF lines went to their log, not into the story; the runtime's log is kept too.
    assert '"_aws"' not in out and '"PullRequestsOpened"' in (tmp_path / "lambdas.log").read_text()
    assert (tmp_path / "server.log").stat().st_size > 0
    # The webhook token never reached the runtime's side, here as in the tests of the flow.
    assert "ghp_demo_token" not in (tmp_path / "server.log").read_text()
