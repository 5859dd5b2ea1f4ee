"""One error hierarchy for the runtime: every failure a caller can see has a stable ``code`` and an HTTP status.

The server turns any :class:`AgentKitError` into ``{"type": "error", "code": ..., "message": ...}``; the message
always says what the caller can do about it. Every class is defined here, with its code and HTTP status, and
:data:`ERRORS_BY_CODE` maps each code to its class (:func:`status_for_code` gives a code's default status).
"""

from __future__ import annotations

from typing import ClassVar


class AgentKitError(Exception):
    """An unexpected failure; the details are in the runtime log, never in the reply.

    The base class of every runtime error: subclasses set ``code`` and ``http_status``; instances may override both.
    """

    code: ClassVar[str] = "internal_error"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, *, code: str | None = None, http_status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code  # type: ignore[misc]
        if http_status is not None:
            self.http_status = http_status  # type: ignore[misc]


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


class InvalidWorkspace(InvalidRequest):
    """A workspace snapshot is malformed or unsafe: path traversal, links leaving the workspace, device files,
    names that are not UTF-8, ``.git`` entries (HTTP 400). Nothing of it was written; the previous workspace
    of the session is unchanged."""

    code = "invalid_workspace"


class WorkspaceTooLarge(InvalidWorkspace):
    """A workspace snapshot is over a size or file-count limit (HTTP 413); nothing of it was written."""

    code = "workspace_too_large"
    http_status = 413


class WorkspaceExpired(AgentKitError):
    """The session worked on a workspace snapshot that was removed after it went unused for
    ``AGENTKIT_WORKSPACE_RETENTION_HOURS``, or that the microVM answering a paused call does not have (HTTP 410); send
    the snapshot again with the turn, the conversation is kept."""

    code = "workspace_expired"
    http_status = 410


class PausedWorkLost(AgentKitError):
    """An answer to a paused call reached a microVM without the session's workspace, where the work the turn had done
    before it paused cannot be restored (HTTP 410), so it is refused instead of going on without that work; start
    the job again. The work was not kept (too large, no patch could be made, the session store failed, or the session
    paused under a runtime version that did not keep it) or was made against another snapshot than the one sent."""

    code = "paused_work_lost"
    http_status = 410


class WorkspaceIncomplete(AgentKitError):
    """The runtime stopped while it was replacing the session's workspace with a new snapshot (HTTP 410): the
    directory holds part of each, so no turn runs on it and no patch is made from it; send the snapshot again with
    the turn, the conversation is kept."""

    code = "workspace_incomplete"
    http_status = 410


class WorkspaceError(AgentKitError):
    """The runtime could not set up a workspace or compute its patch; the details are in the runtime log (HTTP 500)."""

    code = "workspace_error"
    http_status = 500


class PatchTooLarge(WorkspaceError):
    """The workspace's change is over the patch limit (HTTP 422); the workspace is kept for the next turn."""

    code = "patch_too_large"
    http_status = 422


class JobsNotConfigured(InvalidRequest):
    """An invocation asked for an asynchronous job (``"async": true``) but this runtime has no events queue
    (``AGENTKIT_JOB_EVENTS_QUEUE_URL`` is unset; HTTP 400)."""

    code = "jobs_not_configured"


class JobStopped(AgentKitError):
    """A job's turn was stopped (the local stop route, or SIGTERM at shutdown) before it finished; only in a job's
    result event, which carries what the turn cost so far (HTTP 503)."""

    code = "stopped"
    http_status = 503


class JobInterrupted(AgentKitError):
    """A job's runtime process ended (killed, out of memory, its microVM stopped) before the job finished; reported
    by the next process on the same disk; only in a job's result event (HTTP 503: send the job again)."""

    code = "interrupted"
    http_status = 503


class JobResultUndeliverable(AgentKitError):
    """SQS refused a job's result for good (the message itself was invalid); the result is kept on the runtime's
    disk and this error is sent in its place; only in a job's result event (HTTP 502)."""

    code = "result_undeliverable"
    http_status = 502


class JobResultTooLarge(AgentKitError):
    """A job's result does not fit one SQS message even with its patch moved to S3, or its patch is too large and
    no workspace bucket is configured; only in a job's result event (HTTP 422)."""

    code = "result_too_large"
    http_status = 422


class ApprovalNotFound(AgentKitError):
    """An ``approve`` / ``deny`` / ``withdraw`` names an approval this session does not have (HTTP 404): another
    session's id, a typo, or one removed long after it was decided. Approvals are bound to their session."""

    code = "approval_not_found"
    http_status = 404


class ApprovalNotPending(AgentKitError):
    """The approval was already answered (approved, denied, used): each is answered once and used once (HTTP 409).
    A call with another input waits for a new approval."""

    code = "approval_not_pending"
    http_status = 409


class ApprovalExpired(AgentKitError):
    """The approval waited longer than its rules' ``expiry_hours`` and can no longer be answered (HTTP 410); the
    agent asks again if it still needs the call."""

    code = "approval_expired"
    http_status = 410


class ApprovalWithdrawn(AgentKitError):
    """The approval was withdrawn unanswered (``{"withdraw": ...}``: the job that waited for it was stopped) and can
    no longer be answered (HTTP 410); the agent asks again if a later turn still needs the call."""

    code = "approval_withdrawn"
    http_status = 410


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


class MaxTurnsExceeded(AgentResultError):
    """The agent used all its turns without finishing (SDK ``error_max_turns``)."""

    code = "max_turns_exceeded"
    http_status = 422


class AgentExecutionError(AgentResultError):
    """The CLI reported an error while running the turn (SDK ``error_during_execution``)."""

    code = "execution_error"
    http_status = 500


class ModelApiError(AgentResultError):
    """The model API call failed (result ``success`` with ``is_error``; e.g. throttling, 5xx)."""

    code = "model_error"
    http_status = 502


class SessionBusy(AgentKitError):
    """Too many invocations are queued on one session (HTTP 429)."""

    code = "session_busy"
    http_status = 429


class SessionNotFound(AgentKitError):
    """No warm session of that id for this caller in this runtime (the local stop route; HTTP 404)."""

    code = "session_not_found"
    http_status = 404


class ConfigurationError(AgentKitError):
    """The runtime's settings are invalid; raised at start-up, never during a turn."""

    code = "configuration_error"
    http_status = 500


class ShuttingDown(AgentKitError):
    """The runtime is shutting down (SIGTERM) or closed the session; the caller retries (HTTP 503)."""

    code = "shutting_down"
    http_status = 503


class ClientDisconnected(AgentKitError):
    """The caller left before the reply was complete (nobody sees this error; it ends the turn cleanly).

    HTTP 499 is nginx's "client closed request": a 4xx, so the warm client is kept for the next turn.
    """

    code = "client_disconnected"
    http_status = 499


class SessionStoreError(AgentKitError):
    """A session store call failed (HTTP 503). ``retryable`` is true for throttling and transient service errors.

    ``aws_code`` is the AWS error code (e.g. ``ThrottledException``) or the SQLite error class name.
    """

    code = "session_store_unavailable"
    http_status = 503

    def __init__(self, message: str, *, aws_code: str = "", retryable: bool = False) -> None:
        super().__init__(message)
        self.aws_code = aws_code
        self.retryable = retryable


def _codes(base: type[AgentKitError]) -> dict[str, type[AgentKitError]]:
    found = {base.code: base}
    for sub in base.__subclasses__():
        found |= _codes(sub)
    return found


#: Every error code the runtime sends, with the class that defines it (and so its default HTTP status).
ERRORS_BY_CODE: dict[str, type[AgentKitError]] = _codes(AgentKitError)


def status_for_code(code: str) -> int:
    """The default HTTP status of an error code (500 for a code this module does not define)."""
    cls = ERRORS_BY_CODE.get(code)
    return cls.http_status if cls is not None else AgentKitError.http_status
