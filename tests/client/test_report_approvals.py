"""``agentkit report``'s approvals panel: requests, approvals, denials, expiries, withdrawals and the mean time to an
answer per tool, from the runtime's own metrics code (:meth:`runtime.observe.observer.Observer.approval`) through an
EMF file (local) and through CloudWatch (moto)."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from agentkit.cli import main
from runtime.approvals.records import ApprovalRecord
from runtime.observe.metrics import BaseMetrics, CloudWatchMetrics, EmfMetrics
from runtime.observe.observer import Observer
from tests.client.test_cli_aws import Factory
from tests.client.test_report_bill import RUNTIME_ARN, _figure

REGION = "us-east-1"
NOW = dt.datetime.now(dt.UTC).replace(minute=30, second=0, microsecond=0)
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def _record(n: int, tool: str) -> ApprovalRecord:
    return ApprovalRecord(
        id=f"apv-{n:020x}",
        session_id="rt-1",
        claude_session_id="c-1",
        tool=tool,
        input={},
        input_hash="sha256:x",
        rule="tools: x",
        cost_usd=0.0,
        created_at=0.0,
        expires_at=1.0,
    )


def _events(metrics: BaseMetrics) -> None:
    """Bash: 3 requests, 2 approved (after 60 and 180 s), 1 expired; WebFetch: 2 requests, 1 denied after 30 s and
    1 withdrawn (its job was stopped: not an answer, so not in the mean)."""
    observer = Observer(metrics=metrics, model=MODEL)
    for n in range(3):
        observer.approval("requested", _record(n, "Bash"))
    observer.approval("approved", _record(0, "Bash"), wait_s=60)
    observer.approval("approved", _record(1, "Bash"), wait_s=180)
    observer.approval("used", _record(1, "Bash"))  # a span, no metric
    observer.approval("expired", _record(2, "Bash"))
    observer.approval("requested", _record(3, "WebFetch"))
    observer.approval("denied", _record(3, "WebFetch"), wait_s=30)
    observer.approval("requested", _record(4, "WebFetch"))
    observer.approval("withdrawn", _record(4, "WebFetch"))


def _check(summary: dict[str, Any]) -> None:
    bash, fetch = summary["approvals"]["Bash"], summary["approvals"]["WebFetch"]
    assert (bash["requested"], bash["approved"], bash["denied"], bash["expired"], bash["withdrawn"]) == (
        3,
        2,
        0,
        1,
        0,
    )
    assert bash["mean_decision_s"] == pytest.approx(120)
    assert (fetch["requested"], fetch["denied"], fetch["withdrawn"], fetch["mean_decision_s"]) == (
        2,
        1,
        1,
        pytest.approx(30),
    )


def test_local_report_counts_approvals_per_tool(tmp_path: Path) -> None:
    emf = tmp_path / "metrics.emf.jsonl"
    with emf.open("w") as stream:
        _events(
            EmfMetrics(namespace="AgentCoreClaudeKit", agent="agentkit", stream=stream, now=NOW.timestamp)
        )
    out_html, out = tmp_path / "r.html", io.StringIO()
    code = main(
        ["report", "--emf", str(emf), "--out", str(out_html), "--output", "json"], stdout=out, now=lambda: NOW
    )
    assert code == 0
    _check(json.loads(out.getvalue()))
    html = out_html.read_text()
    assert _figure(html, "expired:Bash") == 1 and _figure(html, "mean_decision_s:Bash") == pytest.approx(120)
    assert _figure(html, "withdrawn:WebFetch") == 1 and _figure(html, "withdrawn:Bash") == 0
    assert "<th class='n'>withdrawn</th>" in html
    assert "2 min" in html


def test_without_approvals_the_panel_says_so(tmp_path: Path) -> None:
    emf = tmp_path / "metrics.emf.jsonl"
    emf.write_text("")
    out_html = tmp_path / "r.html"
    assert (
        main(["report", "--emf", str(emf), "--out", str(out_html)], stdout=io.StringIO(), now=lambda: NOW)
        == 0
    )
    assert "No approval requests in this window" in out_html.read_text()


@mock_aws
def test_deployed_report_reads_approvals_from_cloudwatch(tmp_path: Path) -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)

    async def write() -> None:
        sink = CloudWatchMetrics(
            namespace="AgentCoreClaudeKit", agent="agentkit", client=cloudwatch, now=NOW.timestamp
        )
        _events(sink)
        await sink.close()

    asyncio.run(write())
    out, out_html = io.StringIO(), tmp_path / "r.html"
    code = main(
        [
            "report",
            "--runtime-arn",
            RUNTIME_ARN,
            "--days",
            "1",
            "--out",
            str(out_html),
            "--output",
            "json",
        ],
        client_factory=Factory(cloudwatch=cloudwatch, logs=boto3.client("logs", region_name=REGION)),
        stdout=out,
        now=lambda: NOW,
    )
    assert code == 0
    _check(json.loads(out.getvalue()))
    assert _figure(out_html.read_text(), "withdrawn:WebFetch") == 1
