"""Resume benchmark: how long a brand-new process takes to load a 500-entry transcript.

Part 1 (here): ``load()`` of a 500-entry transcript from each store, measured in a fresh store object (no
cache, as after a microVM is replaced). SQLite on local disk; AgentCore Memory through moto's server on
127.0.0.1 (real HTTP, botocore signing and parsing; no service-side latency). Target: ≤ 1 s.

Part 2: the added latency of a warm turn with the AgentCore store (moto server) against no store, as a
ratio (target ≤ 1.10), measured through the real runtime over HTTP. See :func:`warm_turn_overhead`.

Run: ``.venv/bin/python benchmarks/resume.py [--entries 500] [--repeat 5] [--cli fake|real] [--turns 30]``
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime.session_store import (
    AgentCoreMemorySessionStore,
    SqliteSessionStore,
    actor_id_for,
    session_id_for,
)

KEY = {"project_key": "bench", "session_id": str(uuid.uuid5(uuid.NAMESPACE_URL, "bench"))}


def transcript(n: int) -> list[dict[str, Any]]:
    """Entries shaped like CLI transcript lines (~1.5 KB each; every 50th carries a 20 KB tool result)."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        text = ("tool output " * 1700) if i % 50 == 49 else ("lorem ipsum dolor sit amet " * 50)
        out.append(
            {
                "type": "assistant" if i % 2 else "user",
                "uuid": str(uuid.uuid4()),
                "parentUuid": out[-1]["uuid"] if out else None,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "sessionId": KEY["session_id"],
                "message": {
                    "role": "assistant" if i % 2 else "user",
                    "content": [{"type": "text", "text": text}],
                },
            }
        )
    return out


async def fill(store: Any, entries: list[dict[str, Any]], per_turn: int = 10) -> None:
    for i in range(0, len(entries), per_turn):  # the SDK flushes one batch per turn
        await store.append(KEY, entries[i : i + per_turn])


async def time_loads(make: Any, expected: list[dict[str, Any]], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        store = make()
        start = time.perf_counter()
        loaded = await store.load(KEY)
        times.append(time.perf_counter() - start)
        assert loaded == expected, "benchmark store returned a different transcript"
    return times


def report(name: str, times: list[float], extra: str = "") -> None:
    med = statistics.median(times)
    verdict = "OK" if med <= 1.0 else "OVER TARGET"
    print(
        f"{name:<34} median {med * 1000:8.1f} ms  min {min(times) * 1000:8.1f} ms  "
        f"(target ≤ 1000 ms: {verdict}){extra}"
    )


async def bench_sqlite(entries: list[dict[str, Any]], repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sessions.db"
        await fill(SqliteSessionStore(path), entries)
        report("sqlite load()", await time_loads(lambda: SqliteSessionStore(path), entries, repeat))


async def bench_agentcore(entries: list[dict[str, Any]], repeat: int) -> None:
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no per-request log lines
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        client = boto3.client(
            "bedrock-agentcore",
            region_name="us-east-1",
            endpoint_url=f"http://{host}:{port}",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        memory_id = "agentkit_mem-Bench12345"
        start = time.perf_counter()
        await fill(AgentCoreMemorySessionStore(memory_id, client=client), entries)
        write_s = time.perf_counter() - start
        times = await time_loads(
            lambda: AgentCoreMemorySessionStore(memory_id, client=client), entries, repeat
        )
        events = client.list_events(
            memoryId=memory_id,
            actorId=actor_id_for(KEY["project_key"]),
            sessionId=session_id_for(KEY["session_id"]),
        )["events"]
        pages = -(-len(events) // 20)
        report(
            "agentcore (moto server) load()",
            times,
            f"\n    {len(events)} events; the real service pages 20 per call -> {pages} ListEvents calls "
            f"(moto answers in 1); {len(entries) // 10} appends took {write_s * 1000:.0f} ms",
        )
    finally:
        server.stop()


async def warm_turn_overhead(
    *, cli: str = "fake", turns: int = 30, write_behind: bool = False
) -> float | None:
    """Part 2: ratio of warm-turn latency with the AgentCore store vs. no store (target ≤ 1.10).

    Two ``python -m runtime`` servers (``AGENTKIT_SESSION_STORE=agentcore://<id>`` with
    ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE`` at a moto server process, and ``off``), the same CLI, ``turns``
    interleaved warm turns each; ratio of medians. Implemented by ``store_warm_turn`` in
    ``benchmarks/_runtime_overhead.py`` (which prints the figures).
    """
    from _runtime_overhead import store_warm_turn

    return await asyncio.to_thread(store_warm_turn, cli=cli, n=turns, write_behind=write_behind)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cli", choices=("fake", "real"), default="fake", help="CLI for part 2")
    parser.add_argument("--turns", type=int, default=30, help="part 2: warm turns per configuration")
    args = parser.parse_args()
    entries = transcript(args.entries)
    size_kb = sum(len(str(e)) for e in entries) / 1024
    print(
        f"resume of a {args.entries}-entry transcript (~{size_kb:.0f} KB), fresh store per load, "
        f"median of {args.repeat}"
    )
    await bench_sqlite(entries, args.repeat)
    await bench_agentcore(entries, args.repeat)
    for write_behind in (False, True):
        ratio = await warm_turn_overhead(cli=args.cli, turns=args.turns, write_behind=write_behind)
        mode = "write-behind" if write_behind else "synchronous"
        print(f"warm-turn overhead ratio (AgentCore store, {mode} / no store): {ratio:.3f}")


if __name__ == "__main__":
    asyncio.run(main())
