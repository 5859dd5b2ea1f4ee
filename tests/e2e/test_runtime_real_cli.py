"""The REAL runtime server with the REAL bundled Claude Code CLI, against the local Bedrock Runtime stand-in.

``python -m runtime`` runs as a subprocess on loopback with ``AGENTKIT_BEDROCK_ENDPOINT`` pointing at
:class:`standins.BedrockStandIn` and no ``AGENTKIT_CLI_PATH`` (so the SDK's bundled CLI is spawned). Only the
model is scripted; HTTP, the session registry, the SDK, the CLI, SDK MCP tools, the permission policy, the
SQLite session store, the price table and the EMF sink are the production code paths.

One stand-in and one server serve the module (each new runtime session spawns one CLI, ~0.5 s); the resume
test starts its own two servers because it kills one. Each test queues its own replies and reads only the
requests made during the test (the stand-in is reset before each test).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.runtime_server import RuntimeServer, session_id
from runtime.agent.tools import load_sample_invoices, overdue_invoices
from standins import BedrockStandIn, RecordedRequest, Reply, Usage

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
TOOL = "mcp__kit__list_overdue_invoices"
# Sonnet 4.5 on a geographic (us.) profile, USD per million tokens: global rates x 1.10 (runtime/observe/costs.py).
US_SONNET_45 = {"input": 3.0 * 1.1, "output": 15.0 * 1.1, "cache_write": 3.75 * 1.1, "cache_read": 0.30 * 1.1}


def expected_cost(usage: Usage) -> float:
    """The price of one model call at the us. Sonnet 4.5 rates, computed by hand."""
    return (
        usage.input_tokens * US_SONNET_45["input"]
        + usage.output_tokens * US_SONNET_45["output"]
        + usage.cache_creation_input_tokens * US_SONNET_45["cache_write"]
        + usage.cache_read_input_tokens * US_SONNET_45["cache_read"]
    ) / 1_000_000


def runtime_env(bedrock: BedrockStandIn, state: Path, **extra: str) -> dict[str, str]:
    return {
        "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
        "AGENTKIT_MODEL": MODEL,
        "AGENTKIT_STATE_DIR": str(state),
        "AGENTKIT_TURN_TIMEOUT": "60",
        # No fallback model here: with one, the CLI answers a model error by retrying on the fallback (its own test
        # below), which would hide the error mapping these tests check.
        "AGENTKIT_FALLBACK_MODEL": "off",
        **extra,
    }


@pytest.fixture(scope="module")
def bedrock() -> Iterator[BedrockStandIn]:
    with BedrockStandIn() as standin:
        yield standin


@pytest.fixture(scope="module")
def server(bedrock: BedrockStandIn) -> Iterator[RuntimeServer]:
    # Under /tmp and traversable (pytest's tmp dirs are private to their user): a root runtime runs its CLI as an
    # unprivileged user, who must reach the workspace, or command tools stay off (docs/security.md).
    tmp = Path(tempfile.mkdtemp(prefix="ak-runtime-real-cli-", dir="/tmp"))
    tmp.chmod(0o755)
    srv = RuntimeServer(
        env=runtime_env(
            bedrock,
            tmp / "state",
            AGENTKIT_METRICS="emf",
            AGENTKIT_EMF_FILE=str(tmp / "metrics.emf.jsonl"),
            AGENTKIT_SESSION_STORE=f"sqlite:///{tmp / 'sessions.db'}",
            AGENTKIT_STAGE="dev",
        ),
        log_path=tmp / "server.log",
    ).start()
    srv.tmp = tmp  # type: ignore[attr-defined]
    yield srv
    srv.stop()
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(autouse=True)
def fresh_standin(bedrock: BedrockStandIn) -> None:
    bedrock.reset()


def emf_lines(server: RuntimeServer) -> list[dict[str, Any]]:
    path: Path = server.tmp / "metrics.emf.jsonl"  # type: ignore[attr-defined]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def last_user_blocks(request: RecordedRequest) -> list[dict[str, Any]]:
    content = request.body["messages"][-1]["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def only(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (event,) = [e for e in events if e["type"] == kind]
    return event


def assert_ok(reply: Any) -> dict[str, Any]:
    assert reply.status == 200, reply.body
    assert reply.events, "no SSE events"
    assert reply.last["type"] == "result", reply.last
    return reply.last


# -- tools and policy --------------------------------------------------------------------------------------


def test_tool_turn_through_the_sdk_mcp_tool_streams_tool_events(server, bedrock):
    bedrock.enqueue(
        Reply.tool_use(TOOL, {"as_of": "2026-11-01"}, text="Checking.", tool_use_id="toolu_rt_1"),
        Reply.text("You have overdue invoices."),
    )

    reply = server.invoke("Analyze my overdue invoices", session=session_id("rt-tool"))

    result = assert_ok(reply)
    types = [e["type"] for e in reply.events]
    assert types.index("tool_use") < types.index("tool_result") < types.index("result")
    tool_use, tool_result = only(reply.events, "tool_use"), only(reply.events, "tool_result")
    assert (tool_use["id"], tool_use["name"]) == ("toolu_rt_1", TOOL)
    assert "2026-11-01" in tool_use["input_summary"]
    assert (tool_result["id"], tool_result["name"], tool_result["ok"]) == ("toolu_rt_1", TOOL, True)
    assert result["text"] == "You have overdue invoices." and result["num_turns"] == 2
    # the tool really ran in the runtime process: the model's second call carries its output
    first, second = bedrock.model_requests
    assert TOOL in [t["name"] for t in first.body["tools"]]
    (block,) = [b for b in last_user_blocks(second) if b["type"] == "tool_result"]
    assert block["tool_use_id"] == "toolu_rt_1" and not block.get("is_error")
    content = block["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    expected = overdue_invoices(load_sample_invoices(), dt.date(2026, 11, 1))
    assert json.loads(text) == expected and expected["count"] > 0


def test_permission_policy_denies_a_bash_command_for_real(server, bedrock, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("still here")
    command = f"ls; rm -rf {victim}"
    bedrock.enqueue(Reply.tool_use("Bash", {"command": command}), Reply.text("I may not do that."))

    reply = server.invoke("Clean up the folder", session=session_id("rt-deny"))

    result = assert_ok(reply)
    assert (victim / "keep.txt").read_text() == "still here"
    tool_result = only(reply.events, "tool_result")
    assert tool_result["name"] == "Bash" and tool_result["ok"] is False
    assert "'rm' is not an allowed program" in tool_result["summary"]
    assert result["text"] == "I may not do that."
    # the model saw the denial as an error tool_result that says what it may do instead
    (block,) = [b for b in last_user_blocks(bedrock.model_requests[-1]) if b["type"] == "tool_result"]
    assert block["is_error"] is True
    assert "'rm' is not an allowed program" in json.dumps(block["content"])
    assert "You may run only these programs" in json.dumps(block["content"])
    denied = [m for m in emf_lines(server) if m.get("Tool") == "Bash" and "ToolDenied" in m]
    assert denied and denied[-1]["ToolDenied"] == [1.0]


# -- warm sessions, cost ------------------------------------------------------------------------------------


def test_two_turns_share_one_warm_cli_process(server, bedrock):
    bedrock.enqueue(Reply.text("First answer."), Reply.text("Second answer."))
    sid = session_id("rt-warm")

    first = assert_ok(server.invoke("first question", session=sid))
    second = assert_ok(server.invoke("second question", session=sid))

    assert (first["text"], second["text"]) == ("First answer.", "Second answer.")
    assert first["claude_session_id"] == second["claude_session_id"]
    # the CLI lists inference profiles once per process start: one start served both turns
    assert [r.operation for r in bedrock.requests].count("inference-profiles") == 1
    calls = bedrock.model_requests
    assert len(calls) == 2
    assert {r.headers.get("x-claude-code-session-id") for r in calls} == {first["claude_session_id"]}
    history = json.dumps(calls[1].body["messages"])
    assert "first question" in history and "First answer." in history


def test_cost_in_result_and_emf_matches_stand_in_usage_at_table_prices(server, bedrock):
    usages = [
        Usage(
            input_tokens=1200, output_tokens=345, cache_creation_input_tokens=2000, cache_read_input_tokens=0
        ),
        Usage(
            input_tokens=80,
            output_tokens=1500,
            cache_creation_input_tokens=150,
            cache_read_input_tokens=32000,
        ),
    ]
    bedrock.enqueue(*(Reply.text(f"Answer {i}.", usage=u) for i, u in enumerate(usages)))
    sid = session_id("rt-cost")

    results = [assert_ok(server.invoke(f"question {i}", session=sid)) for i in range(2)]

    turn_lines = [m for m in emf_lines(server) if m.get("SessionId") == sid and "CostUSD" in m]
    assert len(turn_lines) == 2
    assert {m["ClaudeSessionId"] for m in turn_lines} == {results[0]["claude_session_id"]}
    for usage, result, metrics in zip(usages, results, turn_lines, strict=True):
        cost = expected_cost(usage)
        # the second turn is priced from the per-turn delta of the CLI's cumulative modelUsage
        assert result["cost_usd"] == pytest.approx(cost, abs=1e-6)
        assert result["usage"] == {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        }
        assert result["cost_complete"] is True
        assert metrics["Model"] == MODEL and metrics["Agent"] == "agentkit"
        assert metrics["CostUSD"] == [pytest.approx(cost, rel=1e-9)]
        assert metrics["InputTokens"] == [usage.input_tokens]
        assert metrics["OutputTokens"] == [usage.output_tokens]
        assert metrics["CacheReadTokens"] == [usage.cache_read_input_tokens]
        assert metrics["CacheWriteTokens"] == [usage.cache_creation_input_tokens]
        assert metrics["Turns"] == [1.0]
        namespaces = [d["Namespace"] for d in metrics["_aws"]["CloudWatchMetrics"]]
        assert namespaces == ["AgentCoreClaudeKit"]
    assert results[1]["session_cost_usd"] == pytest.approx(sum(map(expected_cost, usages)), abs=2e-6)
    # the CLI's own figure is kept beside ours: it uses global list prices, so ours is 10 % higher here
    assert results[0]["sdk_cost_usd"] == pytest.approx(expected_cost(usages[0]) / 1.1, abs=1e-6)


# -- model errors --------------------------------------------------------------------------------------------


def test_throttling_429_is_retried_and_the_turn_succeeds(server, bedrock):
    bedrock.enqueue(Reply.error(429), Reply.text("After the retry."))
    sid = session_id("rt-429")

    result = assert_ok(server.invoke("hello", session=sid))

    assert result["text"] == "After the retry." and result["subtype"] == "success"
    assert [r.status for r in bedrock.model_requests] == [429, 200]
    # the retry is in the runtime's log as it happens (the CLI's api_retry message), not only at the end
    retries = [
        line
        for line in server.log_path.read_text().splitlines()
        if f"session {sid}: model call failed (HTTP 429" in line
    ]
    assert len(retries) == 1 and "attempt 1 of" in retries[0], retries


def test_validation_400_gives_a_clear_model_error_and_the_session_recovers(server, bedrock):
    # twice, in case a CLI build retries a 400 once (2.1.330 does not)
    bedrock.enqueue(Reply.error(400, message="Invalid model input: scripted failure"), times=2)
    sid = session_id("rt-400")

    reply = server.invoke("hello", session=sid)

    assert reply.status == 200  # SSE already started; the error is the last event
    error = reply.last
    assert error["type"] == "error" and error["code"] == "model_error"
    assert "HTTP 400" in error["message"] and "scripted failure" in error["message"]
    assert "Retry later" in error["message"]
    # the CLI's made-up "API Error: …" assistant text is the error's, not the answer's
    assert "API Error: 400" in error["message"]
    assert [e for e in reply.events if e["type"] == "text"] == []
    assert bedrock.model_requests and all(r.status == 400 for r in bedrock.model_requests)

    bedrock.reset()
    bedrock.enqueue(Reply.error(400, message="Invalid model input: again"), times=2)
    plain = server.invoke("hello again", session=sid, stream=False)
    assert plain.status == 502 and plain.body["code"] == "model_error"

    bedrock.reset()
    bedrock.enqueue(Reply.text("Working again."))
    assert assert_ok(server.invoke("and now?", session=sid))["text"] == "Working again."


# -- resume after the process is lost -----------------------------------------------------------------------


def test_resume_in_a_fresh_process_from_the_sqlite_store(bedrock, tmp_path):
    store = f"sqlite:///{tmp_path / 'store' / 'sessions.db'}"
    (tmp_path / "store").mkdir()
    workspace = tmp_path / "workspace"  # the container's working dir: the same path on every microVM
    sid = session_id("rt-resume")

    first_env = runtime_env(
        bedrock,
        tmp_path / "vm1",
        AGENTKIT_SESSION_STORE=store,
        AGENTKIT_WORKSPACE=str(workspace),
        CLAUDE_CONFIG_DIR=str(tmp_path / "vm1-claude"),
    )
    first = RuntimeServer(env=first_env, log_path=tmp_path / "vm1.log").start()
    try:
        bedrock.enqueue(Reply.text("Noted: the code word is PELICAN."), Reply.text("Second answer."))
        one = assert_ok(first.invoke("Remember the code word PELICAN", session=sid))
        two = assert_ok(first.invoke("second question", session=sid))
    finally:
        first.kill()  # SIGKILL: the microVM is gone, nothing is flushed at shutdown
    assert one["claude_session_id"] == two["claude_session_id"]

    new_config = tmp_path / "vm2-claude"
    new_config.mkdir()
    second_env = runtime_env(
        bedrock,
        tmp_path / "vm2",
        AGENTKIT_SESSION_STORE=store,
        AGENTKIT_WORKSPACE=str(workspace),
        CLAUDE_CONFIG_DIR=str(new_config),
    )
    second = RuntimeServer(env=second_env, log_path=tmp_path / "vm2.log").start()
    try:
        bedrock.reset()
        bedrock.enqueue(Reply.text("The code word was PELICAN."))
        three = assert_ok(second.invoke("What was the code word?", session=sid))
    finally:
        second.stop()

    assert three["claude_session_id"] == one["claude_session_id"]
    assert three["resumed"] is True and three["text"] == "The code word was PELICAN."
    (call,) = bedrock.model_requests
    assert call.headers.get("x-claude-code-session-id") == one["claude_session_id"]
    history = json.dumps(call.body["messages"])
    for earlier in ("Remember the code word PELICAN", "Noted: the code word is PELICAN.", "second question"):
        assert earlier in history, earlier
    assert "Second answer." in history


def test_every_model_call_carries_the_sessions_request_metadata(server, bedrock):
    """The CLI sends ``X-Amzn-Bedrock-Request-Metadata`` (from ``ANTHROPIC_CUSTOM_HEADERS``) with each model
    call: Bedrock's invocation logs can then be joined to the runtime session, the agent and the stage (the
    stack sets ``AGENTKIT_STAGE``)."""
    bedrock.enqueue(Reply.text("Noted."))
    sid = session_id("rt-metadata")
    assert_ok(server.invoke("Say noted", session=sid))
    (call,) = bedrock.model_requests
    metadata = json.loads(call.headers["x-amzn-bedrock-request-metadata"])
    assert metadata == {"agentkit.agent": "agentkit", "agentkit.session": sid, "agentkit.stage": "dev"}


def test_a_stage_bedrock_project_goes_with_every_model_call(bedrock: BedrockStandIn, tmp_path: Path) -> None:
    """With ``AGENTKIT_BEDROCK_PROJECT`` the real CLI sends ``X-Amzn-Bedrock-ProjectIdentifier`` with each call,
    beside the request metadata (two lines of ``ANTHROPIC_CUSTOM_HEADERS``)."""
    project = "arn:aws:bedrock:us-east-1:123456789012:project/agentkit-dev"
    srv = RuntimeServer(
        env=runtime_env(bedrock, tmp_path / "state", AGENTKIT_STAGE="dev", AGENTKIT_BEDROCK_PROJECT=project),
        log_path=tmp_path / "server.log",
    ).start()
    try:
        bedrock.enqueue(Reply.text("Noted."))
        sid = session_id("rt-project")
        assert_ok(srv.invoke("Say noted", session=sid))
    finally:
        srv.stop()
    (call,) = bedrock.model_requests
    assert call.headers["x-amzn-bedrock-projectidentifier"] == project
    assert json.loads(call.headers["x-amzn-bedrock-request-metadata"])["agentkit.session"] == sid


def test_a_failing_model_call_is_retried_on_the_fallback_model_and_charged(
    bedrock: BedrockStandIn, tmp_path: Path
) -> None:
    """With ``AGENTKIT_FALLBACK_MODEL`` (the SDK's ``fallback_model``) the real CLI answers a failed call of the main
    model by calling the fallback, and stays on it: the turn succeeds and its cost is the fallback's, never 0."""
    fallback = "us.anthropic.claude-sonnet-5"
    srv = RuntimeServer(
        env=runtime_env(bedrock, tmp_path / "state", AGENTKIT_FALLBACK_MODEL=fallback),
        log_path=tmp_path / "server.log",
    ).start()
    try:
        bedrock.reset()
        bedrock.enqueue(Reply.error(400, message="Invalid model input: scripted failure"))
        bedrock.enqueue(
            Reply.text("Answered by the fallback.", usage=Usage(input_tokens=1000, output_tokens=100))
        )
        reply = srv.invoke("hello", session=session_id("rt-fallback"), stream=False)
    finally:
        srv.stop()
    assert reply.status == 200 and reply.body["text"] == "Answered by the fallback.", reply.body
    assert [(r.model_id, r.status) for r in bedrock.model_requests] == [(MODEL, 400), (fallback, 200)]
    # Sonnet 5 at a us. profile: $2 / $10 per million tokens, x1.1 (runtime/models/catalog.py)
    assert reply.body["cost_usd"] == pytest.approx((1000 * 2 + 100 * 10) * 1.1 / 1e6)
    assert reply.body["cost_complete"] is True
