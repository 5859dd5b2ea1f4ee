"""A team's own agent directory, written anywhere (a test's ``tmp_path``: outside the kit's tree), with one tool of
each kind the kit takes from it: an in-process SDK tool in a ``tools/`` package (``mcp__agent__queue_depth``) and a
Lambda behind the Gateway (``mcp__gateway__tickets___get_ticket``). The tests, ``make demo --agent-dir`` and the
docs' example build on it."""

from __future__ import annotations

import json
from pathlib import Path

SDK_TOOL = "mcp__agent__queue_depth"
GATEWAY_TOOL = "mcp__gateway__tickets___get_ticket"
PROMPT = "You answer questions about our build queue and our tickets. Name the tool you used."

TOOLS_INIT = '''"""The team's in-process tools (served as the MCP server `agent`)."""

from typing import Any

from claude_agent_sdk import tool

from .queue import depth


@tool("queue_depth", "How many build jobs wait in a queue.", {"queue": str})
async def queue_depth(args: dict[str, Any]) -> dict[str, Any]:
    queue = str(args.get("queue") or "main")
    return {"content": [{"type": "text", "text": f"queue {queue}: {depth(queue)} jobs waiting"}]}


TOOLS = [queue_depth]
'''

QUEUE = """def depth(queue: str) -> int:
    return {"main": 7, "nightly": 2}.get(queue, 0)
"""

LAMBDA = '''"""A Gateway Lambda target: the Gateway names the tool in the client context as <target>___<tool>."""


def handler(event, context):
    custom = getattr(getattr(context, "client_context", None), "custom", None) or {}
    tool = str(custom.get("bedrockAgentCoreToolName", "")).split("___")[-1]
    if tool != "get_ticket":
        return {"error": {"code": "unknown_tool", "message": tool}}
    return {"ticket": event.get("ticket_id"), "status": "open", "owner": "platform-team"}
'''

TARGET = {
    "description": "Our ticket tracker, read-only",
    "handler": "app.handler",
    "tools": [
        {
            "name": "get_ticket",
            "description": "Status and owner of one ticket.",
            "input_schema": {
                "type": "object",
                "properties": {"ticket_id": {"type": "string", "description": "e.g. OPS-12"}},
                "required": ["ticket_id"],
            },
        }
    ],
}


COMMAND = "---\ndescription: Say hello to someone\n---\nSay hello to $ARGUMENTS and name the team.\n"
SKILL = "---\nname: greet\ndescription: Greets people politely\n---\nGreet the user by name, politely.\n"


def add_plugin(agent: Path) -> Path:
    """A plugin of the agent directory: the slash command ``/team:hello`` and the skill ``team:greet``."""
    plugin = agent / "plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "team", "version": "1.0.0"}))
    (plugin / "commands").mkdir()
    (plugin / "commands" / "hello.md").write_text(COMMAND)
    (plugin / "skills" / "greet").mkdir(parents=True)
    (plugin / "skills" / "greet" / "SKILL.md").write_text(SKILL)
    return plugin


def write_custom_agent(root: Path, *, name: str = "our-agent") -> Path:
    """The agent directory ``root/name`` (created) and its path."""
    agent = root / name
    (agent / "tools").mkdir(parents=True)
    (agent / "agent.json").write_text(
        json.dumps({"system_prompt": PROMPT, "include_sample_tools": False, "max_turns": 8}, indent=2)
    )
    (agent / "tools" / "__init__.py").write_text(TOOLS_INIT)
    (agent / "tools" / "queue.py").write_text(QUEUE)
    target = agent / "gateway" / "tickets"
    target.mkdir(parents=True)
    (target / "target.json").write_text(json.dumps(TARGET, indent=2))
    (target / "app.py").write_text(LAMBDA)
    return agent
