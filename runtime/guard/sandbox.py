"""The OS sandbox around every command the agent runs: Claude Code's own (bubblewrap + socat on Linux).

:func:`sandbox_settings` builds the SDK's ``sandbox=`` option (merged by the SDK into the CLI's ``--settings``).
What it asks the CLI for, and what was measured with the bundled CLI 2.1.330 on Debian 12 (root and uid 10001):

- **Reads**: ``filesystem.denyRead: ["/"]`` with ``allowRead`` re-opening the workspace, the session's tool temp
  dir, the empty tool ``HOME`` and the system directories programs need. The CLI turns this into a ``tmpfs`` over
  every other top-level directory (``/root``, ``/home``, ``/opt``, ``/tmp``, ``/var``, ``/work`` …), so the state
  dir, the CLI config dir, other sessions, ``$HOME`` and its secrets, the runtime's code and any directory beside
  the workspace are not there at all ("No such file or directory"). ``/etc`` is re-opened one entry at a time
  (``/etc/shadow`` stays hidden).
- **Writes**: only the workspace (the session's own copy, :mod:`runtime.guard.confine`), the tool temp dir and
  ``~/.npm/_logs`` in the session's tool ``HOME`` (the CLI opens that one itself) reach the host, all inside the
  session's own tree (measured by ``tests/e2e/test_sandbox_escapes.py``). A hidden directory is an empty
  ``tmpfs``: a command may create files in it, they vanish with the command and never reach the host. So a write
  that "succeeds" beside the workspace is not an escape: it went to the tmpfs. The attack suites therefore check
  the host, not exit codes.
- **Network**: the sandbox has its own network namespace; egress only through the CLI's bridges. With no
  ``network_allowed_domains`` they lead to the CLI's own proxy, which with ``strictAllowlist`` and an empty
  ``allowedDomains`` refuses every host; with an allowlist, to the runtime's filtering proxy
  (:mod:`runtime.guard.egress`).
- ``allowUnsandboxedCommands: false`` (``dangerouslyDisableSandbox`` is ignored) and ``failIfUnavailable: true``
  (the CLI refuses to start rather than run a command unconfined).
- **Environment**: ``credentials.envVars`` unsets, for sandboxed commands, every variable of the CLI's
  environment that is not on :data:`TOOL_ENV_ALLOWLIST` (see :mod:`runtime.guard.tool_env`).
  ``CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1`` is deliberately NOT set: with this CLI build it changes the sandbox's
  mounts so that ``/home``, ``/opt``, ``/root``, ``/run``, ``/tmp`` and ``/var`` are bound writable (measured:
  a ``touch /opt/x`` from a sandboxed command reached the host).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.guard.policy import SENSITIVE_PATTERNS

#: Top-level system directories programs need, read-only. ``/proc``, ``/dev`` and ``/sys`` are set up by bwrap.
SYSTEM_READ_DIRS: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Entries of ``/etc`` that programs read (dynamic loader, users, TLS roots, time zone, name service, git, magic).
ETC_READ_ENTRIES: tuple[str, ...] = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/mime.types",
    "/etc/magic",
    "/etc/magic.mime",
    "/etc/bash.bashrc",
    "/etc/inputrc",
    "/etc/terminfo",
    "/etc/locale.alias",
    "/etc/python3",
    "/etc/python3.11",
)


#: File names that hold secrets wherever they are, the workspace included. They become ``Read(**/<name>)`` deny
#: rules: the CLI refuses them to its file tools (Grep skips them), and the sandbox hides them from commands
#: even inside the workspace (measured: ``grep -r TOKEN .`` and ``cat $(echo .en)v`` get "Permission denied").
SECRET_NAMES: tuple[str, ...] = (
    *SENSITIVE_PATTERNS,  # the permission policy's secret file names, so the two lists cannot drift apart
    ".ENV",
    ".ENV.*",
    "*.ENV",
    ".aws/**",
    ".ssh/**",
    ".docker/config.json",
    ".kube/config",
)


def permission_settings(workspace: Path) -> dict[str, Any]:
    """``--settings`` permission rules: secret names unreadable, ``.git`` not writable (config, hooks)."""
    deny = [f"Read(**/{name})" for name in SECRET_NAMES]
    # "//abs/path" is an absolute path in Claude Code's permission-rule syntax ("/path" is settings-relative)
    deny += [f"Edit(//{workspace.as_posix().lstrip('/')}/.git/**)"]
    return {"permissions": {"deny": deny}}


@dataclass(frozen=True)
class SandboxPaths:
    """The host paths one session's commands may see."""

    workspace: Path
    tool_tmp: Path
    tool_home: Path
    extra_read: tuple[Path, ...] = ()
    """Toolchains the ``developer`` profile needs outside the system dirs (a virtualenv, a Node install)."""


def sandbox_settings(
    paths: SandboxPaths,
    *,
    allowed_domains: Iterable[str] = (),
    denied_env: Iterable[str] = (),
    proxy_port: int | None = None,
) -> dict[str, Any]:
    """The ``ClaudeAgentOptions.sandbox`` value (also carries ``filesystem``/``credentials``, which the SDK's
    ``SandboxSettings`` TypedDict does not list but the CLI's settings schema does)."""
    readable = [str(paths.workspace), str(paths.tool_tmp), str(paths.tool_home)]
    readable += [str(p) for p in paths.extra_read]
    readable += [d for d in SYSTEM_READ_DIRS if Path(d).exists()]
    readable += [e for e in ETC_READ_ENTRIES if Path(e).exists()]
    # names only for the CLI (the proxy enforces ports)
    network: dict[str, Any] = {
        "allowedDomains": sorted({d.rsplit(":", 1)[0] if d.count(":") == 1 else d for d in allowed_domains}),
        "strictAllowlist": True,
    }
    if proxy_port is not None:
        network.update(httpProxyPort=proxy_port, socksProxyPort=proxy_port)
    return {
        "enabled": True,
        "failIfUnavailable": True,
        "allowUnsandboxedCommands": False,
        "autoAllowBashIfSandboxed": False,  # every command still goes through the permission policy
        "enableWeakerNestedSandbox": False,
        "allowNestedUserNamespaces": False,
        "network": network,
        "filesystem": {
            "denyRead": ["/"],
            "allowRead": readable,
            "allowWrite": [str(paths.workspace), str(paths.tool_tmp)],
            # git config, hooks and attributes: no persistence that a later, unsandboxed git would run
            "denyWrite": [str(paths.workspace / ".git"), str(paths.workspace / ".gitattributes")],
        },
        "credentials": {"envVars": [{"name": name, "mode": "deny"} for name in sorted(set(denied_env))]},
    }
