"""Start the real runtime (``python -m runtime``) as a subprocess on loopback, and talk to it over HTTP.

Used by the functional and e2e tests, the demo and the benchmarks. Everything is stdlib (``http.client``) so
what is measured is the server, not a client library.
"""

from __future__ import annotations

import atexit
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cli import write_fake_cli

ROOT = Path(__file__).resolve().parents[1]
_LIVE: set[subprocess.Popen[bytes]] = set()


@atexit.register
def _kill_leftovers() -> None:
    """No runtime outlives the test session or script that started it, even after a failure."""
    for proc in list(_LIVE):
        if proc.poll() is None:
            proc.kill()
            proc.wait()


SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    events: list[dict[str, Any]] = field(default_factory=list)
    body: Any = None

    @property
    def last(self) -> dict[str, Any]:
        return self.events[-1] if self.events else self.body

    @property
    def text(self) -> str:
        return "".join(e["text"] for e in self.events if e.get("type") == "text")


def _no_sandbox(env: Mapping[str, str]) -> str:
    return "unsafe-no-isolation" if "AGENTKIT_PLATFORM_VERSION" in env else "off"


class RuntimeServer:
    """A runtime subprocess. ``env`` is added to a minimal environment; logs go to ``log_path``."""

    def __init__(
        self,
        *,
        env: Mapping[str, str],
        log_path: Path,
        port: int | None = None,
        prefix: Sequence[str] = (),
    ) -> None:
        """``prefix``: a command the runtime is started under (e.g. ``unshare --uts --ipc`` for a private host)."""
        self.prefix = list(prefix)
        self.port = port or free_port()
        self.log_path = log_path
        base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "SYSTEMROOT")}
        self.env = {
            **base,
            "PYTHONPATH": str(ROOT),
            "AGENTKIT_HOST": "127.0.0.1",
            "AGENTKIT_PORT": str(self.port),
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AGENTKIT_METRICS": "off",
            # A fake CLI runs no command and ignores the sandbox settings: no OS sandbox is in play, say so (a
            # root runtime would otherwise require its CLI to be runnable by an unprivileged user). A runtime that
            # believes it is on AgentCore (AGENTKIT_PLATFORM_VERSION set) refuses plain "off": only the loudly
            # named value is accepted there.
            **({"AGENTKIT_SANDBOX": _no_sandbox(env)} if "AGENTKIT_CLI_PATH" in env else {}),
            **env,
        }
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 20.0) -> RuntimeServer:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "runtime"],
            cwd=ROOT,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        _LIVE.add(self.proc)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"runtime exited with {self.proc.returncode}: {self.log_path.read_text()[-3000:]}"
                )
            try:
                if self.ping()["status"]:
                    return self
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise TimeoutError(f"runtime not healthy after {timeout}s: {self.log_path.read_text()[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return int(self.proc.returncode or 0)

    def kill(self) -> None:
        """SIGKILL: the microVM is gone, nothing is flushed."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        self._log.close()

    def __enter__(self) -> RuntimeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    #: Lines the runtime logs when it runs in a lesser configuration than asked for (runtime.wiring): a measurement
    #: or a test of that runtime is not one of the configuration it claims.
    DEGRADED_MARKERS = ("command tools switched off", "sandbox: unavailable")

    def degraded(self) -> list[str]:
        """The log lines that say this runtime is not in the configuration it was started for (none: it is).
        Meaningful once its services are built (after the first turn, or ``pre-warmed`` in the log)."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return [line for line in text.splitlines() if any(m in line for m in self.DEGRADED_MARKERS)]

    # -- HTTP ---------------------------------------------------------------------------------------------

    def _conn(self, timeout: float = 60.0) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def ping(self) -> dict[str, Any]:
        conn = self._conn(5)
        try:
            conn.request("GET", "/ping")
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def until_idle(self, timeout: float = 10.0) -> None:
        """Wait until ``/ping`` says Healthy. A turn's post-reply work (persisting its spend, delivering the
        spool) runs after its reply and counts as busy, so right after a reply the store may still be written."""
        deadline = time.monotonic() + timeout
        while (status := self.ping()["status"]) != "Healthy":
            assert status == "HealthyBusy" and time.monotonic() < deadline, status
            time.sleep(0.01)

    def invoke(
        self,
        prompt: Any = None,
        *,
        session: str | None = None,
        stream: bool = True,
        body: bytes | None = None,
        extra: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
    ) -> Reply:
        if body is None:
            payload: dict[str, Any] = {"prompt": prompt, "stream": stream, **(extra or {})}
            body = json.dumps(payload).encode()
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        if session is not None:
            hdrs[SESSION_HEADER] = session
        conn = self._conn(timeout)
        try:
            conn.request("POST", "/invocations", body=body, headers=hdrs)
            resp = conn.getresponse()
            reply = Reply(status=resp.status, headers={k.lower(): v for k, v in resp.getheaders()})
            if reply.headers.get("content-type", "").startswith("text/event-stream"):
                reply.events = list(_sse(resp))
            else:
                raw = resp.read()
                reply.body = json.loads(raw) if raw else None
            return reply
        finally:
            conn.close()


#: An agent definition with Write and Edit on (the default definition is read-only), as a customised one can: the
#: fake CLI's scripted ``[tool:Edit …]`` and ``[tool:Write …]`` calls change the session's workspace with them.
EDITING_AGENT = {
    "builtin_tools": ["Read", "Glob", "Grep", "Bash", "Write", "Edit"],
    "allowed_tools": ["Read", "Glob", "Grep", "Write", "Edit"],
    "disallowed_tools": ["WebFetch", "WebSearch"],
    "include_sample_tools": False,
}


def fake_cli_server(tmp: Path, config_dir: str | None = None, **env: str) -> RuntimeServer:
    """A runtime that spawns the fake CLI (its log in ``tmp/fake.log``), with its state under ``tmp/state``.

    ``config_dir`` names the CLI's config dir under ``tmp``: a new name is a new microVM without local
    transcripts (only the session store remembers). ``env`` is added last.
    """
    base = {
        "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp)),
        "AGENTKIT_STATE_DIR": str(tmp / "state"),
        "FAKE_CLAUDE_LOG": str(tmp / "fake.log"),
    }
    if config_dir is not None:
        base["CLAUDE_CONFIG_DIR"] = str(tmp / config_dir)
    log = f"server-{config_dir}.log" if config_dir is not None else "server.log"
    return RuntimeServer(env={**base, **env}, log_path=tmp / log)


def _sse(resp: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    for raw in resp:
        line = raw.decode().strip()
        if line.startswith("data: "):
            yield json.loads(line[6:])


def read_log(path: Path) -> list[dict[str, Any]]:
    """The fake CLI's JSON-lines log (FAKE_CLAUDE_LOG)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def session_id(n: int | str) -> str:
    """A valid runtime session id (33+ chars) for test number ``n``."""
    return f"test-session-{n}-".ljust(40, "0")


def real_cli_job_server(
    root: Path,
    vm: str,
    *,
    bedrock_url: str,
    model: str,
    agent_file: Path,
    events_queue: str,
    moto: str,
    **env: str,
) -> RuntimeServer:
    """A runtime for asynchronous (webhook) jobs with the SDK's bundled CLI, the OS sandbox as the runtime decides
    it, on a free port.

    What a microVM keeps on its own disk is under ``root/<vm>`` (state dir, so the CLI's config and transcripts,
    the sessions' workspaces and job journal; the process's home): a new ``vm`` is a new microVM, empty. What
    outlives a microVM is shared: the session store ``root/sessions.db`` (AgentCore Memory's stand-in) and the AWS
    APIs on the moto server ``moto`` (SQS for job events; S3). ``env`` is added last.
    """
    local = root / vm
    (local / "home").mkdir(parents=True, exist_ok=True)
    for path in (local, local / "home"):
        path.chmod(0o755)  # a root runtime runs its CLI as an unprivileged user, who must traverse it
    return RuntimeServer(
        env={
            "AGENTKIT_BEDROCK_ENDPOINT": bedrock_url,
            "AGENTKIT_MODEL": model,
            "AGENTKIT_STATE_DIR": str(local / "state"),
            "HOME": str(local / "home"),
            "AGENTKIT_SESSION_STORE": f"sqlite:///{root / 'sessions.db'}",
            "AGENTKIT_AGENT_FILE": str(agent_file),
            "AGENTKIT_TURN_TIMEOUT": "120",
            "AGENTKIT_JOB_EVENTS_QUEUE_URL": events_queue,
            "AGENTKIT_JOB_PROGRESS_SECONDS": "0.2",
            "AWS_ENDPOINT_URL_SQS": moto,
            "AWS_ENDPOINT_URL_S3": moto,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            **env,
        },
        log_path=root / f"server-{vm}.log",
    )
