"""Every metric of the metric set is emitted by a real turn and lands in CloudWatch (moto server).

Real ``python -m runtime`` with ``AGENTKIT_METRICS=cloudwatch`` (batched PutMetricData), the fake Claude CLI,
the AgentCore Memory store on moto behind a proxy that injects an outage on the first writes.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import boto3
import pytest

from harness.cli import write_fake_cli
from harness.fake_claude import CALL_CACHE_READ_TOKENS, CALL_INPUT_TOKENS, CALL_OUTPUT_TOKENS
from harness.flaky_proxy import FlakyProxy
from harness.runtime_server import RuntimeServer, session_id
from runtime.models import DEFAULT_MODEL
from tests.functional.conftest import create_memory

pytestmark = pytest.mark.timeout(120)
NAMESPACE = "AgentKitFunctionalTest"
MODEL = DEFAULT_MODEL  # what the runtime runs when AGENTKIT_MODEL is unset


def _sum(cw, name: str, dimensions: dict[str, str]) -> float:
    now = dt.datetime.now(dt.UTC)
    stats = cw.get_metric_statistics(
        Namespace=NAMESPACE,
        MetricName=name,
        Dimensions=[{"Name": k, "Value": v} for k, v in dimensions.items()],
        StartTime=now - dt.timedelta(hours=1),
        EndTime=now + dt.timedelta(minutes=5),
        Period=3600,
        Statistics=["Sum", "SampleCount"],
    )
    return sum(p["Sum"] for p in stats["Datapoints"])


def test_every_metric_lands_in_cloudwatch(tmp_path: Path, moto_server: str) -> None:
    memory_id = create_memory(moto_server, name="agentkit_metrics")
    # The first five CreateEvent calls fail (an outage outlasting botocore's 5 attempts): the batch is
    # spooled, counted, and delivered later.
    with FlakyProxy(
        moto_server, fail=lambda m, p: m == "POST" and p.endswith("/events"), failures=5
    ) as proxy:
        server = RuntimeServer(
            env={
                "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp_path)),
                "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
                "AGENTKIT_METRICS": "cloudwatch",
                "AGENTKIT_METRICS_NAMESPACE": NAMESPACE,
                "AWS_ENDPOINT_URL_CLOUDWATCH": moto_server,
                "AGENTKIT_SESSION_STORE": f"agentcore://{memory_id}",
                "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": proxy.url,
            },
            log_path=tmp_path / "server.log",
        ).start()
        sid = session_id("metrics")
        try:
            text = server.invoke("hello", session=sid, stream=False)
            assert text.status == 200, text.body
            tool = server.invoke(
                '[tool:mcp__kit__list_overdue_invoices {"as_of": "2026-11-22"}] go', session=sid
            )
            assert tool.events[-1]["type"] == "result"
            bad = server.invoke(
                '[tool:mcp__kit__list_overdue_invoices {"as_of": "yesterday"}] go', session=sid
            )
            assert next(e for e in bad.events if e["type"] == "tool_result")["ok"] is False
            denied = server.invoke("[bash:rm -rf /] clean", session=sid)
            assert next(e for e in denied.events if e["type"] == "tool_result")["ok"] is False
            budget = server.invoke("[max_budget] spend", session=sid, stream=False)
            assert budget.body["code"] == "budget_exceeded"
            crashed = server.invoke("[crash] boom", session=sid)
            assert crashed.events[-1]["code"] == "agent_process_error"
            resumed = server.invoke("back again", session=sid, stream=False)
            assert resumed.body["resumed"] is True
        finally:
            server.stop()  # SIGTERM: the metrics sink flushes its queue on the way out
    assert len(proxy.failed) == 5

    cw = boto3.client("cloudwatch", region_name="us-east-1", endpoint_url=moto_server)
    names = {m["MetricName"] for m in cw.list_metrics(Namespace=NAMESPACE)["Metrics"]}
    expected = {
        "CostUSD", "InputTokens", "OutputTokens", "CacheReadTokens", "CacheWriteTokens", "Turns",
        "InvocationLatencyMs", "TimeToFirstTokenMs", "ToolCalls", "ToolErrors", "ToolDenied", "ToolLatencyMs",
        "BudgetExceeded", "InvocationErrors", "SessionResumed", "SessionStoreErrors",
    }  # fmt: skip
    assert expected <= names, expected - names

    per_model = {"Agent": "agentkit", "Model": MODEL}
    turns = _sum(cw, "Turns", per_model)
    assert turns == 6  # every turn that reached a result (the crashed one did not)
    # text, tool, failing tool, denied tool, max_budget, crashed (its one call still counts), resumed text
    model_calls = 1 + 2 + 2 + 2 + 0 + 1 + 1
    assert _sum(cw, "InputTokens", per_model) == model_calls * CALL_INPUT_TOKENS
    assert _sum(cw, "OutputTokens", per_model) == model_calls * CALL_OUTPUT_TOKENS
    assert _sum(cw, "CacheReadTokens", per_model) == model_calls * CALL_CACHE_READ_TOKENS
    assert _sum(cw, "CostUSD", per_model) > 0
    tool_dims = {"Agent": "agentkit", "Tool": "mcp__kit__list_overdue_invoices"}
    assert _sum(cw, "ToolCalls", tool_dims) == 2
    assert _sum(cw, "ToolErrors", tool_dims) == 1
    bash = {"Agent": "agentkit", "Tool": "Bash"}
    assert _sum(cw, "ToolDenied", bash) == 1
    assert _sum(cw, "ToolErrors", bash) == 0 and _sum(cw, "ToolCalls", bash) == 0  # denied, not failed
    assert _sum(cw, "InvocationErrors", {"Agent": "agentkit", "ErrorCode": "budget_exceeded"}) == 1
    assert _sum(cw, "InvocationErrors", {"Agent": "agentkit", "ErrorCode": "agent_process_error"}) == 1
    assert _sum(cw, "BudgetExceeded", {"Agent": "agentkit"}) == 1
    assert _sum(cw, "SessionResumed", {"Agent": "agentkit"}) == 1
    assert _sum(cw, "SessionStoreErrors", {"Agent": "agentkit"}) >= 1
    log = (tmp_path / "server.log").read_text()
    assert re.search(r"session store .* failed", log)
    assert "spool empty at close" in log  # the outage lost nothing
