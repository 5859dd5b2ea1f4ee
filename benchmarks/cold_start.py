"""Cold-path benchmark on platform v1: start → ``/ping``, first turn of a new session in a fresh process, and
memory — the bundled Claude Code CLI against the local Bedrock stand-in. ``benchmarks/platform_v2.py`` measures
v2 (start-up before ``/ping``, first turn in a restored copy) next to v1.

In one run, interleaved (one of each per round, so machine noise hits all alike):

1. **start → healthy ``/ping``**, the image's ``CMD`` exactly as the Dockerfile writes it, with the Dockerfile's
   ``OTEL_*`` environment plus the exporter variables AgentCore presets (``AGENT_OBSERVABILITY_ENABLED``, OTLP
   traces/logs endpoints — here a local OTLP/HTTP collector stand-in), vs a bare ``BedrockAgentCoreApp``
   hello-world. For reference, the previous CMD (``opentelemetry-instrument python -m runtime``) with the same
   environment. Target: CMD / bare ≤ 1.2.
2. **first turn of a new session in a fresh process**: start the image's CMD, wait for ``/ping``, send the first
   invocation at once (as AgentCore does when it starts a microVM for a new session); the turn's time
   (request → result). Baseline: a fresh ``python`` process that imports the SDK and times one bare per-call
   ``query()`` (a new CLI process; no HTTP). Target: ours / bare ≤ 1.2. Also printed: process start → first
   reply for both.
3. **memory** (``/proc``): RSS of the runtime server and of its warm CLI after a few turns, and of the process
   tree after idle eviction (``AGENTKIT_IDLE_TIMEOUT``).

Run: ``.venv/bin/python benchmarks/cold_start.py [--starts 5] [--first 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    runtime_process_env,
    time_to_healthy,
    until_pinged,
    verdict,
    write_hello_app,
)

from harness.dockerfile import cmd as dockerfile_cmd
from harness.dockerfile import dockerfile_env
from harness.otlp_collector import OtlpCollector
from harness.procmem import tree_rss
from harness.runtime_server import RuntimeServer, session_id

# A fresh process: import the SDK, then time one per-call query() (what the runtime's first turn is compared to).
BARE_QUERY = """\
import asyncio, json, sys, time
started = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from _harness import CliSetup, per_call_query
spec = json.loads(sys.argv[2])
setup = CliSetup(kind="real", tmp=__import__("pathlib").Path(spec["tmp"]), server_env={}, cli_path=None,
                 cli_env=spec["cli_env"])
turn = asyncio.run(per_call_query(setup, spec["prompt"]))
print(json.dumps({"turn": turn, "total": time.perf_counter() - started}))
"""

BIN = Path(sys.executable).parent


def image_argv(argv: list[str]) -> list[str]:
    """A CMD with its program resolved here (``python`` is this interpreter, others from the venv's bin)."""
    head = sys.executable if argv[0] == "python" else str(BIN / argv[0])
    return [head, *(sys.executable if a == "python" else a for a in argv[1:])]


def image_env(setup: CliSetup, collector: OtlpCollector, state: Path, port: int) -> dict[str, str]:
    return {
        **base_env(),
        **{k: v for k, v in dockerfile_env().items() if k.startswith("OTEL_")},
        # What AgentCore presets for agent observability (exporters pointed at the local collector).
        "AGENT_OBSERVABILITY_ENABLED": "true",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{collector.endpoint}/v1/traces",
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"{collector.endpoint}/v1/logs",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        **runtime_process_env(setup, state, port),
        "AGENTKIT_PLATFORM_VERSION": "v1",  # what this benchmark's targets are about (early /ping)
    }


def bench_ping(setup: CliSetup, collector: OtlpCollector, *, starts: int) -> None:
    hello = write_hello_app(setup.tmp)
    new_cmd = image_argv(dockerfile_cmd())
    old_cmd = image_argv(["opentelemetry-instrument", "python", "-m", "runtime"])
    ours, bare, old = [], [], []
    for i in range(starts):
        port = free_port()
        env = image_env(setup, collector, setup.tmp / f"ping-{i}", port)
        ours.append(time_to_healthy(new_cmd, env=env, port=port, cwd=ROOT))
        bare.append(hello_app_to_healthy(hello, setup.tmp))
        port = free_port()
        env = image_env(setup, collector, setup.tmp / f"ping-old-{i}", port)
        old.append(time_to_healthy(old_cmd, env=env, port=port, cwd=ROOT))
    print(describe(f"start -> /ping, image CMD {' '.join(dockerfile_cmd())}", ours))
    print(describe("start -> /ping, bare BedrockAgentCoreApp", bare))
    print(describe("start -> /ping, previous CMD (opentelemetry-instrument)", old))
    ratio = median(ours) / median(bare)
    print(
        f"  -> image CMD / bare app: {ratio:.2f}  ({verdict(ratio, at_most=1.2)}); previous CMD / bare: "
        f"{median(old) / median(bare):.2f}"
    )


def first_turn_ours(setup: CliSetup, collector: OtlpCollector, i: int) -> tuple[float, float]:
    """(first turn, process start → first reply) for a fresh runtime started as the image starts it."""
    port = free_port()
    env = image_env(setup, collector, setup.tmp / f"first-{i}", port)
    log = open(setup.tmp / f"first-{i}.log", "wb")  # noqa: SIM115 - closed below
    started = time.perf_counter()
    proc = subprocess.Popen(
        image_argv(dockerfile_cmd()), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        server = until_pinged(proc, port, setup.tmp / f"first-{i}.log")
        prompt = setup.text_turn()
        t0 = time.perf_counter()
        reply = server.invoke(prompt, session=session_id(f"first-{i}"))
        done = time.perf_counter()
        if reply.status != 200 or reply.last.get("type") != "result":
            raise RuntimeError(f"first turn failed: {reply.status} {reply.last}")
        return done - t0, done - started
    finally:
        proc.kill()
        proc.wait()
        log.close()


def first_turn_bare(setup: CliSetup, i: int) -> tuple[float, float]:
    tmp = setup.tmp / f"bare-{i}"
    spec = {"tmp": str(tmp), "cli_env": setup.cli_env, "prompt": setup.text_turn()}
    tmp.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", BARE_QUERY, str(ROOT / "benchmarks"), json.dumps(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    total = time.perf_counter() - started
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return float(result["turn"]), total


def bench_first_turn(setup: CliSetup, collector: OtlpCollector, *, rounds: int) -> None:
    ours, ours_total, bare, bare_total = [], [], [], []
    for i in range(rounds):
        turn, total = first_turn_ours(setup, collector, i)
        ours.append(turn)
        ours_total.append(total)
        turn, total = first_turn_bare(setup, i)
        bare.append(turn)
        bare_total.append(total)
    print(describe("first turn, new session, fresh runtime (after /ping)", ours))
    print(describe("bare per-call query(), fresh process (after import)", bare))
    ratio = median(ours) / median(bare)
    print(f"  -> first turn / bare query(): {ratio:.2f}  ({verdict(ratio, at_most=1.2)})")
    print(describe("process start -> first reply, runtime", ours_total))
    print(describe("process start -> first reply, bare query() script", bare_total))
    print(f"  -> runtime / bare script, start to first reply: {median(ours_total) / median(bare_total):.2f}")


def bench_memory(setup: CliSetup, *, turns: int = 5) -> None:
    mib = 1024 * 1024
    server = RuntimeServer(
        env={
            **setup.server_env,
            "AGENTKIT_STATE_DIR": str(setup.tmp / "mem"),
            "AGENTKIT_IDLE_TIMEOUT": "3",
        },
        log_path=setup.tmp / "mem.log",
    ).start(timeout=60)
    try:
        assert server.proc is not None
        pid = server.proc.pid
        time.sleep(2.0)  # the pre-warm (SDK import, wiring) has run
        idle_own, _ = tree_rss(pid)
        session = session_id("mem")
        for _ in range(turns):
            server.invoke(setup.text_turn(), session=session)
        own, kids = tree_rss(pid)
        cli = max(kids.values()) if kids else 0
        print(f"RSS runtime server before any session                 {idle_own / mib:8.1f} MiB")
        print(f"RSS runtime server with one warm session ({turns} turns)     {own / mib:8.1f} MiB")
        print(
            f"RSS per warm CLI (largest child process)              {cli / mib:8.1f} MiB "
            f"(all children: {sum(kids.values()) / mib:.1f} MiB in {len(kids)} processes)"
        )
        deadline = time.monotonic() + 20
        after_own, after_kids = tree_rss(pid)
        while after_kids and time.monotonic() < deadline:
            time.sleep(0.2)
            after_own, after_kids = tree_rss(pid)
        print(
            f"process tree after idle eviction                       {(after_own + sum(after_kids.values())) / mib:8.1f} MiB "
            f"(was {(own + sum(kids.values())) / mib:.1f} MiB; CLI processes left: {len(after_kids)})"
        )
        from runtime.process.limits import PER_SESSION_BYTES, RUNTIME_RESERVE_BYTES, sessions_for

        print(
            f"default AGENTKIT_MAX_SESSIONS: {PER_SESSION_BYTES // mib} MiB a session after "
            f"{RUNTIME_RESERVE_BYTES // mib} MiB -> 2 GiB: {sessions_for(2048 * mib)}, 4 GiB: "
            f"{sessions_for(4096 * mib)}, 8 GiB: {sessions_for(8192 * mib)}, no limit: {sessions_for(None)}"
        )
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=5, help="process starts of each kind (default 5)")
    parser.add_argument(
        "--first", type=int, default=5, help="fresh-process first turns of each kind (default 5)"
    )
    parser.add_argument("--skip", choices=["ping", "first", "memory"], action="append", default=[])
    args = parser.parse_args()
    banner(
        "cold path: real Claude Code CLI (bundled) against the local Bedrock stand-in; the model is scripted"
    )
    with (
        tempfile.TemporaryDirectory(prefix="agentkit-cold-") as tmp,
        cli_setup("real", Path(tmp)) as setup,
        OtlpCollector() as collector,
    ):
        if "ping" not in args.skip:
            bench_ping(setup, collector, starts=args.starts)
        if "first" not in args.skip:
            bench_first_turn(setup, collector, rounds=args.first)
        if "memory" not in args.skip:
            bench_memory(setup)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
