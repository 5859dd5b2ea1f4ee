"""The REAL bundled Claude Code CLI, driven by the real SDK, against the local Bedrock Runtime stand-in.

Only the model is scripted. Each test spawns one CLI process (~0.4-0.6 s) with its own CLAUDE_CONFIG_DIR
and XDG_CACHE_HOME. Prompts are always streamed (a string prompt closes stdin and breaks SDK MCP tools).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    create_sdk_mcp_server,
    tool,
)

from standins import BedrockStandIn, Reply, Usage, cli_env
from tests.e2e.conftest import BUNDLED_CLI

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
TURN_TIMEOUT_S = 30


async def streamed(text: str) -> AsyncIterator[dict[str, Any]]:
    yield {
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": None,
        "session_id": "default",
    }


def options(bedrock: BedrockStandIn, tmp_path: Path, **extra: Any) -> ClaudeAgentOptions:
    stderr: list[str] = extra.pop("stderr_lines", [])
    return ClaudeAgentOptions(
        cli_path=str(BUNDLED_CLI),
        cwd=str(tmp_path),
        env=cli_env(bedrock.url, MODEL, cache_home=tmp_path / "cache", config_dir=tmp_path / "config"),
        permission_mode="default",
        stderr=stderr.append,
        **extra,
    )


async def turn(client: ClaudeSDKClient, text: str) -> ResultMessage:
    async def collect() -> ResultMessage:
        await client.query(streamed(text))
        async for message in client.receive_response():
            if isinstance(message, ResultMessage):
                return message
        raise AssertionError("the response ended without a ResultMessage")

    return await asyncio.wait_for(collect(), TURN_TIMEOUT_S)


def run_turns(opts: ClaudeAgentOptions, *prompts: str) -> list[ResultMessage]:
    async def main() -> list[ResultMessage]:
        async with ClaudeSDKClient(opts) as client:
            results = [await turn(client, p) for p in prompts]
        return results

    return asyncio.run(main())


def last_user_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    content = body["messages"][-1]["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


@pytest.fixture
def bedrock():
    with BedrockStandIn() as standin:
        yield standin


def test_text_turn_reports_the_stand_in_usage_and_cost(bedrock, tmp_path):
    usage = Usage(
        input_tokens=100, output_tokens=20, cache_creation_input_tokens=300, cache_read_input_tokens=4000
    )
    bedrock.enqueue(Reply.text("Hello from the scripted model.", usage=usage))

    (result,) = run_turns(options(bedrock, tmp_path), "Say hello")

    assert result.is_error is False and result.result == "Hello from the scripted model."
    assert result.usage is not None
    assert result.usage["input_tokens"] == 100 and result.usage["output_tokens"] == 20
    assert (
        result.usage["cache_creation_input_tokens"] == 300 and result.usage["cache_read_input_tokens"] == 4000
    )
    assert result.model_usage is not None
    per_model = result.model_usage[MODEL]
    assert (per_model["inputTokens"], per_model["outputTokens"]) == (100, 20)
    assert (per_model["cacheCreationInputTokens"], per_model["cacheReadInputTokens"]) == (300, 4000)
    assert per_model["provider"] == "bedrock"
    # Sonnet 4.5 list prices per million tokens: input 3, output 15, cache write 3.75, cache read 0.30
    expected = (100 * 3 + 20 * 15 + 300 * 3.75 + 4000 * 0.30) / 1e6
    assert result.total_cost_usd == pytest.approx(expected, rel=1e-6)

    first, call = bedrock.requests
    assert (first.method, first.path, first.query) == (
        "GET",
        "/inference-profiles",
        {"type": ["SYSTEM_DEFINED"]},
    )
    assert call.operation == "invoke-with-response-stream" and call.model_id == MODEL
    assert {"messages", "system", "tools", "max_tokens", "anthropic_version"} <= set(call.body)
    assert call.body["anthropic_version"] == "bedrock-2023-05-31"
    assert "Say hello" in [b.get("text") for b in last_user_blocks(call.body)]


def test_tool_turn_through_an_sdk_mcp_tool(bedrock, tmp_path):
    seen: list[dict[str, Any]] = []

    @tool("get_invoice", "Look up an invoice by id", {"invoice_id": str})
    async def get_invoice(args: dict[str, Any]) -> dict[str, Any]:
        seen.append(args)
        return {"content": [{"type": "text", "text": json.dumps({"id": args["invoice_id"], "total": 42.5})}]}

    bedrock.enqueue(
        Reply.tool_use("mcp__tools__get_invoice", {"invoice_id": "INV-9"}, tool_use_id="toolu_e2e_1"),
        Reply.text("Invoice INV-9 totals 42.50."),
    )
    opts = options(
        bedrock,
        tmp_path,
        mcp_servers={"tools": create_sdk_mcp_server("tools", tools=[get_invoice])},
        allowed_tools=["mcp__tools__get_invoice"],
    )

    (result,) = run_turns(opts, "What is the total of invoice INV-9?")

    assert seen == [{"invoice_id": "INV-9"}]
    assert result.result == "Invoice INV-9 totals 42.50." and result.num_turns == 2
    first, second = bedrock.model_requests
    assert "mcp__tools__get_invoice" in [t["name"] for t in first.body["tools"]]
    (tool_result,) = [b for b in last_user_blocks(second.body) if b["type"] == "tool_result"]
    assert tool_result["tool_use_id"] == "toolu_e2e_1"
    assert json.loads(tool_result["content"][0]["text"]) == {"id": "INV-9", "total": 42.5}


def test_default_model_calls_the_invoice_tool_through_can_use_tool(bedrock, tmp_path):
    asked: list[str] = []

    @tool("get_invoice", "Look up an invoice by id", {"invoice_id": str})
    async def get_invoice(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"{args['invoice_id']}: 3 lines, total 99.00"}]}

    async def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> PermissionResultAllow:
        asked.append(name)
        return PermissionResultAllow()

    opts = options(
        bedrock,
        tmp_path,
        mcp_servers={"tools": create_sdk_mcp_server("tools", tools=[get_invoice])},
        can_use_tool=can_use_tool,
    )

    (result,) = run_turns(opts, "Please check invoice INV-31")

    assert asked == ["mcp__tools__get_invoice"]
    assert "INV-31: 3 lines, total 99.00" in (result.result or "")


def test_permission_callback_denies_a_bash_command(bedrock, tmp_path):
    marker = tmp_path / "must-not-exist"
    bedrock.enqueue(Reply.tool_use("Bash", {"command": f"touch {marker}"}), Reply.text("Understood."))

    async def deny_bash(name: str, tool_input: dict[str, Any], context: Any) -> PermissionResultDeny:
        return PermissionResultDeny(message=f"policy: {name} is not allowed")

    (result,) = run_turns(options(bedrock, tmp_path, can_use_tool=deny_bash), "Create a file")

    assert not marker.exists()
    assert result.result == "Understood."
    assert result.permission_denials is not None
    assert [d["tool_name"] for d in result.permission_denials] == ["Bash"]
    (tool_result,) = [
        b for b in last_user_blocks(bedrock.model_requests[-1].body) if b["type"] == "tool_result"
    ]
    assert tool_result.get("is_error") is True
    assert "policy: Bash is not allowed" in json.dumps(tool_result["content"])


def test_two_turns_share_one_cli_process_and_conversation(bedrock, tmp_path):
    bedrock.enqueue(Reply.text("First answer."), Reply.text("Second answer."))

    first, second = run_turns(options(bedrock, tmp_path), "first question", "second question")

    assert (first.result, second.result) == ("First answer.", "Second answer.")
    assert first.session_id == second.session_id
    # the CLI lists inference profiles once per process start: one process served both turns
    assert [r.operation for r in bedrock.requests].count("inference-profiles") == 1
    history = json.dumps(bedrock.model_requests[-1].body["messages"])
    assert "first question" in history and "First answer." in history


def test_throttling_429_is_retried_and_the_turn_succeeds(bedrock, tmp_path):
    bedrock.enqueue(Reply.error(429), Reply.text("After the retry."))

    (result,) = run_turns(options(bedrock, tmp_path), "hello")

    assert result.is_error is False and result.result == "After the retry."
    assert [r.status for r in bedrock.model_requests] == [429, 200]


def test_validation_400_gives_an_error_result(bedrock, tmp_path):
    # twice, in case a CLI build retries a 400 once (2.1.330 does not)
    bedrock.enqueue(Reply.error(400, message="Invalid model input: scripted failure"), times=2)

    (result,) = run_turns(options(bedrock, tmp_path), "hello")

    assert result.is_error is True
    assert result.api_error_status == 400
    assert "scripted failure" in (result.result or "")
    assert all(r.status == 400 for r in bedrock.model_requests)


def test_mid_stream_exception_falls_back_to_invoke(bedrock, tmp_path):
    bedrock.enqueue(
        Reply.stream_exception("internalServerException", after_events=1), Reply.text("Recovered.")
    )

    (result,) = run_turns(options(bedrock, tmp_path), "hello")

    assert result.is_error is False and result.result == "Recovered."
    assert [r.operation for r in bedrock.model_requests] == ["invoke-with-response-stream", "invoke"]
    assert bedrock.model_requests[1].body["messages"] == bedrock.model_requests[0].body["messages"]
