"""The SDK's message stream around one turn: the prompt as stream-json, a message iterator that turns a dying CLI
into :class:`CLIGone`, the settling of a background interrupt, and the sum of per-call usage blocks.

Used by :mod:`runtime.agent.turn`; nothing here keeps state.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

from claude_agent_sdk import CLIConnectionError, Message, ProcessError

logger = logging.getLogger(__name__)


class CLIGone(Exception):
    """The CLI died or closed its output before the turn's result."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def prompt_stream(prompt: str, session_id: str) -> AsyncIterator[dict[str, Any]]:
    """The prompt as one stream-json user message."""
    yield {
        "type": "user",
        "message": {"role": "user", "content": prompt},
        "parent_tool_use_id": None,
        "session_id": session_id,
        "uuid": str(uuid.uuid4()),
    }


async def guarded(messages: AsyncIterator[Message]) -> AsyncIterator[Message]:
    """Yield messages; a CLI that dies or closes its stream before the result becomes :class:`CLIGone`."""
    try:
        async for message in messages:
            yield message
    except (CLIConnectionError, ProcessError) as exc:
        raise CLIGone(str(exc) or type(exc).__name__) from exc
    except BaseExceptionGroup as group:  # anyio task groups wrap the connection error
        if group.subgroup((CLIConnectionError, ProcessError)) is not None:
            raise CLIGone(str(group.exceptions[0])) from group
        raise
    raise CLIGone("the output stream ended without a result")


async def settle_task(task: asyncio.Task[None] | None, *, grace_s: float) -> None:
    """Finish a background interrupt: give it ``grace_s`` to complete, then cancel it. Never raises its error."""
    if task is None:
        return
    if not task.done() and grace_s > 0:
        await asyncio.wait({task}, timeout=grace_s)
    if not task.done():
        task.cancel()
        await asyncio.wait({task})
    if not task.cancelled() and task.exception() is not None:
        logger.info("the interrupt request failed: %s", task.exception())


def sum_usage(usages: list[dict[str, Any]]) -> dict[str, Any]:
    """Add up API usage blocks (numbers, and nested blocks such as ``cache_creation``)."""
    total: dict[str, Any] = {}
    for usage in usages:
        for key, value in usage.items():
            if isinstance(value, dict):
                total[key] = sum_usage([total.get(key) or {}, value])
            elif isinstance(value, int | float) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total
