"""``agentkit cost`` counts what AgentCore bills besides model tokens: Runtime compute (vended metrics per day,
USAGE_LOGS per session) and Memory (the runtime's own counts), priced with the kit's price table, and gates the
daily budget on the total.

The vended compute metrics are seeded into moto with the dimension sets AgentCore documents (``Service``,
``Service+Resource``, ``Service+Resource+Name``; AWS itself rejects PutMetricData into ``AWS/`` namespaces, moto
does not); the agent's own metrics are written by the RUNTIME's sinks. Logs Insights, which moto cannot run, goes
through ``Stubber``, so every request is checked against the real service model.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

from agentkit.cli import main
from agentkit.data import prices as client_prices
from agentkit.data.agentcore_usage import TURN_COST_QUERY, USAGE_QUERY
from runtime.observe.costs import compute_turn_cost
from runtime.observe.metrics import CloudWatchMetrics, EmfMetrics, TurnRecord
from tests.client.test_cli_aws import Factory

REGION = "us-east-1"
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
RUNTIME_ARN = f"arn:aws:bedrock-agentcore:{REGION}:123456789012:runtime/agentkit_dev-AbCdEf1234"
OTHER_ARN = f"arn:aws:bedrock-agentcore:{REGION}:123456789012:runtime/someone_else-ZyXwVu9876"
NOW = dt.datetime.now(dt.UTC).replace(minute=30, second=0, microsecond=0)
PRICE = client_prices.AGENTCORE_PRICES[REGION]


def _seed_compute(cloudwatch: Any, when: dt.datetime, *, vcpu: float, gb: float) -> None:
    """The runtime's compute as AgentCore publishes it, once per documented dimension set, plus another
    runtime's: only this runtime's ``Service+Resource`` figure may be counted, and only once."""
    sets = [
        [("Service", "AgentCore.Runtime")],
        [("Service", "AgentCore.Runtime"), ("Resource", RUNTIME_ARN)],
        [("Service", "AgentCore.Runtime"), ("Resource", RUNTIME_ARN), ("Name", "agentkit_dev::dev")],
    ]
    data = []
    for dims in sets:
        for metric, value in (("CPUUsed-vCPUHours", vcpu), ("MemoryUsed-GBHours", gb)):
            data.append(
                {
                    "MetricName": metric,
                    "Dimensions": [{"Name": k, "Value": v} for k, v in dims],
                    "Value": value,
                    "Timestamp": when,
                }
            )
    data.append(
        {
            "MetricName": "CPUUsed-vCPUHours",
            "Dimensions": [
                {"Name": "Service", "Value": "AgentCore.Runtime"},
                {"Name": "Resource", "Value": OTHER_ARN},
            ],
            "Value": 1000.0,
            "Timestamp": when,
        }
    )
    cloudwatch.put_metric_data(Namespace="AWS/Bedrock-AgentCore", MetricData=data)


def _runtime_turn_and_memory(cloudwatch: Any, when: dt.datetime, *, events: int, retrievals: int) -> float:
    """One turn and its Memory calls, written by the runtime's cloudwatch sink; returns the turn's cost."""
    cost = compute_turn_cost(
        {SONNET: {"inputTokens": 100_000, "outputTokens": 10_000}}, None, default_model=SONNET
    )

    async def write() -> None:
        sink = CloudWatchMetrics(
            namespace="AgentCoreClaudeKit", agent="agentkit", client=cloudwatch, now=when.timestamp
        )
        sink.record_turn(TurnRecord(model=SONNET, cost=cost, invocation_latency_ms=900.0))
        for _ in range(events):
            sink.record_event("MemoryEventsWritten", properties={"ClaudeSessionId": "c-1"})
        for _ in range(retrievals):
            sink.record_event("MemoryRetrievals", properties={"ClaudeSessionId": "c-1"})
        await sink.close()

    asyncio.run(write())
    return cost.total_cost_usd


@mock_aws
def test_the_days_total_is_model_plus_compute_plus_memory_and_the_budget_gates_on_it() -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    model = _runtime_turn_and_memory(cloudwatch, NOW, events=40, retrievals=8)
    _seed_compute(cloudwatch, NOW, vcpu=2.0, gb=40.0)
    compute = 2.0 * PRICE.vcpu_hour + 40.0 * PRICE.gb_hour
    memory = 40 * PRICE.memory_event + 8 * PRICE.memory_retrieval
    total = model + compute + memory
    # A budget the model alone stays under, the total does not.
    budget = model + (compute + memory) / 2
    out, err = io.StringIO(), io.StringIO()
    code = main(
        [
            "cost",
            "--days",
            "1",
            "--runtime-arn",
            RUNTIME_ARN,
            "--budget",
            f"{budget:.6f}",
            "--output",
            "json",
        ],
        client_factory=Factory(cloudwatch=cloudwatch),
        stdout=out,
        stderr=err,
        now=lambda: NOW,
    )
    data = json.loads(out.getvalue())
    (today,) = data["parts"]
    assert today["model_usd"] == pytest.approx(model)
    assert today["vcpu_hours"] == pytest.approx(2.0) and today["gb_hours"] == pytest.approx(40.0)
    assert today["compute_usd"] == pytest.approx(compute)
    assert (today["memory_events"], today["memory_retrievals"]) == (40, 8)
    assert today["memory_usd"] == pytest.approx(memory)
    assert data["total_usd"] == pytest.approx(total)
    assert data["budget"]["today_usd"] == pytest.approx(total)
    assert code == 3, err.getvalue()
    assert data["prices"]["agentcore"] == {
        "as_of": client_prices.AGENTCORE_PRICES_AS_OF,
        "source": client_prices.AGENTCORE_PRICES_SOURCE,
        "region": REGION,
        "checked_for_region": True,
    }


@mock_aws
def test_text_shows_the_parts_and_the_price_tables_date_and_source() -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    _runtime_turn_and_memory(cloudwatch, NOW - dt.timedelta(days=1), events=4, retrievals=0)
    _seed_compute(cloudwatch, NOW - dt.timedelta(days=1), vcpu=0.5, gb=10.0)
    out = io.StringIO()
    assert (
        main(
            ["cost", "--days", "2", "--runtime-arn", RUNTIME_ARN],
            client_factory=Factory(cloudwatch=cloudwatch),
            stdout=out,
            now=lambda: NOW,
        )
        == 0
    )
    text = out.getvalue()
    assert "Cost in parts" in text
    header = text.split("Cost in parts\n")[1].splitlines()[0]
    assert all(cell.strip() for cell in header.strip().split("  ") if cell), header  # every column is named
    assert header.split()[:2] == ["period", "sessions"], header
    compute = 0.5 * PRICE.vcpu_hour + 10.0 * PRICE.gb_hour
    (line,) = [
        ln
        for ln in text.split("Cost in parts")[1].splitlines()
        if ln.startswith((NOW - dt.timedelta(days=1)).strftime("%Y-%m-%d"))
    ]
    assert f"{compute:.4f}" in line and f"{4 * PRICE.memory_event:.4f}" in line
    assert client_prices.AGENTCORE_PRICES_AS_OF in text and client_prices.AGENTCORE_PRICES_SOURCE in text
    assert client_prices.MODEL_PRICES_AS_OF in text


@mock_aws
def test_without_a_runtime_compute_is_not_measured_rather_than_zero() -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    model = _runtime_turn_and_memory(cloudwatch, NOW, events=0, retrievals=0)
    out = io.StringIO()
    main(
        ["cost", "--days", "1", "--output", "json"],
        client_factory=Factory(cloudwatch=cloudwatch),
        stdout=out,
        now=lambda: NOW,
    )
    (today,) = json.loads(out.getvalue())["parts"]
    assert today["compute_usd"] is None and today["vcpu_hours"] is None
    assert today["total_usd"] == pytest.approx(model)


def test_the_usage_query_reads_the_fields_nested_as_delivered_and_flat_as_documented() -> None:
    for nested, flat in (
        ("attributes.session.id", "session.id"),
        ("metrics.agent.runtime.vcpu.hours.used", "agent.runtime.vcpu.hours.used"),
        ("metrics.agent.runtime.memory.gb_hours.used", "agent.runtime.memory.gb_hours.used"),
    ):
        assert f"coalesce(`{nested}`, `{flat}`)" in USAGE_QUERY


def test_a_region_without_checked_prices_says_so() -> None:
    prices, checked = client_prices.agentcore_prices("ap-south-2")
    assert not checked and prices == client_prices.AGENTCORE_PRICES[client_prices.AGENTCORE_REFERENCE_REGION]
    assert "unchecked for ap-south-2" in client_prices.footer("ap-south-2")


def _insights(
    logs: Any, stub: Stubber, *, group: str, query: str, rows: list[dict[str, str]], query_id: str
) -> None:
    stub.add_response(
        "start_query",
        {"queryId": query_id},
        {"logGroupName": group, "startTime": ANY, "endTime": ANY, "queryString": query},
    )
    stub.add_response("get_query_results", {"status": "Running", "results": []}, {"queryId": query_id})
    stub.add_response(
        "get_query_results",
        {
            "status": "Complete",
            "results": [[{"field": k, "value": v} for k, v in row.items()] for row in rows],
        },
        {"queryId": query_id},
    )


@mock_aws
def test_by_session_from_the_runtimes_usage_logs_and_turn_lines() -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    model = _runtime_turn_and_memory(cloudwatch, NOW, events=3, retrievals=0)
    _seed_compute(cloudwatch, NOW, vcpu=0.3, gb=6.0)
    logs = boto3.client("logs", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    day = NOW.strftime("%Y-%m-%d 00:00:00.000")
    stub = Stubber(logs)
    _insights(
        logs,
        stub,
        group="usage-group",
        query=USAGE_QUERY,
        query_id="q1",
        rows=[
            {"sid": "sess-a", "day": day, "vcpu_hours": "0.2", "gb_hours": "4"},
            {"sid": "sess-b", "day": day, "vcpu_hours": "0.1", "gb_hours": "2"},
        ],
    )
    _insights(
        logs,
        stub,
        group="/aws/bedrock-agentcore/runtimes/agentkit_dev-AbCdEf1234-dev",
        query=TURN_COST_QUERY,
        query_id="q2",
        rows=[{"sid": "sess-a", "day": day, "cost_usd": f"{model:.6f}"}],
    )
    out = io.StringIO()
    sleeps: list[float] = []
    with stub:
        code = main(
            [
                "cost",
                "--days",
                "1",
                "--by",
                "session",
                "--runtime-arn",
                RUNTIME_ARN,
                "--qualifier",
                "dev",
                "--usage-log-group",
                "usage-group",
                "--output",
                "json",
            ],
            client_factory=Factory(cloudwatch=cloudwatch, logs=logs),
            stdout=out,
            now=lambda: NOW,
            sleep=sleeps.append,
        )
        stub.assert_no_pending_responses()
    assert code == 0
    data = json.loads(out.getvalue())
    sessions = {s["key"]: s for s in data["sessions"]}
    assert sessions["sess-a"]["compute_usd"] == pytest.approx(0.2 * PRICE.vcpu_hour + 4 * PRICE.gb_hour)
    assert sessions["sess-a"]["model_usd"] == pytest.approx(model, abs=1e-6)
    assert sessions["sess-b"]["model_usd"] == 0.0 and sessions["sess-b"]["vcpu_hours"] == pytest.approx(0.1)
    assert all(s["memory_usd"] is None for s in sessions.values())  # the metric sink keeps no sessions
    (today,) = data["parts"]
    assert today["memory_events"] == 3 and today["vcpu_hours"] == pytest.approx(0.3)
    assert sleeps  # it waited for the queries, through the injected sleep


def test_by_session_from_a_local_run_counts_each_sessions_memory(tmp_path: Path) -> None:
    """A local run writes EMF: the Memory documents name the Claude session, the turn joins it to the runtime
    session."""
    emf = tmp_path / "metrics.emf.jsonl"
    with emf.open("w") as stream:
        sink = EmfMetrics(namespace="AgentCoreClaudeKit", agent="agentkit", stream=stream, now=NOW.timestamp)
        for runtime_session, claude_session, events in (("rt-a", "c-a", 5), ("rt-b", "c-b", 2)):
            cost = compute_turn_cost(
                {SONNET: {"inputTokens": 1000, "outputTokens": 100}}, None, default_model=SONNET
            )
            sink.record_turn(
                TurnRecord(
                    model=SONNET,
                    cost=cost,
                    invocation_latency_ms=10.0,
                    session_id=runtime_session,
                    claude_session_id=claude_session,
                )
            )
            for _ in range(events):
                sink.record_event("MemoryEventsWritten", properties={"ClaudeSessionId": claude_session})
        sink.record_event("MemoryRetrievals", properties={"ClaudeSessionId": "c-a"})
        asyncio.run(sink.close())
    out = io.StringIO()
    assert (
        main(
            ["cost", "--local", str(emf), "--by", "session", "--output", "json"], stdout=out, now=lambda: NOW
        )
        == 0
    )
    data = json.loads(out.getvalue())
    sessions = {s["key"]: s for s in data["sessions"]}
    assert (sessions["rt-a"]["memory_events"], sessions["rt-a"]["memory_retrievals"]) == (5, 1)
    assert sessions["rt-b"]["memory_events"] == 2
    assert sessions["rt-a"]["memory_usd"] == pytest.approx(5 * PRICE.memory_event + PRICE.memory_retrieval)
    assert all(s["compute_usd"] is None for s in sessions.values())  # nothing AgentCore ran locally
    (today,) = data["parts"]
    assert today["memory_events"] == 7
    assert data["total_usd"] == pytest.approx(today["model_usd"] + today["memory_usd"])


def test_a_local_run_without_agentcore_memory_shows_memory_as_not_measured(tmp_path: Path) -> None:
    """A SQLite-backed run writes no Memory documents: Memory is "n/a", not a $0.0000 line."""
    emf = tmp_path / "metrics.emf.jsonl"
    with emf.open("w") as stream:
        sink = EmfMetrics(namespace="AgentCoreClaudeKit", agent="agentkit", stream=stream, now=NOW.timestamp)
        cost = compute_turn_cost(
            {SONNET: {"inputTokens": 1000, "outputTokens": 100}}, None, default_model=SONNET
        )
        sink.record_turn(TurnRecord(model=SONNET, cost=cost, invocation_latency_ms=10.0, session_id="rt-a"))
        asyncio.run(sink.close())
    out = io.StringIO()
    assert main(["cost", "--local", str(emf), "--by", "session"], stdout=out, now=lambda: NOW) == 0
    parts = out.getvalue().split("Cost in parts")[1]
    assert "0.0000 " not in parts and parts.count("n/a") >= 4  # compute and Memory, session and period rows
