"""What `agentkit invoke` costs on top of the turn itself: process start-up and per-call client overhead.

Runs against the loopback SSE stand-in (no agent), so every figure is pure client cost. Prints medians and
ratios:

    .venv/bin/python benchmarks/cli_overhead.py
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "client"))  # the slim client, also when it is not pip-installed

from agentkit.cli import main  # noqa: E402
from harness.sse_runtime import Reply, SseRuntimeStandIn, sse  # noqa: E402

EVENTS = [{"type": "text", "text": f"word{i} "} for i in range(200)] + [
    {"type": "result", "subtype": "success", "num_turns": 1, "cost_usd": 0.001}
]


def median_ms(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main_bench() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "client"), os.environ.get("PYTHONPATH", "")]),
    }
    with SseRuntimeStandIn(Reply(parts=sse(*EVENTS))) as server:
        url = server.url

        def raw() -> None:
            body = json.dumps({"prompt": "hi", "stream": True}).encode()
            req = urllib.request.Request(f"{url}/invocations", data=body, method="POST")
            req.add_header("X-Amzn-Bedrock-AgentCore-Runtime-Session-Id", "agentkit-" + "0" * 32)
            with urllib.request.urlopen(req) as resp:
                resp.read()

        def in_process() -> None:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                assert main(["invoke", "--local", url, "hi"]) == 0

        def cli_process() -> None:
            cmd = [sys.executable, "-m", "agentkit", "invoke", "--local", url, "hi"]
            subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True, env=env)

        def bare_python() -> None:
            subprocess.run([sys.executable, "-c", "pass"], check=True)

        raw_ms, inproc_ms = median_ms(raw, 50), median_ms(in_process, 50)
        proc_ms, bare_ms = median_ms(cli_process, 15), median_ms(bare_python, 15)
    print(f"201-event SSE reply, raw urllib read:           {raw_ms:7.2f} ms (median of 50)")
    ratio = inproc_ms / raw_ms
    print(f"same reply through agentkit main() (parse+print): {inproc_ms:7.2f} ms  ratio {ratio:.2f}x")
    print(f"`python -m agentkit invoke` as a process:      {proc_ms:7.2f} ms (median of 15)")
    print(
        f"bare `python -c pass`:                           {bare_ms:7.2f} ms  CLI start-up overhead "
        f"{proc_ms - bare_ms - inproc_ms:.1f} ms"
    )


if __name__ == "__main__":
    main_bench()
