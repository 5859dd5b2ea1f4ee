"""Telemetry overhead benchmark: metrics + spans + cost on a warm turn, as a ratio against both off.

Part 1 (here): the telemetry facade around a simulated warm turn. Each turn opens the invocation and turn
spans, runs ``--tools`` tool calls through the real ``ToolTelemetry`` hook callbacks, waits ``--turn-ms``
(standing in for the CLI/Bedrock round trip, during which the cloudwatch sender may run), prices the result
with ``TurnCostTracker`` and records it. Configurations:

* ``off``        NullMetrics + the OpenTelemetry no-op tracer (the baseline)
* ``emf``        EmfMetrics writing to a temporary file + SDK tracer, BatchSpanProcessor → in-memory exporter
* ``cloudwatch`` CloudWatchMetrics → moto server on 127.0.0.1 (real HTTP, signing) + the same tracer

Printed: per-turn CPU cost of the telemetry work alone (µs, tight loop without the wait) and the wall-clock
ratio of N warm turns against ``off``. Target: ratio ≤ 1.05.

Part 2 (``telemetry_full_turn`` in ``benchmarks/_runtime_overhead.py``): the same ratio on a full warm turn
through the runtime (``python -m runtime`` over HTTP, ``--cli fake`` or ``real``, text and tool turns, two
servers interleaved): ``AGENTKIT_METRICS=emf`` to a file plus an OpenTelemetry SDK tracer provider (batch
processor, in-memory exporter, installed through a ``sitecustomize`` on ``PYTHONPATH``) vs
``AGENTKIT_METRICS=off`` and the API's no-op tracer. ``--skip-full`` runs part 1 only.

Run: ``.venv/bin/python benchmarks/overhead.py [--turns 200] [--turn-ms 15] [--tools 2]
[--cli fake|real] [--full-turns 40] [--skip-full]``
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime.observe.costs import TurnCostTracker
from runtime.observe.metrics import BaseMetrics, CloudWatchMetrics, EmfMetrics, NullMetrics, TurnRecord
from runtime.observe.tool_hooks import ToolTelemetry
from runtime.observe.tracing import Tracing, record_turn_result

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
SESSION = "bench-session-0000000000000000000000001"
CLAUDE_SESSION = "00000000-0000-5000-8000-000000000001"


def _hook_input(event: str, tool: str, tool_use_id: str) -> dict[str, Any]:
    return {
        "session_id": CLAUDE_SESSION,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/work",
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": {"command": "ls"},
        "tool_use_id": tool_use_id,
    }


class Harness:
    """One configuration: a metrics sink, a tracer, tool telemetry and a cost tracker."""

    def __init__(self, metrics: BaseMetrics, tracing: Tracing, *, tools: int) -> None:
        self.metrics = metrics
        self.tracing = tracing
        self.hooks = ToolTelemetry(metrics, tracing, session_id=SESSION)
        self.tracker = TurnCostTracker(default_model=MODEL)
        self.tools = tools
        self.calls = 0

    async def turn(self, n: int, wait_s: float) -> None:
        started = time.perf_counter()
        with (
            self.tracing.invocation(session_id=SESSION, model=MODEL),
            self.tracing.turn(model=MODEL, claude_session_id=CLAUDE_SESSION) as span,
            self.hooks.bind(span, claude_session_id=CLAUDE_SESSION),
        ):
            for i in range(self.tools):
                tid = f"toolu_{n}_{i}"
                await self.hooks.pre_tool_use(_hook_input("PreToolUse", "Bash", tid), tid, None)
                await self.hooks.post_tool_use(_hook_input("PostToolUse", "Bash", tid), tid, None)
            if wait_s:
                await asyncio.sleep(wait_s)
            self.calls += 1 + self.tools
            model_usage = {MODEL: {"inputTokens": 1000 * self.calls, "outputTokens": 200 * self.calls}}
            usage = {"input_tokens": 1000 * (1 + self.tools), "output_tokens": 200 * (1 + self.tools)}
            cost = self.tracker.price(model_usage, usage)
            record_turn_result(span, cost, sdk_cost_usd=0.01, num_turns=1 + self.tools, subtype="success")
            self.metrics.record_turn(
                TurnRecord(
                    model=MODEL,
                    cost=cost,
                    invocation_latency_ms=(time.perf_counter() - started) * 1000,
                    time_to_first_token_ms=1.0,
                    session_id=SESSION,
                    num_turns=1 + self.tools,
                )
            )


def sdk_tracing() -> tuple[Tracing, Callable[[], None]]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
    return Tracing(provider.get_tracer("bench"), agent="bench"), provider.shutdown


async def run_config(make: Callable[[], Harness], *, turns: int, wait_s: float) -> tuple[float, float]:
    """(CPU µs per turn without waiting, wall seconds for ``turns`` warm turns)."""
    harness = make()
    cpu_turns = max(turns, 200)
    for n in range(20):  # warm-up
        await harness.turn(n, 0)
    start = time.perf_counter()
    for n in range(cpu_turns):
        await harness.turn(n, 0)
    cpu_us = (time.perf_counter() - start) / cpu_turns * 1e6
    await harness.metrics.flush()
    start = time.perf_counter()
    for n in range(turns):
        await harness.turn(n, wait_s)
    wall = time.perf_counter() - start
    await harness.metrics.close()
    return cpu_us, wall


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_for_port(port: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        return
    raise RuntimeError(f"moto server did not listen on port {port}")


async def main(args: argparse.Namespace, port: int) -> int:
    import boto3

    tmp = tempfile.TemporaryDirectory()
    shutdowns: list[Callable[[], None]] = []
    try:
        await _wait_for_port(port)
        cw = boto3.client(
            "cloudwatch",
            region_name="us-east-1",
            endpoint_url=f"http://127.0.0.1:{port}",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        emf_file = (Path(tmp.name) / "emf.log").open("w")

        def off() -> Harness:
            return Harness(NullMetrics(agent="bench"), Tracing(agent="bench"), tools=args.tools)

        def emf() -> Harness:
            tracing, shutdown = sdk_tracing()
            shutdowns.append(shutdown)
            metrics = EmfMetrics(namespace="Bench", agent="bench", stream=emf_file)
            return Harness(metrics, tracing, tools=args.tools)

        def cloudwatch() -> Harness:
            tracing, shutdown = sdk_tracing()
            shutdowns.append(shutdown)
            metrics = CloudWatchMetrics(namespace="Bench", agent="bench", client=cw, flush_interval_s=0.25)
            return Harness(metrics, tracing, tools=args.tools)

        configs = {"off": off, "emf": emf, "cloudwatch": cloudwatch}
        results: dict[str, list[tuple[float, float]]] = {k: [] for k in configs}
        for _ in range(args.repeat):  # interleave to spread machine noise over all configs
            for name, make in configs.items():
                results[name].append(await run_config(make, turns=args.turns, wait_s=args.turn_ms / 1000))
        emf_file.close()

        base_wall = statistics.median(w for _, w in results["off"])
        print(
            f"telemetry overhead: {args.turns} warm turns x {args.repeat}, simulated turn {args.turn_ms} ms, "
            f"{args.tools} tool calls per turn (median of {args.repeat})"
        )
        print(f"{'config':<12}{'cpu/turn (us)':>15}{'wall/turn (ms)':>16}{'ratio vs off':>14}")
        for name, runs in results.items():
            cpu = statistics.median(c for c, _ in runs)
            wall = statistics.median(w for _, w in runs)
            print(f"{name:<12}{cpu:>15.1f}{wall / args.turns * 1000:>16.3f}{wall / base_wall:>14.4f}")
        for name in ("emf", "cloudwatch"):
            extra_us = statistics.median(c for c, _ in results[name]) - statistics.median(
                c for c, _ in results["off"]
            )
            for ref_ms in (15.0, 76.0):
                ratio = (ref_ms * 1000 + extra_us) / (ref_ms * 1000)
                print(
                    f"{name}: added CPU/turn {extra_us:.0f} us → ratio {ratio:.4f} on a {ref_ms:.0f} ms turn"
                )
        return 0
    finally:
        for shutdown in shutdowns:
            shutdown()
        tmp.cleanup()


def run(args: argparse.Namespace) -> int:
    # moto in its own process, so its CPU does not count against the runtime (CloudWatch is remote).
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        return asyncio.run(main(args, port))
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--turn-ms", type=float, default=15.0, help="simulated warm-turn latency")
    parser.add_argument("--tools", type=int, default=2, help="tool calls per turn")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cli", choices=("fake", "real"), default="fake", help="CLI for part 2")
    parser.add_argument("--full-turns", type=int, default=40, help="part 2: turns of each kind per config")
    parser.add_argument("--skip-full", action="store_true", help="skip part 2 (full turns via the runtime)")
    cli_args = parser.parse_args()
    exit_code = run(cli_args)
    if not cli_args.skip_full:
        from _runtime_overhead import telemetry_full_turn  # part 2 (benchmarks/_runtime_overhead.py)

        print()
        telemetry_full_turn(cli=cli_args.cli, n=cli_args.full_turns)
    sys.exit(exit_code)
