"""Sandbox benchmark: what the OS sandbox costs per Bash call and per warm tool turn.

In one run, with the real bundled CLI against the local Bedrock stand-in, three runtime servers
(``python -m runtime``):

- ``required``: the OS sandbox (the default);
- ``off``: ``AGENTKIT_SANDBOX=off`` — no sandbox, but the CLI's env scrub, which runs tools under a bwrap of its own;
- ``none``: ``AGENTKIT_SANDBOX=off`` with bwrap/socat hidden from ``PATH``: tools run as plain subprocesses
  (the unsandboxed baseline).

Measured:

- **warm one-tool-call turn**: the model calls ``Bash`` once (``ls -la``), then answers; request → last SSE event;
- **per Bash call**: a turn with ``K`` Bash calls minus a turn with one, divided by ``K - 1``.

Rounds are interleaved so machine noise hits all alike. Prints medians and the ratio ``required`` / ``none``.
Target: ≤ 1.15 for the warm tool turn.

Run: ``.venv/bin/python benchmarks/sandbox.py [-n 10] [-k 5]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _harness import banner, cli_setup, describe, median, ms, start_server, verdict, warm_turn, workdir

from harness.runtime_server import session_id
from harness.sandbox_tools import path_without_sandbox_tools
from standins import Reply
from standins.replies import ToolUse

TARGET_RATIO = 1.15


def script(setup, calls: int, counter: list[int]) -> str:  # type: ignore[no-untyped-def]
    counter[0] += 1
    assert setup.bedrock is not None
    uses = [ToolUse("Bash", {"command": "ls -la"}, id=f"toolu_b{counter[0]}_{i}") for i in range(calls)]
    setup.bedrock.enqueue(Reply.message(*uses), Reply.text("Listed."))
    return f"list the files ({counter[0]})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="measured rounds (default 10)")
    parser.add_argument("-k", type=int, default=5, help="Bash calls in the multi-call turn (default 5)")
    args = parser.parse_args()
    if args.n < 1 or args.k < 2:
        parser.error("-n must be ≥ 1 and -k ≥ 2")

    banner(f"sandbox cost — real CLI, n={args.n}, k={args.k}")
    with workdir("agentkit-bench-") as tmp, cli_setup("real", tmp) as setup:
        (Path(tmp) / "ws").mkdir()
        (Path(tmp) / "ws" / "notes.txt").write_text("hello\n")
        bare_path = path_without_sandbox_tools(Path(tmp))
        variants: dict[str, dict[str, str]] = {
            "required": {"AGENTKIT_SANDBOX": "required"},
            "off": {"AGENTKIT_SANDBOX": "off"},
            "none": {"AGENTKIT_SANDBOX": "off", "PATH": bare_path},
        }
        servers = {
            mode: start_server(setup, f"sandbox-{mode}", AGENTKIT_WORKSPACE=f"{tmp}/ws", **env)
            for mode, env in variants.items()
        }
        counter = [0]
        one: dict[str, list[float]] = {mode: [] for mode in variants}
        many: dict[str, list[float]] = {mode: [] for mode in variants}
        try:
            for mode, server in servers.items():  # warm-up: spawns the CLI, first sandbox
                warm_turn(server, session_id(f"bench-sb-{mode}"), script(setup, 1, counter))
            for _ in range(args.n):
                for mode, server in servers.items():
                    sid = session_id(f"bench-sb-{mode}")
                    one[mode].append(warm_turn(server, sid, script(setup, 1, counter)))
                    many[mode].append(warm_turn(server, sid, script(setup, args.k, counter)))
        finally:
            for server in servers.values():
                server.stop()

    for mode in one:
        print(describe(f"warm one-Bash-call turn, {mode}", one[mode]))
        print(describe(f"warm {args.k}-Bash-call turn, {mode}", many[mode]))
    per_call = {mode: (median(many[mode]) - median(one[mode])) / (args.k - 1) for mode in one}
    for mode in one:
        print(f"{'per Bash call (from the medians), ' + mode:<52} {ms(per_call[mode])}")
    print(
        f"{'sandbox cost per Bash call (required - none)':<52} {ms(per_call['required'] - per_call['none'])}"
    )
    ratio = median(one["required"]) / median(one["none"])
    print(
        f"ratio warm tool turn sandboxed / unsandboxed: {ratio:.2f}  ({verdict(ratio, at_most=TARGET_RATIO)})"
    )
    scrub = median(one["required"]) / median(one["off"])
    print(f"ratio with the CLI's own env scrub (bwrap) as the baseline, required / off: {scrub:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
