"""``ClaudeAgentOptions`` for one session's CLI process, from the agent definition and the settings.

Kept apart from the CLI process's lifecycle (:mod:`runtime.agent.runner`) so what the CLI is started with is readable in
one place: tools, MCP servers, hooks (the permission gate first), limits, model, environment, session store
and whether the session is resumed or started under its deterministic id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
from claude_agent_sdk.types import AgentDefinition, HookCallback, McpServerConfig, SessionStore

from runtime.agent.definition import AgentDefinitionSpec
from runtime.agent.orphan_guard import bundled_cli, helper_path_env, parent_death_wrapper
from runtime.agent.request_metadata import custom_headers_env
from runtime.config.settings import Settings
from runtime.guard import resources, tool_disk
from runtime.guard.confine import (
    ENV_SESSION_DISK,
    ENV_SESSION_DISK_MB,
    ENV_SESSION_WORKSPACE,
    cli_wrapper,
    decided_confinement,
    give_to,
    session_temp_root,
    session_workspace,
)
from runtime.guard.egress import parse_allowlist, parse_networks, parse_pins, shared_proxy
from runtime.guard.gate import CanUseTool
from runtime.guard.tool_env import session_isolation

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
    request_metadata: Mapping[str, str] | None = None,
    npm_root_dir: Path | None = None,
    plugins: Sequence[Path] = (),
) -> ClaudeAgentOptions:
    """The options for one CLI process.

    ``hooks`` are the telemetry hooks (event name → matchers); ``pre_tool_gate`` is inserted first among the
    ``PreToolUse`` hooks. ``max_turns`` / ``max_budget_usd`` are the ``--max-turns`` / ``--max-budget-usd``
    flags (the runner explains why the budget is per process). ``resume`` picks
    ``resume=<id>`` over ``session_id=<id>``. ``request_metadata`` goes with every model call as
    ``X-Amzn-Bedrock-Request-Metadata`` (:mod:`runtime.agent.request_metadata`). ``npm_root_dir`` goes first on
    the CLI's ``PATH``: its ``npm`` answers the sandboxed CLI's ``npm root -g`` (:mod:`runtime.agent.npm_root`).
    ``plugins`` are the agent directory's checked plugin directories (commands, skills, subagents; no hooks or
    servers: :mod:`runtime.agent.agent_dir`); ``setting_sources`` stays empty.
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
    # Helpers the CLI keeps running (the sandbox's socat) die with it, as it dies with the runtime.
    cli_env.update(helper_path_env(settings.resolved_state_dir / "bin"))
    if npm_root_dir is not None:
        cli_env["PATH"] = os.pathsep.join(
            (str(npm_root_dir), cli_env.get("PATH") or os.environ.get("PATH", ""))
        )
    if request_metadata or settings.bedrock_project:
        cli_env.update(custom_headers_env(request_metadata or {}, project=settings.bedrock_project))
    workspace = Path(cwd).resolve()
    cli = settings.cli_path or bundled_cli()
    # A root runtime starts the CLI as an unprivileged user (decided at start-up, runtime.guard.confine); the
    # CLI's own directories become that user's.
    confinement = decided_confinement(workspace, cli)
    sandboxed = settings.sandbox == "required"
    proxy_port = None
    if sandboxed and d.network_allowed_domains:
        # the CLI's own proxy cannot reach anything from inside the confinement: ours filters (docs/security.md)
        proxy_port = shared_proxy(
            parse_allowlist(d.network_allowed_domains),
            parse_pins(settings.network_hosts),
            parse_networks(settings.network_allowed_cidrs),
        ).port
    isolation = session_isolation(
        state_dir=settings.resolved_state_dir,
        workspace=workspace,
        claude_session_id=claude_session_id,
        temp_root=session_temp_root(claude_session_id, confinement),
        cli_env=cli_env,
        sandboxed=sandboxed,
        allowed_domains=d.network_allowed_domains,
        proxy_port=proxy_port,
        extra_read=tuple(Path(p) for p in d.sandbox_read_paths),
    )
    cli_path: str | None
    env = {**cli_env, **isolation.env}
    if confinement.wraps and cli is not None:
        for path in (isolation.env["HOME"], cli_env["CLAUDE_CONFIG_DIR"], cli_env["XDG_CACHE_HOME"]):
            give_to(Path(path), confinement, recursive=True)
        state = settings.resolved_state_dir
        own = session_workspace(state, workspace, claude_session_id, confinement)
        env[ENV_SESSION_WORKSPACE] = str(own)
        limits = resources.decided()
        group = resources.session_cgroup(claude_session_id)
        if group is not None:  # the wrapper moves the CLI's process tree into it before anything runs
            env[resources.ENV_SESSION_CGROUPS] = group.procs_env
        if settings.tool_disk_mb > 0:
            # the wrapper mounts the session's size-limited tool disk here (runtime.guard.confine)
            mount_point = tool_disk.mount_point(state, claude_session_id)
            mount_point.mkdir(parents=True, exist_ok=True, mode=0o700)
            env[ENV_SESSION_DISK] = str(mount_point)
            env[ENV_SESSION_DISK_MB] = str(settings.tool_disk_mb)
        cli_path = cli_wrapper(cli, state / "bin", confinement, workspace, limits)
    else:
        cli_path = parent_death_wrapper(settings.cli_path, settings.resolved_state_dir / "bin")
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
        fallback_model=settings.resolved_fallback_model,
        cwd=str(cwd),
        cli_path=cli_path,
        env=env,
        sandbox=cast(Any, isolation.sandbox),
        settings=json.dumps(isolation.settings),
        setting_sources=[],
        plugins=[{"type": "local", "path": str(p)} for p in plugins],
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
