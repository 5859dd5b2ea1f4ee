"""``agentkit cost`` backend: metrics written by the RUNTIME's cloudwatch sink are read back by the CLIENT per
day and model (the contract between ``runtime/observe/metrics/__init__.py`` and ``agentkit.data.cloudwatch``)."""

from __future__ import annotations

import asyncio
import datetime as dt

import boto3
import pytest
from moto import mock_aws

from agentkit.commands.cost import format_cost
from agentkit.data.cloudwatch import cost_rows, list_dimension_values
from runtime.observe.costs import compute_turn_cost
from runtime.observe.metrics import CloudWatchMetrics, TurnRecord

NS = "AgentKitCost"
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
HAIKU = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
TODAY = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
YESTERDAY = TODAY - dt.timedelta(days=1)


@pytest.fixture
def cloudwatch(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield boto3.client("cloudwatch", region_name="us-east-1")


def _write(client, agent: str, when: dt.datetime, model: str, input_tokens: int) -> None:
    async def run() -> None:
        sink = CloudWatchMetrics(namespace=NS, agent=agent, client=client, now=when.timestamp)
        cost = compute_turn_cost({model: {"inputTokens": input_tokens}}, None, default_model=model)
        sink.record_turn(TurnRecord(model=model, cost=cost, invocation_latency_ms=1.0))
        await sink.close()
        assert sink.stats["sent"] > 0 and not sink.stats["failed_batches"]

    asyncio.run(run())


def test_cost_per_day_and_model(cloudwatch) -> None:
    # Sonnet us. (regional): 3.30 per M input tokens; Haiku global: 1.00
    _write(cloudwatch, "demo", YESTERDAY + dt.timedelta(hours=3), SONNET, 1_000_000)  # 3.30
    _write(cloudwatch, "demo", YESTERDAY + dt.timedelta(hours=9), SONNET, 500_000)  # 1.65
    _write(cloudwatch, "demo", YESTERDAY + dt.timedelta(hours=9), HAIKU, 2_000_000)  # 2.00
    _write(cloudwatch, "demo", TODAY + dt.timedelta(minutes=1), SONNET, 100_000)  # 0.33
    _write(cloudwatch, "other-agent", TODAY + dt.timedelta(minutes=1), SONNET, 9_000_000)  # not ours

    assert list_dimension_values(
        cloudwatch, namespace=NS, agent="demo", metric="CostUSD", dimension="Model"
    ) == sorted([SONNET, HAIKU])
    rows = cost_rows(
        cloudwatch,
        namespace=NS,
        agent="demo",
        start=YESTERDAY + dt.timedelta(hours=5),  # aligned down to midnight
        end=TODAY + dt.timedelta(days=1),
    )
    assert [(r.start, r.key) for r in rows] == [(YESTERDAY, HAIKU), (YESTERDAY, SONNET), (TODAY, SONNET)]
    assert [r.cost_usd for r in rows] == pytest.approx([2.0, 4.95, 0.33])
    assert [r.tokens["input"] for r in rows] == [2_000_000, 1_500_000, 100_000]  # tokens read back too

    table = format_cost(rows, period="day", by="model", budget=None, spent_today=0.0)
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["period", "model", "cost", "(USD)"]
    assert any(
        YESTERDAY.strftime("%Y-%m-%d") in line and SONNET in line and "4.9500" in line for line in lines
    )
    assert any("(period total)" in line and "6.9500" in line and "3,500,000" in line for line in lines)
    assert lines[-1].split()[:3] == ["total", "7.2800", "3,600,000"]


def test_hourly_periods_and_named_models(cloudwatch) -> None:
    _write(cloudwatch, "demo", TODAY + dt.timedelta(minutes=10), SONNET, 1_000_000)
    _write(cloudwatch, "demo", TODAY + dt.timedelta(hours=2, minutes=5), SONNET, 1_000_000)
    rows = cost_rows(
        cloudwatch,
        namespace=NS,
        agent="demo",
        start=TODAY,
        end=TODAY + dt.timedelta(hours=4),
        period="hour",
        models=[SONNET, "never-used"],
    )
    assert [(r.start, r.key, r.cost_usd) for r in rows] == [
        (TODAY, SONNET, pytest.approx(3.3)),
        (TODAY + dt.timedelta(hours=2), SONNET, pytest.approx(3.3)),
    ]
    hour_label = (TODAY + dt.timedelta(hours=2)).strftime("%Y-%m-%d %H:00")
    assert hour_label in format_cost(rows, period="hour", by="model", budget=None, spent_today=0.0)


def test_empty_and_bad_arguments(cloudwatch) -> None:
    rows = cost_rows(cloudwatch, namespace=NS, agent="demo", start=YESTERDAY, end=TODAY)
    assert rows == []
    assert "No cost data" in format_cost(rows, period="day", by="model", budget=None, spent_today=0.0)
    with pytest.raises(ValueError, match="period"):
        cost_rows(cloudwatch, namespace=NS, agent="d", start=TODAY, end=TODAY, period="week")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="after start"):
        cost_rows(cloudwatch, namespace=NS, agent="d", start=TODAY, end=YESTERDAY)
