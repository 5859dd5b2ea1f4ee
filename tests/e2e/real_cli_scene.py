"""A runtime with the REAL bundled CLI in the OS sandbox, against the Bedrock stand-in, as the e2e tests of repository
work set it up.

:func:`sandboxed_runtime` gives the scene (``root``, ``bedrock``, ``server``) under a new directory in /tmp that
every user may enter (:func:`harness.cli_user.reachable_tmp`): a root runtime runs its CLI as an unprivileged user in
its own mount namespace, who must reach the state dir and the session's workspace bound over the configured one.
:func:`confined_env` is the environment of a runtime with a configured workspace and tool home there (the tests of
what confines a session's commands start it themselves). :func:`python_read_paths` are what a sandboxed command needs
to run this interpreter; :func:`bash` is the scripted model's call.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.cli_user import reachable_tmp
from harness.runtime_server import RuntimeServer
from standins import BedrockStandIn, ToolUse

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
#: The ``developer`` profile (host-side Edit/Write off: files change through sandboxed commands) with read-only
#: tools and Bash.
DEVELOPER_AGENT: Mapping[str, Any] = {
    "profile": "developer",
    "builtin_tools": ["Read", "Glob", "Grep", "Bash"],
}
#: This interpreter's environment (the virtualenv's ``bin`` first): its ``python`` is the one the commands run.
VENV = Path(os.path.realpath(sys.prefix))


def bash(command: str, tool_id: str) -> ToolUse:
    """The model's ``Bash`` call running ``command``."""
    return ToolUse("Bash", {"command": command, "description": "work"}, id=tool_id)


def python_read_paths() -> list[str]:
    """What the sandbox must let a command read to run this interpreter: the virtualenv, the installation it was
    made from and every ``site-packages`` directory on ``sys.path`` (real paths: the sandbox binds real paths)."""
    site = {os.path.realpath(p) for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)}
    return sorted({str(VENV), os.path.realpath(sys.base_prefix)} | site)


def confined_env(root: Path, bedrock_url: str, **extra: str) -> dict[str, str]:
    """The environment of a runtime (sandbox ``required``; the ``developer`` profile with Bash only) whose configured
    workspace is ``root/ws`` and tool ``HOME`` ``root/home`` (both made here), with its sessions and the CLI's
    config under the state dir ``root/state``, the system interpreter on ``PATH``; ``extra`` is added last."""
    workspace, home, state = root / "ws", root / "home", root / "state"
    for path in (workspace, home):
        path.mkdir()
    agent = root / "agent.json"
    agent.write_text(json.dumps({"profile": "developer", "builtin_tools": ["Bash"]}))
    return {
        "AGENTKIT_BEDROCK_ENDPOINT": bedrock_url,
        "AGENTKIT_MODEL": MODEL,
        "AGENTKIT_STATE_DIR": str(state),
        "AGENTKIT_WORKSPACE": str(workspace),
        "AGENTKIT_SESSION_STORE": f"sqlite:///{state / 'sessions.db'}",
        "CLAUDE_CONFIG_DIR": str(state / "claude"),
        "AGENTKIT_AGENT_FILE": str(agent),
        "AGENTKIT_TURN_TIMEOUT": "200",
        "AGENTKIT_SANDBOX": "required",
        "HOME": str(home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        **extra,
    }


@contextmanager
def sandboxed_runtime(prefix: str, agent: Mapping[str, Any], **env: str) -> Iterator[dict[str, Any]]:
    """A started runtime (sandbox ``required``) whose agent file holds ``agent``, on the Bedrock stand-in; ``env``
    is added to its environment last. Yields ``{"root", "bedrock", "server"}``: the state dir is ``root/state``,
    the log ``root/server.log``; everything is stopped and removed afterwards."""
    with reachable_tmp(prefix) as root, BedrockStandIn() as bedrock:
        agent_file = root / "agent.json"
        agent_file.write_text(json.dumps(agent))
        server = RuntimeServer(
            env={
                "AGENTKIT_BEDROCK_ENDPOINT": bedrock.url,
                "AGENTKIT_MODEL": MODEL,
                "AGENTKIT_STATE_DIR": str(root / "state"),
                "AGENTKIT_SESSION_STORE": f"sqlite:///{root / 'sessions.db'}",
                "AGENTKIT_AGENT_FILE": str(agent_file),
                "AGENTKIT_SANDBOX": "required",
                "AGENTKIT_TURN_TIMEOUT": "200",
                "PATH": f"{VENV}/bin:/usr/local/bin:/usr/bin:/bin",
                **env,
            },
            log_path=root / "server.log",
        ).start()
        try:
            yield {"root": root, "bedrock": bedrock, "server": server}
        finally:
            server.stop()
