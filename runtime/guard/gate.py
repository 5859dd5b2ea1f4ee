"""The permission gate: the policy wired into the Claude Agent SDK twice.

- ``can_use_tool`` (:meth:`PermissionGate.can_use_tool_for`): the CLI asks it about every tool that is not
  pre-allowed; the answer is the policy's decision.
- a ``PreToolUse`` hook (:meth:`PermissionGate.pre_tool_use`): pre-allowed tools skip ``can_use_tool`` by
  the SDK's design, so the same policy gates them here, first among the ``PreToolUse`` hooks.

Every refusal is reported to telemetry (a ``ToolDenied`` metric attributed to its session and tool call).
Imports ``claude_agent_sdk`` (for the permission result types): import lazily, as :mod:`runtime.agent.turn` does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

from runtime.guard.policy import PermissionPolicy

CanUseTool = Callable[[str, dict[str, Any], Any], Awaitable[Any]]


class DenialSink(Protocol):
    """Where refusals are reported (:class:`runtime.observe.observer.Observer`)."""

    def tool_denied(
        self, tool_name: str, *, tool_use_id: str | None = None, claude_session_id: str | None = None
    ) -> None: ...


class PermissionGate:
    """Applies one :class:`PermissionPolicy` to the CLI's permission requests and ``PreToolUse`` hooks."""

    def __init__(self, policy: PermissionPolicy, denials: DenialSink) -> None:
        self.policy = policy
        self.denials = denials

    def can_use_tool_for(self, claude_session_id: str) -> CanUseTool:
        """``can_use_tool`` for one session (so a denial is attributed to its session and tool call)."""

        async def can_use_tool(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
            decision = self.policy.decide(tool_name, tool_input)
            if decision.allowed:
                return PermissionResultAllow()
            self.denials.tool_denied(
                tool_name,
                tool_use_id=getattr(context, "tool_use_id", None),  # ToolPermissionContext.tool_use_id
                claude_session_id=claude_session_id,
            )
            return PermissionResultDeny(message=decision.message)

        return can_use_tool

    async def pre_tool_use(
        self, hook_input: dict[str, Any], tool_use_id: str | None, context: Any
    ) -> dict[str, Any]:
        """``PreToolUse`` hook: ``{}`` lets the call through, a ``deny`` decision refuses it."""
        tool_name = str(hook_input.get("tool_name", ""))
        decision = self.policy.decide(tool_name, hook_input.get("tool_input") or {})
        if decision.allowed:
            return {}
        session_id = hook_input.get("session_id")
        self.denials.tool_denied(
            tool_name,
            tool_use_id=tool_use_id or hook_input.get("tool_use_id"),
            claude_session_id=session_id if isinstance(session_id, str) else None,
        )
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": decision.message,
            }
        }
