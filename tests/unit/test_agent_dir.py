"""An agent directory (``runtime/agent/agent_dir.py``): read and checked without running its code, then its tools
package imported into the ``agent`` MCP server; every mistake named with its file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harness.custom_agent import GATEWAY_TOOL, PROMPT, SDK_TOOL, write_custom_agent
from runtime.agent.agent_dir import load_tools, read_agent_dir
from runtime.agent.loaded import load_agent
from runtime.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]


def test_a_custom_directory_is_read_with_its_tools_and_gateway_targets(tmp_path: Path) -> None:
    directory = read_agent_dir(write_custom_agent(tmp_path))
    assert directory.definition.system_prompt == PROMPT
    assert directory.definition.include_sample_tools is False
    assert "mcp__agent" in directory.definition.permitted_tools  # its own tools pass the policy
    assert directory.tool_names == [GATEWAY_TOOL]
    (target,) = directory.gateway_targets
    assert target.wire_tools()[0]["inputSchema"]["required"] == ["ticket_id"]


def test_its_tools_package_becomes_the_agent_server_and_its_tool_runs(tmp_path: Path) -> None:
    tools = load_tools(read_agent_dir(write_custom_agent(tmp_path)))
    assert tools.tool_names == (SDK_TOOL,)
    server = tools.server
    assert server is not None and server["type"] == "sdk" and server["name"] == "agent"
    from mcp import Client

    async def call() -> Any:
        async with Client(server["instance"]) as client:
            return await client.call_tool("queue_depth", {"queue": "main"})

    result = asyncio.run(call())
    assert "queue main: 7 jobs waiting" in json.dumps(result.model_dump(mode="json"))


def test_the_kit_sample_is_an_agent_directory() -> None:
    directory = read_agent_dir(ROOT / "agents" / "sample")
    assert directory.definition.include_sample_tools is True
    from runtime.agent.definition import AgentDefinitionSpec

    assert directory.definition.system_prompt == AgentDefinitionSpec().system_prompt


@pytest.mark.parametrize(
    ("break_it", "says"),
    [
        (lambda d: (d / "agent.json").unlink(), "has no agent.json"),
        (lambda d: (d / "agent.json").write_text('{"max_turn": 3}'), "max_turn"),
        (lambda d: (d / "tools" / "__init__.py").unlink(), "is not a Python package"),
        (
            lambda d: (d / "gateway" / "tickets" / "target.json").write_text(
                '{"description": "x", "tools": []}'
            ),
            "tools",
        ),
        (lambda d: (d / "gateway" / "tickets" / "app.py").unlink(), "names no module"),
        (
            lambda d: (d / "gateway" / "tickets").rename(d / "gateway" / "bad_name"),
            "letters, digits and single hyphens",
        ),
    ],
)
def test_a_broken_directory_is_refused_naming_the_file(tmp_path: Path, break_it, says: str) -> None:
    agent = write_custom_agent(tmp_path)
    break_it(agent)
    with pytest.raises(ConfigurationError, match=says):
        read_agent_dir(agent)


@pytest.mark.parametrize(
    ("init", "says"),
    [
        ("import no_such_module_here\n", "failed to import"),
        ("TOOLS = []\n", "must define TOOLS"),
        ("TOOLS = ['queue_depth']\n", "must define TOOLS"),
        (
            "from claude_agent_sdk import tool\n@tool('t', 'd', {})\nasync def t(a): return {}\n"
            "TOOLS = [t]\nHOOKS = {'OnEverything': []}\n",
            "HOOKS must map",
        ),
    ],
)
def test_a_tools_package_the_sdk_cannot_serve_is_refused(tmp_path: Path, init: str, says: str) -> None:
    agent = write_custom_agent(tmp_path, name=f"agent-{abs(hash(init))}")
    (agent / "tools" / "__init__.py").write_text(init)
    with pytest.raises(ConfigurationError, match=says):
        load_tools(read_agent_dir(agent))


def test_a_file_and_a_directory_together_are_refused(tmp_path: Path) -> None:
    agent = write_custom_agent(tmp_path)
    with pytest.raises(ConfigurationError, match="both set"):
        load_agent(agent / "agent.json", agent)


def test_dropping_the_sample_keeps_the_directorys_tools_and_says_so(tmp_path: Path, caplog) -> None:
    caplog.set_level("INFO")
    loaded = load_agent(None, write_custom_agent(tmp_path))
    assert loaded.definition.include_sample_tools is False
    assert list(loaded.mcp_servers) == ["agent"]
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("agent: "))
    assert "sample tools mcp__kit off" in line and SDK_TOOL in line and GATEWAY_TOOL in line


def test_a_plugin_of_prompts_is_taken_and_one_with_hooks_or_servers_is_refused(tmp_path: Path) -> None:
    from harness.custom_agent import add_plugin

    agent = write_custom_agent(tmp_path)
    plugin = add_plugin(agent)
    assert read_agent_dir(agent).plugin == plugin
    (plugin / "hooks").mkdir()
    with pytest.raises(ConfigurationError, match=r"brings \['hooks'\]"):
        read_agent_dir(agent)
    (plugin / "hooks").rmdir()
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "team", "mcpServers": {"x": {}}}')
    with pytest.raises(ConfigurationError, match="mcpServers"):
        read_agent_dir(agent)
    (plugin / ".claude-plugin" / "plugin.json").unlink()
    with pytest.raises(ConfigurationError, match=r"has no \.claude-plugin/plugin\.json"):
        read_agent_dir(agent)
