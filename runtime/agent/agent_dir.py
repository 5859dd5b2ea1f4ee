"""An agent directory: a team's own agent in its own files, outside the kit's code, so a kit upgrade never merges.

Layout (every part but ``agent.json`` optional; ``agents/sample/`` is the kit's own)::

    <dir>/agent.json              the definition: AgentDefinitionSpec's fields (prompt, model limits, profile,
                                  tools, MCP servers, subagents, network and sandbox rules)
    <dir>/tools/__init__.py       a Python package of SDK tools: ``TOOLS`` (functions made with the SDK's
                                  ``@tool``), served in process as the MCP server ``agent`` (``mcp__agent__<name>``);
                                  optional ``HOOKS`` ({event: [HookMatcher, ...]}, SDK Python hooks, run in the
                                  runtime after the kit's permission gate)
    <dir>/gateway/<target>/       a Lambda behind the AgentCore Gateway: ``target.json`` (handler, tools and their
                                  JSON schemas) and the function's code; the model sees
                                  ``mcp__gateway__<target>___<tool>``
    <dir>/plugin/                 a Claude Code plugin of the team's: slash commands (``commands/*.md``), skills
                                  (``skills/<name>/SKILL.md``) and subagents (``agents/*.md``), loaded with
                                  ``--plugin-dir``; hooks, MCP and LSP servers in it are refused (hooks would run
                                  shell commands outside the OS sandbox; MCP servers belong in ``agent.json``)
    <dir>/requirements.txt        extra wheels the tools package needs, installed into the image

What the directory may not bring is refused here, with the file and the reason: unknown keys, a tools package
without ``TOOLS``, a Gateway target without tools. Claude Code's filesystem settings stay closed
(``setting_sources`` is empty): nothing in the repository under work, and no shell hook of any kind, is loaded.

:func:`read_agent_dir` reads and checks the files without running the team's code (``cdk synth`` calls it);
:func:`load_tools` imports the tools package (the runtime, at start, so a bad package stops it with exit 2).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from runtime.agent.definition import AgentDefinitionSpec
from runtime.errors import ConfigurationError

AGENT_FILE = "agent.json"
TOOLS_PACKAGE = "tools"
GATEWAY_DIR = "gateway"
TARGET_FILE = "target.json"
PLUGIN_DIR = "plugin"
PLUGIN_MANIFEST = ".claude-plugin/plugin.json"
#: What a plugin may not bring: hook and server definitions, as files or as manifest keys.
PLUGIN_REFUSED_FILES = ("hooks", ".mcp.json", ".lsp.json")
PLUGIN_REFUSED_KEYS = ("hooks", "mcpServers", "lspServers")
REQUIREMENTS_FILE = "requirements.txt"
#: The in-process MCP server of the directory's tools package: the model sees ``mcp__agent__<tool>``.
TOOLS_SERVER = "agent"
#: Where the image puts the directory (Dockerfile ``COPY agent/``) and the variable that names it.
IMAGE_PATH = "/app/agent"
#: Gateway target names: the AgentCore L2 accepts letters, digits and single hyphens; kept short enough that
#: ``<target>___<tool>`` stays a readable tool name.
TARGET_NAME = re.compile(r"^[A-Za-z0-9](?:-?[A-Za-z0-9]){0,39}$")
#: Hook events the SDK accepts from Python (claude_agent_sdk.types.HookEvent).
HOOK_EVENTS = frozenset(
    {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "Stop",
        "SubagentStop",
        "PreCompact",
        "Notification",
        "SubagentStart",
        "PermissionRequest",
    }
)


#: What a Gateway tool's input schema may say: the fields of the Gateway's ``SchemaDefinition`` (CloudFormation
#: AWS::BedrockAgentCore::GatewayTarget: Type, Description, Properties, Required, Items).
SCHEMA_KEYS = frozenset({"type", "description", "properties", "required", "items"})
SCHEMA_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})


def check_schema(schema: Any, where: str = "input_schema") -> None:
    """Raise ``ValueError`` naming the first part of ``schema`` the Gateway cannot express."""
    if not isinstance(schema, dict):
        raise ValueError(f"{where} must be an object")
    unknown = sorted(set(schema) - SCHEMA_KEYS)
    if unknown:
        raise ValueError(
            f"{where}: the Gateway's tool schema has no {unknown}; it takes {sorted(SCHEMA_KEYS)}"
        )
    if schema.get("type") not in SCHEMA_TYPES:
        raise ValueError(f"{where}.type must be one of {sorted(SCHEMA_TYPES)}, got {schema.get('type')!r}")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ValueError(f"{where}.properties must be an object")
    for name, sub in properties.items():
        check_schema(sub, f"{where}.properties.{name}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not set(required) <= set(properties):
        raise ValueError(f"{where}.required must list names of its properties")
    if "items" in schema:
        check_schema(schema["items"], f"{where}.items")


class GatewayToolSpec(BaseModel):
    """One tool of a Gateway Lambda target."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
    description: str = Field(min_length=1, max_length=2000)
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})

    @field_validator("input_schema")
    @classmethod
    def _gateway_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_schema(value)
        if value["type"] != "object":
            raise ValueError("input_schema.type must be 'object' (a tool's arguments)")
        return value


class GatewayTargetSpec(BaseModel):
    """``gateway/<target>/target.json``: the Lambda's handler and the tools it answers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = Field(min_length=1, max_length=200)
    handler: str = Field(default="app.handler", pattern=r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")
    tools: tuple[GatewayToolSpec, ...] = Field(min_length=1)
    timeout_s: int = Field(default=15, ge=1, le=900)
    memory_mb: int = Field(default=256, ge=128, le=10240)
    environment: dict[str, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class GatewayTarget:
    """A checked Gateway target: its name (the directory's), its code directory and its spec."""

    name: str
    directory: Path
    spec: GatewayTargetSpec

    def wire_tools(self) -> list[dict[str, Any]]:
        """The tools as the Gateway lists them over MCP (``<target>___<tool>``, ``inputSchema``)."""
        return [
            {"name": f"{self.name}___{t.name}", "description": t.description, "inputSchema": t.input_schema}
            for t in self.spec.tools
        ]


@dataclass(frozen=True)
class AgentDirectory:
    """A checked agent directory (nothing of the team's code has run)."""

    path: Path
    definition: AgentDefinitionSpec
    tools_package: Path | None = None
    gateway_targets: tuple[GatewayTarget, ...] = ()
    requirements: Path | None = None
    plugin: Path | None = None

    @property
    def tool_names(self) -> list[str]:
        """Names the model sees for the Gateway tools (the package's are known once it is imported)."""
        return [f"mcp__gateway__{w['name']}" for t in self.gateway_targets for w in t.wire_tools()]


@dataclass(frozen=True)
class AgentTools:
    """What the tools package gives the runtime: the ``agent`` MCP server config and its Python hooks."""

    server: Any | None = None
    tool_names: tuple[str, ...] = ()
    hooks: dict[str, list[Any]] = field(default_factory=dict)


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors())


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from None


def read_agent_dir(path: Path) -> AgentDirectory:
    """Read and check the agent directory at ``path`` without importing its code.

    Raises:
        ConfigurationError: naming the file and every problem found in it.
    """
    path = Path(path)
    if not path.is_dir():
        raise ConfigurationError(f"agent directory {path} does not exist or is not a directory")
    agent_file = path / AGENT_FILE
    if not agent_file.is_file():
        raise ConfigurationError(f"agent directory {path} has no {AGENT_FILE} (the agent's definition)")
    definition = AgentDefinitionSpec.from_file(agent_file)
    tools = path / TOOLS_PACKAGE
    tools_package = None
    if tools.exists():
        if not (tools / "__init__.py").is_file():
            raise ConfigurationError(
                f"{tools} is not a Python package: it needs an __init__.py defining TOOLS"
            )
        tools_package = tools
        if f"mcp__{TOOLS_SERVER}" not in definition.allowed_tools:
            # The package's tools are the team's own: they run without asking, the permission gate still checks
            # each call (as for the kit's sample server).
            definition = definition.model_copy(
                update={"allowed_tools": (*definition.allowed_tools, f"mcp__{TOOLS_SERVER}")}
            )
    targets = []
    gateway = path / GATEWAY_DIR
    if gateway.exists():
        for target_dir in sorted(
            p for p in gateway.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
        ):
            if not TARGET_NAME.match(target_dir.name):
                raise ConfigurationError(
                    f"{target_dir}: a Gateway target's directory name must be letters, digits and single "
                    "hyphens (at most 40), e.g. 'billing' or 'ticket-search'"
                )
            spec_file = target_dir / TARGET_FILE
            if not spec_file.is_file():
                raise ConfigurationError(f"{target_dir} has no {TARGET_FILE} (the handler and its tools)")
            try:
                spec = GatewayTargetSpec.model_validate(_json(spec_file))
            except ValidationError as exc:
                raise ConfigurationError(f"invalid {spec_file}: {_problems(exc)}") from None
            module = spec.handler.split(".")[0]
            if (
                not (target_dir / f"{module}.py").is_file()
                and not (target_dir / module / "__init__.py").is_file()
            ):
                raise ConfigurationError(
                    f"{spec_file}: handler {spec.handler!r} names no module in {target_dir}"
                )
            names = [t.name for t in spec.tools]
            if len(set(names)) != len(names):
                raise ConfigurationError(f"{spec_file}: tool names repeat: {names}")
            targets.append(GatewayTarget(target_dir.name, target_dir, spec))
    requirements = path / REQUIREMENTS_FILE
    return AgentDirectory(
        path=path,
        definition=definition,
        tools_package=tools_package,
        gateway_targets=tuple(targets),
        requirements=requirements if requirements.is_file() else None,
        plugin=_checked_plugin(path / PLUGIN_DIR),
    )


def _checked_plugin(plugin: Path) -> Path | None:
    """The plugin directory when it brings only prompts (commands, skills, subagents); None when absent.

    Raises:
        ConfigurationError: no manifest, or it brings hooks, MCP or LSP servers.
    """
    if not plugin.exists():
        return None
    manifest = plugin / PLUGIN_MANIFEST
    if not manifest.is_file():
        raise ConfigurationError(f"{plugin} has no {PLUGIN_MANIFEST} (a plugin's name and version)")
    data = _json(manifest)
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise ConfigurationError(f"{manifest} must be an object with a name")
    refused = [key for key in PLUGIN_REFUSED_KEYS if key in data]
    refused += [name for name in PLUGIN_REFUSED_FILES if (plugin / name).exists()]
    if refused:
        raise ConfigurationError(
            f"{plugin} brings {refused}: a plugin of the agent directory may hold commands, skills and agents only "
            "(hooks run shell commands outside the OS sandbox; MCP servers go into agent.json's mcp_servers, where "
            "the permission policy sees them)"
        )
    return plugin


def load_tools(directory: AgentDirectory) -> AgentTools:
    """Import the directory's tools package and build its in-process MCP server.

    The package is imported under a name of its own (``agentkit_agent_tools``), so it cannot shadow a module of
    the kit or of a dependency, and its relative imports work.

    Raises:
        ConfigurationError: the package does not import, or ``TOOLS`` / ``HOOKS`` are not what the SDK takes.
    """
    if directory.tools_package is None:
        return AgentTools()
    from claude_agent_sdk import HookMatcher, SdkMcpTool, create_sdk_mcp_server

    package = directory.tools_package
    module_name = "agentkit_agent_tools"
    module = sys.modules.get(module_name)
    if module is None or Path(getattr(module, "__file__", "")).parent != package:
        spec = importlib.util.spec_from_file_location(
            module_name, package / "__init__.py", submodule_search_locations=[str(package)]
        )
        if spec is None or spec.loader is None:
            raise ConfigurationError(f"cannot import the tools package {package}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[module_name]
            raise ConfigurationError(
                f"the tools package {package} failed to import: {type(exc).__name__}: {exc}"
            ) from None
    tools = getattr(module, "TOOLS", None)
    if not isinstance(tools, list | tuple) or not tools or not all(isinstance(t, SdkMcpTool) for t in tools):
        raise ConfigurationError(
            f"{package}/__init__.py must define TOOLS, a non-empty list of functions decorated with "
            "claude_agent_sdk's @tool(name, description, input_schema)"
        )
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"{package}: TOOLS names repeat: {names}")
    hooks = getattr(module, "HOOKS", None) or {}
    if not isinstance(hooks, dict) or any(
        event not in HOOK_EVENTS
        or not isinstance(matchers, list)
        or not all(isinstance(m, HookMatcher) for m in matchers)
        for event, matchers in hooks.items()
    ):
        raise ConfigurationError(
            f"{package}/__init__.py: HOOKS must map hook events ({', '.join(sorted(HOOK_EVENTS))}) to lists of "
            "claude_agent_sdk.HookMatcher"
        )
    return AgentTools(
        server=create_sdk_mcp_server(TOOLS_SERVER, tools=list(tools)),
        tool_names=tuple(f"mcp__{TOOLS_SERVER}__{n}" for n in names),
        hooks=dict(hooks),
    )
