"""A team's agent directory outside the kit's tree, driven locally with the REAL Claude Code CLI through the REAL
runtime: its prompt reaches the model, its in-process SDK tool and its Gateway Lambda (run by the gateway stand-in,
which lists and calls the directory's own targets over signed MCP) are both called, and the sample's tools are not
offered once ``include_sample_tools`` is false."""

from __future__ import annotations

import json
from pathlib import Path

from harness.agent_gateway import agent_gateway_control
from harness.custom_agent import GATEWAY_TOOL, PROMPT, SDK_TOOL, write_custom_agent
from harness.gateway_standin import ACCESS_KEY, REGION, SECRET_KEY, serve_gateway
from harness.runtime_server import RuntimeServer, session_id
from standins import BedrockStandIn

ROOT = Path(__file__).resolve().parents[2]


def test_a_custom_agent_directory_runs_with_its_own_tools(tmp_path: Path) -> None:
    agent = write_custom_agent(tmp_path / "team-repo")
    assert ROOT not in agent.parents
    # --prefer-tool: the stand-in's default reply calls the first offered tool whose name holds the fragment
    with (
        BedrockStandIn(prefer_tools=("queue_depth",)) as bedrock,
        serve_gateway(agent_gateway_control(agent)) as (gateway_url, received),
    ):
        server = RuntimeServer(
            env={
                "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
                "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
                "AGENTKIT_AGENT_DIR": str(agent),
                "AGENTKIT_GATEWAY_URL": gateway_url,
                "AWS_REGION": REGION,
                "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            },
            log_path=tmp_path / "server.log",
        ).start()
        try:
            first = server.invoke("How deep is the main queue?", session=session_id("own-agent"))
            bedrock.prefer_tools = ("get_ticket",)
            second = server.invoke("Who owns OPS-12?", session=session_id("own-agent"))
        finally:
            server.stop()

    request = bedrock.model_requests[0].body
    assert PROMPT in json.dumps(request["system"])
    offered = {t["name"] for t in request["tools"]}
    assert {SDK_TOOL, GATEWAY_TOOL} <= offered
    assert not any(name.startswith("mcp__kit__") for name in offered)  # the sample is dropped, on purpose
    for reply, tool, says in ((first, SDK_TOOL, "jobs waiting"), (second, GATEWAY_TOOL, "platform-team")):
        use = next(e for e in reply.events if e["type"] == "tool_use")
        result = next(e for e in reply.events if e["type"] == "tool_result")
        assert use["name"] == tool and result["ok"] is True, reply.events
        assert says in result["summary"], result
        assert reply.events[-1]["type"] == "result" and reply.events[-1]["subtype"] == "success"
    calls = [r["message"]["params"] for r in received if r["message"].get("method") == "tools/call"]
    assert calls == [{"name": "tickets___get_ticket", "arguments": {"ticket_id": "OPS-12"}}]
    log = (tmp_path / "server.log").read_text()
    assert "sample tools mcp__kit off" in log and SDK_TOOL in log
