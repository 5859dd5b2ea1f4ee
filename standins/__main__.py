"""Run the Bedrock Runtime stand-in on its own: ``python -m standins [--host H] [--port N]``.

Prints its URL on the first line of stdout (and the CLI environment with ``--print-env``), then serves
until interrupted. Nothing is queued, so every model call gets the deterministic default reply.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading

from standins.bedrock import DEFAULT_MODEL, BedrockStandIn, cli_env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m standins", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="inference profile id for --print-env")
    parser.add_argument(
        "--prefer-tool",
        action="append",
        default=None,
        help="tool-name fragment the default model calls when offered (repeatable; default: invoice)",
    )
    parser.add_argument("--print-env", action="store_true", help="also print the CLI env as KEY=VALUE lines")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0-65535, got {args.port}")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with BedrockStandIn(
        host=args.host, port=args.port, prefer_tools=args.prefer_tool or ("invoice",)
    ) as bedrock:
        print(bedrock.url, flush=True)
        if args.print_env:
            for key, value in cli_env(bedrock.url, args.model).items():
                print(f"{key}={value}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
