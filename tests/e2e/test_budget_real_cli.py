"""Budgets with the REAL Claude Code CLI: the runtime stops a turn that goes over its invocation budget, even
though the CLI's own --max-budget-usd counts the whole process (so it cannot do it on a warm client)."""

from __future__ import annotations

from pathlib import Path

from harness.runtime_server import RuntimeServer, session_id
from standins import BedrockStandIn, Reply, Usage

TOOL = "mcp__kit__list_overdue_invoices"


def test_a_turn_over_its_invocation_budget_is_interrupted(tmp_path: Path) -> None:
    costly = Usage(input_tokens=2000, output_tokens=100)  # $0.0083 at us. Sonnet 4.5 prices
    with BedrockStandIn() as bedrock:
        server = RuntimeServer(
            env={
                "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
                "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
                "AGENTKIT_MAX_BUDGET_USD": "0.005",
                "AGENTKIT_SESSION_BUDGET_USD": "0",
            },
            log_path=tmp_path / "server.log",
        ).start()
        try:
            sid = session_id("budget-real")
            bedrock.enqueue(
                *(Reply.tool_use(TOOL, {"as_of": "2026-11-22"}, usage=costly) for _ in range(4)),
                Reply.text("done", usage=costly),
            )
            reply = server.invoke("look it up again and again", session=sid, stream=False)
            calls_in_turn = len(bedrock.model_requests)
            bedrock.reset()
            bedrock.enqueue(Reply.text("still here", usage=Usage(input_tokens=10, output_tokens=5)))
            after = server.invoke("are you still there?", session=sid, stream=False)
        finally:
            server.stop()
    assert reply.status == 402 and reply.body["code"] == "budget_exceeded"
    assert "max_budget_usd of $0.0050" in reply.body["message"]
    assert calls_in_turn < 5  # stopped before the scripted turn ran out
    assert after.status == 200 and after.body["text"] == "still here"  # the session stays usable
