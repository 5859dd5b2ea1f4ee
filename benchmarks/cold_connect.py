"""Where a new session's first turn spends its time: the runtime's CLI options toggled one at a time.

Diagnostic for the V2 cold-path target (``platform_v2.py``): the real bundled Claude Code CLI against the local
Bedrock stand-in, all in this process (the SDK imported long before the clock starts, as in a restored V2
runtime). Each round takes one sample of every variant, interleaved:

- ``query()``: a per-call ``query()`` with bare options (the target's baseline);
- ``registry``: a new session's first turn through the runtime's session registry (``build_services``, SQLite
  store, sandbox as configured), invoke → result, as the HTTP handler drives it;
- ``runtime opts``: a ``ClaudeSDKClient`` with exactly the options the runtime's runner built for its last
  connect (captured through ``AgentDeps.client_factory``), connect + one text turn + result;
- ``runtime opts, CLI asks npm itself (before)``: without the ``npm`` script the runtime puts first on the
  sandboxed CLI's ``PATH`` (:mod:`runtime.agent.npm_root`); ``no npm on PATH``: npm absent, as in the image;
- ``- <part>``: the same with one part removed (sandbox, ``--settings``, the ``kit`` SDK MCP server, hooks and
  ``can_use_tool``, the session store mirror, the parent-death wrapper, the per-session env);
- ``registry, store +N ms/read``: the registry on a store whose reads take N ms more (a remote store's round
  trip), with the session's spend read beside the CLI's start-up, and as before, after it.

For each it prints the median connect time (spawn + ``initialize``) and connect + first turn. Removing a part
only shows what it costs; what the runtime may drop is decided in the code, not here.

Run: ``.venv/bin/python benchmarks/cold_connect.py [--rounds 5]``
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from _harness import CliSetup, banner, cli_setup, median, per_call_query, sdk_turn


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"


def services_for(setup: CliSetup, captured: list[Any]) -> Any:
    """The runtime's services as ``python -m runtime`` builds them, with a client factory that records options."""
    from claude_agent_sdk import ClaudeSDKClient

    from runtime.agent.runner import AgentTurnRunner
    from runtime.config.settings import Settings
    from runtime.wiring import build_services

    settings = Settings.from_env(
        {
            **setup.server_env,
            "AGENTKIT_STATE_DIR": str(setup.tmp / "state"),
            "AGENTKIT_SESSION_STORE": f"sqlite:///{setup.tmp / 'sessions.db'}",
            "AGENTKIT_METRICS": "off",
        }
    )
    services = build_services(settings)

    def factory(options: Any) -> Any:
        captured.append(options)
        return ClaudeSDKClient(options)

    runner = cast(AgentTurnRunner, services.runner)
    runner.deps.client_factory = factory
    return services


async def registry_first_turn(services: Any, setup: CliSetup, name: str) -> tuple[float, float]:
    """A new session's first turn through the registry; (connect seconds from the runner's log, total)."""
    from runtime.identity import claude_session_id
    from runtime.turn_request import TurnRequest

    key = f"{name}-{uuid.uuid4()}-cold-connect-session-id"
    start = time.perf_counter()
    events = await services.registry.invoke(
        key=key,
        runtime_session_id=key,
        claude_session_id=claude_session_id(key, None),
        actor_id=None,
        request=TurnRequest(prompt=setup.text_turn()),
    )
    last = None
    async for event in events:
        last = event
    total = time.perf_counter() - start
    if last is None or last.get("type") != "result":
        raise RuntimeError(f"registry turn failed: {last}")
    await services.registry.close_all()
    return float("nan"), total


async def client_first_turn(options: Any, setup: CliSetup) -> tuple[float, float]:
    from claude_agent_sdk import ClaudeSDKClient

    client = ClaudeSDKClient(dataclasses.replace(options, session_id=str(uuid.uuid4()), resume=None))
    start = time.perf_counter()
    await client.connect()
    connected = time.perf_counter()
    await sdk_turn(client, setup.text_turn())
    total = time.perf_counter() - start
    await client.disconnect()
    return connected - start, total


def no_npm_dir(tmp: Path) -> Path:
    """A directory whose ``npm`` fails at once, as in the image (no Node there): put first on ``PATH``, it stands
    for the absent ``npm`` the CLI's sandbox start-up asks for its global package root (``npm root -g``)."""
    d = tmp / "no-npm"
    d.mkdir(exist_ok=True)
    npm = d / "npm"
    npm.write_text("#!/bin/sh\nexit 127\n")
    npm.chmod(0o755)
    return d


def variants(full: Any, setup: CliSetup) -> dict[str, Callable[[], Any]]:
    r = dataclasses.replace
    cli_env_only = {k: v for k, v in full.env.items() if k not in ("HOME", "CLAUDE_CODE_TMPDIR")}
    # The CLI's PATH without the runtime's npm script (the helpers' shims stay): the CLI asks npm itself.
    from runtime.agent.npm_root import SHIM_DIR_NAME

    own_path = [p for p in full.env.get("PATH", "").split(os.pathsep) if not p.endswith(SHIM_DIR_NAME)]
    cli_asks_npm = {**full.env, "PATH": os.pathsep.join(own_path)}
    no_npm = {**full.env, "PATH": os.pathsep.join([str(no_npm_dir(setup.tmp)), *own_path])}
    options = {
        "runtime opts": full,
        "runtime opts, CLI asks npm itself (before)": r(full, env=cli_asks_npm),
        "runtime opts, no npm on PATH (as the image)": r(full, env=no_npm),
        "- sandbox": r(full, sandbox=None),
        "- --settings (permission deny rules)": r(full, settings=None),
        "- kit SDK MCP server": r(full, mcp_servers={}),
        "- hooks and can_use_tool": r(full, hooks=None, can_use_tool=None),
        "- session store mirror": r(full, session_store=None),
        "- parent-death wrapper": r(full, cli_path=None),
        "- per-session HOME/TMPDIR": r(full, env=cli_env_only),
    }
    return {name: functools.partial(client_first_turn, o, setup) for name, o in options.items()}


def _no_prefetch(account: Any) -> None:
    """``SessionAccount.prefetch`` as if absent: the spend is read by the turn, after the connect."""


_PREFETCH: Any = None


class DelayedStore:
    """The services' store with ``rtt_s`` added to each read (``load``, ``get_state``), standing for a remote
    store's round trip (AgentCore Memory's ``ListEvents``); ``first_turn`` runs a registry first turn on it, with
    the spend read started beside the connect (``prefetch``) or, as before, only after it."""

    def __init__(self, services: Any, rtt_s: float) -> None:
        global _PREFETCH
        from runtime.accounting import SessionAccount

        _PREFETCH = SessionAccount.prefetch
        self.services, self.rtt_s = services, rtt_s
        self.inner = services.runner.deps.session_store

    async def load(self, key: Any) -> Any:
        await asyncio.sleep(self.rtt_s)
        return await self.inner.load(key)

    async def get_state(self, session_id: str) -> Any:
        await asyncio.sleep(self.rtt_s)
        return await self.inner.get_state(session_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def first_turn(self, setup: CliSetup, *, prefetch: bool) -> tuple[float, float]:
        from runtime.accounting import SessionAccount

        runner, accounting = self.services.runner, self.services.registry.accounting
        saved = (runner.deps.session_store, accounting.store)
        runner.deps.session_store = accounting.store = self
        if not prefetch:
            setattr(SessionAccount, "prefetch", _no_prefetch)  # noqa: B010 - the old behaviour, for this sample
        try:
            return await registry_first_turn(self.services, setup, "slow")
        finally:
            runner.deps.session_store, accounting.store = saved
            setattr(SessionAccount, "prefetch", _PREFETCH)  # noqa: B010


async def run(rounds: int, tmp: Path, store_rtt_ms: float) -> None:
    with cli_setup("real", tmp) as setup:
        captured: list[Any] = []
        services = await asyncio.to_thread(services_for, setup, captured)
        await per_call_query(setup, setup.text_turn())  # CLI paged in
        await registry_first_turn(services, setup, "warm-up")
        full = captured[-1]
        slow = DelayedStore(services, rtt_s=store_rtt_ms / 1000)
        cases: dict[str, Callable[[], Any]] = {
            "query() (bare, per call)": lambda: _query(setup),
            "registry (runtime, in-process)": lambda: registry_first_turn(services, setup, "r"),
            **variants(full, setup),
            f"registry, store +{store_rtt_ms:.0f} ms/read": lambda: slow.first_turn(setup, prefetch=True),
            f"registry, store +{store_rtt_ms:.0f} ms/read, spend read after connect (before)": lambda: (
                slow.first_turn(setup, prefetch=False)
            ),
        }
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        print(f"before: {load()} — shared machine, figures are noisy")
        for _ in range(rounds):
            for name, case in cases.items():
                samples[name].append(await case())
        print(f"after:  {load()}")
        base = median([t for _, t in samples["query() (bare, per call)"]])
        print(f"{'variant':<62} {'connect':>9} {'1st turn':>9} {'/query()':>9}")
        for name, rows in samples.items():
            connects = [c for c, _ in rows if c == c]
            totals = [t for _, t in rows]
            c = f"{median(connects) * 1000:7.0f}ms" if connects else "       - "
            print(f"{name:<62} {c} {median(totals) * 1000:7.0f}ms {median(totals) / base:9.2f}")
        await services.aclose()


async def _query(setup: CliSetup) -> tuple[float, float]:
    return float("nan"), await per_call_query(setup, setup.text_turn())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="samples of each variant (default 5)")
    parser.add_argument(
        "--store-rtt-ms",
        type=float,
        default=50.0,
        help="added to each store read in the store rows (default 50)",
    )
    args = parser.parse_args()
    banner("cold connect: the runtime's CLI options, one part removed at a time (real CLI, Bedrock stand-in)")
    with tempfile.TemporaryDirectory(prefix="agentkit-cold-") as tmp:
        # A root runtime runs the CLI as an unprivileged user, who must be able to enter the state dir (else the
        # runtime switches command tools, and with them the sandbox, off).
        os.chmod(tmp, 0o755)
        asyncio.run(run(args.rounds, Path(tmp), args.store_rtt_ms))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
