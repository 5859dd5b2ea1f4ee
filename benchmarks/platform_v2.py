"""Cold-path targets per AgentCore Runtime platform version — the bundled Claude Code CLI against the local
Bedrock stand-in, every figure from one interleaved run (one sample of each kind per round).

1. **V2, first turn of a new session in a restored runtime** <= 1.2 x a per-call ``query()`` in an interpreter
   that has already imported the SDK. The restored runtime: one ``python -m runtime`` start-up in ``v2`` mode,
   copied once per round as a snapshot restore copies it (:mod:`harness.snapshot_restore`: libc fork, no
   at-fork handlers, the image's pid); each copy serves one new session's first invocation over HTTP, which
   includes the restore renewals (:mod:`runtime.process.restore`) and the CLI spawn. The baseline runs here, in this
   process (the SDK imported long before), a fresh CLI per call.
2. **V1, process start → first reply of a new session** <= 1.1 x a script that starts, imports the SDK and
   calls ``query()``: the image's CMD with the Dockerfile's ``OTEL_*`` environment and AgentCore's exporter
   variables (a local OTLP collector), ``AGENTKIT_PLATFORM_VERSION=v1``; the first invocation is sent as soon
   as ``/ping`` answers (as AgentCore does for a new session's microVM).
3. **V2 start-up**, process start → first healthy ``/ping``, same CMD and environment with
   ``AGENTKIT_PLATFORM_VERSION=v2``, against the 120 s AgentCore allows (developer guide,
   ``runtime-v2-optimize``); V1's for reference.

The restored copies run without OpenTelemetry (the ADOT exporters start threads, which a fork copy would not
carry; a real V2 snapshot does). The machine's load average is printed before and after: a shared machine
makes every figure noisy.

Run: ``.venv/bin/python benchmarks/platform_v2.py [--rounds 5]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
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
    median,
    per_call_query,
    runtime_process_env,
    time_to_healthy,
    until_pinged,
    verdict,
)
from cold_start import first_turn_bare, image_argv, image_env

from harness.dockerfile import cmd as dockerfile_cmd
from harness.otlp_collector import OtlpCollector
from harness.runtime_server import RuntimeServer, session_id

#: AgentCore's limit from start to a healthy /ping (developer guide, runtime-v2-optimize).
START_LIMIT_S = 120.0


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"


class RestoredCopies:
    """One v2 runtime image, copied ``count`` times; copy ``i`` serves on ``ports[i]``."""

    def __init__(self, setup: CliSetup, count: int) -> None:
        self.tmp = setup.tmp / "image"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.ports = [free_port() for _ in range(count)]
        env = {
            **base_env(),
            **runtime_process_env(setup, self.tmp / "state", 0),
            "AGENTKIT_PLATFORM_VERSION": "v2",
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }
        self.out = self.tmp / "snapshot.json"
        self.log_path = self.tmp / "image.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in close()
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.snapshot_restore", str(self.out), *map(str, self.ports)],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        while not self.out.exists():
            if self.proc.poll() is not None or time.perf_counter() - started > 120:
                raise RuntimeError(f"image did not start: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.01)
        snapshot = json.loads(self.out.read_text())
        if "error" in snapshot:
            raise RuntimeError(f"image refused: {snapshot}")
        self.children: list[int] = snapshot["children"]
        self.image_seconds = time.perf_counter() - started

    def first_turn(self, setup: CliSetup, i: int) -> float:
        """The first invocation a restored copy serves (a new session), request → result."""
        server = RuntimeServer(env={}, log_path=self.tmp / "unused.log", port=self.ports[i])
        deadline = time.monotonic() + 30
        while True:
            try:
                server.ping()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"copy {i} not listening: {self.log_path.read_text()[-2000:]}"
                    ) from None
                time.sleep(0.005)
        prompt = setup.text_turn()
        started = time.perf_counter()
        reply = server.invoke(prompt, session=session_id(f"restored-{i}"))
        elapsed = time.perf_counter() - started
        if reply.status != 200 or reply.last.get("type") != "result":
            raise RuntimeError(f"restored first turn failed: {reply.status} {reply.last}")
        os.kill(self.children[i], signal.SIGTERM)  # its CLI (~230 MB) goes with it
        return elapsed

    def renewals(self) -> list[str]:
        return [
            line.split("per-session values renewed", 1)[1].strip()
            for line in self.log_path.read_text().splitlines()
            if "per-session values renewed" in line
        ]

    def close(self) -> None:
        for pid in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


def first_reply_v1(setup: CliSetup, collector: OtlpCollector, i: int) -> float:
    """Process start → first reply of a new session, the image's CMD on platform v1."""
    port = free_port()
    env = {**image_env(setup, collector, setup.tmp / f"v1-{i}", port), "AGENTKIT_PLATFORM_VERSION": "v1"}
    log = open(setup.tmp / f"v1-{i}.log", "wb")  # noqa: SIM115 - closed below
    started = time.perf_counter()
    proc = subprocess.Popen(
        image_argv(dockerfile_cmd()), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        server = until_pinged(proc, port, setup.tmp / f"v1-{i}.log")
        reply = server.invoke(setup.text_turn(), session=session_id(f"v1-{i}"))
        done = time.perf_counter()
        if reply.status != 200 or reply.last.get("type") != "result":
            raise RuntimeError(f"first turn failed: {reply.status} {reply.last}")
        return done - started
    finally:
        proc.kill()
        proc.wait()
        log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="samples of each kind (default 5)")
    args = parser.parse_args()
    banner("platform versions: real Claude Code CLI (bundled) against the local Bedrock stand-in")
    print(f"before: {load()} — shared machine, figures are noisy")
    v2_turn: list[float] = []
    query_turn: list[float] = []
    v1_total: list[float] = []
    bare_total: list[float] = []
    v2_ping: list[float] = []
    v1_ping: list[float] = []
    with (
        tempfile.TemporaryDirectory(prefix="agentkit-v2-") as tmp,
        cli_setup("real", Path(tmp)) as setup,
        OtlpCollector() as collector,
    ):
        # A root runtime runs the CLI as an unprivileged user, who must be able to enter the state dirs (else
        # the runtime switches command tools, and with them the sandbox, off: not the image's configuration).
        os.chmod(tmp, 0o755)
        asyncio.run(per_call_query(setup, setup.text_turn()))  # this interpreter: SDK imported, CLI paged in
        copies = RestoredCopies(setup, args.rounds)
        try:
            for i in range(args.rounds):
                v2_turn.append(copies.first_turn(setup, i))
                query_turn.append(asyncio.run(per_call_query(setup, setup.text_turn())))
                v1_total.append(first_reply_v1(setup, collector, i))
                bare_total.append(first_turn_bare(setup, i)[1])
                for version, samples in (("v2", v2_ping), ("v1", v1_ping)):
                    port = free_port()
                    env = {
                        **image_env(setup, collector, setup.tmp / f"ping-{version}-{i}", port),
                        "AGENTKIT_PLATFORM_VERSION": version,
                    }
                    samples.append(
                        time_to_healthy(image_argv(dockerfile_cmd()), env=env, port=port, cwd=ROOT)
                    )
            renewals = copies.renewals()
        finally:
            copies.close()
    print(f"after:  {load()}")
    print()
    print(f"V2 image start-up (import, services, fork-ready), once: {copies.image_seconds * 1000:.0f} ms")
    print(describe("V2 first turn of a new session, restored copy (HTTP)", v2_turn))
    print(describe("per-call query(), SDK already imported (in-process)", query_turn))
    ratio = median(v2_turn) / median(query_turn)
    print(f"  -> V2 restored first turn / per-call query(): {ratio:.2f}  ({verdict(ratio, at_most=1.2)})")
    if renewals:
        print(f"  restore renewals in the copies (first invocation): {renewals[0]}")
    print()
    print(describe("V1 process start -> first reply, image CMD (+ADOT)", v1_total))
    print(describe("script start -> import SDK -> query() reply", bare_total))
    ratio = median(v1_total) / median(bare_total)
    print(f"  -> V1 start to first reply / bare script: {ratio:.2f}  ({verdict(ratio, at_most=1.1)})")
    print()
    print(describe("V2 process start -> healthy /ping, image CMD (+ADOT)", v2_ping))
    print(describe("V1 process start -> healthy /ping, image CMD (+ADOT)", v1_ping))
    share = median(v2_ping) / START_LIMIT_S
    print(
        f"  -> V2 start-up uses {share * 100:.1f} % of the {START_LIMIT_S:.0f} s AgentCore allows "
        f"({verdict(share, at_most=0.1)} with a 10x margin)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
