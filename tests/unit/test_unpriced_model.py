"""Cost never fails open at start: a configured model the price table cannot price stops the runtime (exit 2) with
a message naming the variable and the fix, and AGENTKIT_PRICES lets it start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.config.settings import Settings
from runtime.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]
UNPRICED = "us.anthropic.claude-mystery-9"


def test_settings_refuse_an_unpriced_model() -> None:
    with pytest.raises(
        ConfigurationError, match=r"AGENTKIT_MODEL='us.anthropic.claude-mystery-9'.*AGENTKIT_PRICES"
    ):
        Settings.from_env({"AGENTKIT_MODEL": UNPRICED})
    with pytest.raises(ConfigurationError, match="AGENTKIT_FALLBACK_MODEL"):
        Settings.from_env({"AGENTKIT_FALLBACK_MODEL": UNPRICED})
    with pytest.raises(ConfigurationError, match="AGENTKIT_SMALL_MODEL"):
        Settings.from_env({"AGENTKIT_SMALL_MODEL": UNPRICED})


def test_a_price_override_lets_it_start() -> None:
    settings = Settings.from_env(
        {
            "AGENTKIT_MODEL": UNPRICED,
            "AGENTKIT_PRICES": '{"us.anthropic.claude-mystery-9": {"input": 3, "output": 15}}',
        }
    )
    assert settings.model == UNPRICED and settings.unpriced_models() == []


def test_fallback_off_and_fallback_equal_to_the_model_pass_none_to_the_sdk() -> None:
    assert Settings.from_env({"AGENTKIT_FALLBACK_MODEL": "off"}).resolved_fallback_model is None
    same = Settings.from_env({"AGENTKIT_FALLBACK_MODEL": "us.anthropic.claude-sonnet-5-5"})
    assert same.resolved_fallback_model is None
    assert Settings.from_env({}).resolved_fallback_model == "us.anthropic.claude-sonnet-5"


def test_python_m_runtime_exits_2_on_an_unpriced_model(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env.update({"AGENTKIT_MODEL": UNPRICED, "AGENTKIT_STATE_DIR": str(tmp_path), "AGENTKIT_PORT": "0"})
    done = subprocess.run(
        [sys.executable, "-m", "runtime"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert "no price for AGENTKIT_MODEL='us.anthropic.claude-mystery-9'" in done.stderr
    assert "AGENTKIT_PRICES" in done.stderr
