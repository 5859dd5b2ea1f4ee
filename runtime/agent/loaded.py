"""The agent the runtime runs: the built-in definition, a JSON file (``AGENTKIT_AGENT_FILE``) or an agent directory
(``AGENTKIT_AGENT_DIR``, :mod:`runtime.agent.agent_dir`), loaded and checked once.

``python -m runtime`` loads it before it listens (:mod:`runtime.process.startup_checks`), so a bad file or a tools package
that does not import stops the process with exit 2 instead of a healthy ``/ping`` and a 500 on every turn; the
object graph (:mod:`runtime.wiring`) then gets the same, already loaded agent.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.agent.agent_dir import AgentDirectory, AgentTools, load_tools, read_agent_dir
from runtime.agent.definition import AgentDefinitionSpec
from runtime.errors import ConfigurationError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedAgent:
    """The definition, the agent directory's in-process tools and hooks, and where they came from."""

    definition: AgentDefinitionSpec
    source: str
    directory: AgentDirectory | None = None
    tools: AgentTools = field(default_factory=AgentTools)

    @property
    def plugins(self) -> tuple[Path, ...]:
        """The agent directory's plugin (its commands, skills and subagents), if it has one."""
        plugin = self.directory.plugin if self.directory is not None else None
        return (plugin,) if plugin is not None else ()

    @property
    def mcp_servers(self) -> dict[str, Any]:
        """In-process MCP servers the agent brings (the directory's ``agent`` server)."""
        from runtime.agent.agent_dir import TOOLS_SERVER

        return {TOOLS_SERVER: self.tools.server} if self.tools.server is not None else {}


_lock = threading.Lock()
_loaded: dict[tuple[Path | None, Path | None], LoadedAgent] = {}


def load_agent(agent_file: Path | None, agent_dir: Path | None) -> LoadedAgent:
    """The agent named by the two settings (both set is refused: which one wins would be a guess). Loaded once per
    process and pair of paths: the tools package is imported once.

    Raises:
        ConfigurationError: both set, or the file, the directory or its tools package is bad (names the file).
    """
    key = (agent_file, agent_dir)
    with _lock:
        if key in _loaded:
            return _loaded[key]
        if agent_file is not None and agent_dir is not None:
            raise ConfigurationError(
                f"AGENTKIT_AGENT_FILE ({agent_file}) and AGENTKIT_AGENT_DIR ({agent_dir}) are both set; set one: "
                "the directory's agent.json is its definition"
            )
        if agent_dir is not None:
            directory = read_agent_dir(agent_dir)
            tools = load_tools(directory)
            loaded = LoadedAgent(directory.definition, f"agent directory {agent_dir}", directory, tools)
        elif agent_file is not None:
            loaded = LoadedAgent(AgentDefinitionSpec.from_file(agent_file), f"agent file {agent_file}")
        else:
            loaded = LoadedAgent(AgentDefinitionSpec(), "the built-in definition")
        _describe(loaded)
        _loaded[key] = loaded
        return loaded


def _describe(loaded: LoadedAgent) -> None:
    """One line that says which agent runs and which tools it brings; the sample tools' absence is said too, so
    ``include_sample_tools: false`` never drops tools without a word."""
    d = loaded.definition
    parts = [f"agent: {loaded.source}"]
    parts.append("sample tools mcp__kit on" if d.include_sample_tools else "sample tools mcp__kit off")
    if loaded.tools.tool_names:
        parts.append("its tools " + ", ".join(loaded.tools.tool_names))
    if loaded.directory is not None and loaded.directory.gateway_targets:
        parts.append("its Gateway tools " + ", ".join(loaded.directory.tool_names))
    if d.mcp_servers:
        parts.append("MCP servers " + ", ".join(sorted(d.mcp_servers)))
    if d.subagents:
        parts.append("subagents " + ", ".join(sorted(d.subagents)))
    if loaded.plugins:
        parts.append(f"plugin {loaded.plugins[0]}")
    logger.info("; ".join(parts))
    if not d.include_sample_tools and not loaded.tools.tool_names and not d.mcp_servers:
        logger.warning(
            "agent: no in-process tools: include_sample_tools is false and no tools package or MCP server is "
            "defined (add tools/__init__.py to the agent directory: docs/customize.md)"
        )
