"""What the agent knows about a session's current CLI process; owned by the agent, held opaquely by the session.

A warm ``ClaudeSDKClient`` is one CLI process, and the CLI counts usage and ``total_cost_usd`` cumulatively per
process: this state starts afresh with each new client and is dropped with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.observe.costs import TurnCostTracker

#: The CLI flags a client was started with: ``(--max-turns, --max-budget-usd)``.
ClientLimits = tuple[int | None, float | None]


@dataclass
class AgentClientState:
    """One CLI process: the flags it was started with, its cost tracker, and its last cumulative cost."""

    cost_tracker: TurnCostTracker  # prices each result from the process's cumulative usage
    limits: ClientLimits = (None, None)
    resumed: bool = False  # the process resumed a stored transcript
    sdk_cost_baseline: float = 0.0  # the CLI's cumulative total_cost_usd at the last result

    def sdk_cost(self, total_cost_usd: float | None) -> float | None:
        """This turn's part of the CLI's cumulative ``total_cost_usd`` (None when the CLI reported none)."""
        if total_cost_usd is None:
            return None
        cost = round(total_cost_usd - self.sdk_cost_baseline, 6)
        self.sdk_cost_baseline = total_cost_usd
        return cost
