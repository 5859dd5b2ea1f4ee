"""Metrics facade: EMF JSON field by field, the CloudWatch sink landing in moto, outages, bounded queue."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import socket
import time

import boto3
import pytest
from botocore.config import Config
from moto import mock_aws

from runtime.observe.costs import compute_turn_cost
from runtime.observe.metrics import (
    CloudWatchMetrics,
    EmfMetrics,
    NullMetrics,
    ToolRecord,
    TurnRecord,
    make_metrics,
)

NS = "AgentKitTest"
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
HAIKU = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
NOW = float(int(time.time()))  # a fixed wall clock (EMF timestamps must be within 14 days)

MODEL_USAGE = {
    SONNET: {
        "inputTokens": 1200,
        "outputTokens": 350,
        "cacheReadInputTokens": 20_000,
        "cacheCreationInputTokens": 4000,
    },
    HAIKU: {"inputTokens": 100, "outputTokens": 10},
}


def _turn(**overrides: object) -> TurnRecord:
    fields: dict[str, object] = {
        "model": SONNET,
        "cost": compute_turn_cost(MODEL_USAGE, None, default_model=SONNET),
        "invocation_latency_ms": 812.5,
        "time_to_first_token_ms": 140.0,
        "session_id": "rt-session-0123456789-0123456789-abcdef",
        "caller": "octocat",
        "claude_session_id": "3c1e0c8e-0000-5000-8000-000000000001",
        "sdk_cost_usd": 0.02,
        "num_turns": 2,
        "subtype": "success",
    }
    fields.update(overrides)
    return TurnRecord(**fields)  # type: ignore[arg-type]


def _emf(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


# --- EMF -------------------------------------------------------------------------------------------------
def test_emf_turn_documents_field_by_field() -> None:
    out = io.StringIO()
    sink = make_metrics("emf", namespace=NS, agent="demo", emf_stream=out, now=lambda: NOW)
    assert isinstance(sink, EmfMetrics)
    sink.record_turn(_turn())
    docs = _emf(out)
    assert len(docs) == 2  # one per model
    main, haiku = docs
    assert main["_aws"]["Timestamp"] == int(NOW * 1000)
    (directive,) = main["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == NS
    assert directive["Dimensions"] == [["Agent", "Model"], ["Agent"]]
    assert directive["Metrics"] == [
        {"Name": "CostUSD", "Unit": "None"},
        {"Name": "InputTokens", "Unit": "Count"},
        {"Name": "OutputTokens", "Unit": "Count"},
        {"Name": "CacheReadTokens", "Unit": "Count"},
        {"Name": "CacheWriteTokens", "Unit": "Count"},
        {"Name": "Turns", "Unit": "Count"},
        {"Name": "InvocationLatencyMs", "Unit": "Milliseconds"},
        {"Name": "TimeToFirstTokenMs", "Unit": "Milliseconds"},
    ]
    assert main["Agent"] == "demo" and main["Model"] == SONNET
    assert main["CostUSD"] == [pytest.approx(0.032835)]
    assert main["InputTokens"] == [1200.0] and main["OutputTokens"] == [350.0]
    assert main["CacheReadTokens"] == [20000.0] and main["CacheWriteTokens"] == [4000.0]
    assert main["Turns"] == [1.0]
    assert main["InvocationLatencyMs"] == [812.5] and main["TimeToFirstTokenMs"] == [140.0]
    # high-cardinality ids are properties, not dimensions
    assert main["SessionId"] == "rt-session-0123456789-0123456789-abcdef"
    assert main["Caller"] == "octocat"
    assert main["ClaudeSessionId"].startswith("3c1e0c8e")
    assert main["SdkCostUSD"] == 0.02 and main["NumTurns"] == 2 and main["Subtype"] == "success"
    assert main["TurnCostUSD"] == pytest.approx(0.032835 + (100 * 1 + 10 * 5) * 1.1 / 1e6)
    for doc in docs:
        dims = doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
        assert {d for ds in dims for d in ds} <= {"Agent", "Model"}
    # second model: tokens and cost, no turn-level metrics
    names = [m["Name"] for m in haiku["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
    assert names == ["CostUSD", "InputTokens", "OutputTokens", "CacheReadTokens", "CacheWriteTokens"]
    assert haiku["Model"] == HAIKU and haiku["CostUSD"] == [pytest.approx(165e-6)]
    assert "SessionId" not in haiku


def test_emf_unknown_model_is_never_free() -> None:
    # No price in the table and no figure from the CLI: the turn is charged at the table's dearest rates.
    out = io.StringIO()
    sink = EmfMetrics(namespace=NS, agent="demo", stream=out, now=lambda: NOW)
    cost = compute_turn_cost({"mystery-model": {"inputTokens": 7}}, None, default_model="mystery-model")
    sink.record_turn(_turn(model="mystery-model", cost=cost, time_to_first_token_ms=None))
    (doc,) = _emf(out)
    names = [m["Name"] for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
    assert "CostUSD" in names and doc["CostUSD"][0] > 0 and "TimeToFirstTokenMs" not in names
    assert doc["InputTokens"] == [7.0]
    assert doc["UnknownModels"] == ["mystery-model"]


def test_emf_tool_and_event_documents() -> None:
    out = io.StringIO()
    sink = EmfMetrics(namespace=NS, agent="demo", stream=out, now=lambda: NOW)
    sink.record_tool(
        ToolRecord(tool="Bash", outcome="error", latency_ms=12.0, session_id="s1", tool_use_id="tu1")
    )
    sink.record_tool(ToolRecord(tool="mcp__tools__lookup", outcome="denied", session_id="s1"))
    sink.record_event(
        "InvocationErrors", dimensions={"ErrorCode": "turn_timeout"}, properties={"SessionId": "s1"}
    )
    sink.record_event("SessionResumed")
    tool, denied, error, resumed = _emf(out)
    assert tool["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Agent", "Tool"], ["Agent"]]
    assert tool["Tool"] == "Bash"
    assert (tool["ToolCalls"], tool["ToolErrors"], tool["ToolLatencyMs"]) == ([1.0], [1.0], [12.0])
    assert tool["ToolUseId"] == "tu1" and tool["SessionId"] == "s1"
    assert [m["Name"] for m in denied["_aws"]["CloudWatchMetrics"][0]["Metrics"]] == ["ToolDenied"]
    assert error["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Agent", "ErrorCode"], ["Agent"]]
    assert error["ErrorCode"] == "turn_timeout" and error["InvocationErrors"] == [1.0]
    assert resumed["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Agent"]]


def test_emf_defaults_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    make_metrics("emf", namespace=NS, agent="demo").record_event("BudgetExceeded")
    doc = json.loads(capsys.readouterr().out)
    assert doc["BudgetExceeded"] == [1.0]


def test_events_reject_high_cardinality_dimensions() -> None:
    sink = EmfMetrics(namespace=NS, agent="demo", stream=io.StringIO())
    with pytest.raises(ValueError, match="low-cardinality"):
        sink.record_event("InvocationErrors", dimensions={"SessionId": "abc"})
    with pytest.raises(ValueError, match="unknown metric event"):
        sink.record_event("Whatever")
    with pytest.raises(ValueError, match="unknown metric event"):
        NullMetrics().record_event("Whatever")


def test_emf_broken_stream_never_raises() -> None:
    class Broken(io.StringIO):
        def write(self, s: str) -> int:
            raise OSError("disk full")

    sink = EmfMetrics(namespace=NS, agent="demo", stream=Broken())
    sink.record_turn(_turn())  # no exception
    assert sink.stats["emit_errors"] == 1


def test_make_metrics_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="emf, cloudwatch, off"):
        make_metrics("prometheus", agent="demo")
    assert isinstance(make_metrics("OFF", agent="demo"), NullMetrics)


# --- CloudWatch ------------------------------------------------------------------------------------------
@pytest.fixture
def cloudwatch(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield boto3.client("cloudwatch", region_name="us-east-1")


def _sum(client, name: str, dims: dict[str, str]) -> tuple[float, float]:
    resp = client.get_metric_statistics(
        Namespace=NS,
        MetricName=name,
        Dimensions=[{"Name": k, "Value": v} for k, v in dims.items()],
        StartTime=dt.datetime.fromtimestamp(NOW - 600, tz=dt.UTC),
        EndTime=dt.datetime.fromtimestamp(NOW + 600, tz=dt.UTC),
        Period=3600,
        Statistics=["Sum", "SampleCount"],
    )
    points = resp["Datapoints"]
    return (sum(p["Sum"] for p in points), sum(p["SampleCount"] for p in points))


def _exact_sum(client, name: str, dims: dict[str, str]) -> float:
    resp = client.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "q",
                "MetricStat": {
                    "Metric": {
                        "Namespace": NS,
                        "MetricName": name,
                        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
                    },
                    "Period": 3600,
                    "Stat": "Sum",
                },
            }
        ],
        StartTime=dt.datetime.fromtimestamp(NOW - 600, tz=dt.UTC),
        EndTime=dt.datetime.fromtimestamp(NOW + 600, tz=dt.UTC),
    )
    return sum(resp["MetricDataResults"][0]["Values"])


def test_cloudwatch_sink_lands_every_metric_in_moto(cloudwatch) -> None:
    async def run() -> CloudWatchMetrics:
        sink = make_metrics(
            "cloudwatch", namespace=NS, agent="demo", cloudwatch_client=cloudwatch, now=lambda: NOW
        )
        assert isinstance(sink, CloudWatchMetrics)
        sink.record_turn(_turn())
        sink.record_turn(_turn(invocation_latency_ms=100.0))
        sink.record_tool(ToolRecord(tool="Bash", outcome="ok", latency_ms=5.0))
        sink.record_tool(ToolRecord(tool="Bash", outcome="error", latency_ms=7.0))
        sink.record_tool(ToolRecord(tool="Write", outcome="denied"))
        for name, dims in [
            ("BudgetExceeded", None),
            ("InvocationErrors", {"ErrorCode": "agent_process_error"}),
            ("SessionResumed", None),
            ("SessionStoreErrors", None),
        ]:
            sink.record_event(name, dimensions=dims)
        await sink.close()
        return sink

    sink = asyncio.run(run())
    assert sink.stats["failed_batches"] == 0 and sink.pending == 0
    assert sink.stats["sent"] > 0
    by_model = {"Agent": "demo", "Model": SONNET}
    assert _sum(cloudwatch, "CostUSD", by_model)[0] == pytest.approx(2 * 0.032835)
    assert _sum(cloudwatch, "InputTokens", by_model) == (2400.0, 2.0)
    assert _sum(cloudwatch, "OutputTokens", by_model)[0] == 700.0
    assert _sum(cloudwatch, "CacheReadTokens", by_model)[0] == 40_000.0
    assert _sum(cloudwatch, "CacheWriteTokens", by_model)[0] == 8000.0
    assert _sum(cloudwatch, "Turns", by_model) == (2.0, 2.0)
    assert _sum(cloudwatch, "InvocationLatencyMs", by_model)[0] == 912.5
    assert _sum(cloudwatch, "TimeToFirstTokenMs", by_model)[0] == 280.0
    assert _sum(cloudwatch, "CostUSD", {"Agent": "demo", "Model": HAIKU})[0] == pytest.approx(2 * 165e-6)
    # roll-up over models (exact dimension match; moto's get_metric_statistics matches subsets)
    assert _exact_sum(cloudwatch, "InputTokens", {"Agent": "demo"}) == 2600.0
    assert _exact_sum(cloudwatch, "Turns", {"Agent": "demo"}) == 2.0
    bash = {"Agent": "demo", "Tool": "Bash"}
    assert _sum(cloudwatch, "ToolCalls", bash)[0] == 2.0
    assert _sum(cloudwatch, "ToolErrors", bash)[0] == 1.0
    assert _sum(cloudwatch, "ToolLatencyMs", bash) == (12.0, 2.0)
    assert _sum(cloudwatch, "ToolDenied", {"Agent": "demo", "Tool": "Write"})[0] == 1.0
    assert _sum(cloudwatch, "ToolCalls", {"Agent": "demo", "Tool": "Write"})[0] == 0.0
    assert (
        _sum(cloudwatch, "InvocationErrors", {"Agent": "demo", "ErrorCode": "agent_process_error"})[0] == 1.0
    )
    assert _exact_sum(cloudwatch, "InvocationErrors", {"Agent": "demo"}) == 1.0
    assert _exact_sum(cloudwatch, "ToolCalls", {"Agent": "demo"}) == 2.0
    for name in ("BudgetExceeded", "SessionResumed", "SessionStoreErrors"):
        assert _exact_sum(cloudwatch, name, {"Agent": "demo"}) == 1.0
    # no session id ever became a dimension
    dims = {d["Name"] for m in cloudwatch.list_metrics(Namespace=NS)["Metrics"] for d in m["Dimensions"]}
    assert dims <= {"Agent", "Model", "Tool", "ErrorCode"}


def test_cloudwatch_background_task_sends_without_close(cloudwatch) -> None:
    async def run() -> float:
        sink = CloudWatchMetrics(
            namespace=NS, agent="demo", client=cloudwatch, flush_interval_s=0.05, now=lambda: NOW
        )
        sink.record_event("SessionResumed")
        for _ in range(100):
            await asyncio.sleep(0.02)
            if sink.stats["sent"]:
                break
        sent = sink.stats["sent"]
        await sink.close()
        return sent

    assert asyncio.run(run()) == 1
    assert _sum(cloudwatch, "SessionResumed", {"Agent": "demo"})[0] == 1.0


def _dead_endpoint_client():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return boto3.client(
        "cloudwatch",
        region_name="us-east-1",
        endpoint_url=f"http://127.0.0.1:{port}",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=0.5, read_timeout=0.5),
    )


def test_cloudwatch_outage_is_counted_and_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    async def run() -> tuple[CloudWatchMetrics, float]:
        sink = CloudWatchMetrics(
            namespace=NS, agent="demo", client=_dead_endpoint_client(), flush_interval_s=0.01
        )
        started = time.perf_counter()
        for _ in range(50):
            sink.record_turn(_turn())
            sink.record_tool(ToolRecord(tool="Bash", outcome="ok", latency_ms=1.0))
        record_s = time.perf_counter() - started
        await sink.close()
        return sink, record_s

    sink, record_s = asyncio.run(run())
    assert sink.stats["failed_batches"] >= 1
    assert sink.stats["failed_samples"] > 0 and sink.stats["sent"] == 0
    assert "PutMetricData failed" in caplog.text
    assert record_s < 1.0  # recording never waited on the network (a generous bound, not a benchmark)


def test_cloudwatch_queue_is_bounded_and_counts_drops(cloudwatch) -> None:
    sink = CloudWatchMetrics(namespace=NS, agent="demo", client=cloudwatch, max_queue=10, now=lambda: NOW)
    # no running loop: nothing is sent, the buffer fills up to max_queue
    for _ in range(5):
        sink.record_tool(ToolRecord(tool="Bash", outcome="ok", latency_ms=1.0))  # 6 datums each (3 x 2 sets)
    assert sink.pending == 10
    assert sink.stats["dropped"] == 20
    asyncio.run(sink.close())
    assert sink.pending == 0 and sink.stats["sent"] == 10
    sink.record_event("SessionResumed")  # after close: dropped, not queued
    assert sink.pending == 0 and sink.stats["dropped"] == 21


def test_cloudwatch_options_are_validated(cloudwatch) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        CloudWatchMetrics(namespace=NS, agent="demo", client=cloudwatch, batch_size=5000)
    with pytest.raises(ValueError, match="namespace"):
        CloudWatchMetrics(namespace="", agent="demo", client=cloudwatch)


def test_cloudwatch_aggregates_samples_per_series_and_minute(cloudwatch) -> None:
    sink = CloudWatchMetrics(namespace=NS, agent="demo", client=cloudwatch, now=lambda: NOW)
    for i in range(100):
        sink.record_tool(ToolRecord(tool="Bash", outcome="ok", latency_ms=1.0 + i % 2))
    assert sink.pending == 600  # 3 metrics x 2 dimension sets x 100 calls
    asyncio.run(sink.close())
    assert sink.stats["sent"] == 600
    assert sink.stats["datums"] == 6  # one Values/Counts datum per metric and dimension set
    assert _sum(cloudwatch, "ToolLatencyMs", {"Agent": "demo", "Tool": "Bash"}) == (150.0, 100.0)
    assert _exact_sum(cloudwatch, "ToolCalls", {"Agent": "demo"}) == 100.0
