"""The agent's per-CLI-process state: the CLI reports total_cost_usd cumulatively per process."""

from __future__ import annotations

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from runtime.agent.process import CliProcess
from runtime.observe.costs import TurnCostTracker


def test_sdk_cost_is_the_difference_of_the_cumulative_totals() -> None:
    state = CliProcess(
        client=ClaudeSDKClient(ClaudeAgentOptions()),  # not connected: no CLI is started
        cost_tracker=TurnCostTracker(default_model="claude-sonnet-4-5"),
        max_turns=5,
        max_budget_usd=1.0,
    )
    assert state.sdk_cost(0.1) == 0.1
    assert state.sdk_cost(0.25) == 0.15
    assert state.sdk_cost(None) is None and state.sdk_cost_baseline == 0.25
