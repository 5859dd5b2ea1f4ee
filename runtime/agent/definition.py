"""The agent definition: one typed, validated place for what the agent is and may do.

System prompt, tools (allowed / disallowed), the Bash allowlist, turn and budget limits, effort, MCP servers and
subagents all live here. ``setting_sources`` is always empty, so the host's ``~/.claude`` or a project's
``.claude/`` never changes the agent's behaviour.

Load a custom definition from JSON with :meth:`AgentDefinitionSpec.from_file` (``AGENTKIT_AGENT_FILE``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from runtime.approvals.rules import ApprovalRules
from runtime.errors import ConfigurationError
from runtime.guard.policy import DEFAULT_BASH_ALLOWLIST
from runtime.guard.profiles import COMMAND_TOOLS, DEVELOPER_PROGRAMS, HOST_FILE_TOOLS, SandboxStatus

BUILTIN_TOOLS = frozenset(
    {
        "Bash",
        "Read",
        "Write",
        "Edit",
        "MultiEdit",
        "Glob",
        "Grep",
        "NotebookEdit",
        "WebFetch",
        "WebSearch",
        "TodoWrite",
        "Task",
        "Agent",
        "Skill",  # the agent directory's plugin skills (runtime.agent.agent_dir)
    }
)

DEFAULT_SYSTEM_PROMPT = (
    "You are an operations assistant deployed with AgentCore Claude Kit. Answer concisely. "
    "Use the tools you are given to look facts up instead of guessing, and say which tool you used. "
    "You may read files in your workspace and run read-only shell commands; you cannot change files."
)


class SubagentSpec(BaseModel):
    """A subagent the main agent can delegate to (SDK ``AgentDefinition``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    tools: tuple[str, ...] | None = None
    model: str | None = None


class AgentDefinitionSpec(BaseModel):
    """Everything that defines the agent's behaviour."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    builtin_tools: tuple[str, ...] = ("Read", "Glob", "Grep", "Bash")
    """Built-in Claude Code tools that exist for this agent; every other built-in is off."""
    allowed_tools: tuple[str, ...] = ("Read", "Glob", "Grep", "mcp__kit", "mcp__gateway")
    """Tools that run without asking; the permission policy still checks each call."""
    disallowed_tools: tuple[str, ...] = (
        "Write",
        "Edit",
        "MultiEdit",
        "NotebookEdit",
        "WebFetch",
        "WebSearch",
    )
    bash_allowlist: tuple[str, ...] = tuple(sorted(DEFAULT_BASH_ALLOWLIST))
    max_turns: int = Field(default=25, gt=0)
    max_budget_usd: float = Field(default=1.0, gt=0)
    effort: Literal["low", "medium", "high", "max"] | None = None
    mcp_servers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """External MCP servers (stdio / http / sse configs as the SDK takes them)."""
    subagents: dict[str, SubagentSpec] = Field(default_factory=dict)
    include_sample_tools: bool = True
    """Expose the in-process ``kit`` MCP server with the sample invoice tool."""
    profile: Literal["readonly", "developer"] = "readonly"
    """``readonly``: the reviewer toolset. ``developer``: may also run the repository's tests and builds
    (python, pytest, make, npm, node …) inside the OS sandbox, network off (:mod:`runtime.guard.profiles`)."""
    network_allowed_domains: tuple[str, ...] = ()
    """Hosts sandboxed commands may reach (e.g. a package mirror): exact names, ``name`` (ports 80 and 443) or
    ``name:port``; none by default (:mod:`runtime.guard.egress`)."""
    sandbox_read_paths: tuple[str, ...] = ()
    """Absolute paths outside the system dirs that sandboxed commands may read (a toolchain, a virtualenv)."""
    approvals: ApprovalRules = Field(default_factory=ApprovalRules)
    """Tool calls that wait for a person's approval before they run (:mod:`runtime.approvals.rules`); none by
    default. ``AGENTKIT_APPROVALS`` (``cdk.json`` stage key ``approvals``) replaces them when set."""

    @model_validator(mode="after")
    def _consistent(self) -> AgentDefinitionSpec:
        unknown = sorted(set(self.builtin_tools) - BUILTIN_TOOLS)
        if unknown:
            raise ValueError(f"builtin_tools: unknown tools {unknown}; known: {sorted(BUILTIN_TOOLS)}")
        relative = [p for p in self.sandbox_read_paths if not p.startswith("/") or ".." in p.split("/")]
        if relative or "/" in self.sandbox_read_paths:
            raise ValueError(
                f"sandbox_read_paths must be absolute, without '..', and not '/': {relative or ['/']}"
            )
        from runtime.errors import ConfigurationError
        from runtime.guard.egress import parse_allowlist

        try:
            parse_allowlist(self.network_allowed_domains)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from exc
        clash = sorted(set(self.allowed_tools) & set(self.disallowed_tools))
        if clash:
            raise ValueError(f"tools both allowed and disallowed: {clash}")
        return self

    @property
    def permitted_tools(self) -> frozenset[str]:
        """Tools the policy lets through: enabled built-ins, allowed tools and MCP servers, minus disallowed."""
        names = set(self.builtin_tools) | set(self.allowed_tools)
        names |= {f"mcp__{name}" for name in self.mcp_servers}
        if self.include_sample_tools:
            names.add("mcp__kit")
        return frozenset(names - set(self.disallowed_tools))

    def with_profile(self, profile: str | None) -> AgentDefinitionSpec:
        """``AGENTKIT_AGENT_PROFILE`` (from ``cdk.json``) overrides the definition's profile when set."""
        if profile is None or profile == self.profile:
            return self
        return AgentDefinitionSpec.model_validate({**self.model_dump(), "profile": profile})

    def for_sandbox(self, status: SandboxStatus) -> AgentDefinitionSpec:
        """The definition the agent runs with, given the sandbox the start-up probe found
        (:func:`runtime.guard.profiles.probe_sandbox`): the ``developer`` programs added only inside a working
        sandbox (without the CLI's host-side file tools there), command tools off when the sandbox is required and
        unavailable or a root runtime cannot drop root."""
        allowlist = set(self.bash_allowlist)
        off: set[str] = set()
        if not status.commands_enabled:
            off |= COMMAND_TOOLS
        elif self.profile == "developer" and status.sandboxed:
            allowlist |= DEVELOPER_PROGRAMS
            off |= HOST_FILE_TOOLS  # commands can write the workspace: no check-then-open in another process
        update: dict[str, object] = {"bash_allowlist": tuple(sorted(allowlist))}
        if off:
            update["builtin_tools"] = tuple(t for t in self.builtin_tools if t not in off)
            update["allowed_tools"] = tuple(t for t in self.allowed_tools if t not in off)
        return self.model_copy(update=update)

    @classmethod
    def from_file(cls, path: Path) -> AgentDefinitionSpec:
        """Load a definition from a JSON file. Raises :class:`ConfigurationError` naming the bad field."""
        try:
            return cls.model_validate(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigurationError(f"cannot read agent definition {path}: {exc}") from None
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ConfigurationError(f"invalid agent definition {path}: {problems}") from None
