"""Gateway tools end to end: the REAL Claude Code CLI, through the REAL runtime, calls a tool of a (loopback)
AgentCore Gateway via the SigV4-signing SDK MCP proxy (``runtime/agent/gateway_tools.py``).

The gateway stand-in rejects any request whose SigV4 signature does not verify, so a passing test proves the
runtime signed ``initialize``, ``tools/list`` and ``tools/call`` with its credentials.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.gateway_standin import ACCESS_KEY, REGION, SECRET_KEY, serve_gateway
from harness.runtime_server import RuntimeServer, session_id
from standins import BedrockStandIn, Reply

TOOL = "mcp__gateway__invoices___get_invoice"


def test_a_gateway_tool_is_called_through_the_signed_proxy(tmp_path: Path) -> None:
    with BedrockStandIn() as bedrock, serve_gateway() as (gateway_url, received):
        bedrock.enqueue(
            Reply.tool_use(TOOL, {"invoice_id": "INV-1002"}, text="Looking it up."),
            Reply.text("INV-1002 belongs to Globex."),
        )
        server = RuntimeServer(
            env={
                "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
                "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
                "AGENTKIT_GATEWAY_URL": gateway_url,
                "AWS_REGION": REGION,
                "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            },
            log_path=tmp_path / "server.log",
        ).start()
        try:
            reply = server.invoke("Who owns INV-1002?", session=session_id("gateway"))
        finally:
            server.stop()

    offered = {t["name"] for t in bedrock.model_requests[0].body["tools"]}
    assert TOOL in offered  # the gateway's tools/list reached the model as MCP tools
    use = next(e for e in reply.events if e["type"] == "tool_use")
    result = next(e for e in reply.events if e["type"] == "tool_result")
    assert use["name"] == TOOL and result["ok"] is True
    assert reply.events[-1]["type"] == "result" and "Globex" in reply.events[-1]["text"]
    calls = [r["message"] for r in received if r["message"].get("method") == "tools/call"]
    assert calls == [
        {"jsonrpc": "2.0", "id": calls[0]["id"], "method": "tools/call",
         "params": {"name": "invoices___get_invoice", "arguments": {"invoice_id": "INV-1002"}}}
    ]  # fmt: skip
    # the gateway's answer went back to the model
    assert "invoices___get_invoice" in json.dumps(bedrock.tool_results()[use["id"]])
