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

from harness.dockerfile import DOCKERFILE, cmd, dockerfile_env, instructions
from tests.infra.conftest import ROOT

BIN = Path(sys.executable).parent


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
    assert cmd() == ["python", "-m", "runtime"]  # OpenTelemetry is set up in the background


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


def resolved_cmd() -> list[str]:
    """The CMD as written, its program resolved in the test environment (``python`` is this interpreter)."""
    argv = cmd()
    if argv[0] == "python":
        return [sys.executable, *argv[1:]]
    exe = BIN / argv[0]
    assert exe.exists(), f"{argv[0]} is not installed in the test environment ({BIN})"
    return [str(exe), *(sys.executable if a == "python" else a for a in argv[1:])]


def start_cmd(tmp_path: Path, **extra: str) -> tuple[subprocess.Popen[str], int]:
    """Start the image's CMD (as written) with the image's OTEL_* settings, on loopback."""
    port = _free_port()
    env = {
        **os.environ,
        **{k: v for k, v in dockerfile_env().items() if k.startswith("OTEL_")},
        "AGENTKIT_HOST": "127.0.0.1",
        "AGENTKIT_PORT": str(port),
        "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
        "AGENTKIT_METRICS": "off",
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "AWS_REGION": "us-east-1",
        **extra,
    }
    env.pop("AGENTKIT_BEDROCK_ENDPOINT", None)
    proc = subprocess.Popen(
        resolved_cmd(), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return proc, port


def wait_healthy(proc: subprocess.Popen[str], port: int) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2) as response:
                return json.loads(response.read())
        except OSError:
            time.sleep(0.2)
    proc.kill()
    output = proc.communicate(timeout=10)[0]
    pytest.fail(f"/ping never answered; exit={proc.returncode}; output:\n{output[-3000:]}")


def stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    out = proc.stdout.read() if proc.stdout else ""
    if proc.stdout:
        proc.stdout.close()
    return out


@pytest.mark.slow
def test_cmd_as_written_serves_healthy_ping(tmp_path: Path) -> None:
    # Offline: keep the instrumentation, drop the exporters (AgentCore presets them when deployed).
    proc, port = start_cmd(
        tmp_path, OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none"
    )
    try:
        body = wait_healthy(proc, port)
        assert body["status"] in ("Healthy", "HealthyBusy")
    finally:
        stop(proc)


@pytest.mark.slow
def test_cmd_as_written_exports_invocation_turn_and_tool_spans_over_otlp(tmp_path: Path) -> None:
    """Under the image's CMD and OTEL_* settings, with the exporter variables AgentCore presets pointed at a
    local OTLP/HTTP collector, the invocation, turn and tool spans of a tool turn arrive there, in one trace
    that continues the caller's ``traceparent`` and carries ``session.id``."""
    from harness.cli import write_fake_cli
    from harness.otlp_collector import OtlpCollector
    from harness.runtime_server import SESSION_HEADER

    cli = write_fake_cli(tmp_path)
    session = "otlp-session-".ljust(40, "0")
    caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    with OtlpCollector() as collector:
        proc, port = start_cmd(
            tmp_path,
            AGENTKIT_CLI_PATH=str(cli),
            AGENT_OBSERVABILITY_ENABLED="true",
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{collector.endpoint}/v1/traces",
            OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=f"{collector.endpoint}/v1/logs",
            OTEL_LOGS_EXPORTER="none",
            OTEL_METRICS_EXPORTER="none",
            OTEL_BSP_SCHEDULE_DELAY="100",
            OTEL_RESOURCE_ATTRIBUTES="service.name=agentkit_test",
        )
        try:
            wait_healthy(proc, port)
            body = json.dumps(
                {
                    "prompt": '[tool:mcp__kit__list_overdue_invoices {"as_of": "2026-11-22"}] overdue?',
                    "stream": False,
                }
            ).encode()
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/invocations",
                data=body,
                headers={
                    "Content-Type": "application/json",
                    SESSION_HEADER: session,
                    "traceparent": f"00-{caller_trace}-00f067aa0ba902b7-01",
                },
            )
            with urllib.request.urlopen(request, timeout=60) as response:
                reply = json.loads(response.read())
            assert reply["subtype"] == "success", reply

            def complete(spans: list) -> bool:
                names = {s.name for s in spans}
                return {
                    "invoke_agent agentkit",
                    "execute_tool mcp__kit__list_overdue_invoices",
                } <= names and any(n.startswith("chat ") for n in names)

            arrived = collector.wait_for(complete, timeout=30)
        finally:
            output = stop(proc)
        assert arrived, f"spans seen: {[s.name for s in collector.spans]}; log:\n{output[-3000:]}"
    by_name = {s.name: s for s in collector.spans}
    invocation = by_name["invoke_agent agentkit"]
    turn = next(s for s in collector.spans if s.name.startswith("chat "))
    tool = by_name["execute_tool mcp__kit__list_overdue_invoices"]
    assert invocation.trace_id == turn.trace_id == tool.trace_id == caller_trace
    assert invocation.parent_span_id == "00f067aa0ba902b7"
    assert turn.parent_span_id == invocation.span_id and tool.parent_span_id == turn.span_id
    for span in (invocation, turn, tool):
        assert span.attributes["session.id"] == session
    assert invocation.resource.get("service.name") == "agentkit_test"
