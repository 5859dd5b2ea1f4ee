"""The webhook fix scene with the REAL bundled CLI, as the real-CLI webhook e2e tests share it.

:func:`real_cli_fix_world` is ``tests/functional/fix_flow.py``'s world (receiver → SQS → worker → AgentCore
data-plane stand-in → runtime job → events queue → reporter → tracker stand-ins, every AWS API on a moto server)
around ``python -m runtime`` with the SDK's bundled CLI and the OS sandbox as the runtime decides it
(:func:`harness.runtime_server.real_cli_job_server`), against the Bedrock stand-in. The repository it serves is
:data:`FILES`, whose test fails until :data:`FIX` runs; the scripted model's calls are
:func:`tests.e2e.real_cli_scene.bash` commands.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.cli_user import reachable_tmp
from harness.runtime_server import RuntimeServer, real_cli_job_server
from harness.webhook_scene import ACTOR_HEADER
from standins import BedrockStandIn
from tests.e2e.real_cli_scene import DEVELOPER_AGENT, MODEL
from tests.functional.fix_flow import fix_world, job_queues

FILES = {
    "src/calc.py": ("100644", b"def add(a, b):\n    return a - b\n"),
    "tests/__init__.py": ("100644", b""),
    "tests/test_calc.py": (
        "100644",
        b"import unittest\n\nfrom src.calc import add\n\n\n"
        b"class AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    ),
    "README.md": ("100644", b"# calc\n"),
}
FIXED = ("100644", b"def add(a, b):\n    return a + b\n")
# The system interpreter: a root runtime runs its CLI as an unprivileged user, who may not reach a virtualenv
# under /root; pytest is not installed there, unittest is.
TEST_COMMAND = "python3 -m unittest discover -s tests -t ."
FIX = "import pathlib; p = pathlib.Path('src/calc.py'); p.write_text(p.read_text().replace('a - b', 'a + b'))"


def tool_results(world: SimpleNamespace) -> dict[str, tuple[str, bool]]:
    """Every tool result the CLI sent the model: ``{tool_use_id: (text, is_error)}``."""
    out: dict[str, tuple[str, bool]] = {}
    for tool_id, block in world.bedrock.tool_results().items():
        content = block.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        out[tool_id] = (text, bool(block.get("is_error")))
    return out


@contextmanager
def real_cli_fix_world(
    moto: str,
    monkeypatch: pytest.MonkeyPatch,
    *,
    prefix: str,
    vm: str = "vm",
    agent: Callable[[Path], Mapping[str, Any]] = lambda root: DEVELOPER_AGENT,
    **env: str,
) -> Iterator[SimpleNamespace]:
    """The world of :func:`tests.functional.fix_flow.fix_world` serving :data:`FILES`, its runtime on microVM
    ``vm`` (``world.microvm(name)`` makes another, not started); ``env`` is added to the runtime's environment.

    Everything lives under a new directory ``world.root`` (``/tmp/<prefix>…``, removed afterwards) that every user
    may enter (:func:`harness.cli_user.reachable_tmp`): a root runtime runs its CLI as an unprivileged user. ``agent(root)`` is what the agent file holds (it may make directories under ``root`` that
    it names). The world also has ``bedrock`` (the stand-in the model's replies are queued on)."""
    with reachable_tmp(prefix) as root:
        agent_file = root / "agent.json"
        agent_file.write_text(json.dumps(agent(root)))
        queues = job_queues(moto)
        with BedrockStandIn() as bedrock:

            def microvm(name: str) -> RuntimeServer:
                return real_cli_job_server(
                    root,
                    name,
                    bedrock_url=bedrock.url,
                    model=MODEL,
                    agent_file=agent_file,
                    events_queue=queues[3],
                    moto=moto,
                    AGENTKIT_ACTOR_HEADER=ACTOR_HEADER,
                    **env,
                )

            with fix_world(
                moto=moto,
                queues=queues,
                runtime=microvm(vm),
                files=FILES,
                tmp=root,
                monkeypatch=monkeypatch,
            ) as world:
                world.bedrock, world.root, world.microvm = bedrock, root, microvm
                yield world
