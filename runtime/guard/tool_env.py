"""What one session's tools run with: a minimal environment, an empty ``HOME``, a private temp dir, the sandbox.

The CLI process itself keeps what it needs to call Bedrock (the SDK passes it the runtime's environment plus
:meth:`runtime.config.settings.Settings.cli_env`). Its tool subprocesses get much less:

- every variable not on :data:`TOOL_ENV_ALLOWLIST` is unset for sandboxed commands (the sandbox's
  ``credentials.envVars`` deny list, computed from the CLI's actual environment at spawn time), so AWS
  credentials, ``AGENTKIT_*`` and anything the host happens to export never reach a tool;
- ``HOME`` points at an empty directory (``<state>/tool-home/<session id>``), so ``~/.aws``, ``~/.ssh``, ``~/.npmrc``,
  ``~/.netrc`` … of the real user are not there (the real files are also hidden by the sandbox). When the real
  home holds AWS shared config or credentials files, the CLI is pointed at them explicitly
  (``AWS_CONFIG_FILE`` / ``AWS_SHARED_CREDENTIALS_FILE``) so its own Bedrock calls keep working;
- ``CLAUDE_CODE_TMPDIR`` (the tools' ``TMPDIR``) is private to the session's CLI process: a short ``/tmp/ak-<pid>-XXXXXXXX``
  (mode 0700, removed when the process is closed; :mod:`runtime.guard.confine` says why it must be short);
- ``CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1``: the Bash tool loses ``run_in_background`` (and the CLI its other
  background tasks), so no command outlives the tool call that started it;
- with ``AGENTKIT_SANDBOX=off`` there is no deny list (it is a sandbox feature): ``CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1``
  then strips credentials from tool processes instead (when bwrap is installed: the CLI needs it for that).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.guard.confine import ENV_SESSION_DISK, ENV_SESSION_DISK_MB, ENV_SESSION_WORKSPACE
from runtime.guard.sandbox import SandboxPaths, permission_settings, sandbox_settings

#: Variables a tool subprocess may see (the CLI adds its own sandbox variables, such as the proxy's, itself).
TOOL_ENV_ALLOWLIST: frozenset[str] = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_CTYPE",
        "LC_MESSAGES",
        "TERM",
        "TMPDIR",
        "TZ",
        "USER",
        "LOGNAME",
        "SHELL",
        "PWD",
        "COLUMNS",
        "LINES",
        "NO_COLOR",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        # git run by the agent reads no user or system config (set in Settings.cli_env)
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_TERMINAL_PROMPT",
    }
)


@dataclass(frozen=True)
class SessionIsolation:
    """Environment overrides and the ``sandbox=`` option for one session's CLI process."""

    env: dict[str, str]
    sandbox: dict[str, Any] | None
    settings: dict[str, Any]
    """``--settings`` (permission deny rules for secret files; the SDK merges ``sandbox`` into it)."""


def tool_home(state_dir: Path, claude_session_id: str) -> Path:
    """Per session: the CLI itself keeps a few files under ``HOME`` (``.claude``, ``.npm``), which sandboxed
    commands can read, so sessions must not share it."""
    return state_dir / "tool-home" / claude_session_id


def session_isolation(
    *,
    state_dir: Path,
    workspace: Path,
    claude_session_id: str,
    temp_root: Path,
    cli_env: Mapping[str, str],
    sandboxed: bool,
    allowed_domains: tuple[str, ...] = (),
    proxy_port: int | None = None,
    extra_read: tuple[Path, ...] = (),
    host_env: Mapping[str, str] | None = None,
) -> SessionIsolation:
    """Overrides to merge over ``cli_env`` and the sandbox settings (``None`` when the sandbox is off)."""
    host = os.environ if host_env is None else host_env
    home = tool_home(state_dir, claude_session_id)
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = temp_root
    env = {
        "HOME": str(home),
        "CLAUDE_CODE_TMPDIR": str(tmp),
        "GIT_TERMINAL_PROMPT": "0",
        "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1",
    }
    real_home = Path(host.get("HOME") or os.path.expanduser("~"))
    for var, name in (("AWS_CONFIG_FILE", "config"), ("AWS_SHARED_CREDENTIALS_FILE", "credentials")):
        candidate = real_home / ".aws" / name
        if var not in host and var not in cli_env and candidate.is_file():
            env[var] = str(candidate)
    if not sandboxed:
        # No sandbox, so no env deny list: the CLI's own scrub at least strips credentials from tool processes.
        # It runs tools under bwrap itself and the CLI refuses to start without bwrap, so only when bwrap is there.
        # (With the sandbox on it must stay unset: it widens the sandbox's writable mounts, see sandbox.py.)
        if shutil.which("bwrap", path=host.get("PATH")):
            env["CLAUDE_CODE_SUBPROCESS_ENV_SCRUB"] = "1"
        return SessionIsolation(env=env, sandbox=None, settings=permission_settings(workspace))
    if proxy_port is not None:
        # The CLI makes its proxy bridges' sockets in its own TMPDIR (default /tmp) and binds them into the
        # sandbox before the read isolation lays a tmpfs over /tmp, which hides them: every request got an
        # empty reply. In the temp root (re-opened for reads) the bridge is visible. Without an allowlist it is
        # left hidden: nothing can get out either way.
        env["TMPDIR"] = str(tmp)
    names = (
        set(host) | set(cli_env) | set(env) | {ENV_SESSION_WORKSPACE, ENV_SESSION_DISK, ENV_SESSION_DISK_MB}
    )
    denied = sorted(name for name in names if name not in TOOL_ENV_ALLOWLIST)
    paths = SandboxPaths(workspace=workspace, tool_tmp=tmp, tool_home=home, extra_read=extra_read)
    return SessionIsolation(
        env=env,
        sandbox=sandbox_settings(
            paths, allowed_domains=allowed_domains, denied_env=denied, proxy_port=proxy_port
        ),
        settings=permission_settings(workspace),
    )
