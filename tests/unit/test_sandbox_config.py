"""Sandbox settings, the tool environment, profiles and the start-up probe (the e2e attack suite runs them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.agent.definition import AgentDefinitionSpec
from runtime.config.settings import Settings
from runtime.errors import ConfigurationError
from runtime.guard.profiles import DEVELOPER_PROGRAMS, SandboxStatus, probe_sandbox
from runtime.guard.tool_env import TOOL_ENV_ALLOWLIST, session_isolation


def isolation(tmp_path: Path, *, sandboxed: bool = True, host: dict[str, str] | None = None):
    return session_isolation(
        state_dir=tmp_path / "state",
        workspace=tmp_path / "ws",
        claude_session_id="0f0e6f0c-1111-4222-8333-444455556666",
        temp_root=tmp_path / "tmp-root",
        cli_env={"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1", "PATH": "/usr/bin"},
        sandboxed=sandboxed,
        allowed_domains=("pypi.org",),
        host_env=host if host is not None else {"AWS_SECRET_ACCESS_KEY": "x", "HOME": str(tmp_path / "home")},
    )


def test_sandbox_denies_every_read_but_workspace_tmp_home_and_system_dirs(tmp_path: Path) -> None:
    iso = isolation(tmp_path)
    assert iso.sandbox is not None
    fs = iso.sandbox["filesystem"]
    assert fs["denyRead"] == ["/"]
    tmp = tmp_path / "tmp-root"
    home = tmp_path / "state" / "tool-home" / "0f0e6f0c-1111-4222-8333-444455556666"
    assert fs["allowWrite"] == [str(tmp_path / "ws"), str(tmp)]
    assert str(tmp_path / "state") not in fs["allowRead"] and "/etc" not in fs["allowRead"]
    assert all(not p.startswith(str(tmp_path / "state")) or p == str(home) for p in fs["allowRead"])
    assert str(tmp_path / "ws" / ".git") in fs["denyWrite"]
    assert iso.sandbox["failIfUnavailable"] is True and iso.sandbox["allowUnsandboxedCommands"] is False
    assert iso.sandbox["network"] == {"allowedDomains": ["pypi.org"], "strictAllowlist": True}
    assert home.is_dir()


def test_tool_env_denies_every_variable_not_on_the_allowlist(tmp_path: Path) -> None:
    iso = isolation(tmp_path)
    assert iso.sandbox is not None
    denied = {entry["name"] for entry in iso.sandbox["credentials"]["envVars"]}
    assert {"AWS_SECRET_ACCESS_KEY", "CLAUDE_CODE_USE_BEDROCK", "AWS_REGION", "CLAUDE_CODE_TMPDIR"} <= denied
    assert "PATH" not in denied and "HOME" not in denied and not denied & TOOL_ENV_ALLOWLIST
    assert iso.env["HOME"] == str(tmp_path / "state" / "tool-home" / "0f0e6f0c-1111-4222-8333-444455556666")
    assert (
        "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB" not in iso.env
    )  # breaks write isolation (see runtime.guard.sandbox)


def test_cli_keeps_the_real_aws_files_when_home_moves(tmp_path: Path) -> None:
    aws = tmp_path / "home" / ".aws"
    aws.mkdir(parents=True)
    (aws / "credentials").write_text("[default]\n")
    iso = isolation(tmp_path)
    assert iso.env["AWS_SHARED_CREDENTIALS_FILE"] == str(aws / "credentials")
    assert "AWS_CONFIG_FILE" not in iso.env


def test_secret_names_become_read_deny_rules(tmp_path: Path) -> None:
    deny = isolation(tmp_path).settings["permissions"]["deny"]
    assert {"Read(**/.env)", "Read(**/*.env)", "Read(**/.npmrc)", "Read(**/.ENV)"} <= set(deny)
    assert f"Edit(/{tmp_path / 'ws'}/.git/**)" in deny  # "//abs": an absolute path in rule syntax


def test_no_sandbox_when_off_but_the_cli_scrubs_credentials_if_it_can(tmp_path: Path) -> None:
    iso = isolation(tmp_path, sandboxed=False, host={"PATH": os.environ["PATH"]})
    assert iso.sandbox is None and iso.env["CLAUDE_CODE_SUBPROCESS_ENV_SCRUB"] == "1"
    # without bwrap the CLI would refuse to start with the scrub on
    iso = isolation(tmp_path, sandboxed=False, host={"PATH": str(tmp_path)})
    assert "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB" not in iso.env


def test_sandbox_mode_and_profile_settings() -> None:
    assert Settings.from_env({}).sandbox == "required"
    assert (
        Settings.from_env({"AGENTKIT_SANDBOX": "off", "AGENTKIT_AGENT_PROFILE": "developer"}).agent_profile
        == "developer"
    )
    with pytest.raises(ConfigurationError, match="AGENTKIT_SANDBOX"):
        Settings.from_env({"AGENTKIT_SANDBOX": "sometimes"})


def test_developer_programs_only_with_a_working_sandbox() -> None:
    dev = AgentDefinitionSpec().with_profile("developer")
    assert dev.profile == "developer"
    on = dev.for_sandbox(SandboxStatus("required", available=True))
    assert set(on.bash_allowlist) >= DEVELOPER_PROGRAMS and "Bash" in on.builtin_tools
    off = dev.for_sandbox(SandboxStatus("off", available=False))
    assert not DEVELOPER_PROGRAMS & set(off.bash_allowlist) and "Bash" in off.builtin_tools
    missing = dev.for_sandbox(SandboxStatus("required", available=False, reason="x"))
    assert "Bash" not in missing.builtin_tools and "Read" in missing.builtin_tools


def test_probe_reports_missing_binaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    status = probe_sandbox("required")
    assert not status.available and "not installed" in status.reason and not status.commands_enabled
    assert probe_sandbox("off").commands_enabled


def test_probe_builds_a_real_sandbox_here() -> None:
    """Fails (never skips) without bubblewrap: `make setup` installs it."""
    status = probe_sandbox("required")
    assert status.available, status.reason


def test_definition_rejects_relative_read_paths() -> None:
    with pytest.raises(ValueError, match="absolute"):
        AgentDefinitionSpec(sandbox_read_paths=("venv",))
