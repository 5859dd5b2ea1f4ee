"""One CLI process of a session, and what the agent knows of it.

A warm ``ClaudeSDKClient`` is one Claude Code CLI process, and the CLI counts usage and ``total_cost_usd``
cumulatively per process: :class:`CliProcess` holds the client with the flags it was started with and its cost
counters; it starts afresh with each new client (:mod:`runtime.agent.runner` connects it) and is dropped with it.
The turn (:mod:`runtime.agent.turn`) streams on its client and prices its results.

Imports ``claude_agent_sdk`` (the message type). Environment variables: none.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from claude_agent_sdk import Message

from runtime.observe.costs import TurnCostTracker


class AgentClient(Protocol):
    """What a turn and its process use of a connected ``ClaudeSDKClient`` (tests pass scripted ones)."""

    async def query(self, prompt: AsyncIterable[dict[str, Any]]) -> None: ...

    def receive_response(self) -> AsyncIterator[Message]: ...

    async def interrupt(self) -> None: ...

    async def disconnect(self) -> None: ...


@dataclass
class CliProcess:
    """One connected client, i.e. one CLI process: the flags it was started with, its cost tracker and its last
    cumulative cost. The session holds it as its connection (:class:`runtime.sessions.Connection`)."""

    client: AgentClient
    cost_tracker: TurnCostTracker  # prices each result from the process's cumulative usage
    max_turns: int | None = None  # --max-turns: per turn, so the invocation's limit
    max_budget_usd: float | None = None  # --max-budget-usd: cumulative per process, a backstop
    resumed: bool = False  # the process resumed a stored transcript
    sdk_cost_baseline: float = 0.0  # the CLI's cumulative total_cost_usd at the last result
    cwd: Path | None = None  # the working directory the CLI was started in

    def sdk_cost(self, total_cost_usd: float | None) -> float | None:
        """This turn's part of the CLI's cumulative ``total_cost_usd`` (None when the CLI reported none)."""
        if total_cost_usd is None:
            return None
        cost = round(total_cost_usd - self.sdk_cost_baseline, 6)
        self.sdk_cost_baseline = total_cost_usd
        return cost

    async def disconnect(self) -> None:
        await self.client.disconnect()
