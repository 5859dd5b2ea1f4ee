"""The permission gate: the policy wired into the Claude Agent SDK twice.

- ``can_use_tool`` (:meth:`PermissionGate.can_use_tool_for`): the CLI asks it about every tool that is not
  pre-allowed; the answer is the policy's decision.
- a ``PreToolUse`` hook (:meth:`PermissionGate.pre_tool_use`): pre-allowed tools skip ``can_use_tool`` by
  the SDK's design, so the same policy gates them here, first among the ``PreToolUse`` hooks.

With approvals (:mod:`runtime.approvals`), a call the policy allows may still have to wait: the hook then refuses it
with ``"continue": false``, which ends the turn at once (no further model call) with the request stored; the turn
reports ``awaiting_approval``. Only the hook asks the approvals, so a granted approval is used once.

Every refusal is reported to telemetry (a ``ToolDenied`` metric attributed to its session and tool call).
Imports ``claude_agent_sdk`` (for the permission result types): import lazily, as :mod:`runtime.agent.turn` does.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

from runtime.guard.policy import PermissionPolicy

logger = logging.getLogger(__name__)

CanUseTool = Callable[[str, dict[str, Any], Any], Awaitable[Any]]


class DenialSink(Protocol):
    """Where refusals are reported (:class:`runtime.observe.observer.Observer`)."""

    def tool_denied(
        self, tool_name: str, *, tool_use_id: str | None = None, claude_session_id: str | None = None
    ) -> None: ...


class Waiting(Protocol):
    """A call's pending approval request, as the gate reports it (:class:`runtime.approvals.ApprovalRecord`)."""

    @property
    def id(self) -> str: ...

    @property
    def rule(self) -> str: ...


class ApprovalCheck(Protocol):
    """Whether a call the policy allows must wait for a person (:class:`runtime.approvals.Approvals`)."""

    async def check(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        *,
        claude_session_id: str,
        tool_use_id: str | None = None,
        workspace: str | None = None,
    ) -> Waiting | None: ...


class PermissionGate:
    """Applies one :class:`PermissionPolicy` to the CLI's permission requests and ``PreToolUse`` hooks."""

    def __init__(
        self, policy: PermissionPolicy, denials: DenialSink, approvals: ApprovalCheck | None = None
    ) -> None:
        self.policy = policy
        self.denials = denials
        self.approvals = approvals

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
        tool_input = hook_input.get("tool_input") or {}
        decision = self.policy.decide(tool_name, tool_input)
        session_id = hook_input.get("session_id")
        claude_session_id = session_id if isinstance(session_id, str) else None
        tool_use_id = tool_use_id or hook_input.get("tool_use_id")
        if decision.allowed and self.approvals is not None and claude_session_id is not None:
            try:
                waiting = await self.approvals.check(
                    tool_name,
                    tool_input,
                    claude_session_id=claude_session_id,
                    tool_use_id=tool_use_id,
                    workspace=str(self.policy.workspace),
                )
            except Exception as exc:  # fail closed: a call whose request cannot be stored does not run
                logger.warning("approval request for %s could not be stored: %s", tool_name, exc)
                self.denials.tool_denied(
                    tool_name, tool_use_id=tool_use_id, claude_session_id=claude_session_id
                )
                return _deny(
                    "This call needs a person's approval, and the request could not be recorded just now. "
                    "It did not run; try it again later."
                )
            if waiting is None:
                return {}
            self.denials.tool_denied(tool_name, tool_use_id=tool_use_id, claude_session_id=claude_session_id)
            message = (
                f"This call needs a person's approval ({waiting.rule}); it did not run. The request is "
                f"{waiting.id}; the turn ends here and goes on when it is answered."
            )
            return {**_deny(message), "continue": False, "stopReason": f"awaiting approval {waiting.id}"}
        if decision.allowed:
            return {}
        self.denials.tool_denied(tool_name, tool_use_id=tool_use_id, claude_session_id=claude_session_id)
        return _deny(decision.message)


def _deny(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
