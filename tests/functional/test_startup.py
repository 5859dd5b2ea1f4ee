"""Start-up: ``/ping`` answers before the Claude Agent SDK is imported (it costs about a second)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys, time
started = time.perf_counter()
from starlette.testclient import TestClient
from runtime.server import build_app
from runtime.settings import Settings
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
