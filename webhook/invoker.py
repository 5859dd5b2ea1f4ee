"""``InvokeAgentRuntime`` for the webhook worker: one paid call, classified results.

:class:`AgentRuntimeInvoker` sends ``{"prompt": ..., "stream": false}`` on an injected
``bedrock-agentcore`` client (built with :func:`agentcore_client_config`: exactly one attempt),
names the actor as the runtime user id and in a custom header (botocore ``before-sign`` hook), retries only throttling in a
bounded loop, and turns the reply into a :class:`RuntimeReply` — a result, or a final agent error with
``error_code`` set. Transient failures raise (see ``worker`` for how each one is handled).

IAM: ``bedrock-agentcore:InvokeAgentRuntime`` and ``InvokeAgentRuntimeForUser`` on the runtime ARN and
``<arn>/runtime-endpoint/<name>``.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

from webhook.settings import DEFAULT_READ_TIMEOUT_SECONDS, DEFAULT_THROTTLE_RETRIES

#: Retried in the worker's own loop: the call was refused before any agent work.
THROTTLE_CODES = frozenset({"ThrottlingException", "TooManyRequestsException"})
#: Left to SQS (record fails, redelivered later): no turn ran, or AgentCore's own service failed.
TRANSIENT_CODES = THROTTLE_CODES | {
    "ServiceQuotaExceededException",
    "RetryableConflictException",
    "InternalServerException",
    "ServiceUnavailableException",
}
#: Runtime error codes (runtime/errors.py) that mean "try again later"; every other one is final.
TRANSIENT_RUNTIME_CODES = frozenset({"session_busy", "shutting_down", "runtime_unavailable"})
#: The container's HTTP status (runtime/errors.py, runtime/http/server.py) → its error code. AgentCore does not
#: relay the container's body, only its status, in the documented message
#: ``Received error (<status>) from runtime. Please check your CloudWatch logs for more information``
#: (the same wording ``runtime/client_errors.py`` parses). 429 and 503 are the transient ones.
RUNTIME_STATUS_CODES = {
    400: "invalid_request",
    402: "budget_exceeded",
    413: "prompt_too_large",
    429: "session_busy",
    500: "agent_error",
    502: "agent_process_error",
    503: "runtime_unavailable",  # shutting_down or session_store_unavailable: both mean "later"
    504: "turn_timeout",
}
_RUNTIME_STATUS = re.compile(r"(?:error|status|HTTP)\s*\(?(\d{3})\)?\s*from (?:the )?runtime", re.IGNORECASE)
#: Error codes the runtime sends (runtime/errors.py); used when a message carries no JSON ``code``.
KNOWN_RUNTIME_CODES = (
    "budget_exceeded",
    "turn_timeout",
    "prompt_too_large",
    "invalid_session_id",
    "invalid_request",
    "agent_process_error",
    "session_busy",
    "session_store_unavailable",
    "shutting_down",
    "configuration_error",
    "agent_error",
)
#: A code, optionally with a detail of the same alphabet (``patch_refused: ci_config,code_owners``).
_SAFE_CODE = re.compile(r"^[a-z][a-z0-9_]{0,63}(?:: [a-z][a-z0-9_]{0,63}(?:,[a-z][a-z0-9_]{0,63}){0,9})?$")
_JSON_CODE = re.compile(r'"code"\s*:\s*"([A-Za-z][A-Za-z0-9_]{0,63})"')
_current_actor: contextvars.ContextVar[str | None] = contextvars.ContextVar("agentkit_actor", default=None)


class RuntimeReplyError(Exception):
    """The runtime answered with something that is neither a result nor an error document."""


class TransientInvokeError(Exception):
    """No turn ran (e.g. the runtime session is busy); the record fails so SQS retries it later."""


@dataclass(frozen=True)
class RuntimeReply:
    text: str = ""
    cost_usd: float | None = None
    num_turns: int | None = None
    session_id: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    request_id: str | None = None
    #: Set when the runtime accepted an asynchronous job (``{"type": "job_accepted", "job_id", ...}``).
    job_id: str | None = None


def safe_error_code(code: object) -> str:
    """``code`` if it looks like a runtime error code (lower snake case), else ``agent_error``.

    Only this value reaches the public issue, so nothing else a reply carries can leak there.
    """
    text = str(code or "").strip().lower()
    return text if _SAFE_CODE.match(text) else "agent_error"


def runtime_status(message: str) -> int | None:
    """The container's HTTP status named in an AgentCore error message, if any."""
    match = _RUNTIME_STATUS.search(message)
    return int(match.group(1)) if match else None


def runtime_client_error_code(message: str) -> str:
    """The runtime's error code for a ``RuntimeClientError`` message.

    AgentCore's documented message names only the container's status: that status is mapped with
    :data:`RUNTIME_STATUS_CODES`. A JSON ``"code": "..."`` or a known runtime code in the message (a
    stand-in, or a relayed body) wins when present. Else ``http_<status>``, else ``runtime_error``.
    """
    match = _JSON_CODE.search(message)
    if match:
        return safe_error_code(match.group(1))
    named = next((code for code in KNOWN_RUNTIME_CODES if code in message), None)
    if named:
        return named
    status = runtime_status(message)
    if status is None:
        return "runtime_error"
    return RUNTIME_STATUS_CODES.get(status, f"http_{status}")


def _request_id(response: dict[str, Any]) -> str | None:
    meta = response.get("ResponseMetadata") or {}
    return meta.get("RequestId") or (meta.get("HTTPHeaders") or {}).get("x-amzn-requestid")


def agentcore_client_config(*, read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS) -> Config:
    """botocore config for ``InvokeAgentRuntime``: one attempt only (a retry would re-run a paid turn)."""
    return Config(
        read_timeout=read_timeout,
        connect_timeout=10,
        retries={"total_max_attempts": 1, "mode": "standard"},
    )


def parse_reply(body: bytes, content_type: str = "application/json") -> RuntimeReply:
    """Parse the runtime's non-streaming JSON reply (or, defensively, an SSE stream's last event)."""
    text = body.decode("utf-8", errors="replace")
    if "text/event-stream" in content_type:
        events = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
        final = next((e for e in reversed(events) if e.get("type") in ("result", "error")), None)
        if final is None:
            raise RuntimeReplyError("event stream ended without a result or error event")
        doc: Any = final
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RuntimeReplyError(f"runtime reply is not JSON: {text[:200]!r}") from exc
    if not isinstance(doc, dict):
        raise RuntimeReplyError(f"runtime reply is not a JSON object: {text[:200]!r}")
    err = doc.get("error")
    if doc.get("type") == "error" or err:
        if isinstance(err, dict):
            code, message = err.get("code"), err.get("message")
        else:
            code, message = doc.get("code"), doc.get("message") or err
        return RuntimeReply(error_code=str(code or "agent_error"), error_message=str(message or ""))
    if doc.get("type") == "job_accepted":
        job_id = doc.get("job_id")
        if not isinstance(job_id, str) or not job_id:
            raise RuntimeReplyError("job_accepted reply without a job_id")
        session = doc.get("session_id")
        return RuntimeReply(job_id=job_id, session_id=session if isinstance(session, str) else None)
    if "text" not in doc:
        raise RuntimeReplyError(f"runtime reply has no 'text': keys {sorted(doc)[:10]}")
    cost = doc.get("cost_usd")
    return RuntimeReply(
        text=str(doc.get("text") or ""),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        num_turns=doc.get("num_turns"),
        session_id=doc.get("session_id"),
    )


class AgentRuntimeInvoker:
    """Calls ``InvokeAgentRuntime`` (non-streaming) on an injected ``bedrock-agentcore`` client."""

    def __init__(
        self,
        *,
        client: Any,
        runtime_arn: str,
        qualifier: str | None = None,
        actor_header: str = "",
        throttle_retries: int = DEFAULT_THROTTLE_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``client``: a ``bedrock-agentcore`` client built with :func:`agentcore_client_config`."""
        if throttle_retries < 0:
            raise ValueError("throttle_retries must be >= 0")
        self._client = client
        self.runtime_arn = runtime_arn
        self.qualifier = qualifier or None
        self.actor_header = actor_header
        self.throttle_retries = throttle_retries
        self._sleep = sleep
        client.meta.events.register_first(
            "before-sign.bedrock-agentcore.InvokeAgentRuntime", self._add_actor_header
        )

    def _add_actor_header(self, request: Any, **_: Any) -> None:
        actor = _current_actor.get()
        if actor and self.actor_header:
            request.headers[self.actor_header] = actor

    def invoke(
        self,
        *,
        prompt: str | None,
        session_id: str,
        actor: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> RuntimeReply:
        """One agent turn. Final agent errors come back as a reply with ``error_code`` set.

        ``extra``: more invocation fields (``workspace``, ``async``, ``job``, ``approve``, ...), merged into the
        body; for an asynchronous job the reply is the runtime's acceptance (``job_id`` set). ``prompt`` ``None``:
        no prompt (the runtime takes exactly one of ``prompt``, ``approve`` and ``deny``).

        Raises:
            TransientInvokeError: the container answered 429 (session busy) or 503 (shutting down,
                session store unavailable): no turn ran.
            botocore ClientError / EndpointConnectionError / ConnectTimeoutError: transient or
                configuration errors (the worker lets SQS retry them).

        After a 2xx nothing is raised: an unreadable or malformed reply is a final error
        (``reply_unreadable`` / ``malformed_reply``).
        """
        try:
            response = self._send(
                session_id=session_id,
                actor=actor,
                body={**({"prompt": prompt} if prompt is not None else {}), "stream": False, **(extra or {})},
            )
        except ReadTimeoutError as exc:
            # The turn may still be running (and is billed): final, never retried.
            return RuntimeReply(error_code="timeout", error_message=str(exc))
        except ConnectionClosedError as exc:
            return RuntimeReply(error_code="connection_lost", error_message=str(exc))
        if isinstance(response, RuntimeReply):
            return response
        # From here on a 2xx arrived: the turn ran and is paid for. Whatever goes wrong reading or
        # parsing its reply is a final error (posted as such), never raised: a raise would make SQS
        # redeliver the task and run the paid turn again.
        request_id = _request_id(response)
        stream = response["response"]
        try:
            body = stream.read()
        except ReadTimeoutError as exc:
            return RuntimeReply(error_code="timeout", error_message=str(exc), request_id=request_id)
        except Exception as exc:  # cut off mid-body: IncompleteRead, connection reset, protocol error
            return RuntimeReply(
                error_code="reply_unreadable",
                error_message=f"{type(exc).__name__}: {exc}",
                request_id=request_id,
            )
        finally:
            stream.close()
        try:
            reply = parse_reply(body, response.get("contentType") or "application/json")
        except (RuntimeReplyError, ValueError, TypeError, AttributeError) as exc:
            return RuntimeReply(
                error_code="malformed_reply",
                error_message=f"{type(exc).__name__}: {exc}",
                request_id=request_id,
            )
        return dataclasses.replace(reply, request_id=request_id)

    def withdraw(
        self, *, session_id: str, approval_id: str, by: str, reason: str, actor: str | None = None
    ) -> str:
        """Take the waiting approval ``approval_id`` of ``session_id`` back on the runtime (``{"withdraw": ...}``,
        docs/approvals.md): no turn runs, so unlike :meth:`invoke` nothing is paid for and the call may be repeated
        (the runtime answers a repeat as the first). ``actor``: the one the session's turns were invoked with (it is
        part of the runtime's session key).

        Returns ``"withdrawn"``, or the runtime's error code when it refused (``http_404``: no such approval,
        ``http_409``: answered already, ``http_410``: expired or withdrawn before; AgentCore relays only the
        status). Raises ``TransientInvokeError`` (429 / 503) and botocore errors, as :meth:`invoke` does."""
        response = self._send(
            session_id=session_id,
            actor=actor,
            body={"withdraw": {"id": approval_id, "by": by[:256], "reason": reason[:2000]}, "stream": False},
        )
        if isinstance(response, RuntimeReply):
            return str(response.error_code)
        stream = response["response"]
        try:
            doc = json.loads(stream.read())
        finally:
            stream.close()
        if not isinstance(doc, dict) or doc.get("type") != "approval_withdrawn":
            raise RuntimeReplyError(f"unexpected reply to a withdraw: {str(doc)[:200]!r}")
        return str((doc.get("approval") or {}).get("status") or "withdrawn")

    def _send(
        self, *, session_id: str, actor: str | None, body: Mapping[str, Any]
    ) -> dict[str, Any] | RuntimeReply:
        """One ``InvokeAgentRuntime`` with the JSON ``body``, as ``actor``, retrying only throttling.

        Returns the 2xx response (its ``response`` stream still unread), or, when the runtime refused the call, a
        :class:`RuntimeReply` with only its error code, message and request id set.

        Raises:
            TransientInvokeError: the runtime answered 429 or 503: nothing ran.
            botocore errors: any other ``ClientError`` and every connection or read error, unchanged.
        """
        kwargs: dict[str, Any] = {
            "agentRuntimeArn": self.runtime_arn,
            "runtimeSessionId": session_id,
            "contentType": "application/json",
            "accept": "application/json",
            "payload": json.dumps(body).encode(),
        }
        if self.qualifier:
            kwargs["qualifier"] = self.qualifier
        if actor:
            # The supported field for "on behalf of whom" (needs bedrock-agentcore:InvokeAgentRuntimeForUser).
            # AgentCore hands the container a workload access token for it, not the id itself, so the actor
            # header still names it; the runtime trusts that header only alongside such a token.
            kwargs["runtimeUserId"] = actor
        attempt = 0
        while True:
            token = _current_actor.set(actor)
            try:
                response: dict[str, Any] = self._client.invoke_agent_runtime(**kwargs)
                return response
            except ClientError as exc:
                err = exc.response.get("Error", {})
                code, message = str(err.get("Code", "")), str(err.get("Message", ""))
                if code in THROTTLE_CODES and attempt < self.throttle_retries:
                    self._sleep(random.uniform(0, min(8.0, 2.0**attempt)))
                    attempt += 1
                    continue
                relayed = code == "RuntimeClientError" or (
                    code == "ValidationException" and runtime_status(message) is not None
                )
                if not relayed:
                    raise
                reply = RuntimeReply(
                    error_code=runtime_client_error_code(message),
                    error_message=message,
                    request_id=_request_id(exc.response),
                )
                if reply.error_code in TRANSIENT_RUNTIME_CODES or runtime_status(message) in (429, 503):
                    raise TransientInvokeError(f"runtime answered {reply.error_code}: {message}") from None
                return reply
            finally:
                _current_actor.reset(token)
