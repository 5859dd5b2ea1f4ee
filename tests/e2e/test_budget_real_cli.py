"""Budgets with the REAL Claude Code CLI: the runtime stops a turn that goes over its invocation budget, even
though the CLI's own --max-budget-usd counts the whole process (so it cannot do it on a warm client)."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def _bedrock_models() -> list[str]:
    from harness.cli_catalog import read_catalog

    return sorted(str(m.bedrock) for m in read_catalog().on_bedrock().values())


@pytest.mark.timeout(900)  # one runtime start per model: about 20 of them
def test_a_session_budget_stops_on_every_model_the_cli_knows(tmp_path: Path) -> None:
    """Cost never fails open: on each model the bundled CLI can call on Bedrock, a turn costs more than $0 (never below
    the CLI's own figure) and the next turn of the session is refused at its budget. One runtime per model (the model
    is a start-up setting), one Bedrock stand-in for all."""
    costly = Usage(input_tokens=20_000, output_tokens=2_000)  # >= $0.0075 on the cheapest model of the table
    outcomes: dict[str, tuple[int, float, float | None, bool, int, str]] = {}
    with BedrockStandIn() as bedrock:
        for model in _bedrock_models():
            server = RuntimeServer(
                env={
                    "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
                    "AGENTKIT_STATE_DIR": str(tmp_path / model.replace(":", "_")),
                    "AGENTKIT_MODEL": model,
                    "AGENTKIT_SESSION_BUDGET_USD": "0.005",
                },
                log_path=tmp_path / f"{model.replace(':', '_')}.log",
            ).start()
            try:
                sid = session_id("budget-every-model")
                bedrock.reset()
                bedrock.enqueue(Reply.text("first", usage=costly), Reply.text("second", usage=costly))
                first = server.invoke("one", session=sid, stream=False)
                second = server.invoke("two", session=sid, stream=False)
            finally:
                server.stop()
            # Over the session budget in one turn: the turn itself may be stopped at its invocation budget (402 with
            # the partial figures), and the next turn is refused.
            figures = first.body if first.status == 200 else first.body.get("partial", {})
            outcomes[model] = (
                first.status,
                float(figures.get("cost_usd") or 0),
                figures.get("sdk_cost_usd"),
                bool(figures.get("cost_complete")),
                second.status,
                str(second.body.get("code")),
            )
    for model, (status, cost, sdk_cost, complete, next_status, code) in outcomes.items():
        assert status in (200, 402) and complete and cost > 0.005, (model, outcomes[model])
        assert sdk_cost is None or cost >= sdk_cost * 0.999, (
            model,
            cost,
            sdk_cost,
        )  # never below the CLI's figure
        assert (next_status, code) == (402, "budget_exceeded"), (model, outcomes[model])
