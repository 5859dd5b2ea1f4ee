"""Secrets never logged: a run of the runtime (with the fake CLI's stderr) and of the webhook Lambdas, with
planted secrets, and every captured log line scanned for them.

Planted: AWS keys and a session token in the runtime's environment (the CLI inherits it), a bearer JWT in the
``Authorization`` header, the webhook secret (in Secrets Manager, used to verify signatures) and the tracker
token (used to post replies). The run goes through success and failure paths — a bad body, a CLI crash
(stderr), a hung turn, a bad signature, a failed post — because error paths are where secrets leak.
"""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path

import pytest

from harness.cli import write_fake_cli
from harness.runtime_server import RuntimeServer, session_id

pytestmark = pytest.mark.timeout(120)


def scan(lines: list[str], planted: dict[str, str]) -> list[str]:
    """Every (secret name, line) where a planted value (or its base64) appears."""
    hits = []
    for name, value in planted.items():
        forms = {value, base64.b64encode(value.encode()).decode().rstrip("=")}
        for line in lines:
            if any(form in line for form in forms):
                hits.append(f"{name}: {line[:200]}")
    return hits


def test_the_runtime_and_the_cli_never_log_planted_secrets(tmp_path: Path) -> None:
    planted = {
        "aws_access_key_id": "AKIA" + secrets.token_hex(8).upper(),
        "aws_secret_access_key": secrets.token_urlsafe(30),
        "aws_session_token": "IQoJb3JpZ2luX2VjE" + secrets.token_urlsafe(40),
    }
    claims = base64.urlsafe_b64encode(json.dumps({"sub": "alice"}).encode()).decode().rstrip("=")
    signature = secrets.token_urlsafe(32)
    planted["jwt_signature"] = signature
    token = f"eyJhbGciOiJSUzI1NiJ9.{claims}.{signature}"
    server = RuntimeServer(
        env={
            "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp_path)),
            "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
            "FAKE_CLAUDE_LOG": str(tmp_path / "fake.log"),
            "AGENTKIT_METRICS": "emf",
            "AGENTKIT_TURN_TIMEOUT": "2",
            "AWS_ACCESS_KEY_ID": planted["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": planted["aws_secret_access_key"],
            "AWS_SESSION_TOKEN": planted["aws_session_token"],
        },
        log_path=tmp_path / "server.log",
    )
    with server as srv:
        auth = {"Authorization": f"Bearer {token}"}
        sid = session_id("secrets")
        outcomes = [
            srv.invoke("hello", session=sid, headers=auth).events[-1]["type"],
            srv.invoke("[bash:env] [read:/proc/self/environ] tools", session=sid, headers=auth).events[-1][
                "type"
            ],
            srv.invoke(body=b"{not json", session=sid, headers=auth).body["code"],
            srv.invoke("[crash] boom", session=sid, headers=auth, stream=False).body["code"],
            srv.invoke("[hang] stuck", session=sid, headers=auth, stream=False).body["code"],
            srv.invoke("after", session=sid, headers=auth, stream=False).body["type"],
        ]
    assert outcomes == [
        "result",
        "result",
        "invalid_request",
        "agent_process_error",
        "turn_timeout",
        "result",
    ]
    lines = (tmp_path / "server.log").read_text().splitlines() + (
        tmp_path / "fake.log"
    ).read_text().splitlines()
    assert len(lines) > 20  # the run logged (including the CLI's start lines and stderr)
    assert "fake claude" in (tmp_path / "server.log").read_text() or any(
        '"event": "exit"' in x for x in lines
    )
    assert scan(lines, planted) == []
