"""``ClaudeAgentOptions`` for one session's CLI process, from the agent definition and the settings.

Kept apart from the CLI process's lifecycle (:mod:`runtime.agent.runner`) so what the CLI is started with is readable in
one place: tools, MCP servers, hooks (the permission gate first), limits, model, environment, session store
and whether the session is resumed or started under its deterministic id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
from claude_agent_sdk.types import AgentDefinition, HookCallback, McpServerConfig, SessionStore

from runtime.agent.definition import AgentDefinitionSpec
from runtime.agent.orphan_guard import parent_death_wrapper
from runtime.guard.gate import CanUseTool
from runtime.guard.tool_env import session_isolation
from runtime.settings import Settings

#: Output lines from the CLI may be long (tool results); the SDK's default limit is 1 MiB.
MAX_BUFFER_SIZE = 8 * 1024 * 1024


def build_options(
    *,
    settings: Settings,
    definition: AgentDefinitionSpec,
    cwd: Path,
    claude_session_id: str,
    hooks: Mapping[str, list[HookMatcher]],
    pre_tool_gate: HookCallback,
    can_use_tool: CanUseTool,
    max_turns: int | None,
    max_budget_usd: float | None,
    resume: bool,
    store: SessionStore | None,
    extra_mcp_servers: Mapping[str, McpServerConfig] | None = None,
    path: str | None = None,
) -> ClaudeAgentOptions:
    """The options for one CLI process.

    ``hooks`` are the telemetry hooks (event name → matchers); ``pre_tool_gate`` is inserted first among the
    ``PreToolUse`` hooks. ``max_turns`` / ``max_budget_usd`` are the ``--max-turns`` / ``--max-budget-usd``
    flags (the runner explains why the budget is per process). ``resume`` picks
    ``resume=<id>`` over ``session_id=<id>``. ``path``: the CLI's ``PATH`` when the runtime sets one
    (:mod:`runtime.agent.npm_root`); None: the runtime's own.
    """
    d = definition
    mcp_servers: dict[str, Any] = dict(d.mcp_servers)
    if d.include_sample_tools:
        from runtime.agent.tools import SERVER_NAME, build_sample_server

        mcp_servers[SERVER_NAME] = build_sample_server()
    mcp_servers.update(extra_mcp_servers or {})
    all_hooks: dict[str, list[Any]] = {event: list(matchers) for event, matchers in hooks.items()}
    all_hooks.setdefault("PreToolUse", []).insert(0, HookMatcher(matcher=None, hooks=[pre_tool_gate]))
    cli_env = settings.cli_env()
    isolation = session_isolation(
        state_dir=settings.resolved_state_dir,
        workspace=Path(cwd).resolve(),
        claude_session_id=claude_session_id,
        cli_env=cli_env,
        sandboxed=settings.sandbox == "required",
        allowed_domains=d.network_allowed_domains,
        extra_read=tuple(Path(p) for p in d.sandbox_read_paths),
    )
    return ClaudeAgentOptions(
        system_prompt=d.system_prompt,
        tools=list(d.builtin_tools),
        allowed_tools=[t for t in d.allowed_tools if t not in d.disallowed_tools],
        disallowed_tools=list(d.disallowed_tools),
        mcp_servers=mcp_servers,
        permission_mode="default",
        can_use_tool=can_use_tool,
        hooks=cast(Any, all_hooks),
        max_turns=max_turns,
        max_budget_usd=max_budget_usd,
        model=settings.model,
        cwd=str(cwd),
        cli_path=parent_death_wrapper(settings.cli_path, settings.resolved_state_dir / "bin"),
        env={**cli_env, **isolation.env, **({"PATH": path} if path else {})},
        sandbox=cast(Any, isolation.sandbox),
        settings=json.dumps(isolation.settings),
        setting_sources=[],
        include_partial_messages=True,
        max_buffer_size=MAX_BUFFER_SIZE,
        effort=d.effort,
        agents={
            name: AgentDefinition(
                description=s.description,
                prompt=s.prompt,
                tools=list(s.tools) if s.tools else None,
                model=s.model,
            )
            for name, s in d.subagents.items()
        }
        or None,
        session_store=store,
        resume=claude_session_id if resume else None,
        session_id=None if resume else claude_session_id,
    )
