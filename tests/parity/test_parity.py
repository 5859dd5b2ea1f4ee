"""The fake CLI and the real bundled CLI, one test body each, for what the runtime relies on.

Each test runs twice (``[fake]`` and ``[real]``, see ``conftest.py``) through the real claude-agent-sdk: the
initialize handshake, an SDK MCP tool call with its hooks, a denied tool, an interrupt, a CLI that dies mid-turn,
a session mirrored to a ``SessionStore`` and resumed in a new process. When the fake drifts from the real
protocol in any of these, its half fails here.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeSDKClient,
    CLIConnectionError,
    HookMatcher,
    InMemorySessionStore,
    PermissionResultAllow,
    PermissionResultDeny,
    ProcessError,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    project_key_for_directory,
    tool,
)

from tests.parity.conftest import Backend

pytestmark = pytest.mark.timeout(120)
TURN_TIMEOUT_S = 45
INTERRUPTED = "[Request interrupted by user"


async def streamed(text: str) -> AsyncIterator[dict[str, Any]]:
    yield {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None}


async def turn(client: ClaudeSDKClient, prompt: str) -> list[Any]:
    async def collect() -> list[Any]:
        await client.query(streamed(prompt))
        return [m async for m in client.receive_response()]

    return await asyncio.wait_for(collect(), TURN_TIMEOUT_S)


def result_of(messages: list[Any]) -> ResultMessage:
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert len(results) == 1, messages
    return results[0]


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 100))


@tool("lookup", "Look up a record by id", {"record_id": str})
async def _lookup(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": json.dumps({"id": args["record_id"], "total": 42.5})}]}


def test_handshake_and_a_text_turn(cli: Backend) -> None:
    """initialize answered; a turn streams system/init, an assistant text and a successful result whose
    session id is the one the SDK asked for."""
    sid = str(uuid.uuid4())

    async def go() -> tuple[Any, list[Any]]:
        async with ClaudeSDKClient(cli.options(session_id=sid)) as client:
            info = await client.get_server_info()
            messages = await turn(client, cli.text_turn("say hello"))
        return info, messages

    info, messages = run(go())
    assert isinstance(info, dict) and isinstance(info.get("commands"), list)
    assert isinstance(info.get("output_style"), str)
    inits = [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init"]
    assert len(inits) == 1 and inits[0].data["session_id"] == sid
    texts = [
        b for m in messages if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, TextBlock)
    ]
    assert texts and all(t.text for t in texts)
    result = result_of(messages)
    assert (result.subtype, result.is_error, result.num_turns, result.session_id) == (
        "success",
        False,
        1,
        sid,
    )
    assert result.usage is not None and result.usage["output_tokens"] > 0
    assert result.result == texts[-1].text
    assert isinstance(messages[-1], ResultMessage)  # nothing after the result


def test_sdk_mcp_tool_call_with_hooks_and_permission_callback(cli: Backend) -> None:
    """A tool not pre-allowed goes through PreToolUse, can_use_tool, the SDK MCP server and PostToolUse, in that
    order; its result comes back to the conversation under the tool_use id."""
    events: list[tuple[str, str]] = []

    async def pre(data: Any, tool_use_id: str | None, context: Any) -> Any:
        events.append(("PreToolUse", data["tool_name"]))
        return {}

    async def post(data: Any, tool_use_id: str | None, context: Any) -> Any:
        events.append(("PostToolUse", data["tool_name"]))
        return {}

    async def allow(name: str, tool_input: dict[str, Any], context: Any) -> PermissionResultAllow:
        events.append(("can_use_tool", name))
        return PermissionResultAllow()

    name = "mcp__kit__lookup"
    options = cli.options(
        mcp_servers={"kit": create_sdk_mcp_server("kit", tools=[_lookup])},
        hooks={"PreToolUse": [HookMatcher(hooks=[pre])], "PostToolUse": [HookMatcher(hooks=[post])]},
        can_use_tool=allow,
    )

    async def go() -> list[Any]:
        async with ClaudeSDKClient(options) as client:
            messages = await turn(
                client, cli.tool_turn("what is the total of R-9?", name, {"record_id": "R-9"})
            )
        return messages

    messages = run(go())
    assert events == [("PreToolUse", name), ("can_use_tool", name), ("PostToolUse", name)]
    uses = [
        b
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, ToolUseBlock)
    ]
    assert [(u.name, u.input) for u in uses] == [(name, {"record_id": "R-9"})]
    results = [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert [r.tool_use_id for r in results] == [uses[0].id] and not results[0].is_error
    assert "42.5" in json.dumps(results[0].content)
    result = result_of(messages)
    assert result.subtype == "success" and result.num_turns == 2 and not result.permission_denials


def test_a_denied_tool_is_reported_to_the_model_and_in_the_result(cli: Backend) -> None:
    async def deny(name: str, tool_input: dict[str, Any], context: Any) -> PermissionResultDeny:
        return PermissionResultDeny(message=f"policy: {name} is not allowed here")

    marker = cli.cwd / "must-not-exist"

    async def go() -> list[Any]:
        async with ClaudeSDKClient(cli.options(can_use_tool=deny)) as client:
            messages = await turn(
                client, cli.tool_turn("create a file", "Bash", {"command": f"touch {marker}"})
            )
        return messages

    messages = run(go())
    assert not marker.exists()
    results = [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert len(results) == 1 and results[0].is_error is True
    assert "policy: Bash is not allowed here" in json.dumps(results[0].content)
    result = result_of(messages)
    assert result.subtype == "success" and not result.is_error
    assert [d["tool_name"] for d in result.permission_denials or []] == ["Bash"]


def test_interrupt_ends_the_turn_and_the_client_takes_the_next_one(cli: Backend) -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(cli.options()) as client:
            await client.query(streamed(cli.slow_turn("take your time")))
            await asyncio.to_thread(cli.wait_until_slow)
            await client.interrupt()
            interrupted = await asyncio.wait_for(_drain(client), TURN_TIMEOUT_S)
            after = await turn(client, cli.text_turn("and now?"))
        return interrupted, after

    interrupted, after = run(go())
    notices = [m for m in interrupted if isinstance(m, UserMessage)]
    assert notices and INTERRUPTED in json.dumps(
        [b.text if isinstance(b, TextBlock) else b for b in notices[-1].content]
        if isinstance(notices[-1].content, list)
        else notices[-1].content
    )
    stopped = result_of(interrupted)
    assert stopped.subtype == "error_during_execution" and stopped.is_error
    assert result_of(after).subtype == "success"


async def _drain(client: ClaudeSDKClient) -> list[Any]:
    return [m async for m in client.receive_response()]


def test_a_cli_killed_mid_turn_ends_the_stream_with_an_error_and_no_result(cli: Backend) -> None:
    async def go() -> tuple[list[Any], BaseException | None]:
        seen: list[Any] = []
        error: BaseException | None = None
        before = set(cli.cli_processes())  # other tests' processes of this pytest run are not this CLI
        async with ClaudeSDKClient(cli.options()) as client:
            await client.query(streamed(cli.slow_turn("work hard")))
            await asyncio.to_thread(cli.wait_until_slow)
            (pid,) = set(cli.cli_processes()) - before
            os.kill(pid, signal.SIGKILL)
            try:
                async with asyncio.timeout(TURN_TIMEOUT_S):
                    async for message in client.receive_response():
                        seen.append(message)
            except (CLIConnectionError, ProcessError, BaseExceptionGroup) as exc:
                error = exc
        return seen, error

    messages, error = run(go())
    assert not [m for m in messages if isinstance(m, ResultMessage)]
    assert error is not None, "the SDK must raise when the CLI dies before its result"


def test_the_mirror_holds_the_conversation_and_a_new_process_resumes_it(cli: Backend) -> None:
    store = InMemorySessionStore()

    async def go() -> tuple[ResultMessage, ResultMessage]:
        async with ClaudeSDKClient(cli.options(session_store=store)) as client:
            first = result_of(await turn(client, cli.text_turn("remember the number 42")))
            result_of(await turn(client, cli.text_turn("and 43")))
        cli.fresh_config()  # the new process has nothing of the session on local disk
        async with ClaudeSDKClient(cli.options(session_store=store, resume=first.session_id)) as client:
            resumed = result_of(await turn(client, cli.text_turn("what did I say?")))
        return first, resumed

    first, resumed = run(go())
    cli.record(resumed)
    assert resumed.subtype == "success" and resumed.session_id == first.session_id
    assert cli.prompts_seen() == 2  # both earlier prompts reached the resumed conversation

    key = {"project_key": project_key_for_directory(str(cli.cwd)), "session_id": first.session_id}
    entries: list[dict[str, Any]] = [dict(e) for e in store.get_entries(key)]  # type: ignore[arg-type]
    talk = [e for e in entries if e.get("type") in ("user", "assistant")]
    prompts = [
        e["message"]["content"]
        for e in talk
        if e["type"] == "user" and isinstance(e["message"]["content"], str)
    ]
    assert prompts == ["remember the number 42", "and 43", "what did I say?"]
    assert [e["type"] for e in talk] == ["user", "assistant"] * 3
    assert all(e.get("sessionId") == first.session_id for e in talk)
    uuids = [e["uuid"] for e in entries if "uuid" in e]
    assert len(uuids) == len(set(uuids)) and len(uuids) >= len(talk)
    by_uuid = {e["uuid"]: e for e in entries if "uuid" in e}
    for entry in talk[1:]:  # each message hangs off an earlier entry of the same conversation
        assert entry["parentUuid"] in by_uuid, entry
