"""Turn and spend limits: per-invocation ``max_turns`` / ``max_budget_usd`` and a per-session budget.

Policy (chosen and documented here):

* Config sets the ceilings. A request may *lower* ``max_turns`` / ``max_budget_usd``; asking for more than the
  configured ceiling is rejected with :class:`~runtime.errors.InvalidRequest` (``invalid_request``, HTTP 400)
  rather than silently clamped, so a client learns its request was not honoured. Zero, negative, non-finite or
  non-integer values are rejected the same way.
* The invocation's effective ``max_budget_usd`` is also capped by what is left of the session budget, so the
  SDK stops a runaway turn before the session overshoots.
* :meth:`BudgetPolicy.check_session` raises :class:`~runtime.errors.BudgetExceeded` (``budget_exceeded``, 402)
  before a turn starts once the session's cumulative spend (persisted with the session by the caller, so it
  survives a new microVM) has reached the session budget. The caller also records the ``BudgetExceeded``
  metric.

Enforced by the turn (:mod:`runtime.agent.turn`, its *begin* phase and the per-call pricing of its *stream*
phase) and by the CLI's own flags (:mod:`runtime.agent.runner`). The session's spend comes from its account
(:mod:`runtime.accounting`).

Environment variables: none read here; the caller builds the policy from settings
(``AGENTKIT_MAX_TURNS``, ``AGENTKIT_MAX_BUDGET_USD``, ``AGENTKIT_SESSION_BUDGET_USD``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from runtime.errors import BudgetExceeded, InvalidRequest


@dataclass(frozen=True, slots=True)
class EffectiveLimits:
    """What to pass to ``ClaudeAgentOptions`` for one invocation."""

    max_turns: int | None
    max_budget_usd: float | None
    session_remaining_usd: float | None


def _check_number(name: str, value: float | None, *, integer: bool) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InvalidRequest(f"{name} must be a positive number, got {value!r}")
    if integer and not isinstance(value, int):
        raise InvalidRequest(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True, slots=True)
class BudgetPolicy:
    """Ceilings from config; None means unlimited.

    Raises:
        ValueError: a ceiling is not positive (a configuration mistake, raised at start-up).
    """

    max_turns: int | None = None
    max_budget_usd: float | None = None
    session_budget_usd: float | None = None

    def __post_init__(self) -> None:
        for name, value, integer in (
            ("max_turns", self.max_turns, True),
            ("max_budget_usd", self.max_budget_usd, False),
            ("session_budget_usd", self.session_budget_usd, False),
        ):
            try:
                _check_number(name, value, integer=integer)
            except InvalidRequest as exc:
                raise ValueError(f"budget config: {exc.message}") from None

    def remaining(self, spent_usd: float) -> float | None:
        """USD left in the session budget (never negative); None when there is no session budget."""
        if self.session_budget_usd is None:
            return None
        return max(self.session_budget_usd - max(spent_usd, 0.0), 0.0)

    def check_session(self, spent_usd: float) -> None:
        """Refuse a new turn once the session has spent its budget.

        Raises:
            BudgetExceeded: ``spent_usd`` ≥ ``session_budget_usd`` (code ``budget_exceeded``, HTTP 402).
        """
        remaining = self.remaining(spent_usd)
        if remaining is not None and remaining <= 0:
            raise BudgetExceeded(
                f"the session has spent ${spent_usd:.4f} of its ${self.session_budget_usd:.2f} budget; "
                "start a new session or raise AGENTKIT_SESSION_BUDGET_USD"
            )

    def effective_limits(
        self,
        requested_max_turns: int | None = None,
        requested_max_budget_usd: float | None = None,
        *,
        session_spent_usd: float = 0.0,
    ) -> EffectiveLimits:
        """Limits for one invocation: the request's values when they lower the ceilings, else the ceilings,
        with ``max_budget_usd`` further capped by the session's remaining budget.

        Raises:
            InvalidRequest: a requested value is not positive, or exceeds the configured ceiling.
            BudgetExceeded: the session budget is already spent (see :meth:`check_session`).
        """
        _check_number("max_turns", requested_max_turns, integer=True)
        _check_number("max_budget_usd", requested_max_budget_usd, integer=False)
        if (
            requested_max_turns is not None
            and self.max_turns is not None
            and requested_max_turns > self.max_turns
        ):
            raise InvalidRequest(
                f"max_turns {requested_max_turns} exceeds the configured limit {self.max_turns}; "
                "a request may only lower it"
            )
        if (
            requested_max_budget_usd is not None
            and self.max_budget_usd is not None
            and requested_max_budget_usd > self.max_budget_usd
        ):
            raise InvalidRequest(
                f"max_budget_usd {requested_max_budget_usd} exceeds the configured limit "
                f"{self.max_budget_usd}; "
                "a request may only lower it"
            )
        self.check_session(session_spent_usd)
        turns = requested_max_turns if requested_max_turns is not None else self.max_turns
        budget = requested_max_budget_usd if requested_max_budget_usd is not None else self.max_budget_usd
        remaining = self.remaining(session_spent_usd)
        if remaining is not None:
            budget = remaining if budget is None else min(budget, remaining)
        return EffectiveLimits(max_turns=turns, max_budget_usd=budget, session_remaining_usd=remaining)
