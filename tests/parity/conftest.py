"""Two Claude Code CLIs behind one interface, so a parity test body runs against both.

- ``fake``: the fake CLI (``harness/fake_claude.py``), scripted by directives in the prompt (``[tool:…]``,
  ``[bash:…]``, ``[slow:…]``);
- ``real``: the Claude Code CLI bundled with claude-agent-sdk against the local Bedrock Runtime stand-in
  (``standins``), scripted by the model replies queued on the stand-in. Its tests carry the ``e2e`` marker.

A scenario asks the backend for the prompt of a turn that does something (answers, calls a tool, takes long);
the backend scripts it its own way and returns what to send. Everything after that — the SDK messages, hooks,
permission callbacks, the session store mirror, resume — is observed the same way for both.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage

from harness.cli import write_fake_cli
from harness.load import children
from standins import BedrockStandIn, Reply, cli_env
from tests.e2e.conftest import BUNDLED_CLI

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BACKENDS = ("fake", "real")


class Backend:
    """One CLI, its environment and how to script a turn."""

    name: str

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.cwd = tmp / "work"
        self.cwd.mkdir()
        self.config = tmp / "config"

    def options(self, **extra: Any) -> ClaudeAgentOptions:
        raise NotImplementedError

    def text_turn(self, prompt: str) -> str:
        """The prompt of a turn that answers with text only."""
        raise NotImplementedError

    def tool_turn(self, prompt: str, name: str, tool_input: dict[str, Any]) -> str:
        """The prompt of a turn that calls ``name`` with ``tool_input`` once, then answers."""
        raise NotImplementedError

    def slow_turn(self, prompt: str) -> str:
        """The prompt of a turn that takes 30 s before it answers (to be interrupted or killed)."""
        raise NotImplementedError

    def wait_until_slow(self) -> None:
        """Return once the slow turn is under way."""
        raise NotImplementedError

    def record(self, result: ResultMessage) -> None:
        """Note the last turn's result (the fake CLI reports what it saw in its reply text)."""

    def prompts_seen(self) -> int:
        """How many earlier user prompts the last recorded turn had in its conversation."""
        raise NotImplementedError

    def fresh_config(self) -> None:
        """Point the next CLI at an empty config dir: nothing of the session on local disk."""
        self.config = self.tmp / f"config-{len(list(self.tmp.glob('config*')))}"

    @staticmethod
    def cli_processes() -> list[int]:
        """The CLI processes this test process started (the stand-ins run as threads)."""
        return children(os.getpid())


class FakeBackend(Backend):
    name = "fake"

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.cli = write_fake_cli(tmp)
        self.log = tmp / "fake.log"
        self.last_reply = ""

    def options(self, **extra: Any) -> ClaudeAgentOptions:
        env = {"CLAUDE_CONFIG_DIR": str(self.config), "FAKE_CLAUDE_LOG": str(self.log)}
        return ClaudeAgentOptions(cli_path=str(self.cli), cwd=str(self.cwd), env=env, **extra)

    def text_turn(self, prompt: str) -> str:
        return prompt

    def tool_turn(self, prompt: str, name: str, tool_input: dict[str, Any]) -> str:
        return f"[tool:{name} {json.dumps(tool_input)}] {prompt}"

    def slow_turn(self, prompt: str) -> str:
        return f"[slow:30000] {prompt}"

    def wait_until_slow(self) -> None:
        _wait(lambda: self.log.exists() and '"event": "slow"' in self.log.read_text())

    def record(self, result: ResultMessage) -> None:
        self.last_reply = result.result or ""

    def prompts_seen(self) -> int:
        match = re.search(r"history=(\d+)", self.last_reply)
        assert match, self.last_reply
        return int(match.group(1))


class RealBackend(Backend):
    name = "real"

    def __init__(self, tmp: Path, bedrock: BedrockStandIn) -> None:
        super().__init__(tmp)
        self.bedrock = bedrock

    def options(self, **extra: Any) -> ClaudeAgentOptions:
        env = cli_env(self.bedrock.url, MODEL, cache_home=self.tmp / "cache", config_dir=self.config)
        return ClaudeAgentOptions(cli_path=str(BUNDLED_CLI), cwd=str(self.cwd), env=env, **extra)

    def text_turn(self, prompt: str) -> str:
        self.bedrock.enqueue(Reply.text(f"answer to {prompt}"))
        return prompt

    def tool_turn(self, prompt: str, name: str, tool_input: dict[str, Any]) -> str:
        self.bedrock.enqueue(Reply.tool_use(name, tool_input), Reply.text(f"answer to {prompt}"))
        return prompt

    def slow_turn(self, prompt: str) -> str:
        self.bedrock.enqueue(Reply.text("too late", delay_s=30))
        return prompt

    def wait_until_slow(self) -> None:
        # The CLI has asked for the slow reply once the stand-in took it off its queue: it is waiting for it.
        _wait(lambda: self.bedrock.pending == 0 and bool(self.bedrock.model_requests))

    def prompts_seen(self) -> int:
        messages = self.bedrock.model_requests[-1].body["messages"]
        return sum(1 for m in messages[:-1] if m["role"] == "user" and _is_prompt(m["content"]))


def _is_prompt(content: Any) -> bool:
    """A user message of the conversation that is a prompt, not a tool result."""
    if isinstance(content, str):
        return True
    return not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _wait(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the CLI never got there"
        time.sleep(0.01)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real-CLI half of the suite is e2e (``make test-fast`` leaves it out, ``make test`` runs it)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("cli") == "real":
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(params=BACKENDS)
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "fake":
        yield FakeBackend(tmp_path)
        return
    if not BUNDLED_CLI.is_file():
        pytest.fail(
            f"the claude-agent-sdk wheel has no bundled CLI at {BUNDLED_CLI}; reinstall claude-agent-sdk"
        )
    with BedrockStandIn() as bedrock:
        yield RealBackend(tmp_path, bedrock)
