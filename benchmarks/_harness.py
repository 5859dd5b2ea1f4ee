"""Shared pieces of the benchmark scripts: machine banner, timing helpers, CLI set-ups, per-call ``query()``.

Not a benchmark itself. Every figure a script prints is measured in that run; nothing is hard-coded.

Two CLI set-ups (``--cli``):

- ``fake``: ``harness/fake_claude.py`` behind a ``#!{sys.executable} -S`` wrapper (no model, no network);
- ``real``: the Claude Code CLI bundled in claude-agent-sdk, pointed at the local Bedrock Runtime stand-in
  (:mod:`standins`), so only the model is scripted.
"""

from __future__ import annotations

import datetime as dt
import http.client
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.cli import write_fake_cli  # noqa: E402
from harness.runtime_server import RuntimeServer, free_port  # noqa: E402
from standins import BedrockStandIn, Reply  # noqa: E402

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
SAMPLE_TOOL = "mcp__kit__list_overdue_invoices"

#: The baseline of the start -> ``/ping`` comparisons: a bare ``BedrockAgentCoreApp`` hello-world on ``$PORT``.
HELLO_APP = """\
import os
from bedrock_agentcore.runtime import BedrockAgentCoreApp

app = BedrockAgentCoreApp()


@app.entrypoint
def invoke(payload):
    return {"hello": "world"}


app.run(port=int(os.environ["PORT"]), host="127.0.0.1")
"""


def banner(title: str) -> None:
    """Print the title, the date and the machine (``uname -m``, core count, Python)."""
    print(title)
    print(
        f"date {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')} · machine {platform.machine()} · "
        f"nproc {os.cpu_count()} · Python {platform.python_version()} · {platform.system()} {platform.release()}"
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def median(samples: list[float]) -> float:
    if not samples:
        raise ValueError("no samples")
    return statistics.median(samples)


def describe(label: str, samples: list[float]) -> str:
    """One aligned line: median, min, max and sample count."""
    return (
        f"{label:<52} median {ms(median(samples))}  (min {min(samples) * 1000:.1f}, "
        f"max {max(samples) * 1000:.1f}, n={len(samples)})"
    )


def verdict(ratio: float, *, at_least: float | None = None, at_most: float | None = None) -> str:
    if at_least is not None:
        return f"target ≥ {at_least:g}: {'met' if ratio >= at_least else 'MISSED'}"
    if at_most is not None:
        return f"target ≤ {at_most:g}: {'met' if ratio <= at_most else 'MISSED'}"
    raise ValueError("give at_least or at_most")


@dataclass
class CliSetup:
    """How to run one CLI: env for the runtime server, options for in-process SDK clients.

    ``text_turn`` / ``tool_turn`` return the prompt for one turn and script the stand-in when there is one.
    """

    kind: str
    tmp: Path
    server_env: dict[str, str]
    cli_path: str | None
    cli_env: dict[str, str]
    bedrock: BedrockStandIn | None = None
    counter: list[int] = field(default_factory=lambda: [0])

    def text_turn(self) -> str:
        self.counter[0] += 1
        if self.bedrock is not None:
            self.bedrock.enqueue(Reply.text(f"Answer {self.counter[0]}."))
        return f"question {self.counter[0]}"

    def tool_turn(self) -> str:
        self.counter[0] += 1
        if self.bedrock is not None:
            self.bedrock.enqueue(
                Reply.tool_use(SAMPLE_TOOL, {"as_of": "2026-11-01"}),
                Reply.text("Three invoices are overdue."),
            )
            return f"question {self.counter[0]}: which invoices are overdue?"
        return f"question {self.counter[0]} [tool:{SAMPLE_TOOL} {{}}]"


@contextmanager
def cli_setup(kind: str, tmp: Path) -> Iterator[CliSetup]:
    """A :class:`CliSetup` for ``kind`` (``fake`` | ``real``); starts and stops the stand-in for ``real``."""
    if kind == "fake":
        cli = write_fake_cli(tmp)
        yield CliSetup(
            kind="fake",
            tmp=tmp,
            server_env={"AGENTKIT_CLI_PATH": str(cli)},
            cli_path=str(cli),
            cli_env={"CLAUDE_CONFIG_DIR": str(tmp / "sdk-claude")},
        )
        return
    if kind != "real":
        raise ValueError(f"--cli must be 'fake' or 'real', got {kind!r}")
    import claude_agent_sdk

    from standins import cli_env

    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    if not bundled.exists():
        raise SystemExit("this claude-agent-sdk wheel has no bundled CLI; use --cli fake")
    with BedrockStandIn() as bedrock:
        yield CliSetup(
            kind="real",
            tmp=tmp,
            server_env={"AGENTKIT_BEDROCK_ENDPOINT": bedrock.url, "AGENTKIT_MODEL": MODEL},
            cli_path=None,
            cli_env=cli_env(bedrock.url, MODEL, cache_home=tmp / "sdk-cache", config_dir=tmp / "sdk-claude"),
            bedrock=bedrock,
        )


@contextmanager
def workdir(prefix: str) -> Iterator[Path]:
    """A temporary directory the CLI's user can enter: a root runtime runs its CLI as uid 10001, and a private
    (0700) temp directory as the workspace would switch its command tools off, measuring a lesser runtime."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def refuse_if_degraded(*servers: RuntimeServer) -> None:
    """Exit (code 3) instead of reporting figures when a measured runtime ran in a lesser configuration than the
    benchmark claims (command tools off, no sandbox, limits not enforced): its figures would describe another
    runtime."""
    lines = [line for server in servers for line in server.degraded()]
    if lines:
        raise SystemExit(
            "benchmark refused: the runtime it measured was not in the configuration it claims, so no figures are "
            "reported:\n  " + "\n  ".join(lines[:5])
        )


def start_server(setup: CliSetup, name: str, **env: str) -> RuntimeServer:
    """A runtime server (``python -m runtime``) for ``setup`` with its own state dir; started."""
    state = setup.tmp / name
    full_env = {
        **setup.server_env,
        "AGENTKIT_STATE_DIR": str(state),
        "AGENTKIT_SESSION_STORE": "off",
        "AGENTKIT_METRICS": "off",
        **env,
    }
    server = RuntimeServer(env=full_env, log_path=setup.tmp / f"{name}.log").start(timeout=60)
    _wait_for_services(server)
    refuse_if_degraded(server)
    return server


def _wait_for_services(server: RuntimeServer, timeout_s: float = 90.0) -> None:
    """Until the runtime has built its services (the start-up lines that say how it runs are logged by then)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = server.log_path.read_text(errors="replace")
        if "pre-warmed" in text or "initialised before listening" in text:
            return
        time.sleep(0.1)


def base_env() -> dict[str, str]:
    """What a started process inherits from this one: ``PATH``, ``HOME``, ``LANG`` and ``TMPDIR``, no more."""
    return {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}


def runtime_process_env(setup: CliSetup, state: Path, port: int) -> dict[str, str]:
    """The runtime's own variables for a separately started runtime process (``setup``'s CLI, on ``port``,
    state under ``state``, metrics off); add them after :func:`base_env` and anything they must override."""
    return {
        **setup.server_env,
        "PYTHONPATH": str(ROOT),
        "AGENTKIT_HOST": "127.0.0.1",
        "AGENTKIT_PORT": str(port),
        "AGENTKIT_STATE_DIR": str(state),
        "AGENTKIT_METRICS": "off",
    }


def write_hello_app(tmp: Path) -> list[str]:
    """Writes :data:`HELLO_APP` into ``tmp``; the argv that starts it."""
    hello = tmp / "hello_app.py"
    hello.write_text(HELLO_APP)
    return [sys.executable, str(hello)]


def hello_app_to_healthy(argv: list[str], tmp: Path) -> float:
    """:func:`time_to_healthy` for the hello-world app of :func:`write_hello_app` on a free port."""
    port = free_port()
    return time_to_healthy(argv, env={**base_env(), "PORT": str(port)}, port=port, cwd=tmp)


def warm_turn(server: RuntimeServer, session: str, prompt: str) -> float:
    """Seconds for one streamed turn over HTTP (request sent → last SSE event read). Raises on a non-result."""
    start = time.perf_counter()
    reply = server.invoke(prompt, session=session)
    elapsed = time.perf_counter() - start
    if reply.status != 200 or not reply.events or reply.last.get("type") != "result":
        raise RuntimeError(f"turn failed: {reply.status} {reply.last}")
    return elapsed


async def _prompt(text: str) -> AsyncIterator[dict[str, Any]]:
    yield {
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": None,
        "session_id": "default",
    }


async def per_call_query(setup: CliSetup, prompt: str) -> float:
    """Seconds for one ``query()`` with a fresh CLI process, as per-invocation samples do (in-process, no HTTP)."""
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

    options = ClaudeAgentOptions(
        cli_path=setup.cli_path,
        cwd=str(setup.tmp),
        env=setup.cli_env,
        setting_sources=[],
        permission_mode="default",
    )
    start = time.perf_counter()
    result = None
    async for message in query(prompt=_prompt(prompt), options=options):
        if isinstance(message, ResultMessage):
            result = message
    elapsed = time.perf_counter() - start
    if result is None or result.is_error:
        raise RuntimeError(f"query() failed: {result}")
    return elapsed


async def sdk_turn(client: Any, prompt: str) -> float:
    """Seconds for one turn on an already connected ``ClaudeSDKClient``."""
    from claude_agent_sdk import ResultMessage

    start = time.perf_counter()
    await client.query(_prompt(prompt))
    async for message in client.receive_response():
        if isinstance(message, ResultMessage):
            if message.is_error:
                raise RuntimeError(f"turn failed: {message.result}")
            return time.perf_counter() - start
    raise RuntimeError("no result")


def time_to_healthy(
    argv: list[str], *, env: Mapping[str, str], port: int, cwd: Path, timeout: float = 30.0
) -> float:
    """Seconds from ``Popen(argv)`` to the first ``GET /ping`` answering 200 (polled every 5 ms); kills it."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while time.perf_counter() - start < timeout:
            if proc.poll() is not None:
                raise RuntimeError(f"{argv} exited with {proc.returncode} before /ping answered")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/ping")
                status = conn.getresponse().status
                conn.close()
                if status == 200:
                    return time.perf_counter() - start
            except (ConnectionError, OSError, http.client.HTTPException):
                pass
            time.sleep(0.005)
        raise TimeoutError(f"{argv} not healthy after {timeout}s")
    finally:
        proc.kill()
        proc.wait()


def until_pinged(proc: subprocess.Popen[bytes], port: int, log_path: Path) -> RuntimeServer:
    """Poll ``GET /ping`` of the runtime ``proc`` (every 5 ms) until it answers; a client for it.

    Raises:
        RuntimeError: the process exited first (with the end of its log).
    """
    server = RuntimeServer(env={}, log_path=log_path.with_name("unused.log"), port=port)
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"runtime exited: {log_path.read_text()[-2000:]}")
        try:
            if server.ping()["status"]:
                return server
        except OSError:
            time.sleep(0.005)


__all__ = [
    "HELLO_APP",
    "MODEL",
    "ROOT",
    "SAMPLE_TOOL",
    "CliSetup",
    "RuntimeServer",
    "banner",
    "base_env",
    "cli_setup",
    "describe",
    "free_port",
    "hello_app_to_healthy",
    "median",
    "ms",
    "per_call_query",
    "runtime_process_env",
    "sdk_turn",
    "start_server",
    "time_to_healthy",
    "until_pinged",
    "verdict",
    "warm_turn",
    "write_hello_app",
]
