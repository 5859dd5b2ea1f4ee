"""``agentkit report``: the numbers in the HTML equal the input data.

The input is written by the RUNTIME's own code (``runtime.metrics.EmfMetrics`` for the EMF file,
``runtime.observe.tracing`` + ``runtime.observe.span_file`` for the span file), so this also pins the file formats the
client reads. Expected figures are computed here from the records the test wrote.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from agentkit.cli import main
from runtime.observe.costs import compute_turn_cost
from runtime.observe.metrics import EmfMetrics, ToolRecord, TurnRecord
from runtime.observe.span_file import install_span_file
from runtime.observe.tracing import Tracing, record_turn_result

SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
HAIKU = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
T0 = dt.datetime(2026, 11, 20, 9, 5, tzinfo=dt.UTC)
TURNS = [  # (minutes after T0, session, actor, {model: (input, output, cache read, cache write)}, latency, ttft)
    (0, "sess-a", "alice", {SONNET: (1200, 300, 8000, 2000)}, 1500.0, 400.0),
    (10, "sess-a", "alice", {SONNET: (900, 250, 9000, 0), HAIKU: (300, 40, 0, 0)}, 2500.0, 350.0),
    (70, "sess-b", "bob", {SONNET: (5000, 800, 0, 4000)}, 4000.0, 900.0),
    (75, "sess-b", "bob", {SONNET: (700, 100, 12000, 0)}, 900.0, 300.0),
    (130, "sess-c", None, {HAIKU: (2500, 600, 1000, 500)}, 700.0, 200.0),
    (135, "sess-a", "alice", {SONNET: (1000, 200, 10000, 0)}, 1200.0, 500.0),
]
LONG_TOOL = "mcp__billing-gateway-target___list_overdue_invoices_for_customer"  # a Gateway tool's full name
ERRORS = [("model_error", 3), ("turn_timeout", 1), ("budget_exceeded", 2)]  # InvocationErrors by ErrorCode
TOOLS = [
    (LONG_TOOL, "ok"),
    ("Read", "ok"),
    ("Read", "ok"),
    ("Read", "error"),
    ("Bash", "ok"),
    ("Bash", "denied"),
    ("Grep", "ok"),
]


def _usage(tokens: tuple[int, int, int, int]) -> dict[str, int]:
    i, o, cr, cw = tokens
    return {"inputTokens": i, "outputTokens": o, "cacheReadInputTokens": cr, "cacheCreationInputTokens": cw}


@pytest.fixture(scope="module")
def run_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("report")
    emf_path, spans_path = tmp / "metrics.emf.jsonl", tmp / "spans.jsonl"
    expected: dict[str, Any] = {
        "cost_hour_model": defaultdict(float),
        "tokens": defaultdict(float),
        "session_cost": defaultdict(float),
        "session_turns": defaultdict(int),
        "latency": [],
        "ttft": [],
        "turn_rows": [],
    }
    with open(emf_path, "w", encoding="utf-8") as stream:
        stream.write("2026-11-20 09:00:00 INFO runtime: a log line that is not EMF\n")
        for minutes, session, actor, usage, latency, ttft in TURNS:
            when = T0 + dt.timedelta(minutes=minutes)
            sink = EmfMetrics(
                namespace="AgentCoreClaudeKit", agent="agentkit", stream=stream, now=when.timestamp
            )
            cost = compute_turn_cost({m: _usage(t) for m, t in usage.items()}, None, default_model=SONNET)
            sink.record_turn(
                TurnRecord(
                    model=SONNET,
                    cost=cost,
                    invocation_latency_ms=latency,
                    time_to_first_token_ms=ttft,
                    session_id=session,
                    caller=actor,
                )
            )
            hour = when.replace(minute=0)
            for model, mc in cost.per_model.items():
                expected["cost_hour_model"][(hour, model)] += mc.cost_usd or 0.0
            for key, value in zip(
                ("input", "output", "cache_read", "cache_write"),
                (cost.input_tokens, cost.output_tokens, cost.cache_read_tokens, cost.cache_write_tokens),
                strict=True,
            ):
                expected["tokens"][key] += value
            expected["session_cost"][session] += cost.total_cost_usd
            expected["session_turns"][session] += 1
            expected["latency"].append(latency)
            expected["ttft"].append(ttft)
            expected["turn_rows"].append(
                {
                    "time": when,
                    "session": session,
                    "models": list(usage),
                    "cost": cost.total_cost_usd,
                    "latency": latency,
                    "ttft": ttft,
                    "tokens": {
                        "input": cost.input_tokens,
                        "output": cost.output_tokens,
                        "cache_read": cost.cache_read_tokens,
                        "cache_write": cost.cache_write_tokens,
                    },
                }
            )
        for tool, outcome in TOOLS:
            sink = EmfMetrics(
                namespace="AgentCoreClaudeKit", agent="agentkit", stream=stream, now=T0.timestamp
            )
            sink.record_tool(
                ToolRecord(
                    tool=tool,
                    outcome=outcome,  # type: ignore[arg-type]  # the test's plain strings
                    latency_ms=None if outcome == "denied" else 12.0,
                    session_id="sess-a",
                )
            )
        for code, count in ERRORS:
            sink = EmfMetrics(
                namespace="AgentCoreClaudeKit", agent="agentkit", stream=stream, now=T0.timestamp
            )
            for _ in range(count):
                sink.record_event("InvocationErrors", dimensions={"ErrorCode": code})
        other = EmfMetrics(
            namespace="AgentCoreClaudeKit", agent="someone-else", stream=stream, now=T0.timestamp
        )
        other.record_event("InvocationErrors", dimensions={"ErrorCode": "not_ours"})
        cost = compute_turn_cost({SONNET: _usage((10**6, 0, 0, 0))}, None, default_model=SONNET)
        other.record_turn(
            TurnRecord(model=SONNET, cost=cost, invocation_latency_ms=1.0, session_id="not-ours")
        )

    provider = TracerProvider()
    assert install_span_file(spans_path, provider=provider)
    tracing = Tracing(provider.get_tracer("agentkit.runtime"), agent="agentkit")
    with tracing.invocation(session_id="sess-a", model=SONNET), tracing.turn(model=SONNET) as turn_span:
        parent = trace.set_span_in_context(turn_span)
        read_span = tracing.start_tool(tool_name="Read", tool_use_id="t1", parent=parent)
        Tracing.end_tool(read_span, latency_ms=12.0)
        failed = tracing.start_tool(tool_name="Bash", tool_use_id="t2", parent=parent)
        Tracing.end_tool(failed, error="exit 1")
        record_turn_result(
            turn_span, compute_turn_cost({SONNET: _usage((10, 1, 0, 0))}, None, default_model=SONNET)
        )
    with tracing.invocation(session_id="sess-b", model=SONNET):  # another session: not in sess-a's waterfall
        pass
    provider.shutdown()
    return {"emf": emf_path, "spans": spans_path, "expected": expected, "tmp": tmp}


def _values(html: str, metric: str) -> list[float]:
    return [
        float(v) for v in re.findall(rf'data-metric="{re.escape(metric)}"[^>]*?data-value="([^"]+)"', html)
    ]


def _value(html: str, metric: str) -> float:
    values = _values(html, metric)
    assert len(values) >= 1, f"no {metric} in the report"
    assert len(set(values)) == 1, (metric, values)
    return values[0]


def nearest_rank(values: list[float], p: float) -> float:
    return sorted(values)[math.ceil(p / 100 * len(values)) - 1]


@pytest.fixture(scope="module")
def report(run_files: dict[str, Any]) -> str:
    out = run_files["tmp"] / "report.html"
    stdout = io.StringIO()
    argv = [
        "report",
        "--emf",
        str(run_files["emf"]),
        "--spans",
        str(run_files["spans"]),
        "--agent",
        "agentkit",
        "--out",
        str(out),
    ]
    assert main(argv, stdout=stdout, now=lambda: T0 + dt.timedelta(hours=3)) == 0
    return out.read_text(encoding="utf-8")


def test_cost_over_time_by_model(report: str, run_files: dict[str, Any]) -> None:
    bars = re.findall(
        r'data-metric="cost_usd" data-column="([^"]+)" data-series="([^"]+)" data-value="([^"]+)"', report
    )
    drawn = {(column, series): float(value) for column, series, value in bars}
    expected = {
        (f"{hour:%m-%d %H:00}", model): cost
        for (hour, model), cost in run_files["expected"]["cost_hour_model"].items()
    }
    assert drawn.keys() == expected.keys()
    for key, cost in expected.items():
        assert drawn[key] == pytest.approx(cost, rel=1e-12)
    assert _value(report, "total_cost_usd") == pytest.approx(sum(expected.values()), rel=1e-12)
    assert "someone-else" not in report and "not-ours" not in report  # --agent keeps one agent's data


def test_tokens_by_type_and_cache_hit_rate(report: str, run_files: dict[str, Any]) -> None:
    tokens = run_files["expected"]["tokens"]
    for key in ("input", "output", "cache_read", "cache_write"):
        assert _value(report, f"tokens:{key}") == tokens[key]
    hit = tokens["cache_read"] / (tokens["input"] + tokens["cache_read"] + tokens["cache_write"])
    assert _value(report, "cache_hit_rate") == pytest.approx(hit, rel=1e-12)
    assert f"{100 * hit:.1f} %" in report


def test_latency_and_time_to_first_token_percentiles(report: str, run_files: dict[str, Any]) -> None:
    expected = run_files["expected"]
    for key, values in (("latency", expected["latency"]), ("ttft", expected["ttft"])):
        assert _value(report, f"{key}_p50_ms") == nearest_rank(values, 50)
        assert _value(report, f"{key}_p90_ms") == nearest_rank(values, 90)
    assert _value(report, "turns") == len(TURNS)


def test_tool_calls_and_errors_by_tool(report: str) -> None:
    for tool in ("Read", "Bash", "Grep", LONG_TOOL):
        outcomes = [o for t, o in TOOLS if t == tool]
        assert _value(report, f"tool_calls:{tool}") == sum(o != "denied" for o in outcomes)
        assert _value(report, f"tool_errors:{tool}") == outcomes.count("error")
        assert _value(report, f"tool_denied:{tool}") == outcomes.count("denied")


def test_top_sessions_by_cost(report: str, run_files: dict[str, Any]) -> None:
    expected = run_files["expected"]
    shown = re.findall(r'data-metric="session_cost:([^"]+)" data-value="([^"]+)"', report)
    ranked = sorted(expected["session_cost"], key=lambda s: -expected["session_cost"][s])
    assert [s for s, _ in shown] == ranked
    for session, value in shown:
        assert float(value) == pytest.approx(expected["session_cost"][session], rel=1e-12)
        assert _value(report, f"session_turns:{session}") == expected["session_turns"][session]


def test_waterfall_defaults_to_the_costliest_session_with_spans(
    report: str, run_files: dict[str, Any]
) -> None:
    costs = run_files["expected"]["session_cost"]
    records = [json.loads(line) for line in Path(run_files["spans"]).read_text().splitlines()]
    with_spans = {r["attributes"].get("gen_ai.conversation.id") for r in records} - {None}
    costliest = max(with_spans, key=lambda s: costs[s])
    assert f"Trace waterfall: session <code>{costliest}</code>" in report


def test_waterfall_of_one_sessions_trace(run_files: dict[str, Any]) -> None:
    out = run_files["tmp"] / "report-sess-a.html"
    argv = [
        "report",
        "--emf",
        str(run_files["emf"]),
        "--spans",
        str(run_files["spans"]),
        "--session",
        "sess-a",
        "--out",
        str(out),
    ]
    assert main(argv, stdout=io.StringIO(), now=lambda: T0) == 0
    report = out.read_text(encoding="utf-8")
    records = [json.loads(line) for line in Path(run_files["spans"]).read_text().splitlines()]
    ours = {r["traceId"] for r in records if r["attributes"].get("gen_ai.conversation.id") == "sess-a"}
    spans = [r for r in records if r["traceId"] in ours]
    drawn = re.findall(
        r'<g class="span" data-name="([^"]+)" data-depth="(\d+)" data-start-ms="([^"]+)" data-duration-ms="([^"]+)" data-status="([^"]+)"',
        report,
    )
    assert [(name, int(depth)) for name, depth, *_ in drawn] == [
        ("invoke_agent agentkit", 0),
        (f"chat {SONNET}", 1),
        ("execute_tool Read", 2),
        ("execute_tool Bash", 2),
    ]
    by_name = {r["name"]: r for r in spans}
    t0 = min(r["startTimeUnixNano"] for r in spans)
    for name, _depth, start_ms, duration_ms, status in drawn:
        record = by_name[name]
        assert float(duration_ms) == pytest.approx(
            (record["endTimeUnixNano"] - record["startTimeUnixNano"]) / 1e6
        )
        assert float(start_ms) == pytest.approx((record["startTimeUnixNano"] - t0) / 1e6)
        assert status == record["status"]["code"]
    assert [s for *_, s in drawn][-1] == "ERROR"  # the failed Bash call is marked


def test_the_page_is_self_contained(report: str) -> None:
    assert "<script" not in report.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", report)
    assert "@import" not in report and "url(" not in report
    assert report.count("<svg") >= 4


def test_json_summary_and_cost_local_agree(run_files: dict[str, Any], tmp_path: Path) -> None:
    out = io.StringIO()
    argv = [
        "report",
        "--emf",
        str(run_files["emf"]),
        "--agent",
        "agentkit",
        "--out",
        str(tmp_path / "r.html"),
        "--output",
        "json",
    ]
    assert main(argv, stdout=out, now=lambda: T0) == 0
    summary = json.loads(out.getvalue())
    assert summary["path"] == str((tmp_path / "r.html").resolve())
    assert summary["notes"] == ["no span file given (--spans): the trace waterfall is empty"]
    expected_total = sum(run_files["expected"]["cost_hour_model"].values())
    assert summary["total_cost_usd"] == pytest.approx(expected_total, rel=1e-12)
    out = io.StringIO()
    argv = [
        "cost",
        "--local",
        str(run_files["emf"]),
        "--agent",
        "agentkit",
        "--hourly",
        "--by",
        "actor",
        "--output",
        "json",
    ]
    assert main(argv, stdout=out, now=lambda: T0 + dt.timedelta(hours=3)) == 0
    cost = json.loads(out.getvalue())
    by_actor: dict[str, float] = defaultdict(float)
    for row in cost["rows"]:
        by_actor[row["key"]] += row["cost_usd"]
    exp = run_files["expected"]["session_cost"]
    assert by_actor["alice"] == pytest.approx(exp["sess-a"], rel=1e-12)
    assert by_actor["bob"] == pytest.approx(exp["sess-b"], rel=1e-12)
    assert by_actor["(anonymous)"] == pytest.approx(exp["sess-c"], rel=1e-12)
    assert cost["total_usd"] == pytest.approx(expected_total, rel=1e-12)
    assert {row["start"][11:16] for row in cost["rows"]} == {"09:00", "10:00", "11:00"}


def test_errors_panel_counts_invocation_errors_by_code(report: str) -> None:
    for code, count in ERRORS:
        assert _value(report, f"invocation_errors:{code}") == count
        assert re.search(
            rf'data-metric="invocation_errors" data-label="{code}" data-value="{float(count)!r}"', report
        )
    assert _value(report, "invocation_errors_total") == sum(c for _, c in ERRORS)
    assert "not_ours" not in report  # another agent's errors stay out
    codes = re.findall(r'data-metric="invocation_errors:([^"]+)"', report)
    assert codes == [c for c, _ in sorted(ERRORS, key=lambda e: -e[1])]  # most frequent first


def test_per_turn_table_lists_every_turn_from_the_emf_documents(
    report: str, run_files: dict[str, Any]
) -> None:
    expected = run_files["expected"]["turn_rows"]
    assert "Turns: all 6 turns" in report
    for i, row in enumerate(expected):
        assert _value(report, f"turn_cost:{i}") == pytest.approx(row["cost"], rel=1e-12)
        assert _value(report, f"turn_latency_ms:{i}") == row["latency"]
        assert _value(report, f"turn_ttft_ms:{i}") == row["ttft"]
        for key, tokens in row["tokens"].items():
            assert _value(report, f"turn_tokens_{key}:{i}") == tokens
    table = report[report.index("<h2>Turns:") :]
    cells = re.findall(
        r"<tr><td>([^<]+)</td><td><code>([^<]+)</code></td><td><code>([^<]+)</code></td>", table
    )
    assert [(t, s) for t, s, _m in cells] == [
        (f"{r['time']:%Y-%m-%d %H:%M:%S}", r["session"]) for r in expected
    ]
    assert cells[1][2] == f"{SONNET}, {HAIKU}"  # the turn that used two models names both


def test_the_turn_latency_label_says_what_it_measures(report: str) -> None:
    from agentkit.report.model import LATENCY_NOTE

    assert "excludes waiting in the session's queue and connecting or resuming the session" in LATENCY_NOTE
    assert report.count(LATENCY_NOTE.replace("'", "&#x27;")) == 3  # overview, latency panel, turn table
    assert "turn latency p50 *" in report and "<th class=n>latency *</th>" in report


def test_waterfall_legend_names_every_colour_drawn(run_files: dict[str, Any]) -> None:
    from agentkit.report.svg import ERROR_COLOR

    out = run_files["tmp"] / "report-legend.html"
    argv = ["report", "--emf", str(run_files["emf"]), "--spans", str(run_files["spans"])]
    assert main([*argv, "--session", "sess-a", "--out", str(out)], stdout=io.StringIO(), now=lambda: T0) == 0
    html = out.read_text(encoding="utf-8")
    legend = dict(
        (label, color)
        for color, label in re.findall(
            r"<span data-color='([^']+)'><i style='background:[^']+'></i>([^<]+)</span>", html
        )
    )
    assert list(legend) == [
        "invocation",
        "turn (model calls)",
        "tool call",
        "other span",
        "failed (status ERROR)",
    ]
    drawn = dict(re.findall(r'<g class="span" data-name="([^"]+)"[^>]*data-color="([^"]+)"', html))
    assert drawn == {
        "invoke_agent agentkit": legend["invocation"],
        f"chat {SONNET}": legend["turn (model calls)"],
        "execute_tool Read": legend["tool call"],
        "execute_tool Bash": legend["failed (status ERROR)"],  # the failed call
    }
    assert legend["failed (status ERROR)"] == ERROR_COLOR
    assert len(set(legend.values())) == len(legend)  # no two meanings share a colour


def test_tool_names_are_not_cut_off(report: str) -> None:
    chart = re.search(
        r'<svg class="chart" viewBox="0 0 (\d+) \d+" role="img" aria-label="tool_calls">(.*?)</svg>', report
    )
    assert chart is not None
    labels = re.findall(
        r'<text x="([\d.]+)" y="[\d.]+" class="label" text-anchor="end">([^<]+)<title>([^<]+)</title>',
        chart.group(2),
    )
    assert {text for _x, text, _t in labels} == {LONG_TOOL, "Read", "Bash", "Grep"}
    assert all(text == title for _x, text, title in labels)  # the whole name, and the same in its tooltip
    right_edge = float(labels[0][0])  # labels end at the label column's edge: the longest one must fit
    assert right_edge >= 7 * len(LONG_TOOL)  # 12 px sans-serif text averages under 7 units a character


def test_json_summary_has_errors_and_the_turn_table(run_files: dict[str, Any], tmp_path: Path) -> None:
    out = io.StringIO()
    argv = [
        "report",
        "--emf",
        str(run_files["emf"]),
        "--agent",
        "agentkit",
        "--out",
        str(tmp_path / "r.html"),
    ]
    assert main([*argv, "--output", "json"], stdout=out, now=lambda: T0) == 0
    summary = json.loads(out.getvalue())
    assert summary["errors"] == {code: float(n) for code, n in sorted(ERRORS, key=lambda e: -e[1])}
    assert summary["turn_table_of"] == len(TURNS)
    expected = run_files["expected"]["turn_rows"]
    assert [r["session_id"] for r in summary["turn_table"]] == [r["session"] for r in expected]
    for got, want in zip(summary["turn_table"], expected, strict=True):
        assert got["cost_usd"] == pytest.approx(want["cost"], rel=1e-12)
        assert (got["latency_ms"], got["time_to_first_token_ms"]) == (want["latency"], want["ttft"])
        assert got["tokens"] == {k: float(v) for k, v in want["tokens"].items()}
        assert got["models"] == want["models"]
    assert "connecting or resuming the session" in summary["latency_note"]
