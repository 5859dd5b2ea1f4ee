"""Full-turn overhead measurements through the real runtime (``python -m runtime`` over HTTP).

Used by ``benchmarks/overhead.py`` (part 2: metrics + spans on vs off) and ``benchmarks/resume.py`` (part 2:
AgentCore Memory store vs no store). Each compares two runtime servers that differ in one setting, with the
same CLI (``fake`` or ``real``), one warm session each, turns interleaved (one on each server per round) so
machine noise hits both alike. Every figure is measured in the run; ratios are of medians.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _harness import (
    RuntimeServer,
    cli_setup,
    describe,
    free_port,
    median,
    start_server,
    verdict,
    warm_turn,
    workdir,
)

from harness.runtime_server import session_id

# Installed into the "on" server through PYTHONPATH: the OpenTelemetry SDK tracer provider with a batch
# processor (as ADOT uses) and an in-memory exporter; at exit it writes the span names it collected. uvicorn
# re-raises SIGTERM after its graceful shutdown (so atexit would not run): the report hangs off that signal.
_SITECUSTOMIZE = """\
import atexit, json, os, signal, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_exporter = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(BatchSpanProcessor(_exporter))
trace.set_tracer_provider(_provider)


def _report():
    _provider.force_flush()
    names = [span.name for span in _exporter.get_finished_spans()]
    with open(os.environ["AGENTKIT_BENCH_SPANS_FILE"], "w") as out:
        json.dump(names, out)


def _on_term(signum, frame):
    _report()
    sys.exit(0)


atexit.register(_report)
signal.signal(signal.SIGTERM, _on_term)
"""


def _compare(
    servers: dict[str, RuntimeServer],
    *,
    n: int,
    turn: Callable[[], str],
) -> dict[str, list[float]]:
    sessions = {name: session_id(f"bench-{name}") for name in servers}
    for name, server in servers.items():
        warm_turn(server, sessions[name], turn())  # spawns the CLI
        warm_turn(server, sessions[name], turn())
    samples: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(n):
        for name, server in servers.items():
            samples[name].append(warm_turn(server, sessions[name], turn()))
    return samples


def telemetry_full_turn(*, cli: str = "fake", n: int = 40) -> dict[str, float]:
    """Warm text and tool turns with metrics + spans ON vs OFF; prints figures, returns the ratios.

    ON: ``AGENTKIT_METRICS=emf`` to a file and an OpenTelemetry SDK tracer provider (batch processor,
    in-memory exporter). OFF: ``AGENTKIT_METRICS=off`` and the OpenTelemetry API's no-op tracer.
    Both: no session store, so the difference is telemetry only.
    """
    root = Path(__file__).resolve().parents[1]
    ratios: dict[str, float] = {}
    with workdir("agentkit-bench-") as tmp, cli_setup(cli, tmp) as setup:
        site = setup.tmp / "otel-site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        spans_file, emf_file = setup.tmp / "spans.json", setup.tmp / "metrics.emf.jsonl"
        servers = {
            "on": start_server(
                setup,
                "on",
                AGENTKIT_METRICS="emf",
                AGENTKIT_EMF_FILE=str(emf_file),
                PYTHONPATH=f"{site}{os.pathsep}{root}",
                AGENTKIT_BENCH_SPANS_FILE=str(spans_file),
            ),
            "off": start_server(setup, "off", AGENTKIT_METRICS="off"),
        }
        try:
            text = _compare(servers, n=n, turn=setup.text_turn)
            tool = _compare(servers, n=n, turn=setup.tool_turn)
        finally:
            for server in servers.values():
                server.stop()
        spans = json.loads(spans_file.read_text()) if spans_file.exists() else None
        emf_lines = len(emf_file.read_text().splitlines()) if emf_file.exists() else 0

    print(
        f"full warm turn through the runtime, {cli} CLI, metrics + spans ON vs OFF (n={n} each, interleaved)"
    )
    for kind, samples in (("text", text), ("tool", tool)):
        print(describe(f"warm {kind} turn, telemetry ON", samples["on"]))
        print(describe(f"warm {kind} turn, telemetry OFF", samples["off"]))
        ratio = median(samples["on"]) / median(samples["off"])
        ratios[kind] = ratio
        print(f"  -> {kind} turn ON / OFF: {ratio:.3f}  ({verdict(ratio, at_most=1.05)})")
    if spans is None:
        print("  spans recorded by the ON server: unknown (its exit report is missing)")
    else:
        kinds = sorted({name for name in spans})
        print(f"  the ON server recorded {len(spans)} spans ({', '.join(kinds)}) and {emf_lines} EMF lines")
    return ratios


def _moto_server() -> tuple[subprocess.Popen[bytes], str]:
    """``moto.server`` in its own process (a remote service), listening on loopback; returns (proc, url)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import http.client

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/moto-api/")
            conn.getresponse().read()
            conn.close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("moto server did not start")


def store_warm_turn(
    *, cli: str = "fake", n: int = 30, memory_id: str = "agentkit_mem-Bench12345", write_behind: bool = False
) -> float:
    """Warm text turn with the AgentCore Memory store (moto server) vs no store; prints figures, returns the ratio.

    Both servers: ``AGENTKIT_METRICS=off``. The store server: ``AGENTKIT_SESSION_STORE=agentcore://<id>``,
    ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE`` at moto. The SDK flushes the transcript mirror to the store before it
    yields each result, and the runtime persists the session's spend, so both writes are inside the turn.
    """
    moto, url = _moto_server()
    try:
        with workdir("agentkit-bench-") as tmp, cli_setup(cli, tmp) as setup:
            servers = {
                "agentcore": start_server(
                    setup,
                    "agentcore",
                    AGENTKIT_SESSION_STORE=f"agentcore://{memory_id}",
                    AWS_ENDPOINT_URL_BEDROCK_AGENTCORE=url,
                    AGENTKIT_STORE_WRITE_BEHIND="1" if write_behind else "0",
                ),
                "nostore": start_server(setup, "nostore", AGENTKIT_SESSION_STORE="off"),
            }
            try:
                samples = _compare(servers, n=n, turn=setup.text_turn)
            finally:
                for server in servers.values():
                    server.stop()
            entries = _stored_entries(
                url, memory_id, setup.tmp / "agentcore" / "workspace", session_id("bench-agentcore")
            )
    finally:
        moto.terminate()
        moto.wait(timeout=10)
    mode = "write-behind" if write_behind else "synchronous writes (default)"
    print(
        f"warm text turn through the runtime, {cli} CLI, AgentCore store (moto server, {mode}) "
        f"vs no store (n={n} each)"
    )
    print(describe("warm turn, AGENTKIT_SESSION_STORE=agentcore://", samples["agentcore"]))
    print(describe("warm turn, AGENTKIT_SESSION_STORE=off", samples["nostore"]))
    ratio = median(samples["agentcore"]) / median(samples["nostore"])
    print(
        f"  -> store / no store: {ratio:.3f}  ({verdict(ratio, at_most=1.10)}); {entries} transcript entries in the store"
    )
    return ratio


def _stored_entries(url: str, memory_id: str, workspace: Path, runtime_session: str) -> str:
    """How many transcript entries the store holds for the benchmark session (proof it was written)."""
    try:
        import asyncio

        import boto3
        from claude_agent_sdk import project_key_for_directory

        from runtime.identity import claude_session_id
        from runtime.session_store import AgentCoreMemorySessionStore

        client = boto3.client(
            "bedrock-agentcore",
            region_name="us-east-1",
            endpoint_url=url,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        key = {
            "project_key": project_key_for_directory(workspace.resolve()),
            "session_id": claude_session_id(runtime_session),
        }
        entries = asyncio.run(AgentCoreMemorySessionStore(memory_id, client=client).load(key))  # type: ignore[arg-type]
        return str(len(entries or []))
    except Exception as exc:  # a count is a courtesy; never fail the benchmark on it
        return f"unknown ({type(exc).__name__}: {exc})"
