"""What a finished turn's ``ResultMessage`` means: the typed error for each SDK result subtype.

The turn's *settle* phase (:mod:`runtime.agent.turn`) asks :func:`error_for_result` whether a result is a clean
success; an error result still reports what the turn cost. Environment variables: none.
"""

from __future__ import annotations

from runtime.errors import (
    AgentExecutionError,
    AgentKitError,
    AgentResultError,
    BudgetExceeded,
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
