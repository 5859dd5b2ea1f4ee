"""Shared by every e2e test: the ``e2e`` marker, the check that the SDK's bundled Claude Code CLI is there, and a
moto server on loopback for the tests whose runtime reports to AWS APIs (SQS).

A missing CLI is a broken install (the claude-agent-sdk wheels bundle it), so these tests fail, never skip: a
skipped e2e suite would look green while testing nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import claude_agent_sdk
import pytest
from moto.server import ThreadedMotoServer

from harness.runtime_server import free_port

#: The Claude Code CLI shipped inside the claude-agent-sdk wheel.
BUNDLED_CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
E2E_DIR = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selection, so ``-m e2e`` / ``-m "not e2e"`` see the marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def bundled_cli() -> Path:
    """The bundled CLI; fails the test when the installed claude-agent-sdk has none."""
    if not BUNDLED_CLI.is_file():
        pytest.fail(
            f"the claude-agent-sdk wheel has no bundled CLI at {BUNDLED_CLI}; reinstall claude-agent-sdk"
        )
    return BUNDLED_CLI


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """A moto server on 127.0.0.1 for one test module; its URL."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()
