"""Start-up: on platform v1 ``/ping`` answers before the Claude Agent SDK is imported (it costs about a second); on
v2 only once everything is initialised (AgentCore V2 snapshots the process at its first healthy ``/ping``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.runtime_server import RuntimeServer, free_port, session_id

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys, time
started = time.perf_counter()
from starlette.testclient import TestClient
from runtime.http.server import build_app
from runtime.config.settings import Settings
app = build_app(Settings.from_env({"AGENTKIT_STATE_DIR": sys.argv[1]}))
with TestClient(app) as client:
    status = client.get("/ping").json()["status"]
print(json.dumps({"status": status, "sdk_imported": "claude_agent_sdk" in sys.modules,
                  "seconds": time.perf_counter() - started}))
"""


def test_ping_is_served_without_importing_the_sdk(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == "Healthy"
    assert result["sdk_imported"] is False


def _v2_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    from harness.cli import write_fake_cli

    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    return {
        **env,
        "PYTHONPATH": str(ROOT),
        "AGENTKIT_PLATFORM_VERSION": "v2",
        "AGENTKIT_HOST": "127.0.0.1",
        "AGENTKIT_PORT": str(free_port()),
        "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp_path)),
        "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
        "AGENTKIT_METRICS": "off",
        "AWS_REGION": "us-east-1",
        **extra,
    }


def test_v2_ping_is_healthy_only_once_everything_is_initialised(tmp_path: Path) -> None:
    """AgentCore V2 snapshots the process at its first healthy /ping: by then the SDK, the object graph and the
    OpenTelemetry set-up are done (the log says so before the first /ping is answered), and a turn needs no
    further start-up work."""
    env = _v2_env(tmp_path)
    log_path = tmp_path / "server.log"
    server = RuntimeServer(env=env, log_path=log_path, port=int(env["AGENTKIT_PORT"]))
    with open(log_path, "wb") as log:
        server.proc = subprocess.Popen(
            [sys.executable, "-m", "runtime"], cwd=ROOT, env=server.env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                assert server.proc.poll() is None, log_path.read_text()[-3000:]
                assert time.monotonic() < deadline, log_path.read_text()[-3000:]
                try:
                    status = server.ping()["status"]
                except OSError:
                    time.sleep(0.02)
                    continue
                log_at_first_ping = log_path.read_text()
                break
            assert status == "Healthy"
            assert "initialised before listening" in log_at_first_ping
            for step in ("sdk_import", "aws_models", "services", "otel"):
                assert f"{step} " in log_at_first_ping.split("initialised before listening", 1)[1]
            reply = server.invoke("hello", session=session_id("v2"), stream=False)
            assert reply.status == 200 and reply.body["subtype"] == "success"
            assert "pre-warmed" not in log_path.read_text()  # nothing ran in the background
        finally:
            server.proc.terminate()
            server.proc.wait(timeout=30)


def test_v2_start_up_that_cannot_complete_exits_instead_of_reporting_healthy(tmp_path: Path) -> None:
    env = _v2_env(tmp_path, AGENTKIT_SESSION_STORE="redis://nowhere")
    done = subprocess.run(
        [sys.executable, "-m", "runtime"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "start-up step 'services' failed" in done.stderr
    assert "platform v2" in done.stderr


PREPARE = """
import json, sys, threading
from runtime.__main__ import prepare
app, settings = prepare()
print(json.dumps({"version": settings.platform_version, "sdk_imported": "claude_agent_sdk" in sys.modules,
                  "services_built": app.state.runtime.services is not None,
                  "threads": threading.active_count()}))
"""


def test_what_is_done_before_listening_follows_the_platform_version(tmp_path: Path) -> None:
    """v1: nothing heavy before the server listens (the warm-up starts with it, in the background); v2: all of it,
    and no start-up thread left running when AgentCore takes the snapshot."""
    results = {}
    for version in ("v1", "v2"):
        (tmp_path / version).mkdir()
        out = subprocess.run(
            [sys.executable, "-c", PREPARE],
            cwd=ROOT,
            env=_v2_env(tmp_path / version, AGENTKIT_PLATFORM_VERSION=version),
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        results[version] = json.loads(out.stdout.strip().splitlines()[-1])
    assert results["v1"] == {"version": "v1", "sdk_imported": False, "services_built": False, "threads": 1}
    assert results["v2"] == {"version": "v2", "sdk_imported": True, "services_built": True, "threads": 1}


def test_npm_is_asked_once_while_the_runtime_starts_not_on_a_sessions_path(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The sandboxed CLI asks npm for its global root as it starts (``runtime.agent.npm_root``): the runtime asks
    once while it starts, before any invocation — v1 beside the SDK import, v2 before its snapshot. (That a
    connect does not ask again: ``tests/unit/test_npm_root.py``.)"""
    from harness.runtime_server import RuntimeServer

    bin_dir, log = tmp_path / "node-bin", tmp_path / "npm.log"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(f"#!/bin/sh\necho \"$*\" >> '{log}'\necho /opt/node/lib/node_modules\n")
    (bin_dir / "npm").chmod(0o755)
    # A runtime running as root hands the CLI to an unprivileged user, who must reach the fake CLI: not under
    # pytest's private temp dir.
    shared = Path(tempfile.mkdtemp(prefix="agentkit-npm-", dir="/tmp"))
    shared.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(shared, ignore_errors=True))
    for version in ("v1", "v2"):
        (shared / version).mkdir(mode=0o755)
        env = _v2_env(
            shared / version,
            AGENTKIT_PLATFORM_VERSION=version,
            AGENTKIT_SANDBOX="required",
            PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        )
        server = RuntimeServer(env=env, log_path=tmp_path / f"{version}.log", port=int(env["AGENTKIT_PORT"]))
        server.start(timeout=60)
        try:
            deadline = time.monotonic() + 30
            while not (log.exists() and log.read_text().count("root -g") == (1 if version == "v1" else 2)):
                assert time.monotonic() < deadline, (tmp_path / f"{version}.log").read_text()[-2000:]
                time.sleep(0.05)
        finally:
            server.stop()
    assert log.read_text().splitlines() == ["root -g", "root -g"]  # once per runtime
