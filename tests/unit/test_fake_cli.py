"""The fake Claude Code CLI (harness/fake_claude.py) driven by the real claude-agent-sdk.

Every test spawns the fake through ``ClaudeSDKClient(cli_path=...)`` with prompts streamed as async
iterables, so these tests also pin the SDK wire protocol the runtime relies on.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    InMemorySessionStore,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    project_key_for_directory,
    query,
    tool,
)
from claude_agent_sdk.types import HookJSONOutput, SessionKey

from harness import fake_claude as fc
from harness.cli import write_fake_cli

REPLY_RE = re.compile(
    r"^echo: (?P<prompt>.*?) \| pid=(?P<pid>\d+) \| turn=(?P<turn>\d+) \| history=(?P<history>\d+)"
    r" \| resumed=(?P<resumed>true|false)"
)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A fake CLI, a log file and an empty CLAUDE_CONFIG_DIR under tmp_path."""
    log = tmp_path / "fake.log"
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(log))
    work = tmp_path / "work"
    work.mkdir()
    return {"cli": write_fake_cli(tmp_path), "log": log, "config": tmp_path / "config", "cwd": work}


def options(env: dict[str, Any], **kwargs: Any) -> ClaudeAgentOptions:
    extra_env = kwargs.pop("env", {})
    return ClaudeAgentOptions(
        cli_path=str(env["cli"]),
        cwd=str(env["cwd"]),
        env={"CLAUDE_CONFIG_DIR": str(env["config"]), **extra_env},
        **kwargs,
    )


async def stream(text: str) -> AsyncIterator[dict[str, Any]]:
    yield {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None}


async def turn(client: ClaudeSDKClient, text: str) -> list[Any]:
    await client.query(stream(text))
    return [m async for m in client.receive_response()]


def run(factory: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(factory(), timeout=20))


def result_of(messages: list[Any]) -> ResultMessage:
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert len(results) == 1, messages
    return results[0]


def log_events(env: dict[str, Any], event: str | None = None) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in env["log"].read_text().splitlines()]
    return [e for e in lines if event is None or e["event"] == event]


def test_handshake_and_text_turn(env: dict[str, Any]) -> None:
    async def go() -> list[Any]:
        async with ClaudeSDKClient(options(env, model="us.anthropic.claude-sonnet-4-5-20250929-v1:0")) as c:
            result = await turn(c, "hello there")
        return result

    messages = run(go)
    init = messages[0]
    assert isinstance(init, SystemMessage) and init.subtype == "init"
    assert init.data["claude_code_version"] == fc.VERSION
    assert init.data["model"] == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    text = next(m for m in messages if isinstance(m, AssistantMessage)).content[0]
    assert isinstance(text, TextBlock)
    match = REPLY_RE.match(text.text)
    assert match and match["prompt"] == "hello there" and match["turn"] == "1" and match["history"] == "0"
    result = result_of(messages)
    assert (result.subtype, result.is_error, result.num_turns) == ("success", False, 1)
    assert result.result == text.text and result.session_id == init.data["session_id"]
    assert result.usage is not None and result.model_usage is not None
    assert result.usage["input_tokens"] == fc.CALL_INPUT_TOKENS
    assert result.usage["cache_read_input_tokens"] == fc.CALL_CACHE_READ_TOKENS
    by_hand = (1000 * 3 + 200 * 15 + 300 * 3.75 + 400 * 0.3) / 1e6
    assert result.total_cost_usd == pytest.approx(by_hand)
    usage = result.model_usage["us.anthropic.claude-sonnet-4-5-20250929-v1:0"]
    assert usage["cacheCreationInputTokens"] == fc.CALL_CACHE_WRITE_TOKENS
    assert usage["costUSD"] == pytest.approx(by_hand)
    start = log_events(env, "start")[0]
    assert start["pid"] == int(match["pid"])
    assert start["opts"]["--model"] == "us.anthropic.claude-sonnet-4-5-20250929-v1:0" and start["env"][
        "CLAUDE_CONFIG_DIR"
    ] == str(env["config"])


def test_two_turns_share_one_process_and_history(env: dict[str, Any]) -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(options(env)) as c:
            result = await turn(c, "one"), await turn(c, "two")
        return result

    first, second = run(go)
    a, b = REPLY_RE.match(result_of(first).result or ""), REPLY_RE.match(result_of(second).result or "")
    assert a and b and a["pid"] == b["pid"]
    assert (b["turn"], b["history"]) == ("2", "1")
    assert result_of(second).total_cost_usd == pytest.approx(2 * fc.CALL_COST_USD)  # cumulative per process
    assert [e["prompt"] for e in log_events(env, "turn")] == ["one", "two"]
    assert len({e["pid"] for e in log_events(env)}) == 1
    assert log_events(env, "exit")[0]["reason"] == "stdin EOF"


def _invoice_server(calls: list[dict[str, Any]], *, fail: bool = False) -> Any:
    @tool("invoice", "Look up an invoice", {"id": int})
    async def invoice(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"invoice {args['id']} is paid"}], "is_error": fail}

    return create_sdk_mcp_server("billing", tools=[invoice])


# The SDK warns that an allowed_tools entry shadows can_use_tool: that shadowing is what this test checks.
@pytest.mark.filterwarnings("ignore::claude_agent_sdk.types.CanUseToolShadowedWarning")
def test_sdk_mcp_tool_call_pre_allowed_skips_can_use_tool(env: dict[str, Any]) -> None:
    calls: list[dict[str, Any]] = []
    asked: list[str] = []
    post: list[dict[str, Any]] = []

    async def can_use(name: str, data: dict[str, Any], ctx: Any) -> PermissionResultAllow:
        asked.append(name)
        return PermissionResultAllow()

    async def post_hook(data: Any, tool_use_id: Any, ctx: Any) -> HookJSONOutput:
        post.append(data)
        return {}

    opts = options(
        env,
        mcp_servers={"billing": _invoice_server(calls)},
        allowed_tools=["mcp__billing__invoice"],
        can_use_tool=can_use,
        hooks={"PostToolUse": [HookMatcher(matcher="mcp__billing__invoice", hooks=[post_hook])]},
    )

    async def go() -> list[Any]:
        async with ClaudeSDKClient(opts) as c:
            result = await turn(c, 'check [tool:mcp__billing__invoice {"id": 7}]')
        return result

    messages = run(go)
    assert calls == [{"id": 7}] and asked == []
    assert "mcp__billing__invoice" in messages[0].data["tools"]
    tool_use = next(
        b
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, ToolUseBlock)
    )
    tool_result = next(
        b for m in messages if isinstance(m, UserMessage) for b in m.content if isinstance(b, ToolResultBlock)
    )
    assert tool_result.tool_use_id == tool_use.id and not tool_result.is_error
    result = result_of(messages)
    assert "tool=mcp__billing__invoice ok: invoice 7 is paid" in (result.result or "")
    assert result.usage is not None
    assert result.num_turns == 2 and result.usage["output_tokens"] == 2 * fc.CALL_OUTPUT_TOKENS
    assert post[0]["hook_event_name"] == "PostToolUse" and post[0]["tool_use_id"] == tool_use.id


def test_failed_tool_runs_post_tool_use_failure(env: dict[str, Any]) -> None:
    events: list[str] = []

    async def hook(data: Any, tool_use_id: Any, ctx: Any) -> HookJSONOutput:
        events.append(data["hook_event_name"])
        return {}

    opts = options(
        env,
        mcp_servers={"billing": _invoice_server([], fail=True)},
        allowed_tools=["mcp__billing"],
        hooks={"PostToolUse": [HookMatcher(hooks=[hook])], "PostToolUseFailure": [HookMatcher(hooks=[hook])]},
    )

    async def go() -> list[Any]:
        async with ClaudeSDKClient(opts) as c:
            result = await turn(c, '[tool:mcp__billing__invoice {"id": 1}]')
        return result

    result = result_of(run(go))
    assert events == ["PostToolUseFailure"]
    assert "tool=mcp__billing__invoice error:" in (result.result or "")


def test_can_use_tool_deny_and_allow_with_updated_input(env: dict[str, Any]) -> None:
    calls: list[dict[str, Any]] = []

    async def can_use(name: str, data: dict[str, Any], ctx: Any) -> Any:
        assert ctx.tool_use_id.startswith("toolu_") and ctx.suggestions[0].behavior == "allow"
        if data["id"] == 13:
            return PermissionResultDeny(message="unlucky invoice")
        return PermissionResultAllow(updated_input={"id": data["id"] + 100})

    opts = options(env, mcp_servers={"billing": _invoice_server(calls)}, can_use_tool=can_use)

    async def go() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(opts) as c:
            denied = await turn(c, '[tool:mcp__billing__invoice {"id": 13}]')
            allowed = await turn(c, '[tool:mcp__billing__invoice {"id": 2}]')
        return denied, allowed

    denied, allowed = run(go)
    assert calls == [{"id": 102}]
    denied_result = result_of(denied)
    assert "tool=mcp__billing__invoice denied: unlucky invoice" in (denied_result.result or "")
    assert denied_result.permission_denials is not None
    assert denied_result.permission_denials[0]["tool_name"] == "mcp__billing__invoice"
    assert "invoice 102 is paid" in (result_of(allowed).result or "")


def test_pre_tool_use_hook_deny_blocks_before_permission(env: dict[str, Any]) -> None:
    asked: list[str] = []

    async def can_use(name: str, data: dict[str, Any], ctx: Any) -> PermissionResultAllow:
        asked.append(name)
        return PermissionResultAllow()

    async def deny_rm(data: Any, tool_use_id: Any, ctx: Any) -> HookJSONOutput:
        if "rm " in data["tool_input"]["command"]:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "no rm",
                }
            }
        return {}

    opts = options(
        env, can_use_tool=can_use, hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[deny_rm])]}
    )

    async def go() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(opts) as c:
            result = await turn(c, "[bash:rm -rf /]"), await turn(c, "[bash:ls -l] [read:/etc/hosts]")
        return result

    denied, allowed = run(go)
    assert "tool=Bash denied: no rm" in (result_of(denied).result or "")
    text = result_of(allowed).result or ""
    assert "tool=Bash ok: ran: ls -l" in text and "tool=Read ok: read: /etc/hosts" in text
    assert asked == ["Bash", "Read"]  # the hook denied before can_use_tool was asked
    assert result_of(allowed).num_turns == 3


def test_user_prompt_submit_additional_context_reaches_reply(env: dict[str, Any]) -> None:
    seen: list[str] = []

    async def recall(data: Any, tool_use_id: Any, ctx: Any) -> HookJSONOutput:
        seen.append(data["prompt"])
        return {
            "hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "additionalContext": "User prefers invoices in EUR. " * 3,
            }
        }

    opts = options(env, hooks={"UserPromptSubmit": [HookMatcher(hooks=[recall])]})

    async def go() -> list[Any]:
        async with ClaudeSDKClient(opts) as c:
            result = await turn(c, "what currency?")
        return result

    result = result_of(run(go))
    assert seen == ["what currency?"]
    assert (result.result or "").endswith("| context=" + ("User prefers invoices in EUR. " * 3)[:40])


def test_crash_raises_without_result(env: dict[str, Any]) -> None:
    seen: list[Any] = []

    async def go() -> None:
        async with ClaudeSDKClient(options(env)) as c:
            await c.query(stream("[crash]"))
            async for message in c.receive_response():
                seen.append(message)

    with pytest.raises(Exception, match="exit code 1"):
        run(go)
    assert any(isinstance(m, AssistantMessage) for m in seen)
    assert not any(isinstance(m, ResultMessage) for m in seen)
    assert log_events(env, "exit")[0]["reason"] == "crash directive"


@pytest.mark.parametrize(
    ("directive", "subtype"),
    [
        ("[error]", "error_during_execution"),
        ("[max_turns]", "error_max_turns"),
        ("[max_budget]", "error_max_budget_usd"),
    ],
)
def test_error_results(env: dict[str, Any], directive: str, subtype: str) -> None:
    async def go() -> list[Any]:
        async with ClaudeSDKClient(options(env)) as c:
            result = await turn(c, directive)
        return result

    result = result_of(run(go))
    assert (result.subtype, result.is_error) == (subtype, True)
    assert result.errors


def test_max_turns_and_budget_options(env: dict[str, Any]) -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(options(env, max_turns=1, allowed_tools=["Bash"])) as c:
            limited = await turn(c, "[bash:a] [bash:b]")
        async with ClaudeSDKClient(options(env, max_budget_usd=0.01)) as c:
            await turn(c, "first")
            result = limited, await turn(c, "second")
        return result

    limited, budget = run(go)
    assert result_of(limited).subtype == "error_max_turns"
    assert result_of(budget).subtype == "error_max_budget_usd"  # 2 calls x $0.007245 > $0.01
    assert "--max-turns" in log_events(env, "start")[0]["opts"]


def test_partial_messages_stream_text_deltas(env: dict[str, Any]) -> None:
    async def go() -> list[Any]:
        async with ClaudeSDKClient(options(env, include_partial_messages=True)) as c:
            result = await turn(c, "stream me [big:300]")
        return result

    messages = run(go)
    events = [m.event for m in messages if isinstance(m, StreamEvent)]
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    deltas = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assistant_index = next(i for i, m in enumerate(messages) if isinstance(m, AssistantMessage))
    assert all(not isinstance(m, StreamEvent) for m in messages[assistant_index:])
    assert len(deltas) == 300 and deltas == messages[assistant_index].content[0].text


def test_session_store_mirror_and_resume_in_new_process(env: dict[str, Any], tmp_path: Path) -> None:
    store = InMemorySessionStore()

    async def go() -> tuple[str, list[Any]]:
        async with ClaudeSDKClient(options(env, session_store=store)) as c:
            first = await turn(c, "remember the number 42")
            await turn(c, "and 43")
        session_id = result_of(first).session_id
        fresh = {**env, "config": tmp_path / "empty-config"}  # nothing on local disk for the new process
        async with ClaudeSDKClient(options(fresh, session_store=store, resume=session_id)) as c:
            result = session_id, await turn(c, "what did I say?")
        return result

    session_id, resumed = run(go)
    key: SessionKey = {"project_key": project_key_for_directory(env["cwd"]), "session_id": session_id}
    entries: list[dict[str, Any]] = [dict(e) for e in store.get_entries(key)]
    assert [e["type"] for e in entries] == ["user", "assistant"] * 3
    assert entries[0]["message"]["content"] == "remember the number 42" and entries[0]["parentUuid"] is None
    assert all(b["parentUuid"] == a["uuid"] for a, b in itertools.pairwise(entries))
    match = REPLY_RE.match(result_of(resumed).result or "")
    assert match and (match["history"], match["resumed"], match["turn"]) == ("2", "true", "1")
    assert result_of(resumed).session_id == session_id
    starts = log_events(env, "start")
    assert f"--resume={session_id}" in starts[1]["argv"] and "--session-mirror" in starts[1]["argv"]
    assert starts[0]["pid"] != starts[1]["pid"]


def test_local_transcript_and_missing_resume(env: dict[str, Any]) -> None:
    async def go() -> str:
        async with ClaudeSDKClient(options(env)) as c:
            result = result_of(await turn(c, "hi")).session_id
        return result

    session_id = run(go)
    path = env["config"] / "projects" / project_key_for_directory(env["cwd"]) / f"{session_id}.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["type"] for e in lines] == ["user", "assistant"] and lines[0]["sessionId"] == session_id

    async def missing() -> None:
        async with ClaudeSDKClient(options(env, resume="00000000-0000-4000-8000-000000000000")):
            pass

    with pytest.raises(Exception, match="No conversation found"):
        run(missing)

    async def reused() -> None:  # the real CLI refuses --session-id when the local transcript exists
        async with ClaudeSDKClient(options(env, session_id=session_id)) as c:
            await turn(c, "again")

    with pytest.raises(Exception, match="exit code 1"):
        run(reused)
    assert log_events(env, "exit")[-1]["reason"] == "session id already in use"


def test_close_is_prompt_on_eof_even_while_hanging(env: dict[str, Any]) -> None:
    async def go() -> float:
        client = ClaudeSDKClient(options(env))
        await client.connect()
        await client.query(stream("[hang]"))
        async for message in client.receive_messages():
            if isinstance(message, AssistantMessage):
                break
        started = time.monotonic()
        await client.disconnect()
        return time.monotonic() - started

    assert run(go) < 2.0
    assert log_events(env, "exit")[0]["reason"] == "stdin EOF during hang"


def test_interrupt_ends_turn_like_the_real_cli(env: dict[str, Any]) -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(options(env)) as c:
            await c.query(stream("[slow:10000] never"))
            while not log_events(env, "slow"):  # the turn is inside its wait
                await asyncio.sleep(0.01)
            await c.interrupt()
            interrupted = [m async for m in c.receive_response()]
            result = interrupted, await turn(c, "after")
        return result

    interrupted, after = run(go)
    notice = next(m for m in interrupted if isinstance(m, UserMessage))
    assert isinstance(notice.content, list) and isinstance(notice.content[0], TextBlock)
    assert notice.content[0].text == "[Request interrupted by user]"
    result = result_of(interrupted)
    assert (result.subtype, result.is_error, result.num_turns) == ("error_during_execution", True, 0)
    match = REPLY_RE.match(result_of(after).result or "")
    assert match and (match["turn"], match["history"]) == ("2", "1")  # the notice is not a user prompt


def test_sigterm_while_hanging_ends_the_process(env: dict[str, Any]) -> None:
    async def go() -> None:
        async with ClaudeSDKClient(options(env)) as c:
            await c.query(stream("[hang]"))
            async for message in c.receive_response():
                if isinstance(message, AssistantMessage):
                    os.kill(log_events(env, "start")[0]["pid"], signal.SIGTERM)

    with pytest.raises(Exception, match="exit code 143"):
        run(go)
    assert log_events(env, "exit")[0]["reason"] == "SIGTERM"


def test_one_shot_query_with_closed_stdin_still_runs_slow_turn(env: dict[str, Any]) -> None:
    async def go() -> tuple[list[Any], float]:
        started = time.monotonic()
        messages = [m async for m in query(prompt=stream("[slow:200] quick"), options=options(env))]
        return messages, time.monotonic() - started

    messages, elapsed = run(go)
    assert result_of(messages).subtype == "success" and elapsed >= 0.2


def test_unknown_control_request_gets_error(env: dict[str, Any]) -> None:
    async def go() -> None:
        async with ClaudeSDKClient(options(env)) as c:
            await c.get_context_usage()

    with pytest.raises(Exception, match="Unsupported control request subtype: get_context_usage"):
        run(go)


def test_parse_directives_grammar() -> None:
    parsed = fc.parse_directives(
        'a [slow:5] [tool:mcp__s__t {"x": [1, 2]}] [tool:Bash] [bash:ls -l] [crash] b'
    )
    assert parsed == [
        ("slow", 5),
        ("tool", ("mcp__s__t", {"x": [1, 2]})),
        ("tool", ("Bash", {})),
        ("bash", "ls -l"),
        ("crash", None),
    ]
    assert fc.parse_directives("plain [not a directive]") == []
    with pytest.raises(ValueError):
        fc.parse_directives("[tool:x [1]]")
    assert fc.sanitize_path("/tmp/a_b.c") == "-tmp-a-b-c"
    assert fc.sanitize_path("/x" * 150).startswith("-x" * 100 + "-")
