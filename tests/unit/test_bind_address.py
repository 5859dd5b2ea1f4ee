"""The runtime binds loopback unless told otherwise, inside a container too: it has no authentication of its own,
so a devcontainer or Codespace (where ``/.dockerenv`` exists) must not expose a Bedrock-spending endpoint. The
deployed image opts in to ``0.0.0.0`` (AgentCore authenticates callers in front of it), and a non-loopback
address is announced with a warning at start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.dockerfile import dockerfile_env
from runtime.config.settings import Settings, is_loopback

ROOT = Path(__file__).resolve().parents[2]


def test_a_container_marker_does_not_change_the_default_bind_address(monkeypatch: pytest.MonkeyPatch) -> None:
    real_exists = Path.exists

    def exists(self: Path, *args: object, **kwargs: object) -> bool:  # as in a devcontainer or a Codespace
        return True if str(self) == "/.dockerenv" else real_exists(self)

    monkeypatch.setattr(Path, "exists", exists)
    assert Settings.from_env({}).host == "127.0.0.1"
    assert Settings.from_env({"DOCKER_CONTAINER": "1"}).host == "127.0.0.1"


def test_an_explicit_address_is_honoured() -> None:
    assert Settings.from_env({"AGENTKIT_HOST": "0.0.0.0"}).host == "0.0.0.0"
    assert Settings.from_env({"AGENTKIT_HOST": "0.0.0.0"}, host="127.0.0.2").host == "127.0.0.2"


def test_the_image_opts_in_to_all_interfaces() -> None:
    assert dockerfile_env()["AGENTKIT_HOST"] == "0.0.0.0"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.5", False),
        ("myhost.example", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    warning = Settings.from_env({"AGENTKIT_HOST": host}).exposure_warning()
    assert (warning is None) is loopback
    if warning is not None:
        assert host in warning and "AGENTKIT_HOST" in warning and "no authentication" in warning


PREPARE = """
import logging
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
from runtime.__main__ import prepare
app, settings = prepare()
print("HOST", settings.host)
"""


def _prepare(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    env.update(
        PYTHONPATH=str(ROOT),
        AGENTKIT_STATE_DIR=str(tmp_path / "state"),
        AGENTKIT_METRICS="off",
        AWS_REGION="us-east-1",
        **extra,
    )
    return subprocess.run(
        [sys.executable, "-c", PREPARE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_start_up_warns_when_the_address_is_not_loopback(tmp_path: Path) -> None:
    """What ``python -m runtime`` does before it listens (nothing is bound here)."""
    exposed = _prepare(tmp_path, AGENTKIT_HOST="0.0.0.0")
    assert "HOST 0.0.0.0" in exposed.stdout
    warnings = [line for line in exposed.stderr.splitlines() if line.startswith("WARNING runtime.__main__")]
    assert len(warnings) == 1 and "not on loopback" in warnings[0]

    in_container = _prepare(tmp_path, DOCKER_CONTAINER="1")
    assert "HOST 127.0.0.1" in in_container.stdout
    assert "not on loopback" not in in_container.stderr
