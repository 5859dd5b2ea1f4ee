"""Load through the real HTTP server with the fake CLI: N sessions x M turns at once, then idle eviction.

Used by ``benchmarks/load.py`` (N=20 x M=10) and, small, by ``tests/functional/test_load.py``. Every figure is
measured in the run:

- turns lost (a turn without a result, or without its ``turn`` in the fake CLI's log), turns duplicated (a
  prompt the CLI ran twice) and turns interleaved (a reply that is not its own prompt's, or out of order:
  turn k of a session must say ``turn=k`` and ``history=k-1``);
- client-side latency p50 / p99 (half the turns stream SSE, half are one JSON body);
- CLI processes spawned (the fake CLI logs each start) against N;
- RSS of the runtime process (and of its CLI children) before the load (after one warm-up session was evicted,
  so the SDK is imported), during it (peak), and after the idle timeout evicted every session.
"""

from __future__ import annotations

import re
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cli import write_fake_cli
from harness.runtime_server import RuntimeServer, read_log, session_id


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@dataclass
class LoadResult:
    sessions: int
    turns_per_session: int
    latencies_ms: list[float] = field(default_factory=list)
    warm_latencies_ms: list[float] = field(default_factory=list)  # turns 2..M (the CLI already running)
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    interleaved: list[str] = field(default_factory=list)
    cli_spawned: int = 0
    rss_before_kib: int = 0
    rss_peak_kib: int = 0
    rss_after_kib: int = 0
    cli_rss_peak_kib: int = 0
    live_cli_after: int = 0
    wall_s: float = 0.0

    @property
    def turns(self) -> int:
        return self.sessions * self.turns_per_session

    def pct(self, q: float, *, warm: bool = False) -> float:
        data = sorted(self.warm_latencies_ms if warm else self.latencies_ms)
        if not data:
            return float("nan")
        return data[min(len(data) - 1, round(q / 100 * (len(data) - 1)))]

    @property
    def rss_after_ratio(self) -> float:
        return self.rss_after_kib / self.rss_before_kib if self.rss_before_kib else float("nan")

    def lines(self) -> list[str]:
        return [
            f"sessions x turns            {self.sessions} x {self.turns_per_session} = {self.turns} turns "
            f"in {self.wall_s:.1f} s",
            f"turns lost                  {len(self.lost)}",
            f"turns duplicated            {len(self.duplicated)}",
            f"turns interleaved           {len(self.interleaved)}",
            f"latency p50 / p99           {self.pct(50):.1f} / {self.pct(99):.1f} ms "
            f"(mean {statistics.fmean(self.latencies_ms):.1f}; first turns spawn a CLI each)",
            f"warm turns p50 / p99        {self.pct(50, warm=True):.1f} / {self.pct(99, warm=True):.1f} ms",
            f"CLI processes spawned       {self.cli_spawned} (sessions: {self.sessions})",
            f"runtime RSS before/peak/after eviction  {self.rss_before_kib / 1024:.1f} / "
            f"{self.rss_peak_kib / 1024:.1f} / {self.rss_after_kib / 1024:.1f} MiB "
            f"(after/before {self.rss_after_ratio:.3f})",
            f"CLI children RSS at peak    {self.cli_rss_peak_kib / 1024:.1f} MiB; live after eviction: "
            f"{self.live_cli_after}",
        ]


_TURN = re.compile(
    r"echo: (?P<prompt>.*?) \| pid=(?P<pid>\d+) \| turn=(?P<turn>\d+) \| history=(?P<history>\d+)"
)


def run_load(tmp: Path, *, sessions: int, turns: int, idle_timeout_s: float = 3.0) -> LoadResult:
    """Run the load against a fresh runtime under ``tmp``; see the module docstring."""
    result = LoadResult(sessions=sessions, turns_per_session=turns)
    server = RuntimeServer(
        env={
            "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp)),
            "AGENTKIT_STATE_DIR": str(tmp / "state"),
            "FAKE_CLAUDE_LOG": str(tmp / "fake.log"),
            "AGENTKIT_IDLE_TIMEOUT": str(idle_timeout_s),
            "AGENTKIT_MAX_SESSIONS": str(max(32, sessions + 1)),
        },
        log_path=tmp / "server.log",
    ).start()
    assert server.proc is not None
    pid = server.proc.pid
    try:
        warm = server.invoke("warm-up", session=session_id("load-warm"), stream=False, timeout=120)
        assert warm.status == 200, warm.body
        _wait_evicted(tmp, expected_exits=1, timeout=idle_timeout_s + 20)
        result.rss_before_kib = rss_kib(pid)
        stop_sampling = threading.Event()

        def sample() -> None:
            while not stop_sampling.is_set():
                result.rss_peak_kib = max(result.rss_peak_kib, rss_kib(pid))
                result.cli_rss_peak_kib = max(result.cli_rss_peak_kib, sum(rss_kib(c) for c in children(pid)))
                stop_sampling.wait(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        lock = threading.Lock()

        def drive(n: int) -> None:
            sid = session_id(f"load-{n}")
            for k in range(1, turns + 1):
                prompt = f"s{n} k{k}"
                started = time.perf_counter()
                try:
                    reply = server.invoke(prompt, session=sid, stream=k % 2 == 0, timeout=120)
                except OSError as exc:
                    with lock:
                        result.lost.append(f"{prompt}: {exc!r}")
                    continue
                elapsed = (time.perf_counter() - started) * 1000
                final = reply.last if reply.events else reply.body
                with lock:
                    if reply.status != 200 or not final or final.get("type") != "result":
                        result.lost.append(f"{prompt}: {reply.status} {final}")
                        continue
                    result.latencies_ms.append(elapsed)
                    if k > 1:
                        result.warm_latencies_ms.append(elapsed)
                    m = _TURN.search(final["text"])
                    if not m or m["prompt"] != prompt or int(m["turn"]) != k or int(m["history"]) != k - 1:
                        result.interleaved.append(f"{prompt} -> {final['text'][:120]}")

        t0 = time.perf_counter()
        threads = [threading.Thread(target=drive, args=(n,)) for n in range(sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        result.wall_s = time.perf_counter() - t0
        stop_sampling.set()
        sampler.join()
        _wait_evicted(tmp, expected_exits=1 + sessions, timeout=idle_timeout_s + 30)
        time.sleep(0.5)
        result.rss_after_kib = rss_kib(pid)
        result.live_cli_after = len(children(pid))
    finally:
        server.stop()
    log = read_log(tmp / "fake.log")
    result.cli_spawned = sum(1 for e in log if e["event"] == "start") - 1  # minus the warm-up session
    ran: dict[str, int] = {}
    for e in log:
        if e["event"] == "turn" and e["prompt"].startswith("s"):
            ran[e["prompt"]] = ran.get(e["prompt"], 0) + 1
    result.duplicated = sorted(p for p, c in ran.items() if c > 1)
    expected = {f"s{n} k{k}" for n in range(sessions) for k in range(1, turns + 1)}
    result.lost += sorted(f"{p}: never reached the CLI" for p in expected - set(ran))
    return result


def _wait_evicted(tmp: Path, *, expected_exits: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        exits = sum(1 for e in read_log(tmp / "fake.log") if e["event"] == "exit")
        if exits >= expected_exits:
            return
        time.sleep(0.1)
    raise TimeoutError(f"sessions not evicted within {timeout:.0f} s")


def describe(result: LoadResult) -> dict[str, Any]:
    return {
        "lost": len(result.lost),
        "duplicated": len(result.duplicated),
        "interleaved": len(result.interleaved),
        "spawned": result.cli_spawned,
    }
