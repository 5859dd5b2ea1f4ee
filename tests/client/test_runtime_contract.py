"""The client owns a copy of the runtime's metric names (it may not import ``runtime``); this pins the copy
to what the runtime really emits, and checks the one-way dependency between the two packages."""

from __future__ import annotations

import ast
import io
import time
from pathlib import Path

from agentkit.data import names
from agentkit.data.emf import parse_emf_lines
from runtime.observe import metrics
from runtime.observe.costs import compute_turn_cost

ROOT = Path(__file__).resolve().parents[2]
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def _emitted() -> list:
    stream = io.StringIO()
    sink = metrics.EmfMetrics(namespace="NS", agent="ag", stream=stream, now=time.time)
    cost = compute_turn_cost({SONNET: {"inputTokens": 5, "outputTokens": 1}}, None, default_model=SONNET)
    sink.record_turn(
        metrics.TurnRecord(
            model=SONNET,
            cost=cost,
            invocation_latency_ms=2.0,
            time_to_first_token_ms=1.0,
            session_id="s",
            caller="c",
        )
    )
    sink.record_tool(metrics.ToolRecord(tool="Read", outcome="ok", latency_ms=1.0))
    sink.record_tool(metrics.ToolRecord(tool="Bash", outcome="denied"))
    for event in sorted(metrics.EVENTS):
        sink.record_event(event)
    return parse_emf_lines(stream.getvalue().splitlines()).samples


def test_metric_and_dimension_names_match_what_the_runtime_emits() -> None:
    samples = _emitted()
    emitted = {m for s in samples for m in s.metrics}
    assert set(names.TURN_METRICS) | set(names.TOOL_METRICS) | set(names.EVENT_METRICS) == emitted
    assert set(names.EVENT_METRICS) == metrics.EVENTS
    assert {names.AGENT, names.MODEL, names.TOOL, names.ERROR_CODE} == metrics.DIMENSIONS
    turn = next(s for s in samples if names.COST in s.metrics)
    assert turn.dimensions == {names.AGENT: "ag", names.MODEL: SONNET}
    assert {names.PROP_SESSION, names.PROP_CALLER, names.PROP_TURN_COST} <= set(turn.properties)
    assert turn.properties[names.PROP_TURN_COST] == turn.total(names.COST)
    from agentkit import env

    assert env.DEFAULT_NAMESPACE == metrics.DEFAULT_NAMESPACE


def _imports(package: Path) -> set[str]:
    found: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


def test_client_and_runtime_do_not_import_each_other() -> None:
    client = _imports(ROOT / "client" / "agentkit")
    assert "runtime" not in client and "agentkit" in client
    assert client - {"agentkit", "boto3", "botocore", "urllib3"} <= set(__import__("sys").stdlib_module_names)
    assert "agentkit" not in _imports(ROOT / "runtime")


def test_the_clients_price_table_is_the_runtimes() -> None:
    """The client prices compute and Memory with its copy of the kit's price table: same figures, same dates and
    sources, same Regions, so ``agentkit cost`` and the runtime never disagree on a price."""
    from dataclasses import asdict

    from agentkit.data import prices as copy
    from runtime.observe import prices as table

    assert {r: asdict(p) for r, p in copy.AGENTCORE_PRICES.items()} == {
        r: asdict(p) for r, p in table.DEFAULT_PRICES.agentcore.items()
    }
    assert (
        table.DEFAULT_PRICES.agentcore_as_of,
        table.DEFAULT_PRICES.agentcore_source,
    ) == (copy.AGENTCORE_PRICES_AS_OF, copy.AGENTCORE_PRICES_SOURCE)
    assert (
        table.DEFAULT_PRICES.as_of,
        table.DEFAULT_PRICES.source,
    ) == (copy.MODEL_PRICES_AS_OF, copy.MODEL_PRICES_SOURCE)
    assert copy.AGENTCORE_REFERENCE_REGION == table.AGENTCORE_REFERENCE_REGION
    for region in ("us-east-1", "eu-north-1", None):
        assert asdict(copy.agentcore_prices(region)[0]) == asdict(
            table.DEFAULT_PRICES.agentcore_for(region)[0]
        )
        assert copy.agentcore_prices(region)[1] == table.DEFAULT_PRICES.agentcore_for(region)[1]


def test_the_per_session_cost_query_parses_the_runtimes_turn_line() -> None:
    """``agentkit cost --by session`` reads model cost per session from the line the runtime logs per turn."""
    import re

    from agentkit.data.agentcore_usage import TURN_COST_QUERY
    from runtime.observe.metrics.base import turn_cost_line

    cost = compute_turn_cost({SONNET: {"inputTokens": 1234, "outputTokens": 56}}, None, default_model=SONNET)
    line = turn_cost_line(
        metrics.TurnRecord(
            model=SONNET, cost=cost, invocation_latency_ms=1.0, session_id="rt-42", caller='team "blue"'
        )
    )
    (parse,) = [p for p in TURN_COST_QUERY.splitlines() if p.startswith("| parse @message ")]
    pattern = parse.removeprefix("| parse @message ").strip("/").replace("(?<", "(?P<")
    match = re.search(pattern, line)
    assert match is not None, line
    assert match["sid"] == "rt-42" and abs(float(match["cost"]) - cost.total_cost_usd) < 1e-6
    (marker,) = re.findall(r"like /(.*)/", TURN_COST_QUERY)
    assert re.search(marker, line)


def test_the_doctors_retirements_are_the_model_tables() -> None:
    """The doctor's lifecycle check warns about the provider retirements the kit's model table records."""
    from agentkit.doctor.models import PROVIDER_RETIREMENTS
    from runtime.models import MODELS

    assert {
        m.foundation_model: (m.retires, "Anthropic") for m in MODELS.values() if m.retires is not None
    } == PROVIDER_RETIREMENTS
