"""Exit codes and the one error type of the ``agentkit`` client, and the mapping of failures onto them.

Every failure outside the event stream becomes an :class:`AgentkitError` carrying the process exit code
(documented in docs/ci-cd.md): botocore exceptions (:func:`aws_error`), error statuses a deployed runtime
answered through AgentCore (:func:`runtime_client_error`), and read timeouts or lost connections after a
request was sent (:func:`transport_error`). Every message says what to do next.

Env vars: none. IAM actions: none (no AWS calls here).
"""

from __future__ import annotations

import json
import re
from enum import IntEnum
from typing import Any

_THROTTLE_CODES = frozenset({"ThrottlingException", "Throttling", "TooManyRequestsException"})
_EXPIRED_CODES = frozenset({"ExpiredTokenException", "ExpiredToken", "RequestExpired"})
_BAD_KEY_CODES = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
    }
)
_DENIED_CODES = frozenset({"AccessDeniedException", "AccessDenied", "UnauthorizedException"})
_USAGE_ERROR_CODES = frozenset({"invalid_request", "prompt_too_large", "invalid_session_id"})
_KNOWN_RUNTIME_CODES = ("budget_exceeded", *sorted(_USAGE_ERROR_CODES))
# AgentCore's wording for an error status the container answered: "Received error (400) from runtime. ..."
_RUNTIME_STATUS_RE = re.compile(r"(?:error|status|HTTP)\s*\(?(\d{3})\)?\s*from (?:the )?runtime", re.I)

NO_REGION_FIX = "pass --region or set AWS_REGION (or AWS_DEFAULT_REGION, or a region in your AWS profile)"
NO_CREDENTIALS_FIX = (
    "configure credentials: `aws configure`, `aws sso login --profile P` with --profile P, "
    "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or an assumed role (in CI: OIDC)"
)


class ExitCode(IntEnum):
    """Process exit codes of ``agentkit`` (documented in docs/ci-cd.md)."""

    OK = 0
    AGENT_ERROR = 1
    USAGE = 2
    BUDGET_EXCEEDED = 3
    AWS_ERROR = 4
    #: The turn stopped at a tool call that waits for a person's approval (docs/approvals.md).
    AWAITING_APPROVAL = 5
    INTERRUPTED = 130


class AgentkitError(Exception):
    """A failure the CLI reports on one line; ``exit_code`` tells it how to exit.

    ``code`` is a short machine-readable reason (an AWS error code, a runtime error code, or ``""`` for a
    plain usage error, after which the CLI prints the sub-command's usage line).
    """

    def __init__(self, message: str, *, exit_code: ExitCode, code: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.code = code


def usage_error(message: str) -> AgentkitError:
    """A usage error (exit 2); the CLI prints the sub-command's usage line before it."""
    return AgentkitError(message, exit_code=ExitCode.USAGE)


def error_code_exit(code: str) -> ExitCode:
    """Exit code for an ``error`` event's ``code``."""
    if code == "budget_exceeded":
        return ExitCode.BUDGET_EXCEEDED
    if code in _USAGE_ERROR_CODES:
        return ExitCode.USAGE
    return ExitCode.AGENT_ERROR


def transport_error(exc: BaseException, *, events: int, timeout: float | None, hint: str) -> AgentkitError:
    """An :class:`AgentkitError` (exit code 4) for a read timeout or a lost connection after the request was
    sent: the turn may have started and may still be running, so the message says how to stop it."""
    timed_out = _is_timeout(exc)
    code = "read_timeout" if timed_out else "connection_lost"
    where = f"after {events} event{'s' if events != 1 else ''}" if events else "before any reply"
    waited = f"{timeout:g} s" if isinstance(timeout, int | float) else "the read timeout"
    what = f"no data for {waited} (--timeout)" if timed_out else "the connection was lost"
    detail = f"{type(exc).__name__}: {exc}".rstrip(": ")
    return AgentkitError(
        f"reading the reply failed {where}: {what} ({detail}); {hint}",
        exit_code=ExitCode.AWS_ERROR,
        code=code,
    )


def _is_timeout(exc: BaseException) -> bool:
    """True for socket, urllib3 and botocore read timeouts (also when wrapped in another exception)."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return False
        if isinstance(seen, TimeoutError) or "timeout" in type(seen).__name__.lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def aws_error(exc: BaseException, *, action: str, iam_action: str | None = None) -> AgentkitError:
    """Map a botocore exception onto an :class:`AgentkitError` (exit 4 unless the request itself was
    invalid) whose message names the fix.

    Args:
        action: what was being done (``"InvokeAgentRuntime"``, ``"reading cost metrics"``).
        iam_action: the IAM action the caller needs, named in access-denied messages.
    """
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        ParamValidationError,
        PartialCredentialsError,
        ProfileNotFound,
        TokenRetrievalError,
        UnauthorizedSSOTokenError,
    )

    if isinstance(exc, ParamValidationError):
        return AgentkitError(f"{action}: {exc}", exit_code=ExitCode.USAGE, code="ParamValidation")
    if isinstance(exc, NoRegionError):
        return AgentkitError(
            f"{action}: no AWS region is set; {NO_REGION_FIX}", exit_code=ExitCode.AWS_ERROR, code="NoRegion"
        )
    if isinstance(exc, ProfileNotFound):
        return AgentkitError(
            f"{action}: {exc}; check --profile / AWS_PROFILE, or create it with `aws configure --profile NAME`",
            exit_code=ExitCode.AWS_ERROR,
            code="ProfileNotFound",
        )
    if isinstance(exc, TokenRetrievalError | UnauthorizedSSOTokenError):
        return AgentkitError(
            f"{action}: your AWS SSO session has expired or was never started ({exc}); "
            "run `aws sso login` for this profile and retry",
            exit_code=ExitCode.AWS_ERROR,
            code="SSOTokenExpired",
        )
    if isinstance(exc, NoCredentialsError):
        return AgentkitError(
            f"{action}: no AWS credentials found; {NO_CREDENTIALS_FIX}",
            exit_code=ExitCode.AWS_ERROR,
            code="NoCredentials",
        )
    if isinstance(exc, PartialCredentialsError):
        return AgentkitError(
            f"{action}: incomplete AWS credentials ({exc}); set both the access key id and the secret key",
            exit_code=ExitCode.AWS_ERROR,
            code="PartialCredentials",
        )
    if isinstance(exc, EndpointConnectionError):
        return AgentkitError(
            f"{action}: cannot reach the AWS endpoint ({exc}); check the region, your network or proxy, "
            "and any AWS_ENDPOINT_URL_* override",
            exit_code=ExitCode.AWS_ERROR,
            code="EndpointConnection",
        )
    if isinstance(exc, ClientError):
        return _client_error(exc, action=action, iam_action=iam_action)
    return AgentkitError(f"{action}: {type(exc).__name__}: {exc}", exit_code=ExitCode.AWS_ERROR)


def _client_error(exc: Any, *, action: str, iam_action: str | None) -> AgentkitError:
    err = exc.response.get("Error", {})
    code, message = str(err.get("Code", "Unknown")), str(err.get("Message", exc))
    if code in _EXPIRED_CODES:
        return AgentkitError(
            f"{action}: your AWS credentials have expired ({code}); refresh them "
            "(`aws sso login`, re-assume the role, or renew the session token) and retry",
            exit_code=ExitCode.AWS_ERROR,
            code=code,
        )
    if code in _BAD_KEY_CODES:
        return AgentkitError(
            f"{action}: AWS rejected the credentials ({code}: {message}); the access key is wrong, deleted, "
            "or for another partition — check `aws sts get-caller-identity`",
            exit_code=ExitCode.AWS_ERROR,
            code=code,
        )
    if code in _DENIED_CODES:
        needs = f"the caller needs {iam_action}" if iam_action else "the caller lacks an IAM permission"
        return AgentkitError(
            f"{action}: access denied ({code}): {message} — {needs}", exit_code=ExitCode.AWS_ERROR, code=code
        )
    if code == "RuntimeClientError" or (code == "ValidationException" and _RUNTIME_STATUS_RE.search(message)):
        return runtime_client_error(message, action=action)
    if code == "ValidationException":
        return AgentkitError(f"{action}: {code}: {message}", exit_code=ExitCode.USAGE, code=code)
    if code in _THROTTLE_CODES:
        message += " (still throttled after retries; try later or raise the quota)"
    return AgentkitError(f"{action}: {code}: {message}", exit_code=ExitCode.AWS_ERROR, code=code)


def runtime_client_error(message: str, *, action: str) -> AgentkitError:
    """The container answered with an error status and AgentCore relayed it (``RuntimeClientError``, or a
    ``ValidationException`` whose message names the runtime's status).

    AgentCore reports the container's status in the message (``Received error (400) from runtime``) and may
    include the container's error body. The error code comes from that body (``{"code": ...}``) or a known
    code named in the message, else from the status; it maps like the ``--local`` path: ``budget_exceeded``
    or 402 → 3, ``invalid_request``/``prompt_too_large``/``invalid_session_id`` or another 4xx (not 429)
    → 2, anything else → 1.
    """
    status_match = _RUNTIME_STATUS_RE.search(message)
    status = int(status_match.group(1)) if status_match else None
    code = _code_in_body(message) or next((c for c in _KNOWN_RUNTIME_CODES if c in message), "")
    if not code:
        code = f"http_{status}" if status else "runtime_client_error"
    if code == "budget_exceeded" or status == 402:
        exit_code = ExitCode.BUDGET_EXCEEDED
    elif code in _USAGE_ERROR_CODES or (status is not None and 400 <= status < 500 and status != 429):
        exit_code = ExitCode.USAGE
    else:
        exit_code = error_code_exit(code)
    status_text = f" HTTP {status}" if status else ""
    return AgentkitError(
        f"{action}: runtime error{status_text} [{code}]: {message}", exit_code=exit_code, code=code
    )


def is_throttle(exc: BaseException) -> bool:
    """True for a ``ClientError`` that means the request was refused before it ran: a throttling error
    code or HTTP 429."""
    from botocore.exceptions import ClientError

    if not isinstance(exc, ClientError):
        return False
    code = exc.response.get("Error", {}).get("Code", "")
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in _THROTTLE_CODES or status == 429


def _code_in_body(message: str) -> str:
    """The ``code`` (or ``error_type``) of a JSON error object embedded in ``message``, if there is one."""
    decoder = json.JSONDecoder()
    start = message.find("{")
    while start != -1:
        try:
            value: Any = decoder.raw_decode(message, start)[0]
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and (value.get("code") or value.get("error_type")):
            return str(value.get("code") or value.get("error_type"))
        start = message.find("{", start + 1)
    return ""
