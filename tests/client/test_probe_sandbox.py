"""``agentkit doctor --probe-sandbox`` against a loopback stand-in of ``InvokeAgentRuntimeCommand`` that speaks the
API's event stream (real frames, parsed by botocore), with boto3 pointed at it through
``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``.

The stand-in runs the command the client sends with ``sh -c`` on this machine (as root here, like the command API),
after pointing its two image paths at this checkout and the system Python (uid 10001 cannot run the venv's
interpreter, which lives under root's home). So the shell that drops to uid 10001 and the runtime's own probe both
really run; only the microVM is this machine.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from agentkit.cli import main
from agentkit.sandbox_probe import PROBE_UID, probe_command
from harness.agentcore_commands import AgentCoreCommands, CommandRun

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/agentkit_dev-AbC123"
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, like the image's: stdlib only is all the probe needs


def run_here(command: str) -> CommandRun:
    """Run the command the client sent, with the image's paths mapped onto this machine."""
    assert command == probe_command(), command  # exactly what a live microVM would get
    local = probe_command(app_dir=str(ROOT), python=SYSTEM_PYTHON)
    done = subprocess.run(["sh", "-c", local], capture_output=True, text=True, timeout=60, check=False)
    return CommandRun(stdout=done.stdout, stderr=done.stderr, exit_code=done.returncode)


def agentkit(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(args, stdout=out, stderr=err, env=env)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    return monkeypatch


def aws_env(monkeypatch: pytest.MonkeyPatch, url: str, key: str, secret: str) -> dict[str, str]:
    """boto3 reads the process environment: the stand-in's URL and the caller's keys go there."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    return dict(os.environ)


@pytest.mark.timeout(120)
def test_the_break_glass_role_gets_the_runtimes_own_verdict_as_uid_10001(aws: pytest.MonkeyPatch) -> None:
    with AgentCoreCommands(run_here) as standin:
        env = aws_env(aws, standin.url, "break-glass", "break-glass-secret")
        code, out, err = agentkit(
            ["--output", "json", "doctor", "--probe-sandbox", "--runtime-arn", RUNTIME, "--qualifier", "dev"],
            env,
        )
    assert code == 0, (out, err)
    report = json.loads(out)
    verdict = report["verdict"]
    assert verdict["uid"] == (PROBE_UID if os.getuid() == 0 else os.getuid())
    # This machine has working user namespaces and bubblewrap (make setup installs it).
    assert verdict["user_namespaces"] is True and verdict["sandbox_available"] is True
    assert verdict["runtime_will"] == "sandboxed commands" and verdict["error"] is None
    assert (report["exit_code"], report["status"]) == (0, "COMPLETED")
    [call] = standin.calls
    assert call["path"].startswith("/runtimes/") and call["path"].endswith("/commands?qualifier=dev")
    assert call["session"] == report["session_id"] and len(call["session"]) >= 33
    assert call["timeout"] == 120


def test_a_broken_sandbox_is_reported_with_its_error_and_what_the_runtime_does(
    aws: pytest.MonkeyPatch,
) -> None:
    broken = {
        "probe": "sandbox",
        "uid": PROBE_UID,
        "user_namespaces": False,
        "userns_error": "unshare: unshare failed: Operation not permitted",
        "sandbox_available": False,
        "error": "bwrap cannot create a sandbox here (user namespaces?): bwrap: No permissions to create new namespace",
        "max_user_namespaces": 0,
        "sandbox_setting": "required",
        "runtime_will": "command tools off",
    }

    def verdict_only(command: str) -> CommandRun:
        return CommandRun(stdout="some noise\n" + json.dumps(broken) + "\n")

    with AgentCoreCommands(verdict_only) as standin:
        env = aws_env(aws, standin.url, "break-glass", "break-glass-secret")
        code, out, _ = agentkit(["doctor", "--probe-sandbox", "--runtime-arn", RUNTIME], env)
    assert code == 1
    assert "user namespaces: NOT available (unshare: unshare failed: Operation not permitted)" in out
    assert "No permissions to create new namespace" in out
    assert "AGENTKIT_SANDBOX=required: the runtime runs command tools off" in out


def test_any_other_principal_meets_the_resource_policys_deny(aws: pytest.MonkeyPatch) -> None:
    with AgentCoreCommands(run_here) as standin:
        # e.g. the CI role: allowed to invoke, not to run commands
        env = aws_env(aws, standin.url, "testing", "testing")
        code, out, err = agentkit(["doctor", "--probe-sandbox", "--runtime-arn", RUNTIME], env)
    assert code == 4 and out == ""
    assert "AccessDeniedException" in err and "break_glass_principal" in err
    assert [c["status"] for c in standin.calls] == [403]


def test_a_boto3_older_than_the_command_api_gets_told_to_upgrade() -> None:
    """The client's boto3 floor predates InvokeAgentRuntimeCommand (tests/client/test_boto3_floor.py exempts this
    one operator-only call): a client without the operation gets a usage error that names the fix."""
    from types import SimpleNamespace

    from agentkit.errors import AgentkitError, ExitCode
    from agentkit.sandbox_probe import run_probe

    with pytest.raises(AgentkitError) as err:
        run_probe(SimpleNamespace(), runtime_arn=RUNTIME, qualifier=None, session_id="s" * 40)
    assert err.value.exit_code == ExitCode.USAGE and "pip install -U boto3" in str(err.value)
