"""Paged AWS calls in the client (botocore paginators) through real boto3 clients and botocore's Stubber:
every page is read with the previous page's token, and a reader that has enough stops asking."""

from __future__ import annotations

import datetime as dt
from typing import Any

import boto3
from botocore.stub import Stubber

from agentkit.commands.cost import describe_alarms
from agentkit.data import names
from agentkit.data.cloudwatch import list_dimension_values
from agentkit.report.cloudwatch import _messages
from agentkit.stack import stack_resources

REGION = "eu-west-1"
NOW = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def _metric(agent: str, model: str) -> dict[str, Any]:
    return {
        "Namespace": "AgentKit",
        "MetricName": names.COST,
        "Dimensions": [{"Name": names.AGENT, "Value": agent}, {"Name": names.MODEL, "Value": model}],
    }


def test_cloudwatch_list_metrics_reads_every_page() -> None:
    client = boto3.client("cloudwatch", region_name=REGION)
    expected = {
        "Namespace": "AgentKit",
        "MetricName": names.COST,
        "Dimensions": [{"Name": names.AGENT, "Value": "a"}],
    }
    with Stubber(client) as stub:
        stub.add_response("list_metrics", {"Metrics": [_metric("a", "m2")], "NextToken": "t2"}, expected)
        stub.add_response("list_metrics", {"Metrics": [], "NextToken": "t3"}, {**expected, "NextToken": "t2"})
        stub.add_response("list_metrics", {"Metrics": [_metric("a", "m1")]}, {**expected, "NextToken": "t3"})
        values = list_dimension_values(
            client, namespace="AgentKit", agent="a", metric=names.COST, dimension=names.MODEL
        )
        stub.assert_no_pending_responses()
    assert values == ["m1", "m2"]


def test_stack_resources_and_alarms_read_every_page() -> None:
    cfn = boto3.client("cloudformation", region_name=REGION)

    def summary(physical: str, kind: str) -> dict[str, Any]:
        return {
            "LogicalResourceId": physical,
            "PhysicalResourceId": physical,
            "ResourceType": kind,
            "LastUpdatedTimestamp": NOW,
            "ResourceStatus": "CREATE_COMPLETE",
        }

    with Stubber(cfn) as stub:
        stub.add_response(
            "list_stack_resources",
            {
                "StackResourceSummaries": [
                    summary("alarm-1", "AWS::CloudWatch::Alarm"),
                    summary("queue", "AWS::SQS::Queue"),
                ],
                "NextToken": "p2",
            },
            {"StackName": "S"},
        )
        stub.add_response(
            "list_stack_resources",
            {"StackResourceSummaries": [summary("alarm-2", "AWS::CloudWatch::Alarm")]},
            {"StackName": "S", "NextToken": "p2"},
        )
        ids = stack_resources(cfn, stack_name="S", resource_type="AWS::CloudWatch::Alarm")
        stub.assert_no_pending_responses()
    assert ids == ["alarm-1", "alarm-2"]

    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    expected = {"AlarmNames": ids, "AlarmTypes": ["MetricAlarm"]}
    with Stubber(cloudwatch) as stub:
        stub.add_response(
            "describe_alarms", {"MetricAlarms": [{"AlarmName": "alarm-1"}], "NextToken": "n2"}, expected
        )
        stub.add_response(
            "describe_alarms", {"MetricAlarms": [{"AlarmName": "alarm-2"}]}, {**expected, "NextToken": "n2"}
        )
        alarms = describe_alarms(cloudwatch, ids)
        stub.assert_no_pending_responses()
    assert [a["AlarmName"] for a in alarms] == ["alarm-1", "alarm-2"]


def test_log_messages_stop_asking_once_the_limit_is_reached() -> None:
    logs = boto3.client("logs", region_name=REGION)
    start, end = NOW - dt.timedelta(hours=1), NOW
    expected = {
        "logGroupName": "g",
        "startTime": int(start.timestamp() * 1000),
        "endTime": int(end.timestamp() * 1000),
        "filterPattern": "x",
    }
    page = {"events": [{"message": "one"}, {"message": "two"}], "nextToken": "more"}
    with Stubber(logs) as stub:
        stub.add_response("filter_log_events", page, expected)
        # A second call would find no queued response and raise: the limit ends the paging.
        got = _messages(logs, group="g", start=start, end=end, pattern="x", limit=2)
        stub.assert_no_pending_responses()
    assert got == ["one", "two"]

    with Stubber(logs) as stub:
        stub.add_response("filter_log_events", page, expected)
        stub.add_response(
            "filter_log_events", {"events": [{"message": "three"}]}, {**expected, "nextToken": "more"}
        )
        got = _messages(logs, group="g", start=start, end=end, pattern="x", limit=10)
        stub.assert_no_pending_responses()
    assert got == ["one", "two", "three"]


def test_metric_data_results_of_every_page_are_joined() -> None:
    """A query's data points split over pages (CloudWatch pages by data points) come back as one series."""
    from agentkit.data.cloudwatch import Query, get_metric_data

    client = boto3.client("cloudwatch", region_name=REGION)
    query = Query(metric=names.COST, dimensions=(), stat="Sum", period=3600)
    t1, t2 = NOW - dt.timedelta(hours=2), NOW - dt.timedelta(hours=1)
    first = {"MetricDataResults": [{"Id": "q0", "Timestamps": [t2], "Values": [2.0]}], "NextToken": "d2"}
    second = {"MetricDataResults": [{"Id": "q0", "Timestamps": [t1], "Values": [1.0]}]}
    with Stubber(client) as stub:
        stub.add_response("get_metric_data", first)
        stub.add_response("get_metric_data", second)
        series = get_metric_data(client, [query], namespace="AgentKit", agent="a", start=t1, end=NOW)
        stub.assert_no_pending_responses()
    assert series == {query: [(t1, 1.0), (t2, 2.0)]}


def test_runtime_logs_read_the_following_page_with_its_token() -> None:
    from agentkit.data.logs import filter_events

    logs = boto3.client("logs", region_name=REGION)
    start = NOW - dt.timedelta(hours=1)
    expected = {"logGroupName": "g", "startTime": int(start.timestamp() * 1000)}

    def event(ms: int, message: str) -> dict[str, Any]:
        return {"timestamp": ms, "logStreamName": "s", "message": message}

    base = int(start.timestamp() * 1000)
    with Stubber(logs) as stub:
        stub.add_response("filter_log_events", {"events": [event(base, "one")], "nextToken": "p2"}, expected)
        stub.add_response(
            "filter_log_events", {"events": [event(base + 1, "two")]}, {**expected, "nextToken": "p2"}
        )
        events, more = filter_events(logs, log_group="g", start=start)
        stub.assert_no_pending_responses()
    assert [e.message for e in events] == ["one", "two"] and more is False


def test_every_paged_call_of_the_client_has_a_botocore_paginator() -> None:
    """The client pages through botocore's paginators; each one it names exists in botocore's paginators-1.json
    for its service (a name that does not would raise OperationNotPageableError only when the command runs)."""
    import re
    from pathlib import Path

    import botocore.session

    source = Path(__file__).resolve().parents[2] / "client" / "agentkit"
    used = {
        m.group(1)
        for path in source.rglob("*.py")
        for m in re.finditer(r'(?:get_paginator\(|_items\(\w+, )"(\w+)"', path.read_text(encoding="utf-8"))
    }
    services = {
        "filter_log_events": "logs",
        "list_metrics": "cloudwatch",
        "get_metric_data": "cloudwatch",
        "describe_alarms": "cloudwatch",
        "list_stack_resources": "cloudformation",
        "list_service_quotas": "service-quotas",
        "list_secrets": "secretsmanager",
        "list_agent_runtimes": "bedrock-agentcore-control",
        "list_memories": "bedrock-agentcore-control",
        "list_gateways": "bedrock-agentcore-control",
    }
    assert used == set(services), used
    session = botocore.session.get_session()
    for name, service in services.items():
        assert session.create_client(service, region_name=REGION).can_paginate(name), (service, name)
