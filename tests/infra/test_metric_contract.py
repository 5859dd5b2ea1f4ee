"""Every metric the dashboard and alarms query is one its emitter really writes, with that dimension set.

The emitted side comes from running the runtime's real metrics code (both sinks: PutMetricData requests and
EMF lines) through the observer that the runtime calls; the queried side from the synthesized
template (alarm metrics, dashboard metric rows and SEARCH expressions). An empty series cannot come back
unnoticed: a renamed metric, a dropped roll-up or a dimension added on one side fails here.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import types
from collections.abc import Iterator
from typing import Any

import pytest

from infra.dashboard import AGENTCORE_NAMESPACE, COMPUTE_METRICS, RUNTIME_METRICS, TURN_COST_PATTERN
from tests.infra.conftest import ROOT, Synth

pytestmark = pytest.mark.infra
NAMESPACE, AGENT = "AgentCoreClaudeKit", "agentkit"
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
WEBHOOK_DIR = ROOT / "webhook"

Query = tuple[
    str, str, frozenset[str], dict[str, str], str
]  # namespace, metric, dimension names, values, where


def runtime_metrics_modules() -> tuple[types.ModuleType, types.ModuleType, types.ModuleType]:
    """The runtime's metrics, observer and costs modules (the one place to fix when they move)."""
    from runtime.observe import costs, metrics, observer

    return metrics, observer, costs


# --- what the runtime emits --------------------------------------------------------------------------------


class RecordingCloudWatch:
    """Stands in for the boto3 CloudWatch client: keeps each PutMetricData request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def put_metric_data(self, **kwargs: Any) -> dict[str, Any]:
        self.requests.append(kwargs)
        return {}


def drive(sink: Any) -> None:
    """Everything the runtime records, through the observer the turn calls."""
    metrics, observer, costs = runtime_metrics_modules()
    facade = observer.Observer(metrics=sink, model=SONNET)
    session = types.SimpleNamespace(
        runtime_session_id="rt-0123456789-0123456789-0123456789", actor_id="octocat"
    )
    usage = {
        SONNET: {
            "inputTokens": 10,
            "outputTokens": 5,
            "cacheReadInputTokens": 3,
            "cacheCreationInputTokens": 2,
        }
    }
    cost = costs.compute_turn_cost(usage, None, default_model=SONNET)
    sink.record_turn(
        metrics.TurnRecord(model=SONNET, cost=cost, invocation_latency_ms=120.0, time_to_first_token_ms=40.0)
    )
    sink.record_turn(metrics.TurnRecord(model=SONNET, cost=cost, invocation_latency_ms=9.0, completed=False))
    for outcome in ("ok", "error", "denied"):
        sink.record_tool(
            metrics.ToolRecord(tool="Bash", outcome=outcome, latency_ms=None if outcome == "denied" else 5.0)
        )
    facade.invocation_error("session_busy")
    facade.budget_exceeded(session.runtime_session_id, "session")
    facade.session_resumed(session.runtime_session_id)
    facade.store_error("load", RuntimeError("store down"))
    # What the stores' on_usage reports (runtime/wiring.py: one event per billed Memory call).
    sink.record_event("MemoryEventsWritten", properties={"ClaudeSessionId": "c-1"})
    sink.record_event("MemoryRetrievals", properties={"ClaudeSessionId": "c-1"})
    # A tool call that waited for a person, and each answer (runtime.approvals).
    from runtime.approvals.records import ApprovalRecord

    record = ApprovalRecord(
        id="apv-" + "0" * 20,
        session_id=session.runtime_session_id,
        claude_session_id="c-1",
        tool="Bash",
        input={},
        input_hash="sha256:0",
        rule="bash_programs: git",
        cost_usd=0.0,
        created_at=0.0,
        expires_at=1.0,
    )
    for event in ("requested", "approved", "denied", "expired", "withdrawn"):
        facade.approval(event, record, wait_s=5.0 if event in ("approved", "denied") else None)


def cloudwatch_emitted() -> set[tuple[str, frozenset[str]]]:
    metrics, _, _ = runtime_metrics_modules()
    client = RecordingCloudWatch()
    sink = metrics.CloudWatchMetrics(namespace=NAMESPACE, agent=AGENT, client=client)
    drive(sink)
    asyncio.run(sink.close())
    assert client.requests and all(r["Namespace"] == NAMESPACE for r in client.requests)
    return {
        (datum["MetricName"], frozenset(d["Name"] for d in datum["Dimensions"]))
        for request in client.requests
        for datum in request["MetricData"]
    }


def emf_emitted() -> set[tuple[str, frozenset[str]]]:
    metrics, _, _ = runtime_metrics_modules()
    stream = io.StringIO()
    drive(metrics.EmfMetrics(namespace=NAMESPACE, agent=AGENT, stream=stream))
    emitted = set()
    for line in stream.getvalue().splitlines():
        for directive in json.loads(line)["_aws"]["CloudWatchMetrics"]:
            assert directive["Namespace"] == NAMESPACE
            for dimension_set in directive["Dimensions"]:
                emitted |= {(m["Name"], frozenset(dimension_set)) for m in directive["Metrics"]}
    return emitted


@pytest.fixture(scope="module")
def emitted() -> set[tuple[str, frozenset[str]]]:
    by_api, by_emf = cloudwatch_emitted(), emf_emitted()
    assert by_api == by_emf, f"the two sinks disagree: {sorted(by_api ^ by_emf, key=str)}"
    return by_api


# --- what the stack queries ----------------------------------------------------------------------------------


def dashboard_body(s: Synth) -> dict[str, Any]:
    (dashboard,) = [r for r in s.raw["Resources"].values() if r["Type"] == "AWS::CloudWatch::Dashboard"]
    body = dashboard["Properties"]["DashboardBody"]
    if isinstance(body, dict):  # Fn::Join of strings and tokens
        body = "".join(p if isinstance(p, str) else "<TOKEN>" for p in body["Fn::Join"][1])
    return dict(json.loads(body))


SEARCH = re.compile(r"SEARCH\('\{(?P<schema>[^}]*)\}(?P<terms>[^']*)'")


def dashboard_queries(s: Synth) -> Iterator[Query]:
    for widget in dashboard_body(s)["widgets"]:
        title = widget.get("properties", {}).get("title", widget["type"])
        previous: list[Any] = []
        for row in widget.get("properties", {}).get("metrics", []):
            if isinstance(row[0], dict):  # an expression
                expression = row[0]["expression"]
                for match in SEARCH.finditer(expression):
                    namespace, *dims = match["schema"].split(",")
                    terms = dict(re.findall(r'(\w+)="([^"]*)"', match["terms"]))
                    metric = terms.pop("MetricName")
                    yield namespace, metric, frozenset(dims), terms, f"{title}: {expression}"
                continue
            fields = [f for f in row if not isinstance(f, dict)]
            fields = [previous[i] if f == "." else f for i, f in enumerate(fields)]  # dashboard "." shorthand
            previous = fields
            namespace, metric, *pairs = fields
            values = dict(zip(pairs[::2], pairs[1::2], strict=True))
            yield namespace, metric, frozenset(values), values, title


def alarm_queries(s: Synth) -> Iterator[Query]:
    for resource in s.raw["Resources"].values():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        props = resource["Properties"]
        stats = [m["MetricStat"]["Metric"] for m in props.get("Metrics", []) if "MetricStat" in m]
        if "MetricName" in props:
            stats.append(props)
        for metric in stats:
            values = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
            yield (
                metric["Namespace"],
                metric["MetricName"],
                frozenset(values),
                values,
                props["AlarmDescription"],
            )


@pytest.fixture(scope="module")
def queried(optional: Synth) -> list[Query]:
    return [*dashboard_queries(optional), *alarm_queries(optional)]


# --- the contract --------------------------------------------------------------------------------------------


def test_parsers_see_every_kind_of_query(queried: list[Query]) -> None:
    namespaces = {q[0] for q in queried}
    assert {NAMESPACE, AGENTCORE_NAMESPACE} <= namespaces
    assert any("SEARCH" in q[4] for q in queried) and any(
        "above" in q[4] for q in queried
    )  # searches, alarms


def test_every_agent_query_matches_an_emitted_metric_and_dimension_set(
    queried: list[Query], emitted: set[tuple[str, frozenset[str]]]
) -> None:
    agent_queries = [q for q in queried if q[0] == NAMESPACE and "Tracker" not in q[2]]
    assert len(agent_queries) > 20
    never_written = [
        (metric, sorted(dims), where)
        for _, metric, dims, _, where in agent_queries
        if (metric, dims) not in emitted
    ]
    assert not never_written, f"queried but never emitted (an always-empty series): {never_written}"
    for _, _metric, dims, values, where in agent_queries:
        assert values.get("Agent") == AGENT, where
        assert set(values) <= dims, f"{where}: filters on a dimension outside the set"


def test_every_emitted_agent_metric_is_shown(
    queried: list[Query], emitted: set[tuple[str, frozenset[str]]]
) -> None:
    shown = {q[1] for q in queried if q[0] == NAMESPACE}
    assert not {name for name, _ in emitted} - shown


def test_runtime_metrics_watch_the_stage_endpoint(queried: list[Query], optional: Synth) -> None:
    runtime_queries = [q for q in queried if q[0] == AGENTCORE_NAMESPACE and q[1] not in COMPUTE_METRICS]
    assert {q[1] for q in runtime_queries} >= {"Invocations", "SystemErrors", "Throttles", "Latency"}
    for _, metric, dims, values, where in runtime_queries:
        assert metric in RUNTIME_METRICS, where
        assert dims == {"Operation", "Name", "Resource"}, where
        assert values["Operation"] == "InvokeAgentRuntime" and values["Name"] == "agentkit_dev::dev", where
    assert "::DEFAULT" not in json.dumps(optional.raw)
    alarms = [q for q in queried if q[0] == AGENTCORE_NAMESPACE and "Endpoint dev" in q[4]]
    assert {q[1] for q in alarms} == {"Invocations", "SystemErrors", "Throttles", "Latency"}


def test_billed_compute_is_read_with_the_dimensions_agentcore_documents(queried: list[Query]) -> None:
    """``CPUUsed-vCPUHours`` / ``MemoryUsed-GBHours`` come as ``Service``; ``Service, Resource``; ``Service,
    Resource, Name`` with ``Service=AgentCore.Runtime`` (AgentCore developer guide, "AgentCore generated runtime
    observability data", resource usage metrics), never under the invocation metrics' ``Operation`` set: a
    query with ``Operation`` is an always-empty series."""
    compute = [q for q in queried if q[0] == AGENTCORE_NAMESPACE and q[1] in COMPUTE_METRICS]
    assert {q[1] for q in compute} == set(COMPUTE_METRICS)
    for _, _metric, dims, values, where in compute:
        assert dims == {"Service", "Resource"}, where
        assert values["Service"] == "AgentCore.Runtime", where


def webhook_emitted_names() -> set[str]:
    """Metric names the webhook Lambdas emit (``TrackerMetrics.emit("<name>", tracker)`` calls)."""
    source = "".join(p.read_text() for p in sorted(WEBHOOK_DIR.rglob("*.py")))
    return set(re.findall(r'\.emit\(\s*"([A-Za-z]+)"', source))


def test_webhook_cost_is_plotted_per_tracker(queried: list[Query]) -> None:
    webhook = [q for q in queried if "Tracker" in q[2]]
    assert {q[3]["Tracker"] for q in webhook} == {
        "github",
        "gitlab",
        "jira",
    }  # the optional stack enables all
    for namespace, metric, dims, _, where in webhook:
        assert namespace == NAMESPACE and dims == {"Tracker", "service"}, where
        assert metric in webhook_emitted_names(), f"{where}: the webhook never emits {metric}"


def test_webhook_metrics_carry_the_tracker_dimension(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The webhook's real emitter writes each metric under exactly the dimension set the dashboard queries."""
    from webhook import webhook_metrics

    webhook_metrics.TrackerMetrics(service="webhook-worker", namespace=NAMESPACE).emit(
        "IssueCostUSD", "gitlab", 0.25
    )
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("{")]
    doc = json.loads(line)
    (directive,) = doc["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == NAMESPACE
    assert [set(d) for d in directive["Dimensions"]] == [{"service", "Tracker"}]
    assert doc["Tracker"] == "gitlab" and doc["IssueCostUSD"] == [0.25]


def test_the_cost_table_reads_the_line_the_runtime_logs(
    optional: Synth, caplog: pytest.LogCaptureFixture
) -> None:
    metrics, _, costs = runtime_metrics_modules()
    cost = costs.compute_turn_cost(
        {SONNET: {"inputTokens": 1000, "outputTokens": 100}}, None, default_model=SONNET
    )
    sink = metrics.EmfMetrics(namespace=NAMESPACE, agent=AGENT, stream=io.StringIO())
    with caplog.at_level(logging.INFO):
        sink.record_turn(
            metrics.TurnRecord(
                model=SONNET,
                cost=cost,
                invocation_latency_ms=1.0,
                session_id="rt-1",
                caller='team "blue" bot',
            )
        )
    (line,) = [r.getMessage() for r in caplog.records if "turn_cost" in r.getMessage()]
    python_pattern = TURN_COST_PATTERN.strip("/").replace("(?<", "(?P<")
    match = re.search(python_pattern, line)
    assert match is not None, line
    assert match["session"] == "rt-1" and abs(float(match["cost"]) - cost.total_cost_usd) < 1e-6
    assert json.loads(f'"{match["caller"]}"') == 'team "blue" bot'  # JSON-quoted in the line, unquoted here
    query = json.dumps(dashboard_body(optional))
    assert "stats sum(cost) as cost_usd" in query and "by session, caller" in query
    assert "/aws/bedrock-agentcore/runtimes/<TOKEN>-dev" in query  # the stage endpoint's stdout log group
