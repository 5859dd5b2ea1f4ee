"""Real-CLI benchmark: the bundled Claude Code CLI against the local Bedrock stand-in.

Only the model is scripted (it answers at once), so the figures are the cost of everything around it.
In one run:

1. **warm text turn through our runtime** (HTTP, ``python -m runtime``, SQLite session store, EMF metrics to
   a file — the embedded defaults) vs **per-call ``query()``** (a new CLI process per invocation, what
   published samples do; in-process, no HTTP). Ratio per-call / warm, target ≥ 6.
2. **warm tool turn** through our runtime (two model calls and the in-process SDK MCP tool).
3. **our runtime's overhead over a raw connected ``ClaudeSDKClient``** with the same agent (system prompt,
   tools, SDK MCP server, CLI environment), in this process with no HTTP, store or metrics. Ratio
   runtime / raw, target ≤ 1.10; also over a raw client with the same SDK features (hooks, permission
   callback, SQLite mirror) and over a **bare** connected client (no tools, hooks or mirror; target ≤ 1.25),
   plus the runtime's registry driven in-process (no HTTP) to split the difference into HTTP/SSE and the
   runtime's own work.
4. **time from process start to a healthy ``/ping``**: ``python -m runtime`` vs a bare
   ``BedrockAgentCoreApp`` hello-world written to a temp file here. Ratio, target ≤ 1.2.

Turn kinds that are compared run interleaved, one of each per round.

Run: ``.venv/bin/python benchmarks/real_cli.py [-n 20] [--per-call 8] [--starts 5]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from _harness import (
    ROOT,
    CliSetup,
    banner,
    base_env,
    cli_setup,
    describe,
    free_port,
    hello_app_to_healthy,
    median,
    per_call_query,
    runtime_process_env,
    sdk_turn,
    start_server,
    time_to_healthy,
    verdict,
    warm_turn,
    workdir,
    write_hello_app,
)

from harness.runtime_server import session_id


def raw_client_options(setup: CliSetup, workspace: Path) -> Any:
    """The runtime's agent as plain SDK options: same prompt, tools, MCP server and CLI env; none of our layer."""
    from claude_agent_sdk import ClaudeAgentOptions

    from runtime.agent.definition import AgentDefinitionSpec
    from runtime.agent.tools import SERVER_NAME, build_sample_server
    from runtime.config.settings import Settings

    definition = AgentDefinitionSpec()
    settings = Settings.from_env(
        {},
        bedrock_endpoint=setup.server_env["AGENTKIT_BEDROCK_ENDPOINT"],
        state_dir=setup.tmp / "raw-state",
        workspace=workspace,
    )
    settings.ensure_dirs()
    return ClaudeAgentOptions(
        system_prompt=definition.system_prompt,
        tools=list(definition.builtin_tools),
        allowed_tools=list(definition.allowed_tools),
        disallowed_tools=list(definition.disallowed_tools),
        mcp_servers={SERVER_NAME: build_sample_server()},
        permission_mode="default",
        model=settings.model,
        cwd=str(workspace),
        env=settings.cli_env(),
        setting_sources=[],
        include_partial_messages=True,
    )


def like_runtime_options(setup: CliSetup, workspace: Path) -> Any:
    """The raw options plus the SDK features the runtime turns on: a PreToolUse/PostToolUse hook, the
    ``can_use_tool`` gate, turn/budget limits and the SQLite ``SessionStore`` mirror."""
    import dataclasses
    import warnings

    from claude_agent_sdk import HookMatcher, PermissionResultAllow
    from claude_agent_sdk.types import CanUseToolShadowedWarning

    warnings.filterwarnings("ignore", category=CanUseToolShadowedWarning)  # as runtime/agent/turn.py does

    from runtime.session_store.sqlite import SqliteSessionStore

    async def allow(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        return PermissionResultAllow()

    async def no_op(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        return {}

    workspace.mkdir(parents=True, exist_ok=True)
    return dataclasses.replace(
        raw_client_options(setup, workspace),
        can_use_tool=allow,
        hooks={
            event: [HookMatcher(matcher=None, hooks=[no_op])]  # type: ignore[list-item]
            for event in ("PreToolUse", "PostToolUse")
        },
        max_turns=25,
        max_budget_usd=1.0,
        session_store=SqliteSessionStore(setup.tmp / "raw-sessions.db"),
    )


def bare_client_options(setup: CliSetup, workspace: Path) -> Any:
    """A bare connected client: same model and CLI environment, no tools, no MCP server, no hooks, no mirror."""
    import dataclasses

    workspace.mkdir(parents=True, exist_ok=True)
    return dataclasses.replace(
        raw_client_options(setup, workspace), tools=[], allowed_tools=[], disallowed_tools=[], mcp_servers={}
    )


def in_process_services(setup: CliSetup) -> Any:
    """The runtime's own services (``runtime.wiring.build_services``: session registry and ``aclose``) with the
    HTTP server's settings, driven in this process: the runtime minus HTTP/SSE/bedrock-agentcore."""
    from runtime.config.settings import Settings
    from runtime.wiring import build_services

    settings = Settings.from_env(
        {
            **setup.server_env,
            "AGENTKIT_STATE_DIR": str(setup.tmp / "inproc-state"),
            "AGENTKIT_SESSION_STORE": f"sqlite:///{setup.tmp / 'inproc-sessions.db'}",
            "AGENTKIT_METRICS": "emf",
            "AGENTKIT_EMF_FILE": str(setup.tmp / "inproc.emf.jsonl"),
        }
    )
    return build_services(settings)


async def registry_turn(registry: Any, session: str, prompt: str) -> float:
    """Seconds for one turn through the registry (invoke → last event), as the HTTP handler drives it."""
    from runtime.identity import claude_session_id
    from runtime.turn_request import TurnRequest

    start = time.perf_counter()
    events = await registry.invoke(
        key=session,
        runtime_session_id=session,
        claude_session_id=claude_session_id(session, None),
        actor_id=None,
        request=TurnRequest(prompt=prompt),
    )
    last = None
    async for event in events:
        last = event
    elapsed = time.perf_counter() - start
    if last is None or last.get("type") != "result":
        raise RuntimeError(f"registry turn failed: {last}")
    return elapsed


def bench_turns(setup: CliSetup, *, n: int, per_call_n: int, loop: asyncio.AbstractEventLoop) -> None:
    from claude_agent_sdk import ClaudeSDKClient

    server = start_server(
        setup,
        "runtime",
        AGENTKIT_SESSION_STORE=f"sqlite:///{setup.tmp / 'sessions.db'}",
        AGENTKIT_METRICS="emf",
        AGENTKIT_EMF_FILE=str(setup.tmp / "metrics.emf.jsonl"),
    )
    raw = ClaudeSDKClient(options=raw_client_options(setup, setup.tmp / "raw-workspace"))
    alike = ClaudeSDKClient(options=like_runtime_options(setup, setup.tmp / "alike-workspace"))
    bare = ClaudeSDKClient(options=bare_client_options(setup, setup.tmp / "bare-workspace"))
    services = loop.run_until_complete(asyncio.to_thread(in_process_services, setup))
    registry = services.registry
    inproc_session = session_id("bench-inproc")
    try:
        session = session_id("bench-real")
        warm_turn(server, session, setup.text_turn())  # spawns the CLI
        for client in (raw, alike, bare):
            loop.run_until_complete(client.connect())
            loop.run_until_complete(sdk_turn(client, setup.text_turn()))
        loop.run_until_complete(registry_turn(registry, inproc_session, setup.text_turn()))
        loop.run_until_complete(per_call_query(setup, setup.text_turn()))

        ours, raw_turns, alike_turns, tool_turns, per_call = [], [], [], [], []
        bare_turns, inproc_turns = [], []
        for i in range(n):
            ours.append(warm_turn(server, session, setup.text_turn()))
            raw_turns.append(loop.run_until_complete(sdk_turn(raw, setup.text_turn())))
            alike_turns.append(loop.run_until_complete(sdk_turn(alike, setup.text_turn())))
            bare_turns.append(loop.run_until_complete(sdk_turn(bare, setup.text_turn())))
            inproc_turns.append(
                loop.run_until_complete(registry_turn(registry, inproc_session, setup.text_turn()))
            )
            tool_turns.append(warm_turn(server, session, setup.tool_turn()))
            if i < per_call_n:
                per_call.append(loop.run_until_complete(per_call_query(setup, setup.text_turn())))
    finally:
        for client in (raw, alike, bare):
            loop.run_until_complete(client.disconnect())
        loop.run_until_complete(registry.close_all())
        loop.run_until_complete(services.aclose())
        server.stop()

    print(describe("warm text turn, our runtime over HTTP", ours))
    print(describe("per-call query() (new CLI process each)", per_call))
    ratio = median(per_call) / median(ours)
    print(f"  -> per-call / warm: {ratio:.1f}x  ({verdict(ratio, at_least=6)})")
    print(describe("warm tool turn, our runtime over HTTP", tool_turns))
    print(describe("warm text turn, raw connected ClaudeSDKClient", raw_turns))
    overhead = median(ours) / median(raw_turns)
    print(
        f"  -> runtime / raw client: {overhead:.3f}  ({verdict(overhead, at_most=1.10)}; "
        f"+{(median(ours) - median(raw_turns)) * 1000:.1f} ms)"
    )
    print(describe("warm text turn, raw client + hooks, gate, SQLite store", alike_turns))
    share = median(ours) / median(alike_turns)
    print(
        f"  -> runtime / raw client with the same SDK features: {share:.3f} "
        f"(+{(median(ours) - median(alike_turns)) * 1000:.1f} ms for HTTP, SSE, session registry, telemetry, "
        f"EMF, spend bookkeeping)"
    )
    print(describe("warm text turn, bare connected client (no tools/hooks/mirror)", bare_turns))
    to_bare = median(ours) / median(bare_turns)
    print(
        f"  -> runtime / bare client: {to_bare:.3f}  ({verdict(to_bare, at_most=1.25)}); ratio of the fastest "
        f"samples (less sensitive to a loaded machine): {min(ours) / min(bare_turns):.3f}"
    )
    print(
        f"  -> fastest-sample ratios: runtime / raw {min(ours) / min(raw_turns):.3f}, runtime / raw with the "
        f"same SDK features {min(ours) / min(alike_turns):.3f}"
    )
    print(describe("warm text turn, runtime's registry in-process (no HTTP)", inproc_turns))
    http = median(ours) - median(inproc_turns)
    inner = median(inproc_turns) - median(alike_turns)
    print(
        f"  -> where the runtime's time goes (medians): HTTP + SSE + bedrock-agentcore {http * 1000:+.1f} ms; "
        f"registry, event translation, telemetry, EMF {inner * 1000:+.1f} ms; the same SDK features "
        f"(hooks, gate, mirror) over a raw client {(median(alike_turns) - median(raw_turns)) * 1000:+.1f} ms; "
        f"tools + MCP server over a bare client {(median(raw_turns) - median(bare_turns)) * 1000:+.1f} ms"
    )


def bench_ping(setup: CliSetup, *, starts: int) -> None:
    hello = write_hello_app(setup.tmp)
    ours_s, bare_s = [], []
    for i in range(starts):
        port = free_port()
        env = {**base_env(), **runtime_process_env(setup, setup.tmp / f"ping-{i}", port)}
        ours_s.append(time_to_healthy([sys.executable, "-m", "runtime"], env=env, port=port, cwd=ROOT))
        bare_s.append(hello_app_to_healthy(hello, setup.tmp))
    print(describe("start -> /ping healthy, python -m runtime", ours_s))
    print(describe("start -> /ping healthy, bare BedrockAgentCoreApp", bare_s))
    ratio = median(ours_s) / median(bare_s)
    print(f"  -> runtime / bare app: {ratio:.2f}  ({verdict(ratio, at_most=1.2)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="warm turns of each kind (default 20)")
    parser.add_argument("--per-call", type=int, default=8, help="per-call query() samples (default 8)")
    parser.add_argument("--starts", type=int, default=15, help="process starts of each app (default 15)")
    args = parser.parse_args()
    if min(args.n, args.per_call, args.starts) < 1:
        parser.error("-n, --per-call and --starts must be at least 1")

    banner("real Claude Code CLI (bundled) against the local Bedrock stand-in; the model is scripted")
    loop = asyncio.new_event_loop()
    try:
        with (
            workdir("agentkit-bench-") as tmp,
            cli_setup("real", tmp) as setup,
        ):
            bench_turns(setup, n=args.n, per_call_n=min(args.per_call, args.n), loop=loop)
            bench_ping(setup, starts=args.starts)
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
