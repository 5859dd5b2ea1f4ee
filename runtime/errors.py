"""One error hierarchy for the runtime: every failure a caller can see has a stable ``code`` and an HTTP status.

The server turns any :class:`AgentKitError` into ``{"type": "error", "code": ..., "message": ...}``; the message
always says what the caller can do about it.
"""

from __future__ import annotations

from typing import Any, ClassVar


class AgentKitError(Exception):
    """Base class. Subclasses set ``code`` and ``http_status``; instances may override both."""

    code: ClassVar[str] = "internal_error"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, *, code: str | None = None, http_status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code  # type: ignore[misc]
        if http_status is not None:
            self.http_status = http_status  # type: ignore[misc]

    def to_event(self) -> dict[str, Any]:
        """The error as the SSE / JSON body the contract defines."""
        return {"type": "error", "code": self.code, "message": self.message}


class InvalidRequest(AgentKitError):
    """The invocation body or headers are malformed (HTTP 400)."""

    code = "invalid_request"
    http_status = 400


class PromptTooLarge(InvalidRequest):
    """The prompt exceeds the configured maximum size (HTTP 413)."""

    code = "prompt_too_large"
    http_status = 413


class InvalidSessionId(InvalidRequest):
    """The runtime session id header does not match the allowed format (HTTP 400)."""

    code = "invalid_session_id"


class BudgetExceeded(AgentKitError):
    """A turn, invocation or session budget is exhausted (HTTP 402)."""

    code = "budget_exceeded"
    http_status = 402


class TurnTimeout(AgentKitError):
    """The CLI did not finish the turn in time (HTTP 504). The session reconnects on the next turn."""

    code = "turn_timeout"
    http_status = 504


class AgentProcessError(AgentKitError):
    """The Claude Code CLI died or failed before producing a result (HTTP 502)."""

    code = "agent_process_error"
    http_status = 502


class AgentResultError(AgentKitError):
    """The agent finished the turn with an error result (HTTP 500)."""

    code = "agent_error"
    http_status = 500


class SessionBusy(AgentKitError):
    """Too many invocations are queued on one session (HTTP 429)."""

    code = "session_busy"
    http_status = 429


class ConfigurationError(AgentKitError):
    """The runtime's settings are invalid; raised at start-up, never during a turn."""

    code = "configuration_error"
    http_status = 500
