"""What ``python -m runtime`` checks before it listens, so a bad configuration stops the process (exit 2, one
sentence) instead of a healthy ``/ping`` followed by a 500 ``configuration_error`` on every invocation: AgentCore's
health check sees only ``/ping``.

- the agent: the built-in definition, ``AGENTKIT_AGENT_FILE`` or ``AGENTKIT_AGENT_DIR`` (its ``agent.json`` and its
  tools package imported), loaded once (:mod:`runtime.agent.loaded`); the object graph reuses it;
- the state directory and the directories under it: created, and a file written and removed in each, so an
  unwritable or impossible path (``/proc/...``, a read-only mount) is named now.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from runtime.config.settings import Settings
from runtime.env import ENV_STATE_DIR
from runtime.errors import ConfigurationError


def check_start(settings: Settings) -> None:
    """Raise :class:`ConfigurationError` naming the setting when the runtime could not serve a turn."""
    from runtime.agent.loaded import load_agent

    load_agent(settings.agent_file, settings.agent_dir)
    check_writable_dirs(settings)


def check_writable_dirs(settings: Settings) -> None:
    """The state directory, the workspace and the CLI's config directory exist and take a file."""
    try:
        settings.ensure_dirs()
    except OSError as exc:
        raise ConfigurationError(
            f"{ENV_STATE_DIR}={settings.resolved_state_dir}: cannot create the runtime's directories "
            f"({exc.strerror or exc}: {exc.filename or ''}); point it at a writable directory"
        ) from None
    for path in (
        settings.resolved_state_dir,
        settings.resolved_workspace,
        settings.resolved_claude_config_dir,
    ):
        _probe_write(path)


def _probe_write(path: Path) -> None:
    try:
        fd, name = tempfile.mkstemp(prefix=".agentkit-probe-", dir=path)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise ConfigurationError(
            f"{path} is not writable ({exc.strerror or exc}); the runtime keeps its state, the workspace and the "
            f"CLI's files there: point {ENV_STATE_DIR} (or the variable naming this directory) at a writable one"
        ) from None
