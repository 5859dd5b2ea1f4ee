"""``agentkit cost`` (budget, JSON, --by guard) and ``agentkit report`` from CloudWatch for a deployed agent.

Metrics are written by the RUNTIME's cloudwatch sink into moto; percentiles come from a Stubber (moto's
GetMetricData cannot compute pNN statistics), whose requests botocore validates against the service model.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import re
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

from agentkit.cli import main
from runtime.observe.costs import compute_turn_cost
from runtime.observe.metrics import CloudWatchMetrics, EmfMetrics, ToolRecord, TurnRecord
from runtime.observe.span_file import span_record
from tests.client.conftest import paginator_over
from tests.client.test_cli_aws import Factory

REGION = "us-east-1"
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
NOW = dt.datetime.now(dt.UTC).replace(minute=30, second=0, microsecond=0)


def _write_turns(cloudwatch: Any, turns: list[tuple[dt.datetime, int]]) -> list[float]:
    """Turns written by the runtime's cloudwatch sink; returns each turn's cost."""
    costs = []

    async def write() -> None:
        for when, tokens in turns:
            sink = CloudWatchMetrics(
                namespace="AgentCoreClaudeKit", agent="agentkit", client=cloudwatch, now=when.timestamp
            )
            cost = compute_turn_cost(
                {SONNET: {"inputTokens": tokens, "outputTokens": tokens // 10}}, None, default_model=SONNET
            )
            costs.append(cost.total_cost_usd)
            sink.record_turn(
                TurnRecord(
                    model=SONNET, cost=cost, invocation_latency_ms=1000.0, time_to_first_token_ms=100.0
                )
            )
            sink.record_tool(ToolRecord(tool="Read", outcome="error" if tokens % 2 else "ok", latency_ms=5.0))
            await sink.close()

    asyncio.run(write())
    return costs


RUNTIME_ARN = f"arn:aws:bedrock-agentcore:{REGION}:123456789012:runtime/agentkit_dev-AbCdEf1234"


def _describe_stack(stub: Stubber) -> None:
    """``DescribeStacks`` as the kit's stack answers it: the runtime, its stage endpoint, its USAGE_LOGS."""
    outputs = {
        "RuntimeArn": RUNTIME_ARN,
        "RuntimeEndpointArn": f"{RUNTIME_ARN}/runtime-endpoint/dev",
        "UsageLogGroup": "AgentKit-dev-AgentRuntimeUsageLogs1A2B3C4D-abc",
    }
    stub.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": "AgentKit-dev",
                    "CreationTime": NOW,
                    "StackStatus": "UPDATE_COMPLETE",
                    "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()],
                }
            ]
        },
        {"StackName": "AgentKit-dev"},
    )


def _stack_alarm_client(threshold_alarm: str) -> Any:
    cfn = boto3.client("cloudformation", region_name=REGION)
    stub = Stubber(cfn)
    _describe_stack(stub)
    stub.add_response(
        "list_stack_resources",
        {
            "StackResourceSummaries": [
                {
                    "LogicalResourceId": "DailyCostAlarm",
                    "PhysicalResourceId": threshold_alarm,
                    "ResourceType": "AWS::CloudWatch::Alarm",
                    "LastUpdatedTimestamp": NOW,
                    "ResourceStatus": "CREATE_COMPLETE",
                }
            ]
        },
        {"StackName": "AgentKit-dev"},
    )
    stub.activate()
    return cfn


@mock_aws
def test_cost_json_with_tokens_and_the_stacks_daily_budget() -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    today = _write_turns(
        cloudwatch, [(NOW - dt.timedelta(minutes=20), 1_000_000), (NOW - dt.timedelta(minutes=5), 500_000)]
    )
    yesterday = _write_turns(cloudwatch, [(NOW - dt.timedelta(days=1), 200_000)])
    cloudwatch.put_metric_alarm(
        AlarmName="agentkit-dev-daily-cost",
        Namespace="AgentCoreClaudeKit",
        MetricName="CostUSD",
        Statistic="Sum",
        Period=86400,
        EvaluationPeriods=1,
        Threshold=10.0,
        ComparisonOperator="GreaterThanThreshold",
    )
    factory = Factory(cloudwatch=cloudwatch, cloudformation=_stack_alarm_client("agentkit-dev-daily-cost"))
    out = io.StringIO()
    assert (
        main(
            ["cost", "--days", "2", "--stack", "AgentKit-dev", "--output", "json"],
            client_factory=factory,
            stdout=out,
            now=lambda: NOW,
        )
        == 0
    )
    data = json.loads(out.getvalue())
    assert data["total_usd"] == pytest.approx(sum(today) + sum(yesterday))
    assert data["tokens"]["input"] == 1_700_000 and data["tokens"]["output"] == 170_000
    assert data["budget"]["daily_usd"] == 10.0
    assert data["budget"]["today_usd"] == pytest.approx(sum(today))
    assert data["budget"]["used_percent"] == pytest.approx(100 * sum(today) / 10.0)


@mock_aws
def test_cost_text_hourly_with_a_budget_from_the_environment() -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    costs = _write_turns(cloudwatch, [(NOW - dt.timedelta(hours=2), 1_000_000), (NOW, 1_000_000)])
    out = io.StringIO()
    code = main(
        ["cost", "--days", "1", "--hourly"],
        client_factory=Factory(cloudwatch=cloudwatch),
        stdout=out,
        now=lambda: NOW,
        env={"AGENTKIT_DAILY_BUDGET_USD": "20"},
    )
    text = out.getvalue()
    assert code == 0
    model_table, parts = text.split("Cost in parts")
    expected = [(NOW - dt.timedelta(hours=2)).strftime("%H:00"), NOW.strftime("%H:00")]
    for section in (model_table, parts):  # tokens by model, then model + compute + memory per hour
        hours = [
            line.split()[1] for line in section.splitlines() if line.startswith(NOW.strftime("%Y-%m-%d"))
        ]
        assert hours == expected
    assert "n/a" in parts  # no runtime named: compute is not measured, not zero
    assert f"today: ${sum(costs):.4f} of the $20.00 daily budget ({100 * sum(costs) / 20:.1f} %)" in text


@mock_aws
def test_cost_over_the_daily_budget_exits_3_after_the_table() -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    costs = _write_turns(cloudwatch, [(NOW - dt.timedelta(hours=1), 1_000_000)])
    budget = sum(costs) / 1.73  # today's spend is 173 % of it
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["cost", "--days", "1", "--budget", f"{budget:.6f}"],
        client_factory=Factory(cloudwatch=cloudwatch),
        stdout=out,
        stderr=err,
        now=lambda: NOW,
    )
    assert code == 3
    assert "daily budget (173.0 %)" in out.getvalue()  # the table is still printed
    assert err.getvalue().startswith(f"agentkit: today's spend ${sum(costs):.4f} is over the")


@mock_aws
def test_cost_within_the_daily_budget_exits_0() -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    costs = _write_turns(cloudwatch, [(NOW - dt.timedelta(hours=1), 1_000_000)])
    err = io.StringIO()
    code = main(
        ["cost", "--days", "1", "--budget", f"{sum(costs) * 2:.6f}"],
        client_factory=Factory(cloudwatch=cloudwatch),
        stdout=io.StringIO(),
        stderr=err,
        now=lambda: NOW,
    )
    assert code == 0 and err.getvalue() == ""


def test_cost_by_session_needs_local_records() -> None:
    err = io.StringIO()
    assert main(["cost", "--by", "session"], stderr=err) == 2
    assert (
        err.getvalue().startswith("usage: agentkit cost")
        and "not CloudWatch metric dimensions" in err.getvalue()
    )


# ----------------------------------------------------------------------------------------- report (deployed)
def _percentile_cloudwatch(moto_cloudwatch: Any, values: dict[str, float]) -> Any:
    """moto for everything but the percentile query, which a Stubber answers (moto crashes on pNN)."""

    class Mixed:
        def __init__(self) -> None:
            self.stubbed = boto3.client("cloudwatch", region_name=REGION)
            self.stub = Stubber(self.stubbed)
            self.stub.add_response(
                "get_metric_data",
                {
                    "MetricDataResults": [
                        {
                            "Id": f"q{i}",
                            "Label": key,
                            "StatusCode": "Complete",
                            "Timestamps": [NOW],
                            "Values": [values[key]],
                        }
                        for i, key in enumerate(
                            (
                                "InvocationLatencyMs/p50",
                                "InvocationLatencyMs/p90",
                                "TimeToFirstTokenMs/p50",
                                "TimeToFirstTokenMs/p90",
                            )
                        )
                    ]
                },
                {"MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY},
            )
            self.stub.activate()
            self.percentile_requests: list[list[str]] = []

        def get_metric_data(self, **kwargs: Any) -> Any:
            stats = [q["MetricStat"]["Stat"] for q in kwargs["MetricDataQueries"]]
            if any(s.startswith("p") for s in stats):
                self.percentile_requests.append(
                    [
                        f"{q['MetricStat']['Metric']['MetricName']}/{q['MetricStat']['Stat']}"
                        for q in kwargs["MetricDataQueries"]
                    ]
                )
                return self.stubbed.get_metric_data(**kwargs)
            return moto_cloudwatch.get_metric_data(**kwargs)

        def get_paginator(self, name: str) -> Any:
            if (
                name == "get_metric_data"
            ):  # pages through this object, so percentile queries reach the Stubber
                return paginator_over(self.get_metric_data, moto_cloudwatch, "GetMetricData")
            return moto_cloudwatch.get_paginator(name)

        def __getattr__(self, name: str) -> Any:
            return getattr(moto_cloudwatch, name)

    return Mixed()


@mock_aws
def test_report_from_cloudwatch_logs_and_transaction_search(tmp_path: Path) -> None:
    moto_cw = boto3.client("cloudwatch", region_name=REGION)
    costs = _write_turns(
        moto_cw, [(NOW - dt.timedelta(hours=3), 1_000_000), (NOW - dt.timedelta(hours=1), 400_001)]
    )
    errors = {"model_error": 2, "turn_timeout": 1}

    async def write_errors() -> None:  # as the runtime's cloudwatch sink counts failed invocations
        sink = CloudWatchMetrics(
            namespace="AgentCoreClaudeKit",
            agent="agentkit",
            client=moto_cw,
            now=(NOW - dt.timedelta(hours=2)).timestamp,
        )
        for code, count in errors.items():
            for _ in range(count):
                sink.record_event("InvocationErrors", dimensions={"ErrorCode": code})
        await sink.close()

    asyncio.run(write_errors())
    arn = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/agentkit_dev-AbCdEfGhIj"
    group = "/aws/bedrock-agentcore/runtimes/agentkit_dev-AbCdEfGhIj-dev"
    logs = boto3.client("logs", region_name=REGION)
    for name in (group, "aws/spans"):
        logs.create_log_group(logGroupName=name)
        logs.create_log_stream(logGroupName=name, logStreamName="s")
    stream = io.StringIO()  # an EMF-writing stage: per-turn lines with session ids land in the runtime's logs
    emf = EmfMetrics(
        namespace="AgentCoreClaudeKit",
        agent="agentkit",
        stream=stream,
        now=(NOW - dt.timedelta(hours=1)).timestamp,
    )
    turn_costs = {
        "sess-top-0000000000000000000000000001": 0.75,
        "sess-low-0000000000000000000000000002": 0.25,
    }
    for session, usd in turn_costs.items():
        cost = compute_turn_cost({SONNET: {"inputTokens": int(usd / 3.3 * 1e6)}}, None, default_model=SONNET)
        emf.record_turn(
            TurnRecord(model=SONNET, cost=cost, invocation_latency_ms=1.0, session_id=session, caller="ci")
        )
        turn_costs[session] = cost.total_cost_usd
    ts = int((NOW - dt.timedelta(hours=1)).timestamp() * 1000)
    logs.put_log_events(
        logGroupName=group,
        logStreamName="s",
        logEvents=[{"timestamp": ts, "message": line} for line in stream.getvalue().splitlines()],
    )
    spans = _span_records("sess-top-0000000000000000000000000001", start_ns=ts * 1_000_000)
    logs.put_log_events(
        logGroupName="aws/spans",
        logStreamName="s",
        logEvents=[{"timestamp": ts, "message": json.dumps(r)} for r in spans],
    )

    cloudwatch = _percentile_cloudwatch(
        moto_cw,
        {
            "InvocationLatencyMs/p50": 1234.0,
            "InvocationLatencyMs/p90": 4321.0,
            "TimeToFirstTokenMs/p50": 210.0,
            "TimeToFirstTokenMs/p90": 650.0,
        },
    )
    factory = Factory(cloudwatch=cloudwatch, logs=logs)
    out_file, out = tmp_path / "deployed.html", io.StringIO()
    argv = [
        "report",
        "--runtime-arn",
        arn,
        "--qualifier",
        "dev",
        "--days",
        "1",
        "--out",
        str(out_file),
        "--output",
        "json",
    ]
    assert main(argv, client_factory=factory, stdout=out, now=lambda: NOW) == 0
    cloudwatch.stub.assert_no_pending_responses()
    assert cloudwatch.percentile_requests == [
        [
            "InvocationLatencyMs/p50",
            "InvocationLatencyMs/p90",
            "TimeToFirstTokenMs/p50",
            "TimeToFirstTokenMs/p90",
        ]
    ]
    summary = json.loads(out.getvalue())
    assert summary["errors"] == {"model_error": 2.0, "turn_timeout": 1.0}
    # the per-turn table comes from the EMF lines in the runtime's log group
    assert summary["turn_table_of"] == 2
    assert [r["session_id"] for r in summary["turn_table"]] == list(turn_costs)
    assert [r["cost_usd"] for r in summary["turn_table"]] == pytest.approx(list(turn_costs.values()))
    assert summary["total_cost_usd"] == pytest.approx(sum(costs))
    assert summary["turns"] == 2 and summary["notes"] == []
    assert summary["latency_ms"] == {"p50": 1234.0, "p90": 4321.0}
    assert summary["tools"] == {"Read": {"calls": 2.0, "errors": 1.0, "denied": 0.0}}
    html = out_file.read_text()
    shown = dict(re.findall(r'data-metric="session_cost:([^"]+)" data-value="([^"]+)"', html))
    assert {k: float(v) for k, v in shown.items()} == pytest.approx(turn_costs)
    assert re.findall(r'<g class="span" data-name="([^"]+)" data-depth="(\d)"', html) == [
        ("invoke_agent agentkit", "0"),
        ("chat m", "1"),
        ("execute_tool Read", "2"),
    ]


def _span_records(session: str, *, start_ns: int) -> list[dict[str, Any]]:
    """Three spans as the runtime's exporter writes them (the aws/spans field names)."""

    class FakeReadable:  # the attributes span_record reads from an SDK ReadableSpan
        def __init__(
            self, name: str, span_id: int, parent: int | None, offset_ms: int, ms: int, attrs: dict[str, Any]
        ) -> None:
            from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

            self.name, self.kind, self.attributes = name, SpanKind.INTERNAL, attrs
            self._ctx = SpanContext(trace_id=0xABC, span_id=span_id, is_remote=False)
            self.parent = SpanContext(trace_id=0xABC, span_id=parent, is_remote=False) if parent else None
            self.start_time, self.end_time = start_ns + offset_ms * 10**6, start_ns + (offset_ms + ms) * 10**6
            self.status, self.instrumentation_scope = Status(StatusCode.OK), None

        def get_span_context(self) -> Any:
            return self._ctx

    return [
        span_record(
            FakeReadable("invoke_agent agentkit", 1, None, 0, 900, {"gen_ai.conversation.id": session})
        ),
        span_record(FakeReadable("chat m", 2, 1, 10, 850, {"gen_ai.conversation.id": session})),
        span_record(FakeReadable("execute_tool Read", 3, 2, 300, 40, {"gen_ai.tool.name": "Read"})),
    ]
