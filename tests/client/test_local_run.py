"""The client against the REAL runtime (``python -m runtime``, real SDK, fake Claude CLI) on loopback:
``sessions stop --local``, and ``cost --local`` / ``report`` reading the EMF and span files the run wrote.

The figures the client derives from the files are checked against what the runtime itself replied
(``cost_usd`` and ``usage`` of each turn's result), so the two ends of the EMF contract cannot drift apart.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentkit.cli import main
from harness.cli import write_fake_cli
from harness.runtime_server import ROOT, RuntimeServer

S1 = "agentkit-local-run-0001-aaaaaaaaaaaaaaaa"
S2 = "agentkit-local-run-0002-bbbbbbbbbbbbbbbb"


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("local-run")
    (tmp / "workspace").mkdir()
    (tmp / "workspace" / "notes.txt").write_text("remember the milk\n")
    files = {"emf": tmp / "metrics.emf.jsonl", "spans": tmp / "spans.jsonl"}
    env = {
        "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp)),
        "AGENTKIT_STATE_DIR": str(tmp / "state"),
        "AGENTKIT_WORKSPACE": str(tmp / "workspace"),
        "AGENTKIT_METRICS": "emf",
        "AGENTKIT_EMF_FILE": str(files["emf"]),
        "AGENTKIT_SPANS_FILE": str(files["spans"]),
    }
    server = RuntimeServer(env=env, log_path=tmp / "server.log").start()
    yield {"url": f"http://127.0.0.1:{server.port}", "tmp": tmp, **files}
    server.stop()


def _invoke_json(url: str, session: str, prompt: str) -> list[dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["invoke", "--local", url, "--session", session, "--output", "json", prompt], stdout=out, stderr=err
    )
    assert code == 0, err.getvalue()
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_python_m_runtime_help_prints_help_and_serves_nothing() -> None:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "runtime", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m runtime")
    assert "AGENTKIT_PORT" in proc.stdout and "AGENTKIT_SPANS_FILE" in proc.stdout
    assert time.monotonic() - started < 30  # it returned: no server was started


@pytest.mark.timeout(120)
def test_sessions_stop_local_ends_a_running_turn_and_the_session_resumes(local_run: dict[str, Any]) -> None:
    url = local_run["url"]
    session = "agentkit-local-stop-000000000000000000"
    result: dict[str, Any] = {}

    def slow_turn() -> None:
        out, err = io.StringIO(), io.StringIO()
        started = time.monotonic()
        result["code"] = main(
            ["invoke", "--local", url, "--session", session, "[slow:60000] take your time"],
            stdout=out,
            stderr=err,
        )
        result["seconds"], result["err"] = time.monotonic() - started, err.getvalue()

    worker = threading.Thread(target=slow_turn)
    worker.start()
    deadline, code, err = time.monotonic() + 30, None, ""
    while time.monotonic() < deadline:  # until the turn's session is warm in the runtime
        out_buf, err_buf = io.StringIO(), io.StringIO()
        code = main(
            ["sessions", "stop", session, "--local", url, "--output", "json"], stdout=out_buf, stderr=err_buf
        )
        err = err_buf.getvalue()
        assert code == 0, err  # idempotent: a session not (yet) running is "already stopped", exit 0
        answer = json.loads(out_buf.getvalue())
        if answer["stopped"]:
            break
        assert answer["already_stopped"] is True and "session_not_found" in answer["detail"], answer
        time.sleep(0.2)
    assert code == 0 and answer["stopped"] is True, err
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert result["code"] != 0 and result["seconds"] < 40, result  # ended by the stop, not after 60 s
    assert "shutting_down" in result["err"]

    out_buf = io.StringIO()
    assert main(["sessions", "stop", session, "--local", url], stdout=out_buf) == 0  # nothing left to stop
    assert f"session {session} was not running" in out_buf.getvalue()
    events = _invoke_json(url, session, "are you still there?")  # the session is usable again
    assert events[-1]["type"] == "result" and events[-1]["session_id"] == session


def _invocation_spans(path: Path, session: str) -> int:
    """How many finished ``invoke_agent`` spans of ``session`` the spans file holds."""
    if not path.exists():
        return 0
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sum(
        1
        for r in records
        if r["name"].startswith("invoke_agent") and session in json.dumps(r.get("attributes", {}))
    )


@pytest.mark.timeout(120)
def test_cost_and_report_from_the_files_of_a_real_local_run(
    local_run: dict[str, Any], tmp_path: Path
) -> None:
    url = local_run["url"]
    replies = {
        S1: [_invoke_json(url, S1, "first [read:notes.txt]")[-1], _invoke_json(url, S1, "second")[-1]],
        S2: [_invoke_json(url, S2, "third [bash:git log]")[-1]],
    }
    # Spans are written as they end, the invocation's after its post-reply work: wait for both of S1's.
    deadline = time.monotonic() + 20
    while _invocation_spans(local_run["spans"], S1) < 2:
        assert time.monotonic() < deadline, "S1's invocation spans were never written"
        time.sleep(0.05)
    expected = {s: sum(r["cost_usd"] for r in results) for s, results in replies.items()}
    assert all(v > 0 for v in expected.values())

    out = io.StringIO()
    assert (
        main(["cost", "--local", str(local_run["emf"]), "--by", "session", "--output", "json"], stdout=out)
        == 0
    )
    data = json.loads(out.getvalue())
    by_session = {row["key"]: row for row in data["rows"] if row["key"] in expected}
    for session, cost in expected.items():
        assert by_session[session]["cost_usd"] == pytest.approx(cost, abs=1e-6)
        usage = [r["usage"] for r in replies[session]]
        assert by_session[session]["tokens"]["input"] == sum(u["input_tokens"] for u in usage)
        assert by_session[session]["tokens"]["output"] == sum(u["output_tokens"] for u in usage)
        assert by_session[session]["tokens"]["cache_read"] == sum(u["cache_read_input_tokens"] for u in usage)

    out = io.StringIO()
    report_path = tmp_path / "report.html"
    argv = ["report", "--emf", str(local_run["emf"]), "--spans", str(local_run["spans"]), "--session", S1]
    assert main([*argv, "--out", str(report_path)], stdout=out) == 0
    assert out.getvalue().strip() == str(report_path.resolve())
    html = report_path.read_text()
    value = re.search(rf'data-metric="session_cost:{S1}" data-value="([^"]+)"', html)
    assert value and float(value.group(1)) == pytest.approx(expected[S1], abs=1e-6)
    rows = re.findall(r'<g class="span" data-name="([^"]+)" data-depth="(\d)"', html)
    names = [(name.split(" ")[0], int(depth)) for name, depth in rows]
    # the session's two invocations, each invocation → turn, the first turn's Read tool call under its turn
    assert names.count(("invoke_agent", 0)) == 2 and names.count(("chat", 1)) == 2
    assert ("execute_tool", 2) in names
    assert "<script" not in html and "http://" not in html and "https://" not in html
