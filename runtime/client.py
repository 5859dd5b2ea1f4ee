"""Client side of the invocation contract: talk to a runtime locally over HTTP or through AgentCore.

Both transports turn the reply into the same stream of event dicts (the SSE contract in DESIGN §4 and
``runtime/protocol.py``: ``text``, ``tool_use``, ``tool_result``, ``result``, ``error``), so the CLI renders
them one way. A failure that happens before any event (connection refused, HTTP 4xx, AWS errors) raises
:class:`InvokeError` carrying the exit code the CLI should use.

IAM actions needed on the AWS path: ``bedrock-agentcore:InvokeAgentRuntime`` (invoke),
``bedrock-agentcore:StopRuntimeSession`` (stop), ``cloudformation:DescribeStacks`` (``--stack``).

Retries: ``InvokeAgentRuntime`` runs a paid turn, so botocore never retries it (:func:`invoke_config`, one
attempt, whatever ``AWS_MAX_ATTEMPTS`` says); only throttling, which means the turn did not run, is retried
by :func:`call_with_backoff`. A read timeout is never retried: the turn may still be running.

Env vars honoured (by boto3 itself): ``AWS_REGION``/``AWS_DEFAULT_REGION``, ``AWS_PROFILE``,
``AWS_RETRY_MODE``/``AWS_MAX_ATTEMPTS`` (override :func:`retry_config`, not :func:`invoke_config`),
``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from runtime.client_errors import (
    ExitCode,
    InvokeError,
    aws_error,
    error_code_exit,
    is_throttle,
    runtime_client_error,
    transport_error,
)

__all__ = [
    "ExitCode",
    "InvocationRequest",
    "InvokeError",
    "aws_error",
    "call_with_backoff",
    "error_code_exit",
    "http_error",
    "invoke_agentcore",
    "invoke_config",
    "invoke_local",
    "iter_sse_events",
    "new_session_id",
    "normalize_event",
    "region_of_runtime_arn",
    "retry_config",
    "runtime_arn_from_stack",
    "runtime_client_error",
    "stop_session",
    "transport_error",
    "validate_session_id",
]

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
SESSION_ID_MIN, SESSION_ID_MAX = 33, 256
_SESSION_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
_RUNTIME_ARN_RE = re.compile(r"arn:aws[a-z-]*:bedrock-agentcore:([a-z0-9-]+):\d{12}:runtime/[A-Za-z0-9_-]+")


def new_session_id() -> str:
    """A fresh runtime session id: ``agentkit-`` + 32 hex digits (41 chars, valid for AgentCore)."""
    return f"agentkit-{uuid.uuid4().hex}"


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if AgentCore accepts it; raise :class:`InvokeError` (usage) otherwise."""
    if not SESSION_ID_MIN <= len(session_id) <= SESSION_ID_MAX or not _SESSION_ID_RE.fullmatch(session_id):
        raise InvokeError(
            f"invalid session id {session_id!r}: need {SESSION_ID_MIN}-{SESSION_ID_MAX} characters of "
            "letters, digits, '-', '.' or ':', starting with a letter or digit "
            "(e.g. 'agentkit-' + 32 hex digits)",
            exit_code=ExitCode.USAGE,
        )
    return session_id


def region_of_runtime_arn(arn: str) -> str:
    """The region inside a runtime ARN; raise :class:`InvokeError` (usage) if it is not a runtime ARN."""
    match = _RUNTIME_ARN_RE.fullmatch(arn)
    if not match:
        raise InvokeError(
            f"not an AgentCore runtime ARN: {arn!r} "
            "(expected arn:aws:bedrock-agentcore:<region>:<account>:runtime/<id>)",
            exit_code=ExitCode.USAGE,
        )
    return match.group(1)


# --------------------------------------------------------------------------------------------- SSE parsing
def iter_sse_events(chunks: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """Parse an SSE byte stream (any chunking) into event dicts, yielding each as soon as it is complete.

    ``data:`` lines of one event are joined with newlines and decoded as JSON. A JSON string becomes a
    ``text`` event; a dict without ``type`` but with ``error`` (the BedrockAgentCoreApp's own failure shape)
    becomes an ``error`` event. Comments, ``event:`` and ``id:`` lines are ignored.

    Raises:
        InvokeError: an event's data is not JSON (exit code 1).
    """
    buffer = b""
    data_lines: list[str] = []
    for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for raw in lines:
            event = _feed_line(raw.rstrip(b"\r").decode("utf-8"), data_lines)
            if event is not None:
                yield event
    if buffer.strip():
        _feed_line(buffer.rstrip(b"\r").decode("utf-8"), data_lines)
    if data_lines:
        yield _decode_event("\n".join(data_lines))


def _feed_line(line: str, data_lines: list[str]) -> dict[str, Any] | None:
    if line == "":
        if not data_lines:
            return None
        payload = "\n".join(data_lines)
        data_lines.clear()
        return _decode_event(payload)
    if line.startswith("data:"):
        value = line[5:]
        data_lines.append(value[1:] if value.startswith(" ") else value)
    return None


def _decode_event(payload: str) -> dict[str, Any]:
    try:
        value = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise InvokeError(
            f"runtime sent an event that is not JSON: {payload[:200]!r}", exit_code=ExitCode.AGENT_ERROR
        ) from exc
    return normalize_event(value)


def normalize_event(value: Any) -> dict[str, Any]:
    """Map any reply value onto the event contract (see :func:`iter_sse_events`)."""
    if isinstance(value, str):
        return {"type": "text", "text": value}
    if not isinstance(value, dict):
        return {"type": "unknown", "value": value}
    if "type" not in value and "error" in value:
        message = str(value.get("message") or value["error"])
        if value.get("message") and value.get("error"):
            message = f"{value['message']}: {value['error']}"
        return {"type": "error", "code": str(value.get("error_type") or "runtime_error"), "message": message}
    if "type" not in value and "session_id" in value:  # a non-streaming JSON reply
        return {"type": "result", **value}
    return value


# ------------------------------------------------------------------------------------------ local transport
@dataclass(frozen=True)
class InvocationRequest:
    """What to send: the contract body plus the runtime session id."""

    prompt: str
    session_id: str
    stream: bool = True
    max_budget_usd: float | None = None

    def body(self) -> dict[str, Any]:
        """The invocation body (DESIGN §4). Optional fields are sent only when set."""
        body: dict[str, Any] = {"prompt": self.prompt, "stream": self.stream}
        if self.max_budget_usd is not None:
            body["max_budget_usd"] = self.max_budget_usd
        return body


def invoke_local(url: str, request: InvocationRequest, *, timeout: float = 900.0) -> Iterator[dict[str, Any]]:
    """POST ``{url}/invocations`` to a runtime server (``python -m runtime``) and yield its events.

    Raises:
        InvokeError: bad URL (2), connection failure before the request was sent (1), HTTP error status
            (2 for 4xx validation, 3 for budget, 1 otherwise), no reply within ``timeout`` seconds or the
            connection lost while reading the reply (4: the turn may still be running).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvokeError(f"--local needs an http(s) URL, got {url!r}", exit_code=ExitCode.USAGE)
    conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(parts.hostname, parts.port, timeout=timeout)
    path = parts.path.rstrip("/") + "/invocations"
    headers = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream" if request.stream else "application/json",
        SESSION_HEADER: request.session_id,
    }
    hint = f"the runtime may still be running the turn of session {request.session_id}"
    events = 0
    try:
        try:
            conn.request("POST", path, body=json.dumps(request.body()).encode(), headers=headers)
        except OSError as exc:
            raise InvokeError(
                f"cannot reach the runtime at {url}: {exc.strerror or exc} "
                "(is it running? start one with `python -m runtime`)",
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


def http_error(status: int, body: bytes) -> InvokeError:
    """An :class:`InvokeError` for an HTTP error reply, using the contract's error body when present."""
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
    return InvokeError(f"runtime answered HTTP {status} [{code}]: {message}", exit_code=exit_code, code=code)


def _json_or_error(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvokeError(
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
        InvokeError: AWS errors (4; 2 for validation), runtime error replies (1, 2 or 3, see
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
        raise aws_error(exc, action="InvokeAgentRuntime") from exc
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
        InvokeError: AWS errors (exit code 4; 2 for validation).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    params: dict[str, Any] = {"agentRuntimeArn": runtime_arn, "runtimeSessionId": session_id}
    if qualifier:
        params["qualifier"] = qualifier
    try:
        response = client.stop_runtime_session(**params)
    except (ClientError, BotoCoreError) as exc:
        raise aws_error(exc, action="StopRuntimeSession") from exc
    return int(response.get("statusCode") or 200)


def runtime_arn_from_stack(cloudformation: Any, *, stack_name: str) -> str:
    """The runtime ARN among a CloudFormation stack's outputs.

    An output matches when its ``OutputKey`` or ``ExportName`` contains ``RuntimeArn`` (case-insensitive) and
    its value is a runtime ARN. An output whose key is exactly ``RuntimeArn`` wins over the others.

    Raises:
        InvokeError: stack missing or unreadable (4), no or several matching outputs (2).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        if "does not exist" in str(exc.response.get("Error", {}).get("Message", "")):
            raise InvokeError(
                f"stack {stack_name!r} not found (check the name, region and account)",
                exit_code=ExitCode.AWS_ERROR,
                code="StackNotFound",
            ) from exc
        raise aws_error(exc, action="DescribeStacks") from exc
    except BotoCoreError as exc:
        raise aws_error(exc, action="DescribeStacks") from exc
    outputs = stacks[0].get("Outputs", []) if stacks else []
    matches = [
        out
        for out in outputs
        if (
            "runtimearn" in out.get("OutputKey", "").lower()
            or "runtimearn" in out.get("ExportName", "").lower()
        )
        and _RUNTIME_ARN_RE.fullmatch(out.get("OutputValue", ""))
    ]
    exact = [out for out in matches if out.get("OutputKey") == "RuntimeArn"]
    chosen = exact or matches
    if len(chosen) != 1:
        keys = ", ".join(out.get("OutputKey", "?") for out in outputs) or "none"
        what = "no output" if not chosen else "several outputs"
        raise InvokeError(
            f"stack {stack_name!r} has {what} with a runtime ARN under a key containing 'RuntimeArn' "
            f"(outputs: {keys}); pass --runtime-arn instead",
            exit_code=ExitCode.USAGE,
        )
    return str(chosen[0]["OutputValue"])
