"""No silent "sandbox off" on AgentCore: the real ``python -m runtime`` refuses ``AGENTKIT_SANDBOX=off`` where the
stack deployed it (``AGENTKIT_PLATFORM_VERSION`` set), and runs with the loudly named unsafe value only with an
error-level log line and a ``SandboxUnsafe`` metric. Locally (no platform variable) ``off`` stays allowed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.runtime_server import ROOT, fake_cli_server, session_id
from runtime.config.settings import Settings, on_agentcore
from runtime.env import SANDBOX_UNSAFE
from runtime.errors import ConfigurationError

pytestmark = pytest.mark.timeout(120)


def test_settings_refuse_off_on_agentcore_only() -> None:
    with pytest.raises(ConfigurationError) as err:
        Settings.from_env({"AGENTKIT_PLATFORM_VERSION": "v2", "AGENTKIT_SANDBOX": "off"})
    assert "AGENTKIT_SANDBOX=off is refused on AgentCore" in err.value.message
    assert SANDBOX_UNSAFE in err.value.message and "metadata service" in err.value.message
    assert Settings.from_env({"AGENTKIT_SANDBOX": "off"}).sandbox == "off"  # a laptop: allowed, warned
    unsafe = Settings.from_env({"AGENTKIT_PLATFORM_VERSION": "v1", "AGENTKIT_SANDBOX": SANDBOX_UNSAFE})
    assert on_agentcore({"AGENTKIT_PLATFORM_VERSION": "v1"}) and unsafe.sandbox == SANDBOX_UNSAFE


def test_the_runtime_process_refuses_to_start_with_sandbox_off_on_agentcore(tmp_path: Path) -> None:
    env = {
        "PYTHONPATH": str(ROOT),
        "PATH": "/usr/bin:/bin",
        "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
        "AGENTKIT_PLATFORM_VERSION": "v1",
        "AGENTKIT_SANDBOX": "off",
        "AGENTKIT_PORT": "1",  # never reached: the process must stop before it listens
    }
    done = subprocess.run(
        [sys.executable, "-m", "runtime"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "AGENTKIT_SANDBOX=off is refused on AgentCore" in done.stderr


def test_the_unsafe_value_runs_with_an_error_log_and_a_metric(tmp_path: Path) -> None:
    emf = tmp_path / "metrics.jsonl"
    server = fake_cli_server(
        tmp_path,
        "claude",
        AGENTKIT_PLATFORM_VERSION="v1",
        AGENTKIT_SANDBOX=SANDBOX_UNSAFE,
        AGENTKIT_METRICS="emf",
        AGENTKIT_EMF_FILE=str(emf),
    ).start()
    try:
        reply = server.invoke("hi", session=session_id("unsafe"), stream=False)
        assert reply.status == 200, reply.body
    finally:
        server.stop()
    log = server.log_path.read_text()
    errors = [line for line in log.splitlines() if " ERROR " in line and "sandbox: OFF on purpose" in line]
    assert len(errors) == 1 and "metadata service" in errors[0], log[-2000:]
    documents = [json.loads(line) for line in emf.read_text().splitlines() if line.strip()]
    assert sum(1 for d in documents if "SandboxUnsafe" in d) == 1, documents
