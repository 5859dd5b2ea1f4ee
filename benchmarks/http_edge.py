"""What the HTTP edge costs: a warm turn through the runtime over HTTP, as JSON and as SSE, against the same turn
on connected ``ClaudeSDKClient``\\ s in this process.

The real bundled Claude Code CLI answers from the local Bedrock stand-in (only the model is scripted, and it
answers at once), so the figures are the cost of everything around the model. One round runs, interleaved:

- a streamed (SSE) and a non-streaming (JSON) text turn through ``python -m runtime`` (the embedded defaults:
  SQLite session store, EMF metrics to a file), one HTTP connection per request as AgentCore sends them;
- the runtime's session registry driven in this process (``runtime.wiring.build_services``, no HTTP): the
  difference to the HTTP turns is the edge (HTTP, SSE, bedrock-agentcore, the hops between the server's loop
  and the worker loop the turns run on);
- a raw connected client with the same SDK features as the runtime's agent (tools, SDK MCP server, hooks,
  permission callback, SQLite mirror, turn and budget limits);
- a bare connected client (no tools, hooks or mirror).

Targets (ratios of medians from one run): HTTP turn / same-features client ≤ 1.10, HTTP turn / bare client
≤ 1.15, for JSON and for SSE. The fastest samples' ratios are printed too (less sensitive to a loaded machine),
and the load average before and after: on a shared machine the figures are noisy.

``--nagle`` runs the stand-in with Nagle's algorithm on (each event-stream frame is a small write, and the CLI
may delay its ACK by up to 40 ms): that is how turns measured against the stand-in picked up 30-60 ms stalls.

Run: ``.venv/bin/python benchmarks/http_edge.py [-n 30] [--nagle]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from _harness import (
    banner,
    cli_setup,
    describe,
    median,
    refuse_if_degraded,
    sdk_turn,
    start_server,
    verdict,
    warm_turn,
    workdir,
)
from real_cli import bare_client_options, in_process_services, like_runtime_options, registry_turn

from harness.runtime_server import RuntimeServer, session_id


def json_turn(server: RuntimeServer, session: str, prompt: str) -> float:
    """Seconds for one non-streaming turn over HTTP (request sent → whole JSON body read)."""
    start = time.perf_counter()
    reply = server.invoke(prompt, session=session, stream=False)
    elapsed = time.perf_counter() - start
    if reply.status != 200 or not isinstance(reply.body, dict) or reply.body.get("type") != "result":
        raise RuntimeError(f"turn failed: {reply.status} {reply.body}")
    return elapsed


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def run(n: int, *, nagle: bool) -> None:
    import standins.bedrock

    standins.bedrock._Handler.disable_nagle_algorithm = not nagle
    from claude_agent_sdk import ClaudeSDKClient

    loop = asyncio.new_event_loop()
    with workdir("agentkit-edge-") as tmp, cli_setup("real", tmp) as setup:
        server = start_server(
            setup,
            "runtime",
            AGENTKIT_SESSION_STORE=f"sqlite:///{setup.tmp / 'sessions.db'}",
            AGENTKIT_METRICS="emf",
            AGENTKIT_EMF_FILE=str(setup.tmp / "metrics.emf.jsonl"),
        )
        alike = ClaudeSDKClient(options=like_runtime_options(setup, setup.tmp / "alike-workspace"))
        bare = ClaudeSDKClient(options=bare_client_options(setup, setup.tmp / "bare-workspace"))
        services = loop.run_until_complete(asyncio.to_thread(in_process_services, setup))
        registry = services.registry
        session, inproc_session = session_id("edge-http"), session_id("edge-inproc")
        samples: dict[str, list[float]] = {k: [] for k in ("sse", "json", "inproc", "alike", "bare")}
        try:
            warm_turn(server, session, setup.text_turn())  # spawns the CLI
            json_turn(server, session, setup.text_turn())
            for client in (alike, bare):
                loop.run_until_complete(client.connect())
                loop.run_until_complete(sdk_turn(client, setup.text_turn()))
            loop.run_until_complete(registry_turn(registry, inproc_session, setup.text_turn()))
            print(f"before: {load()}")
            for _ in range(n):
                samples["sse"].append(warm_turn(server, session, setup.text_turn()))
                samples["json"].append(json_turn(server, session, setup.text_turn()))
                samples["inproc"].append(
                    loop.run_until_complete(registry_turn(registry, inproc_session, setup.text_turn()))
                )
                samples["alike"].append(loop.run_until_complete(sdk_turn(alike, setup.text_turn())))
                samples["bare"].append(loop.run_until_complete(sdk_turn(bare, setup.text_turn())))
            print(f"after:  {load()}")
            refuse_if_degraded(server)  # before any figure: they must describe the runtime as configured
        finally:
            for client in (alike, bare):
                loop.run_until_complete(client.disconnect())
            loop.run_until_complete(registry.close_all())
            loop.run_until_complete(services.aclose())
            server.stop()
            loop.close()

    print(f"stand-in: Nagle's algorithm {'ON (--nagle)' if nagle else 'off (TCP_NODELAY)'}")
    labels = {
        "sse": "warm text turn over HTTP, SSE",
        "json": "warm text turn over HTTP, JSON",
        "inproc": "runtime's registry in-process (no HTTP)",
        "alike": "raw client, same SDK features",
        "bare": "bare connected client",
    }
    for key, label in labels.items():
        print(describe(label, samples[key]))
    alike_m, bare_m = median(samples["alike"]), median(samples["bare"])
    alike_min, bare_min = min(samples["alike"]), min(samples["bare"])
    for kind in ("json", "sse"):
        ours = samples[kind]
        to_alike, to_bare = median(ours) / alike_m, median(ours) / bare_m
        print(
            f"  -> {kind.upper():4} / same-features client {to_alike:.3f} ({verdict(to_alike, at_most=1.10)}), "
            f"/ bare client {to_bare:.3f} ({verdict(to_bare, at_most=1.15)}); fastest samples "
            f"{min(ours) / alike_min:.3f} and {min(ours) / bare_min:.3f}"
        )
    inproc = median(samples["inproc"])
    print(
        "  -> where the time goes (medians): the edge (HTTP turn - registry in-process) "
        f"JSON {(median(samples['json']) - inproc) * 1000:+.1f} ms, SSE {(median(samples['sse']) - inproc) * 1000:+.1f} "
        f"ms; the runtime's registry, telemetry and bookkeeping over the same-features client "
        f"{(inproc - alike_m) * 1000:+.1f} ms; the SDK features over a bare client {(alike_m - bare_m) * 1000:+.1f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-n", type=int, default=30, help="rounds (one turn of each kind per round; default 30)"
    )
    parser.add_argument(
        "--nagle", action="store_true", help="leave Nagle's algorithm on in the Bedrock stand-in"
    )
    args = parser.parse_args()
    if args.n < 1:
        parser.error("-n must be at least 1")
    banner("HTTP edge: warm turns through the runtime vs connected clients (real CLI, scripted model)")
    run(args.n, nagle=args.nagle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
