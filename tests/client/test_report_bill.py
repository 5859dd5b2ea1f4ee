"""``agentkit report``'s bill panels: cost per day in parts (model, Runtime compute, Memory) and the webhook's
pull requests, patches and stops per tracker with the cost per pull request; absent data says so.

Local documents come from the real emitters: the runtime's EMF sink for turns and Memory usage, the webhook's
``TrackerMetrics`` (Powertools EMF) for its delivery metrics. Deployed figures are written into moto.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import io
import json
import re
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from agentkit.cli import main
from agentkit.data import prices as client_prices
from runtime.observe.costs import compute_turn_cost
from runtime.observe.metrics import CloudWatchMetrics, EmfMetrics, TurnRecord
from tests.client.test_cli_aws import Factory
from webhook.webhook_metrics import TrackerMetrics

REGION = "us-east-1"
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
RUNTIME_ARN = f"arn:aws:bedrock-agentcore:{REGION}:123456789012:runtime/agentkit_dev-AbCdEf1234"
PRICE = client_prices.AGENTCORE_PRICES[REGION]
NOW = dt.datetime.now(dt.UTC).replace(minute=30, second=0, microsecond=0)
#: tracker → (pull requests opened, patches applied, stops, cost of each pull request)
DELIVERY = {"github": (3, 4, 1, [0.30, 0.50, 0.10]), "gitlab": (0, 1, 2, [])}


def _webhook_lines() -> str:
    """What the webhook Lambdas print: one Powertools EMF line per metric."""
    out = io.StringIO()
    metrics = TrackerMetrics(service="agentkit-webhook", namespace="AgentCoreClaudeKit")
    with contextlib.redirect_stdout(out):
        for tracker, (opened, patches, stops, costs) in DELIVERY.items():
            for _ in range(opened):
                metrics.emit("PullRequestsOpened", tracker)
            for _ in range(patches):
                metrics.emit("PatchesApplied", tracker)
            for _ in range(stops):
                metrics.emit("Stops", tracker)
            for cost in costs:
                metrics.emit("PullRequestCostUSD", tracker, cost)
    return out.getvalue()


def _figure(html: str, metric: str) -> float:
    match = re.search(rf"data-metric='{re.escape(metric)}' data-value='([^']+)'", html)
    assert match, metric
    return float(match.group(1))


def test_local_report_shows_cost_in_parts_and_the_webhooks_delivery(tmp_path: Path) -> None:
    emf = tmp_path / "metrics.emf.jsonl"
    day1, day2 = NOW - dt.timedelta(days=1), NOW
    model = {}
    with emf.open("w") as stream:
        for when, session, events in ((day1, "rt-1", 6), (day2, "rt-2", 2)):
            sink = EmfMetrics(
                namespace="AgentCoreClaudeKit", agent="agentkit", stream=stream, now=when.timestamp
            )
            cost = compute_turn_cost(
                {SONNET: {"inputTokens": 50_000, "outputTokens": 5_000}}, None, default_model=SONNET
            )
            model[f"{when:%Y-%m-%d}"] = cost.total_cost_usd
            sink.record_turn(
                TurnRecord(
                    model=SONNET,
                    cost=cost,
                    invocation_latency_ms=5.0,
                    session_id=session,
                    claude_session_id=f"c-{session}",
                )
            )
            for _ in range(events):
                sink.record_event("MemoryEventsWritten", properties={"ClaudeSessionId": f"c-{session}"})
        stream.write(_webhook_lines())
    out_html, out = tmp_path / "r.html", io.StringIO()
    assert (
        main(
            ["report", "--emf", str(emf), "--out", str(out_html), "--output", "json"],
            stdout=out,
            now=lambda: NOW,
        )
        == 0
    )
    html = out_html.read_text()
    summary = json.loads(out.getvalue())

    parts = {p["start"][:10]: p for p in summary["cost_parts"]}
    assert set(parts) == set(model)
    day = f"{day1:%Y-%m-%d}"
    assert parts[day]["model_usd"] == pytest.approx(model[day])
    assert parts[day]["memory_usd"] == pytest.approx(6 * PRICE.memory_event)
    assert parts[day]["compute_usd"] is None  # a local run has no AgentCore compute
    assert _figure(html, f"memory_usd:{day}") == pytest.approx(6 * PRICE.memory_event)
    assert _figure(html, f"total_usd:{day}") == pytest.approx(model[day] + 6 * PRICE.memory_event)
    assert "not measured" in html
    assert client_prices.AGENTCORE_PRICES_AS_OF in html and client_prices.MODEL_PRICES_AS_OF in html

    github = summary["delivery"]["github"]
    assert (github["pull_requests"], github["patches"], github["stops"]) == (3, 4, 1)
    assert github["cost_per_pull_request_usd"] == pytest.approx(0.9 / 3)
    assert summary["delivery"]["gitlab"]["cost_per_pull_request_usd"] is None  # opened none
    assert _figure(html, "stops:gitlab") == 2
    assert _figure(html, "cost_per_pull_request:github") == pytest.approx(0.3)


def test_without_webhook_data_the_panel_says_so(tmp_path: Path) -> None:
    emf = tmp_path / "metrics.emf.jsonl"
    with emf.open("w") as stream:
        sink = EmfMetrics(namespace="AgentCoreClaudeKit", agent="agentkit", stream=stream, now=NOW.timestamp)
        cost = compute_turn_cost({SONNET: {"inputTokens": 10, "outputTokens": 1}}, None, default_model=SONNET)
        sink.record_turn(TurnRecord(model=SONNET, cost=cost, invocation_latency_ms=5.0))
    out_html = tmp_path / "r.html"
    assert (
        main(["report", "--emf", str(emf), "--out", str(out_html)], stdout=io.StringIO(), now=lambda: NOW)
        == 0
    )
    html = out_html.read_text()
    assert "No webhook delivery data in this window" in html


@mock_aws
def test_deployed_report_adds_the_runtimes_compute_and_reads_the_webhooks_metrics(tmp_path: Path) -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    cost = compute_turn_cost(
        {SONNET: {"inputTokens": 100_000, "outputTokens": 10_000}}, None, default_model=SONNET
    )

    async def write() -> None:
        sink = CloudWatchMetrics(
            namespace="AgentCoreClaudeKit", agent="agentkit", client=cloudwatch, now=NOW.timestamp
        )
        sink.record_turn(TurnRecord(model=SONNET, cost=cost, invocation_latency_ms=900.0))
        for _ in range(10):
            sink.record_event("MemoryEventsWritten", properties={"ClaudeSessionId": "c"})
        await sink.close()

    asyncio.run(write())
    cloudwatch.put_metric_data(
        Namespace="AWS/Bedrock-AgentCore",
        MetricData=[
            {
                "MetricName": name,
                "Dimensions": [
                    {"Name": "Service", "Value": "AgentCore.Runtime"},
                    {"Name": "Resource", "Value": RUNTIME_ARN},
                ],
                "Value": value,
                "Timestamp": NOW,
            }
            for name, value in (("CPUUsed-vCPUHours", 1.5), ("MemoryUsed-GBHours", 30.0))
        ],
    )
    service = [{"Name": "service", "Value": "agentkit-webhook"}]
    cloudwatch.put_metric_data(
        Namespace="AgentCoreClaudeKit",
        MetricData=[
            {
                "MetricName": name,
                "Dimensions": [*service, {"Name": "Tracker", "Value": "github"}],
                "Value": value,
                "Timestamp": NOW,
            }
            for name, value in (
                ("PullRequestsOpened", 2),
                ("PullRequestCostUSD", 0.8),
                ("Stops", 1),
                ("PatchesApplied", 2),
            )
        ],
    )
    logs = boto3.client("logs", region_name=REGION)
    out_html, out = tmp_path / "r.html", io.StringIO()
    code = main(
        [
            "report",
            "--runtime-arn",
            RUNTIME_ARN,
            "--qualifier",
            "dev",
            "--days",
            "1",
            "--out",
            str(out_html),
            "--output",
            "json",
        ],
        client_factory=Factory(cloudwatch=cloudwatch, logs=logs),
        stdout=out,
        now=lambda: NOW,
    )
    assert code == 0
    summary = json.loads(out.getvalue())
    (today,) = summary["cost_parts"]
    compute = 1.5 * PRICE.vcpu_hour + 30.0 * PRICE.gb_hour
    assert today["compute_usd"] == pytest.approx(compute)
    assert today["memory_events"] == 10
    assert today["total_usd"] == pytest.approx(cost.total_cost_usd + compute + 10 * PRICE.memory_event)
    assert summary["delivery"]["github"]["cost_per_pull_request_usd"] == pytest.approx(0.4)
    assert summary["delivery"]["github"]["stops"] == 1
    html = out_html.read_text()
    assert _figure(html, f"compute_usd:{NOW:%Y-%m-%d}") == pytest.approx(compute)
