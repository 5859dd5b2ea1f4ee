"""Say when a command hit its session's memory or process limit: to the model, in the log and as a metric.

A command the kernel killed at the session's memory limit ends with "Killed" (exit 137) and nothing else; a fork
refused at the process limit with "Resource temporarily unavailable". Neither says why. After every tool call this
hook reads the session's cgroup event counters (:meth:`runtime.guard.resources.SessionCgroup.new_hits`); when one
rose, the tool's result gets a line for the model naming the limit, and ``on_hit`` logs it and counts the
``SessionLimitHit`` metric. With rlimit enforcement there is no counter to read: the command itself gets ``ENOMEM``
or ``EAGAIN``, which its own error message shows.

Hook input and output shapes: ``claude_agent_sdk/types.py`` (``PostToolUseHookSpecificOutput``,
``PostToolUseFailureHookSpecificOutput``: ``additionalContext``).

Environment: none.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from runtime.guard.resources import ResourceLimits, SessionCgroup

logger = logging.getLogger(__name__)

#: ``(limit, times, limits)``: called once per limit that was hit during a tool call.
OnHit = Callable[[str, int, ResourceLimits], None]


def hit_message(limit: str, times: int, limits: ResourceLimits) -> str:
    """What the model reads after a tool call that hit a limit."""
    if limit == "memory":
        return (
            f"The session's memory limit ({limits.memory_mb} MiB for the agent and all its commands) was reached: "
            f"the system killed {times} process(es) of this command. Use less memory (smaller inputs, streaming) "
            "or split the work."
        )
    return (
        f"The session's process limit ({limits.processes} processes and threads) was reached: {times} process "
        "creation(s) of this command were refused. Start fewer processes at once."
    )


def make_limit_hook(group: SessionCgroup, limits: ResourceLimits, on_hit: OnHit) -> Callable[..., Any]:
    """A PostToolUse / PostToolUseFailure hook for one session's CLI process; never raises into the SDK."""

    async def after_tool(hook_input: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        try:
            hits = group.new_hits()
        except Exception:  # a counter that cannot be read must not fail the tool call
            logger.exception("could not read the session's limit counters")
            return {}
        if not hits:
            return {}
        for limit, times in hits.items():
            try:
                on_hit(limit, times, limits)
            except Exception:
                logger.exception("could not record a limit hit")
        event = (
            hook_input.get("hook_event_name", "PostToolUse")
            if isinstance(hook_input, dict)
            else "PostToolUse"
        )
        text = " ".join(hit_message(limit, times, limits) for limit, times in hits.items())
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}

    return after_tool
