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
* SDK result subtypes map to error codes with :func:`error_for_result`.

Environment variables: none read here; the caller builds the policy from settings.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

from runtime.errors import (
    AgentExecutionError,
    AgentKitError,
    AgentResultError,
    BudgetExceeded,
    InvalidRequest,
    MaxTurnsExceeded,
    ModelApiError,
)

# SDK result subtype → (error class, human message).
RESULT_ERRORS: dict[str, tuple[type[AgentKitError], str]] = {
    "error_max_turns": (
        MaxTurnsExceeded,
        "the agent reached max_turns before finishing; raise max_turns or split the task",
    ),
    "error_max_budget_usd": (BudgetExceeded, "the turn reached its max_budget_usd before finishing"),
    "error_during_execution": (AgentExecutionError, "the agent failed while running the turn"),
    "error_max_structured_output_retries": (
        AgentResultError,
        "the agent could not produce the requested structured output",
    ),
}


def error_for_result(
    subtype: str, *, is_error: bool, errors: list[str] | None = None, api_error_status: int | None = None
) -> AgentKitError | None:
    """The typed error for a ``ResultMessage`` (None for a clean success).

    ``error_max_turns`` → ``max_turns_exceeded`` (422); ``error_max_budget_usd`` → ``budget_exceeded`` (402);
    ``error_during_execution`` → ``execution_error`` (500); ``success`` with ``is_error`` → ``model_error``
    (502, or 429 when the API throttled); any other error subtype → ``agent_error`` (500).
    """
    detail = "; ".join(e for e in (errors or []) if e)[:500]
    if subtype == "success" and not is_error:
        return None
    if subtype == "success":
        status = 429 if api_error_status == 429 else None
        suffix = f" (HTTP {api_error_status})" if api_error_status else ""
        return ModelApiError(
            f"the model call failed{suffix}" + (f": {detail}" if detail else ""), http_status=status
        )
    cls, message = RESULT_ERRORS.get(subtype, (AgentResultError, f"the agent ended with result {subtype!r}"))
    return cls(message + (f": {detail}" if detail else ""))


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


class SpendLedger:
    """A session's cumulative spend and turn count, as persisted with the session (it outlives the microVM).

    The stored base is unknown until :meth:`load` (not read yet, or the read failed); spend counted meanwhile
    waits as *unpersisted* and is folded into the base once, when it is loaded. ``lock`` serialises writes.
    """

    def __init__(self) -> None:
        self._spent_usd: float | None = None
        self._turns: int | None = None
        self._unpersisted_usd = 0.0
        self._unpersisted_turns = 0
        self.lock = asyncio.Lock()

    @property
    def known(self) -> bool:
        """Whether the stored base has been loaded (only then is the total worth reporting or writing)."""
        return self._spent_usd is not None

    @property
    def spent_usd(self) -> float | None:
        """The session's total spend, or None while the stored base is unknown."""
        return self._spent_usd

    @property
    def unpersisted_usd(self) -> float:
        """Spend counted while the stored base was unknown (0 once it is loaded)."""
        return self._unpersisted_usd

    def so_far(self) -> float:
        """The spend known now: the total, or (base unknown) what this process has counted."""
        return self._spent_usd if self._spent_usd is not None else self._unpersisted_usd

    def load(self, state: dict[str, Any]) -> None:
        """Take the stored ``{"spent_usd", "turns"}`` as the base (once: a later load changes nothing)."""
        if self._spent_usd is not None:
            return
        self._spent_usd = float(state.get("spent_usd", 0.0)) + self._unpersisted_usd
        self._turns = int(state.get("turns", 0)) + self._unpersisted_turns
        self._unpersisted_usd, self._unpersisted_turns = 0.0, 0

    def add(self, usd: float, *, turns: int = 1) -> float:
        """Count ``usd`` (and ``turns``); returns the spend now known."""
        if self._spent_usd is None:
            self._unpersisted_usd += usd
            self._unpersisted_turns += turns
            return self._unpersisted_usd
        self._spent_usd += usd
        self._turns = (self._turns or 0) + turns
        return self._spent_usd

    def state(self) -> dict[str, Any]:
        """What is persisted: ``{"spent_usd", "turns"}`` (only meaningful once :attr:`known`)."""
        return {"spent_usd": self._spent_usd, "turns": self._turns}

    @property
    def turns(self) -> int | None:
        """Turns counted over the session's life, or None while the stored base is unknown."""
        return self._turns
