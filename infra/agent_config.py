"""The stage's agent directory (``agent_dir`` in ``cdk.json``), found and checked at synth.

The same reader as the runtime's (:func:`runtime.agent.agent_dir.read_agent_dir`): ``agent.json`` against the
definition model, the tools package's presence, every ``gateway/<target>/target.json``. The team's code is not
run here; the runtime imports the tools package at start and stops (exit 2) when it fails.

Raises:
    ConfigError: ``agentkit.agent_dir`` with what is wrong (missing directory, bad file, bad target).
"""

from __future__ import annotations

from pathlib import Path

from infra.errors import ConfigError
from runtime.agent.agent_dir import AgentDirectory, read_agent_dir
from runtime.errors import ConfigurationError

KEY = "agentkit.agent_dir"
ALLOWED = "a directory with agent.json, optionally tools/ and gateway/<target>/ (docs/customize.md)"


def resolve_agent_dir(value: str, base_dir: Path | None) -> Path:
    """``value`` as an absolute path: relative ones from ``base_dir`` (default: the working directory)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base_dir or Path.cwd()) / path


def read_agent_config(value: str, *, base_dir: Path | None) -> AgentDirectory:
    path = resolve_agent_dir(value, base_dir).resolve()
    try:
        return read_agent_dir(path)
    except ConfigurationError as exc:
        raise ConfigError(KEY, exc.message, allowed=ALLOWED) from None
