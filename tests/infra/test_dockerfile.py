"""The production Dockerfile: hadolint clean, and its CMD (as written) serves a healthy /ping here."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.infra.conftest import ROOT

DOCKERFILE = ROOT / "Dockerfile"
BIN = Path(sys.executable).parent


def instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def cmd() -> list[str]:
    (value,) = [rest for keyword, rest in instructions() if keyword == "CMD"]
    parsed = json.loads(value)
    assert isinstance(parsed, list) and all(isinstance(p, str) for p in parsed), "CMD must be a JSON array"
    return parsed


def test_hadolint_clean() -> None:
    result = subprocess.run(
        [str(BIN / "hadolint"), str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_shape() -> None:
    ins = instructions()
    (base,) = [rest for keyword, rest in ins if keyword == "FROM"]
    assert "--platform" not in base
    assert re.fullmatch(r"public\.ecr\.aws/docker/library/python:\d+\.\d+\.\d+-slim(-\w+)?", base), (
        base
    )  # exact tag, slim
    users = [rest for keyword, rest in ins if keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert ("EXPOSE", "8080") in ins
    env = " ".join(rest for keyword, rest in ins if keyword == "ENV")
    for name in ("CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR", "XDG_CACHE_HOME"):
        assert f"{name}=/home/agent" in env
    assert "requirements/runtime.txt" in DOCKERFILE.read_text()
    assert "node" not in " ".join(rest for keyword, rest in ins if keyword == "RUN").lower()
    assert cmd()[0] == "opentelemetry-instrument"


def test_dockerignore_keeps_infra_tests_and_cdk_out_out() -> None:
    patterns = (ROOT / ".dockerignore").read_text().split()
    for name in ("infra", "tests", "cdk.out", ".venv", "node_modules"):
        assert name in patterns


def test_runtime_requirements_are_pinned() -> None:
    lines = [
        line.strip()
        for line in (ROOT / "requirements" / "runtime.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+\-]+", line) for line in lines), lines
    names = {line.split("==")[0].lower().replace("_", "-") for line in lines}
    for required in (
        "bedrock-agentcore",
        "claude-agent-sdk",
        "aws-opentelemetry-distro",
        "boto3",
        "pydantic",
    ):
        assert required in names


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_cmd_as_written_serves_healthy_ping(tmp_path: Path) -> None:
    argv = cmd()
    exe = BIN / argv[0] if (BIN / argv[0]).exists() else None
    assert exe is not None, f"{argv[0]} is not installed in the test environment ({BIN})"
    argv = [str(exe), sys.executable if argv[1] == "python" else argv[1], *argv[2:]]
    port = _free_port()
    env = {
        **os.environ,
        "AGENTKIT_HOST": "127.0.0.1",
        "AGENTKIT_PORT": str(port),
        "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
        "AGENTKIT_METRICS": "off",
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "OTEL_PYTHON_DISTRO": "aws_distro",
        "OTEL_PYTHON_CONFIGURATOR": "aws_configurator",
        # Offline: keep the instrumentation, drop the exporters (AgentCore presets them when deployed).
        "OTEL_TRACES_EXPORTER": "none",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "AWS_REGION": "us-east-1",
    }
    env.pop("AGENTKIT_BEDROCK_ENDPOINT", None)
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 60
        body = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2) as response:
                    body = json.loads(response.read())
                    break
            except OSError:
                time.sleep(0.2)
        if body is None:
            proc.kill()
            output = proc.communicate(timeout=10)[0]
            pytest.fail(f"/ping never answered; exit={proc.returncode}; output:\n{output[-3000:]}")
        assert body["status"] in ("Healthy", "HealthyBusy")
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout:
            proc.stdout.close()
