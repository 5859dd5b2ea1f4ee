"""The plumbing of one turn's message stream, kept apart from :mod:`runtime.agent.turn`'s turn logic.

- :class:`TurnState`: what a turn accumulates while its messages stream (text, tools, priced usage).
- :func:`guarded`: the SDK's message stream, with a dead CLI turned into :class:`CLIGone`.
- :func:`prompt_stream`: the prompt as one stream-json user message.
- :func:`sum_usage`, :func:`settle_task`, :func:`discard_client`: small helpers of the turn and connect paths.
- :class:`PrefetchedStore`: a session store whose first ``load()`` is answered from the resume probe.

Imports ``claude_agent_sdk`` (the error types). Environment: none.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from claude_agent_sdk import CLIConnectionError, ProcessError

logger = logging.getLogger(__name__)


class PrefetchedStore:
    """Wraps the session store so the resume probe's ``load()`` is not repeated by the SDK."""

    def __init__(self, inner: Any, key: dict[str, str], entries: list[Any]) -> None:
        self._inner, self._key = inner, key
        self._entries: list[Any] | None = entries

    async def load(self, key: dict[str, Any]) -> Any:
        if self._entries is not None and key.get("subpath") is None and key == self._key:
            entries, self._entries = self._entries, None
            return entries
        return await self._inner.load(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class TurnState:
    """One turn's progress: streamed text and tools, time to first token, and its priced model calls."""

    started: float
    clock: Callable[[], float] = time.monotonic  # the runner's clock (``started`` was read from it)
    client: Any = None
    budget: float | None = None  # this invocation's max_budget_usd (already capped by the session budget)
    ttft_ms: float | None = None
    streamed: bool = False
    running_cost: float = 0.0  # priced per model call from the streamed usage
    budget_hit: bool = False
    mirror_failed: bool = False  # the SDK reported a transcript batch it could not store (mirror_error)

    def __post_init__(self) -> None:
        self.text: list[str] = []
        self.tools: dict[str, str] = {}
        self.tool_names_used: list[str] = []
        self.call_usage: dict[str, Any] = {}  # usage of the model call under way (from its message_start)
        self.usages: list[dict[str, Any]] = []  # usage of each finished model call
        self.interrupt_task: asyncio.Task[Any] | None = None

    def mark_first_token(self) -> None:
        if self.ttft_ms is None:
            self.ttft_ms = (self.clock() - self.started) * 1000


class CLIGone(Exception):
    """The CLI died or closed its output before the turn's result."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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


async def settle_task(task: asyncio.Task[Any] | None, *, grace_s: float) -> None:
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


async def discard_client(client: Any) -> None:
    """Disconnect a client that failed to connect (stops its CLI process); errors are only logged."""
    try:
        await asyncio.wait_for(client.disconnect(), timeout=15)
    except BaseException as exc:  # the caller re-raises what brought it here
        logger.debug("ignored error while discarding a client: %r", exc)


async def guarded(messages: AsyncIterator[Any]) -> AsyncIterator[Any]:
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


async def prompt_stream(prompt: str, session_id: str, prompt_uuid: str) -> AsyncIterator[dict[str, Any]]:
    yield {
        "type": "user",
        "message": {"role": "user", "content": prompt},
        "parent_tool_use_id": None,
        "session_id": session_id,
        "uuid": prompt_uuid,
    }
