"""``agentkit status`` and ``agentkit logs`` on moto (CloudFormation outputs, AgentCore control plane,
CloudWatch alarms, CloudWatch Logs) and botocore's Stubber where moto lacks a feature (alarms as stack
resources, paging, access denied)."""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from agentkit.cli import main
from tests.client.conftest import paginator_over
from tests.client.test_cli_aws import Factory

REGION = "eu-west-1"
NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)


def run(argv: list[str], factory: Any, **kwargs: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err, client_factory=factory, now=lambda: NOW, **kwargs)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def deployed() -> Iterator[dict[str, Any]]:
    """A runtime + stage endpoint (moto control plane), its log group with lines, two alarms."""
    with mock_aws():
        control = boto3.client("bedrock-agentcore-control", region_name=REGION)
        runtime = control.create_agent_runtime(
            agentRuntimeName="agentkit_dev",
            agentRuntimeArtifact={
                "containerConfiguration": {"containerUri": "123456789012.dkr.ecr.eu-west-1.amazonaws.com/a:1"}
            },
            roleArn="arn:aws:iam::123456789012:role/agentkit",
            networkConfiguration={"networkMode": "PUBLIC"},
        )
        runtime_id = runtime["agentRuntimeId"]
        control.create_agent_runtime_endpoint(agentRuntimeId=runtime_id, name="dev")
        arn = f"arn:aws:bedrock-agentcore:{REGION}:123456789012:runtime/{runtime_id}"
        logs = boto3.client("logs", region_name=REGION)
        group = f"/aws/bedrock-agentcore/runtimes/{runtime_id}-dev"
        logs.create_log_group(logGroupName=group)
        logs.create_log_stream(logGroupName=group, logStreamName="[runtime-logs] abc")
        lines = [
            (NOW - dt.timedelta(hours=3), "2026-01-01 ERROR runtime.agent.turn: old failure"),
            (NOW - dt.timedelta(minutes=50), "2026-01-01 INFO runtime.http.server: started sess-1111"),
            (
                NOW - dt.timedelta(minutes=40),
                "2026-01-01 WARNING runtime.session_store: slow store sess-1111",
            ),
            (
                NOW - dt.timedelta(minutes=20),
                "2026-01-01 ERROR runtime.agent.turn: turn failed for sess-2222",
            ),
            (
                NOW - dt.timedelta(minutes=10),
                json.dumps({"level": "error", "message": "json failure sess-1111"}),
            ),
            (NOW - dt.timedelta(minutes=5), "2026-01-01 DEBUG runtime.agent.turn: detail sess-1111"),
        ]
        logs.put_log_events(
            logGroupName=group,
            logStreamName="[runtime-logs] abc",
            logEvents=[{"timestamp": int(t.timestamp() * 1000), "message": m} for t, m in lines],
        )
        cloudwatch = boto3.client("cloudwatch", region_name=REGION)
        for name, metric, threshold in (
            ("agentkit-cost", "CostUSD", 10.0),
            ("agentkit-errors", "Errors", 5.0),
        ):
            cloudwatch.put_metric_alarm(
                AlarmName=name,
                MetricName=metric,
                Namespace="AgentCoreClaudeKit",
                Statistic="Sum",
                Period=300,
                EvaluationPeriods=1,
                Threshold=threshold,
                ComparisonOperator="GreaterThanThreshold",
            )
        cloudwatch.set_alarm_state(
            AlarmName="agentkit-errors", StateValue="ALARM", StateReason="3 of 3 breaching"
        )
        cfn = boto3.client("cloudformation", region_name=REGION)
        cfn.create_stack(
            StackName="AgentKit-dev",
            TemplateBody=json.dumps(
                {
                    "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                    "Outputs": {
                        "RuntimeArn": {"Value": arn},
                        "RuntimeEndpointArn": {"Value": f"{arn}/runtime-endpoint/dev"},
                        "MemoryId": {"Value": "mem-1"},
                    },
                }
            ),
        )
        yield {
            "arn": arn,
            "runtime_id": runtime_id,
            "group": group,
            "control": control,
            "logs": logs,
            "cloudwatch": cloudwatch,
            "cfn": cfn,
        }


def _alarm_resources(stub: Stubber) -> None:
    """moto's CloudFormation cannot create alarms: answer ListStackResources as CloudFormation would."""
    stub.add_response(
        "list_stack_resources",
        {
            "StackResourceSummaries": [
                {
                    "LogicalResourceId": "CostAlarm",
                    "PhysicalResourceId": "agentkit-cost",
                    "ResourceType": "AWS::CloudWatch::Alarm",
                    "LastUpdatedTimestamp": NOW,
                    "ResourceStatus": "CREATE_COMPLETE",
                },
                {
                    "LogicalResourceId": "ErrAlarm",
                    "PhysicalResourceId": "agentkit-errors",
                    "ResourceType": "AWS::CloudWatch::Alarm",
                    "LastUpdatedTimestamp": NOW,
                    "ResourceStatus": "CREATE_COMPLETE",
                },
                {
                    "LogicalResourceId": "Topic",
                    "PhysicalResourceId": "arn:aws:sns:x",
                    "ResourceType": "AWS::SNS::Topic",
                    "LastUpdatedTimestamp": NOW,
                    "ResourceStatus": "CREATE_COMPLETE",
                },
            ]
        },
        {"StackName": "AgentKit-dev"},
    )


class StackClient:
    """moto for DescribeStacks, a Stubber-backed client for ListStackResources."""

    def __init__(self, moto_cfn: Any) -> None:
        self.moto = moto_cfn
        self.stubbed = boto3.client("cloudformation", region_name=REGION)
        self.stub = Stubber(self.stubbed)
        _alarm_resources(self.stub)
        self.stub.activate()

    def describe_stacks(self, **kwargs: Any) -> Any:
        return self.moto.describe_stacks(**kwargs)

    def list_stack_resources(self, **kwargs: Any) -> Any:
        return self.stubbed.list_stack_resources(**kwargs)

    def get_paginator(self, name: str) -> Any:
        assert name == "list_stack_resources", name
        return paginator_over(self.list_stack_resources, self.stubbed, "ListStackResources")


def _factory(d: dict[str, Any], **override: Any) -> Factory:
    clients = {
        "bedrock_agentcore_control": d["control"],
        "cloudformation": StackClient(d["cfn"]),
        "cloudwatch": d["cloudwatch"],
        "logs": d["logs"],
    }
    return Factory(**{**clients, **override})


# ------------------------------------------------------------------------------------------------ status
def test_status_shows_outputs_runtime_endpoint_alarms_and_last_errors(deployed: dict[str, Any]) -> None:
    code, out, err = run(["status", "--stack", "AgentKit-dev"], _factory(deployed))
    assert code == 0, err
    assert "stack      AgentKit-dev  CREATE_COMPLETE" in out and "MemoryId" in out
    assert "READY  version 1" in out and "endpoint   dev" in out
    assert out.index("ALARM") < out.index("agentkit-cost")  # firing alarms first
    assert "3 of 3 breaching" in out
    errors = out.split("last errors")[1]
    assert "old failure" in errors and "turn failed" in errors and "json failure" in errors
    assert "started" not in errors and "slow store" not in errors


def test_status_json(deployed: dict[str, Any]) -> None:
    code, out, _ = run(
        ["status", "--stack", "AgentKit-dev", "--output", "json", "--errors-since", "1h"], _factory(deployed)
    )
    data = json.loads(out)
    assert code == 0 and data["problems"] == {}
    assert data["runtime"]["status"] == "READY" and data["endpoint"]["name"] == "dev"
    states = {a["name"]: a["state"] for a in data["alarms"]}
    assert set(states) == {"agentkit-errors", "agentkit-cost"} and states["agentkit-errors"] == "ALARM"
    assert [e["message"] for e in data["last_errors"]] == [
        "2026-01-01 ERROR runtime.agent.turn: turn failed for sess-2222",
        json.dumps({"level": "error", "message": "json failure sess-1111"}),
    ]
    assert data["log_group"] == deployed["group"]


@pytest.mark.parametrize(
    ("dimensions", "verdict"),
    [
        ({"Operation": "InvokeAgentRuntime", "Name": "agentkit_dev::dev", "Resource": "ARN"}, "yes"),
        ({"Service": "AgentCore.Runtime", "Name": "agentkit_dev::DEFAULT"}, "NO: its runtime widgets"),
    ],
)
def test_status_lists_the_runtimes_metrics_and_whether_the_dashboard_matches(
    deployed: dict[str, Any], dimensions: dict[str, str], verdict: str
) -> None:
    dims = [{"Name": k, "Value": deployed["arn"] if v == "ARN" else v} for k, v in dimensions.items()]
    deployed["cloudwatch"].put_metric_data(
        Namespace="AWS/Bedrock-AgentCore",
        MetricData=[{"MetricName": "Invocations", "Dimensions": dims, "Value": 1}],
    )
    code, out, err = run(["status", "--stack", "AgentKit-dev"], _factory(deployed))
    assert code == 0, err
    section = out.split("metrics (AWS/Bedrock-AgentCore)")[1]
    assert "Invocations" in section and f"Name=agentkit_dev::dev: {verdict}" in section
    assert "MMDSv2 required: no (agentkit doctor)" in out
    _, raw, _ = run(["status", "--stack", "AgentKit-dev", "--output", "json"], _factory(deployed))
    data = json.loads(raw)["metrics"]
    assert data["dashboard_dimensions_match"] is (verdict == "yes")
    assert data["published"][0]["name"] == "Invocations"


def test_status_says_when_no_metric_is_published_yet(deployed: dict[str, Any]) -> None:
    code, out, _ = run(["status", "--stack", "AgentKit-dev"], _factory(deployed))
    assert code == 0 and "none published yet (invoke the agent once)" in out


def test_status_reports_a_part_it_cannot_read_and_exits_4(deployed: dict[str, Any]) -> None:
    denied_logs = boto3.client("logs", region_name=REGION)
    stub = Stubber(denied_logs)
    stub.add_client_error("filter_log_events", "AccessDeniedException", "not allowed", 400)
    with stub:
        code, out, err = run(["status", "--stack", "AgentKit-dev"], _factory(deployed, logs=denied_logs))
    assert code == 4
    assert "READY" in out and "agentkit-errors" in out  # the rest is still shown
    assert "last_errors: unavailable" in out and "logs:FilterLogEvents" in err


# -------------------------------------------------------------------------------------------------- logs
def test_logs_since_session_and_level(deployed: dict[str, Any]) -> None:
    factory = _factory(deployed)
    code, out, _ = run(["logs", "--stack", "AgentKit-dev", "--since", "1h"], factory)
    assert code == 0 and len(out.splitlines()) == 5 and "old failure" not in out
    code, out, _ = run(
        ["logs", "--stack", "AgentKit-dev", "--since", "1h", "--session", "sess-1111"], factory
    )
    assert [line.split("  ", 1)[1] for line in out.splitlines()] == [
        "2026-01-01 INFO runtime.http.server: started sess-1111",
        "2026-01-01 WARNING runtime.session_store: slow store sess-1111",
        json.dumps({"level": "error", "message": "json failure sess-1111"}),
        "2026-01-01 DEBUG runtime.agent.turn: detail sess-1111",
    ]
    code, out, _ = run(
        ["logs", "--stack", "AgentKit-dev", "--since", "4h", "--level", "warning", "--output", "json"],
        factory,
    )
    events = json.loads(out)["events"]
    assert [e["level"] for e in events] == ["error", "warning", "error", "error"]


def test_logs_limit_and_missing_group(deployed: dict[str, Any]) -> None:
    code, out, err = run(
        ["logs", "--runtime-arn", deployed["arn"], "--qualifier", "dev", "--since", "1h", "--limit", "2"],
        _factory(deployed),
    )
    assert code == 0 and len(out.splitlines()) == 2 and "showing the first 2 events" in err
    code, _, err = run(
        ["logs", "--runtime-arn", deployed["arn"], "--since", "1h"], _factory(deployed)
    )  # DEFAULT endpoint
    assert (
        code == 4
        and f"log group /aws/bedrock-agentcore/runtimes/{deployed['runtime_id']}-DEFAULT not found" in err
    )
    assert "--qualifier" in err


def test_logs_follow_every_page() -> None:
    client = boto3.client("logs", region_name=REGION)
    ts = int((NOW - dt.timedelta(minutes=1)).timestamp() * 1000)
    group = "/aws/bedrock-agentcore/runtimes/agentkit_dev-AbCdEfGhIj-dev"
    expected = {"logGroupName": group, "startTime": int((NOW - dt.timedelta(hours=1)).timestamp() * 1000)}
    with Stubber(client) as stub:
        stub.add_response(
            "filter_log_events",
            {"events": [{"timestamp": ts, "message": "one", "logStreamName": "s"}], "nextToken": "p2"},
            expected,
        )
        stub.add_response(
            "filter_log_events", {"events": [], "nextToken": "p3"}, {**expected, "nextToken": "p2"}
        )
        stub.add_response(
            "filter_log_events",
            {"events": [{"timestamp": ts, "message": "two", "logStreamName": "s"}]},
            {**expected, "nextToken": "p3"},
        )
        code, out, _ = run(["logs", "--log-group", group, "--region", REGION], Factory(logs=client))
        stub.assert_no_pending_responses()
    assert code == 0 and [line.split("  ")[1] for line in out.splitlines()] == ["one", "two"]
