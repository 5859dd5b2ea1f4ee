"""Agent profiles, and what the agent may do given the sandbox it actually got.

- ``readonly`` (default): the reviewer toolset: Read, Glob, Grep and read-only shell programs.
- ``developer``: also runs the repository's own tests and builds (:data:`DEVELOPER_PROGRAMS`): interpreters and
  build tools take any arguments, so they are allowed **only inside the OS sandbox** (network off, writes only
  in the workspace), and the CLI's host-side file tools (:data:`HOST_FILE_TOOLS`) are off. Without a working
  sandbox the profile falls back to ``readonly``'s programs.

:func:`probe_sandbox` checks once, at start, that bubblewrap can build a sandbox here; the agent definition
(:meth:`runtime.agent.definition.AgentDefinitionSpec.for_sandbox`) switches command-running tools off when it
cannot and the sandbox is required (or when a root runtime cannot drop root: :attr:`SandboxStatus.blocked`).
This module knows nothing of the definition: the agent uses the guard, never the other way round.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

#: Programs the ``developer`` profile adds to the Bash allowlist (run with any arguments, sandboxed).
DEVELOPER_PROGRAMS: frozenset[str] = frozenset(
    {
        "python",
        "python3",
        "pytest",
        "make",
        "npm",
        "node",
        "npx",
        "pip",
        "tox",
        "cargo",
        "go",
        "mkdir",
        "touch",
    }
)
COMMAND_TOOLS: frozenset[str] = frozenset({"Bash"})
#: Built-in tools the CLI runs in its own process, on the host, outside the OS sandbox. Where sandboxed commands
#: can write the workspace (``developer``), a command can swap a checked path for a symlink between the policy's
#: check and the CLI's open (the check and the open happen in two processes), so these tools are off there and
#: the agent reads with ``cat``/``grep``/``find`` inside the sandbox instead.
HOST_FILE_TOOLS: frozenset[str] = frozenset(
    {"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep"}
)

_PROBE = (
    "--new-session",
    "--die-with-parent",
    "--unshare-net",
    "--unshare-pid",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",  # noqa: S108 - a tmpfs inside the probe sandbox, not a host path
    "--",
    "/bin/sh",
    "-c",
    "exit 0",
)


@dataclass(frozen=True)
class SandboxStatus:
    """What the start-up probe found. ``mode`` is ``AGENTKIT_SANDBOX``."""

    mode: str
    available: bool
    reason: str = ""
    blocked: str = ""
    """Why commands must not run at all, whatever the sandbox (a root runtime that cannot drop root)."""

    @property
    def commands_enabled(self) -> bool:
        return not self.blocked and (self.mode == "off" or self.available)

    @property
    def sandboxed(self) -> bool:
        return self.mode == "required" and self.available


def probe_sandbox(mode: str, *, timeout_s: float = 10.0) -> SandboxStatus:
    """Whether bubblewrap and socat are installed and bwrap can create its namespaces here."""
    if mode == "off":
        return SandboxStatus(mode, available=False, reason="AGENTKIT_SANDBOX=off")
    bwrap, socat = shutil.which("bwrap"), shutil.which("socat")
    missing = [name for name, path in (("bubblewrap (bwrap)", bwrap), ("socat", socat)) if not path]
    if missing or bwrap is None:
        return SandboxStatus(mode, available=False, reason=f"{' and '.join(missing)} not installed")
    try:
        done = subprocess.run(
            [bwrap, *_PROBE], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(mode, available=False, reason=f"bwrap failed to run: {exc}")
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        return SandboxStatus(
            mode,
            available=False,
            reason=f"bwrap cannot create a sandbox here (user namespaces?): {detail[-1] if detail else done.returncode}",
        )
    return SandboxStatus(mode, available=True)
