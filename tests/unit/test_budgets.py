"""Budgets: a request may lower limits, never raise them; the session budget stops turns, also after a
restart; SDK error subtypes map to clear codes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runtime.accounting import SpendLedger
from runtime.agent.budget_policy import BudgetPolicy
from runtime.agent.results import error_for_result
from runtime.errors import AgentKitError, AgentResultError, BudgetExceeded, InvalidRequest, MaxTurnsExceeded
from runtime.observe.costs import compute_turn_cost

POLICY = BudgetPolicy(max_turns=20, max_budget_usd=2.0, session_budget_usd=5.0)


def test_defaults_come_from_config() -> None:
    limits = POLICY.effective_limits()
    assert (limits.max_turns, limits.max_budget_usd, limits.session_remaining_usd) == (20, 2.0, 5.0)


def test_request_may_lower_limits() -> None:
    limits = POLICY.effective_limits(5, 0.5)
    assert (limits.max_turns, limits.max_budget_usd) == (5, 0.5)


@pytest.mark.parametrize(
    ("turns", "budget", "message"),
    [
        (21, None, "max_turns 21 exceeds the configured limit 20"),
        (None, 2.5, "max_budget_usd 2.5 exceeds the configured limit 2.0"),
        (0, None, "positive"),
        (1.5, None, "positive integer"),
        (None, -1.0, "positive"),
        (None, float("nan"), "positive"),
        (True, None, "positive"),
    ],
)
def test_request_cannot_raise_limits_or_send_nonsense(turns: object, budget: object, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message) as info:
        POLICY.effective_limits(turns, budget)  # type: ignore[arg-type]
    assert (info.value.code, info.value.http_status) == ("invalid_request", 400)


def test_unlimited_config_accepts_any_positive_request() -> None:
    limits = BudgetPolicy().effective_limits(500, 100.0)
    assert (limits.max_turns, limits.max_budget_usd, limits.session_remaining_usd) == (500, 100.0, None)
    assert BudgetPolicy().effective_limits() == BudgetPolicy().effective_limits(None, None)


def test_invocation_budget_is_capped_by_what_the_session_has_left() -> None:
    assert POLICY.effective_limits(session_spent_usd=4.25).max_budget_usd == pytest.approx(0.75)
    assert POLICY.effective_limits(None, 0.5, session_spent_usd=4.25).max_budget_usd == 0.5
    only_session = BudgetPolicy(session_budget_usd=1.0)
    assert only_session.effective_limits(session_spent_usd=0.4).max_budget_usd == pytest.approx(0.6)


def test_exhausted_session_budget_is_budget_exceeded() -> None:
    POLICY.check_session(4.99)
    with pytest.raises(BudgetExceeded) as info:
        POLICY.check_session(5.0)
    assert (info.value.code, info.value.http_status) == ("budget_exceeded", 402)
    assert "$5.00" in info.value.message
    with pytest.raises(BudgetExceeded):
        POLICY.effective_limits(1, 0.1, session_spent_usd=7.0)
    BudgetPolicy().check_session(1e9)  # no session budget: never


def test_bad_config_is_rejected_at_start() -> None:
    with pytest.raises(ValueError, match="budget config: session_budget_usd"):
        BudgetPolicy(session_budget_usd=0)
    with pytest.raises(ValueError, match="max_turns"):
        BudgetPolicy(max_turns=2.5)  # type: ignore[arg-type]


def test_session_budget_survives_a_restart(tmp_path: Path) -> None:
    """Spend persisted with the session (SQLite store state) stops the session in a new process."""
    from runtime.session_store.sqlite import SqliteSessionStore

    policy = BudgetPolicy(session_budget_usd=0.02)
    usage = {"input_tokens": 1000, "output_tokens": 200, "cache_creation_input_tokens": 300}
    model = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
    db = tmp_path / "s.db"
    turn_cost = compute_turn_cost(None, usage, default_model=model).total_cost_usd  # 0.007125

    async def process(turns: int) -> int:
        """One 'process': its own store object; runs turns until the budget stops it."""
        store = SqliteSessionStore(db)
        done = 0
        for _ in range(turns):
            spent = float(((await store.get_state("sess-1")) or {}).get("spent_usd", 0.0))
            try:
                policy.check_session(spent)
            except BudgetExceeded:
                break
            await store.put_state("sess-1", {"spent_usd": spent + turn_cost})
            done += 1
        return done

    assert asyncio.run(process(2)) == 2  # 0.01425 spent
    assert asyncio.run(process(5)) == 1  # after a restart: one more turn (0.021375), then stopped
    assert asyncio.run(process(5)) == 0


@pytest.mark.parametrize(
    ("subtype", "is_error", "cls", "code", "status"),
    [
        ("error_max_turns", True, MaxTurnsExceeded, "max_turns_exceeded", 422),
        ("error_max_budget_usd", True, BudgetExceeded, "budget_exceeded", 402),
        ("error_during_execution", True, AgentResultError, "execution_error", 500),
        ("error_max_structured_output_retries", True, AgentResultError, "agent_error", 500),
        ("error_something_new", True, AgentResultError, "agent_error", 500),
        ("success", True, AgentResultError, "model_error", 502),
    ],
)
def test_result_subtypes_map_to_clear_codes(
    subtype: str, is_error: bool, cls: type, code: str, status: int
) -> None:
    error = error_for_result(subtype, is_error=is_error, errors=["boom"])
    assert isinstance(error, AgentKitError) and isinstance(error, cls)
    assert (error.code, error.http_status) == (code, status)
    assert "boom" in error.message


def test_success_is_no_error_and_throttling_is_429() -> None:
    assert error_for_result("success", is_error=False) is None
    throttled = error_for_result("success", is_error=True, api_error_status=429)
    assert throttled is not None and throttled.http_status == 429 and "HTTP 429" in throttled.message


def test_the_spend_ledger_folds_what_was_counted_before_the_base_was_known_in_once() -> None:
    ledger = SpendLedger()
    assert not ledger.known and ledger.spent_usd is None and ledger.so_far() == 0.0
    assert ledger.add(0.25) == 0.25 and ledger.add(0.5, turns=0) == 0.75  # base unknown: kept aside
    assert ledger.unpersisted_usd == 0.75 and ledger.turns is None
    ledger.load({"spent_usd": 1.0, "turns": 4})
    assert ledger.known and ledger.spent_usd == 1.75 and ledger.turns == 5 and ledger.unpersisted_usd == 0.0
    ledger.load({"spent_usd": 9.0, "turns": 9})  # a second (concurrent) read changes nothing
    assert ledger.add(0.25) == 2.0
    assert ledger.state() == {"spent_usd": 2.0, "turns": 6}


def test_the_spend_ledger_of_a_new_session_starts_from_zero() -> None:
    ledger = SpendLedger()
    ledger.load({})
    assert ledger.state() == {"spent_usd": 0.0, "turns": 0} and ledger.so_far() == 0.0
