"""Transports of the invocation contract: a local runtime over HTTP, or a deployed one through AgentCore.

Both turn the reply into the same stream of event dicts (:mod:`agentkit.sse`), so the CLI renders them one
way. A failure that happens before any event (connection refused, HTTP 4xx, AWS errors) raises
:class:`~agentkit.errors.AgentkitError` carrying the exit code the CLI should use.

IAM actions needed on the AWS path: ``bedrock-agentcore:InvokeAgentRuntime`` (invoke),
``bedrock-agentcore:StopRuntimeSession`` (stop).

Retries: ``InvokeAgentRuntime`` runs a paid turn, so botocore never retries it (:func:`invoke_config`, one
attempt, whatever ``AWS_MAX_ATTEMPTS`` says); only throttling, which means the turn did not run, is retried
by :func:`call_with_backoff`. A read timeout is never retried: the turn may still be running.

Env vars honoured (by botocore): ``AWS_RETRY_MODE``/``AWS_MAX_ATTEMPTS`` (override :func:`retry_config`,
not :func:`invoke_config`), ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agentkit.errors import (
    AgentkitError,
    ExitCode,
    aws_error,
    is_throttle,
    transport_error,
    usage_error,
)
from agentkit.sse import iter_sse_events, normalize_event

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
SESSION_ID_MIN, SESSION_ID_MAX = 33, 256
_SESSION_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")

#: How to start a local runtime. The runtime is the kit's container package, installed only in the checkout's
#: ``.venv`` (``make setup``): a bare ``python`` (a system one, or a CI job's) does not have it and fails with a
#: traceback.
START_LOCAL_RUNTIME = (
    "start one in the kit's checkout with `.venv/bin/python -m runtime` (after `make setup`)"
)


def new_session_id() -> str:
    """A fresh runtime session id: ``agentkit-`` + 32 hex digits (41 chars, valid for AgentCore)."""
    return f"agentkit-{uuid.uuid4().hex}"


def derive_session_id(key: str) -> str:
    """A valid runtime session id derived from a short key (``pr-42``, a branch name): the same key always
    gives the same id, so a pipeline continues one conversation without padding ids to 33 characters.

    The key's safe characters are kept (readable in logs) and a SHA-256 digest makes ids of different keys
    differ even when their readable parts do.

    Raises:
        AgentkitError: empty key (usage, exit 2).
    """
    if not key.strip():
        raise usage_error("--session-key must not be empty")
    readable = re.sub(r"[^A-Za-z0-9._:-]+", "-", key.strip()).strip("-._:")[:160] or "key"
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    return validate_session_id(f"key-{readable}-{digest}")


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if AgentCore accepts it; raise :class:`AgentkitError` (usage) otherwise."""
    if not SESSION_ID_MIN <= len(session_id) <= SESSION_ID_MAX or not _SESSION_ID_RE.fullmatch(session_id):
        raise AgentkitError(
            f"invalid session id {session_id!r}: need {SESSION_ID_MIN}-{SESSION_ID_MAX} characters of "
            "letters, digits, '-', '.' or ':', starting with a letter or digit "
            "(e.g. 'agentkit-' + 32 hex digits)",
            exit_code=ExitCode.USAGE,
        )
    return session_id


# ------------------------------------------------------------------------------------------ local transport
@dataclass(frozen=True)
class InvocationRequest:
    """What to send: the contract body plus the runtime session id."""

    prompt: str | None
    session_id: str
    stream: bool = True
    max_budget_usd: float | None = None
    #: A workspace snapshot (tar.gz bytes, ``agentkit.workspace.snapshot``); the result then carries its patch.
    workspace: bytes | None = None
    #: ... or the S3 URI it was uploaded to (``agentkit.workspace.upload``).
    workspace_s3_uri: str | None = None
    #: Instead of a prompt: ``{"approve": {"id": …, "by"?, "note"?}}`` or ``{"deny": {"id": …, "by"?, "reason"?}}``,
    #: the answer to a tool call waiting for approval (docs/approvals.md).
    answer: dict[str, dict[str, str]] | None = None

    def body(self) -> dict[str, Any]:
        """The invocation body (docs/http-api.md#request). Optional fields are sent only when set."""
        body: dict[str, Any] = {} if self.prompt is None else {"prompt": self.prompt}
        body["stream"] = self.stream
        body.update(self.answer or {})
        if self.max_budget_usd is not None:
            body["max_budget_usd"] = self.max_budget_usd
        if self.workspace_s3_uri is not None:
            body["workspace"] = {"s3_uri": self.workspace_s3_uri}
        elif self.workspace is not None:
            body["workspace"] = {"tar_gz_b64": base64.b64encode(self.workspace).decode("ascii")}
        return body


def invoke_local(url: str, request: InvocationRequest, *, timeout: float = 900.0) -> Iterator[dict[str, Any]]:
    """POST ``{url}/invocations`` to a runtime server (``python -m runtime``) and yield its events.

    Raises:
        AgentkitError: bad URL (2), connection failure before the request was sent (1), HTTP error status
            (2 for 4xx validation, 3 for budget, 1 otherwise), no reply within ``timeout`` seconds or the
            connection lost while reading the reply (4: the turn may still be running).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise usage_error(f"--local needs an http(s) URL, got {url!r}")
    conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(parts.hostname, parts.port, timeout=timeout)
    path = parts.path.rstrip("/") + "/invocations"
    headers = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream" if request.stream else "application/json",
        SESSION_HEADER: request.session_id,
    }
    hint = (
        f"the runtime may still be running the turn of session {request.session_id}; stop it with "
        f"`agentkit sessions stop {request.session_id} --local {url}`"
    )
    events = 0
    try:
        try:
            conn.request("POST", path, body=json.dumps(request.body()).encode(), headers=headers)
        except OSError as exc:
            raise AgentkitError(
                f"cannot reach the runtime at {url}: {exc.strerror or exc} "
                f"(is it running? {START_LOCAL_RUNTIME})",
                exit_code=ExitCode.AGENT_ERROR,
                code="connection_failed",
            ) from exc
        try:
            response = conn.getresponse()
            content_type = response.getheader("Content-Type", "")
            if response.status >= 400:
                raise http_error(response.status, response.read())
            if "text/event-stream" in content_type:
                for event in iter_sse_events(iter(lambda: response.read1(65536), b"")):
                    events += 1
                    yield event
            else:
                yield normalize_event(_json_or_error(response.read()))
        except _LOCAL_TRANSPORT_ERRORS as exc:
            raise transport_error(exc, events=events, timeout=timeout, hint=hint) from exc
    finally:
        conn.close()


_LOCAL_TRANSPORT_ERRORS = (OSError, http.client.HTTPException)


def http_error(status: int, body: bytes) -> AgentkitError:
    """An :class:`AgentkitError` for an HTTP error reply, using the contract's error body when present."""
    try:
        parsed = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        parsed = None
    code, message = f"http_{status}", body.decode("utf-8", "replace")[:500] or f"HTTP {status}"
    if isinstance(parsed, dict):
        event = normalize_event(parsed)
        code = str(event.get("code") or code)
        message = str(event.get("message") or message)
        if parsed.get("details"):
            message = f"{message}: {parsed['details']}"
    if status == 402 or code == "budget_exceeded":
        exit_code = ExitCode.BUDGET_EXCEEDED
    elif 400 <= status < 500 and status != 429:
        exit_code = ExitCode.USAGE
    else:
        exit_code = ExitCode.AGENT_ERROR
    return AgentkitError(
        f"runtime answered HTTP {status} [{code}]: {message}", exit_code=exit_code, code=code
    )


def _json_or_error(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AgentkitError(
            f"runtime reply is not JSON: {body[:200]!r}", exit_code=ExitCode.AGENT_ERROR
        ) from exc


# -------------------------------------------------------------------------------------------- AWS transport
def retry_config(
    *, total_max_attempts: int = 3, connect_timeout: float = 10.0, read_timeout: float = 60.0
) -> Any:
    """botocore ``Config`` for idempotent AgentCore calls (``StopRuntimeSession``): standard retry mode
    (throttling, transient errors), ``total_max_attempts`` attempts in all. ``AWS_RETRY_MODE`` /
    ``AWS_MAX_ATTEMPTS`` in the environment win over it. Never use it for ``InvokeAgentRuntime``: see
    :func:`invoke_config`."""
    from botocore.config import Config

    kwargs: dict[str, Any] = {"connect_timeout": connect_timeout, "read_timeout": read_timeout}
    if not (os.environ.get("AWS_RETRY_MODE") or os.environ.get("AWS_MAX_ATTEMPTS")):
        kwargs["retries"] = {"mode": "standard", "total_max_attempts": total_max_attempts}
    return Config(**kwargs)


def invoke_config(*, connect_timeout: float = 10.0, read_timeout: float = 900.0) -> Any:
    """botocore ``Config`` for ``InvokeAgentRuntime``: exactly one attempt, so botocore never sends a paid
    turn twice (it would otherwise retry read timeouts and 5xx replies of a turn that may have run). It
    ignores ``AWS_RETRY_MODE``/``AWS_MAX_ATTEMPTS``; throttling is retried by :func:`call_with_backoff`.
    The read timeout is long since a turn may run minutes before its first byte."""
    from botocore.config import Config

    return Config(
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        retries={"total_max_attempts": 1, "mode": "standard"},
    )


def call_with_backoff(
    call: Callable[[], Any],
    *,
    retries: int,
    sleep: Callable[[float], None] = time.sleep,
    base_delay: float = 1.0,
    max_delay: float = 20.0,
) -> Any:
    """Run ``call``; when it is throttled (:func:`is_throttle`: the request did not run) sleep with
    full-jitter exponential backoff and try again, up to ``retries`` more times. Nothing else is retried:
    not read timeouts, not 5xx, since the turn may have run."""
    attempt = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if not is_throttle(exc) or attempt >= retries:
                raise
            sleep(random.uniform(0, min(max_delay, base_delay * 2**attempt)))
            attempt += 1


def invoke_agentcore(
    client: Any,
    request: InvocationRequest,
    *,
    runtime_arn: str,
    qualifier: str | None = None,
    throttle_retries: int = 3,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[dict[str, Any]]:
    """Invoke a deployed runtime through boto3 ``bedrock-agentcore`` ``invoke_agent_runtime`` (SigV4).

    Args:
        client: a ``bedrock-agentcore`` client configured with :func:`invoke_config` (no botocore retries;
            a client that retries may run a paid turn twice).
        throttle_retries: extra tries when throttled (see :func:`call_with_backoff`).

    Raises:
        AgentkitError: AWS errors (4; 2 for validation), runtime error replies (1, 2 or 3, see
            :func:`runtime_client_error`), bad reply bodies (1), a read timeout or lost connection before
            or during the reply (4; the message says how to stop the turn, which may still be running).
    """
    from botocore.exceptions import BotoCoreError, ClientError, ConnectionClosedError, ReadTimeoutError

    params: dict[str, Any] = {
        "agentRuntimeArn": runtime_arn,
        "runtimeSessionId": request.session_id,
        "payload": json.dumps(request.body()).encode(),
        "contentType": "application/json",
        "accept": "text/event-stream" if request.stream else "application/json",
    }
    if qualifier:
        params["qualifier"] = qualifier
    stop = f"agentkit sessions stop {request.session_id} --runtime-arn {runtime_arn}"
    if qualifier:
        stop += f" --qualifier {qualifier}"
    hint = f"the turn may still be running; stop it with `{stop}`"
    timeout = getattr(getattr(getattr(client, "meta", None), "config", None), "read_timeout", None)
    try:
        response = call_with_backoff(
            lambda: client.invoke_agent_runtime(**params), retries=throttle_retries, sleep=sleep
        )
    except (ReadTimeoutError, ConnectionClosedError) as exc:  # the request was sent: the turn may run
        raise transport_error(exc, events=0, timeout=timeout, hint=hint) from exc
    except (ClientError, BotoCoreError) as exc:
        raise aws_error(
            exc,
            action="InvokeAgentRuntime",
            iam_action=f"bedrock-agentcore:InvokeAgentRuntime on {runtime_arn}",
        ) from exc
    body = response["response"]
    content_type = response.get("contentType", "")
    status = int(response.get("statusCode") or 200)
    events = 0
    try:
        if status >= 400:
            raise http_error(status, body.read())
        if "text/event-stream" in content_type:
            for event in iter_sse_events(_stream_chunks(body)):
                events += 1
                yield event
        else:
            yield normalize_event(_json_or_error(body.read()))
    except _aws_transport_errors() as exc:  # read timeout / reset mid-reply (urllib3, socket, botocore)
        raise transport_error(exc, events=events, timeout=timeout, hint=hint) from exc
    finally:
        body.close()


def _aws_transport_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean the reply stream broke: ``read1`` on the raw urllib3 response raises urllib3's
    own errors (``ReadTimeoutError``, ``ProtocolError``); ``StreamingBody.read`` wraps them as botocore's."""
    from botocore.exceptions import BotoCoreError
    from urllib3.exceptions import HTTPError as Urllib3Error

    return (OSError, http.client.HTTPException, Urllib3Error, BotoCoreError)


def _stream_chunks(body: Any) -> Iterator[bytes]:
    """Chunks of a botocore ``StreamingBody`` as they arrive. ``StreamingBody.read(n)`` waits for ``n``
    bytes, which would hold back short text deltas, so use read1() on the raw stream (``with body as raw``)
    when it has one."""
    with body as raw:
        read1 = getattr(raw, "read1", None)
        if callable(read1):
            while chunk := read1(65536):
                yield chunk
        else:
            while chunk := raw.read(1024):
                yield chunk


def stop_session(client: Any, *, runtime_arn: str, session_id: str, qualifier: str | None = None) -> int:
    """Stop a runtime session (the kill switch); returns the HTTP status AgentCore reported.

    Raises:
        AgentkitError: AWS errors (exit code 4; 2 for validation).
        SessionNotRunning: AgentCore does not know the session (``ResourceNotFoundException``).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    params: dict[str, Any] = {"agentRuntimeArn": runtime_arn, "runtimeSessionId": session_id}
    if qualifier:
        params["qualifier"] = qualifier
    try:
        response = client.stop_runtime_session(**params)
    except (ClientError, BotoCoreError) as exc:
        if isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code") == NOT_FOUND_ERROR:
            # StopRuntimeSession is idempotent for the caller: a session that already ended (stopped,
            # idle-expired or never started) is in the state asked for. The message is kept for the user.
            raise SessionNotRunning(str(exc.response.get("Error", {}).get("Message") or "")) from exc
        raise aws_error(
            exc, action="StopRuntimeSession", iam_action="bedrock-agentcore:StopRuntimeSession"
        ) from exc
    return int(response.get("statusCode") or 200)


#: The error ``StopRuntimeSession`` raises for a session it does not know (botocore model
#: ``bedrock-agentcore`` ``StopRuntimeSession.errors``; HTTP 404).
NOT_FOUND_ERROR = "ResourceNotFoundException"


class SessionNotRunning(Exception):
    """The session to stop was not running (already stopped, expired, or never started); ``detail`` says
    what the runtime or AgentCore answered."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


#: Path of the local runtime's stop route (``python -m runtime``), the AgentCore data-plane path without the
#: ``/runtimes/{arn}`` prefix (botocore model ``bedrock-agentcore`` ``StopRuntimeSession``).
LOCAL_STOP_PATH = "/stopruntimesession"


def stop_local_session(url: str, *, session_id: str, timeout: float = 30.0) -> int:
    """Stop a session of a local runtime (``python -m runtime``): its running and queued turns end and its
    Claude process closes; the transcript stays in the store, so the next turn resumes it.

    Raises:
        AgentkitError: bad URL (2), runtime unreachable (1), other HTTP errors.
        SessionNotRunning: the runtime has no such session (HTTP 404 ``session_not_found``).
    """
    parts = _local_parts(url)
    conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(parts.hostname or "", parts.port, timeout=timeout)
    try:
        try:
            conn.request(
                "POST",
                parts.path.rstrip("/") + LOCAL_STOP_PATH,
                body=b"{}",
                headers={SESSION_HEADER: session_id},
            )
            response = conn.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise AgentkitError(
                f"cannot reach the runtime at {url}: {exc} (is it running? {START_LOCAL_RUNTIME})",
                exit_code=ExitCode.AGENT_ERROR,
                code="connection_failed",
            ) from exc
    finally:
        conn.close()
    if response.status == 404:
        error = http_error(response.status, body)
        if error.code == "session_not_found":
            raise SessionNotRunning(error.message)
        raise error
    if response.status >= 400:
        raise http_error(response.status, body)
    return int(response.status)


def _local_parts(url: str) -> Any:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise usage_error(f"--local needs an http(s) URL, got {url!r}")
    return parts
