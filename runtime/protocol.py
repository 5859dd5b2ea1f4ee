"""The invocation contract: request parsing at the boundary and the SSE / JSON event schema.

Request body (``POST /invocations``)::

    {"prompt": str, "stream": bool = true, "max_turns": int?, "max_budget_usd": float?, "metadata": {str: str}?,
     "workspace": {"tar_gz_b64": str} | {"s3_uri": str}?, "async": bool = false, "job": {"id": str, "context": {}}?,
     "approve": {"id": str, "by": str?, "note": str?}?, "deny": {"id": str, "by": str?, "reason": str?}?,
     "withdraw": {"id": str, "by": str?, "reason": str?}?}

Exactly one of ``prompt``, ``approve``, ``deny`` and ``withdraw``: an answer to a tool call waiting for approval
(:mod:`runtime.approvals`, docs/approvals.md) starts the session's next turn itself. A turn stopped by such a call
ends with a ``result`` whose ``subtype`` is ``awaiting_approval`` and whose ``approval`` is the request's card. A
``withdraw`` takes a waiting request back unanswered and starts no turn: the reply is one JSON object
(:class:`WithdrawnReply`) whatever ``stream`` says, and the turn fields (``async``, ``job``, ``workspace``,
``max_turns``, ``max_budget_usd``, ``metadata``) are refused with it.

Unknown fields are rejected. ``workspace`` is a snapshot of a repository's working tree (a base64 tar.gz archive,
at most ``AGENTKIT_WORKSPACE_MAX_BYTES`` before encoding, or one uploaded under ``AGENTKIT_WORKSPACE_S3_URI``): the
session then works on it (:mod:`runtime.workspace`),
and every ``result`` of the session carries ``patch`` (a git-format diff against the latest snapshot, ``""`` when
nothing changed), ``changed_files`` and ``withheld_files`` (changed paths kept out of the patch, with why). Streaming replies are ``data: <event>`` lines; the last event is ``result`` or ``error``:

=============  =======================================================================================
``text``       ``{"type": "text", "text": str}`` — a piece of the assistant's answer
``tool_use``   ``{"type": "tool_use", "id": str, "name": str, "input_summary": str}``
``tool_result````{"type": "tool_result", "id": str, "name": str, "ok": bool, "summary": str}``
``result``     ``{"type": "result", "session_id", "claude_session_id", "text", "cost_usd", "sdk_cost_usd",
               "usage", "num_turns", "subtype", "duration_ms", "resumed", "continued", "patch"?, "changed_files"?,
               "withheld_files"?, "approval"?}``
``error``      ``{"type": "error", "code": str, "message": str, "partial": {...}?}``
=============  =======================================================================================

A non-streaming reply is the ``result`` event plus ``"tool_events"`` (the ``tool_use`` / ``tool_result`` events),
or the ``error`` event with the error's HTTP status. Inside the runtime a failed turn ends with a
:class:`Failure`, which carries that status next to the error event (the server unwraps it); the events
themselves hold only what goes on the wire.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from runtime import json_guard
from runtime.approvals.records import ApprovalCard
from runtime.errors import (
    AgentKitError,
    InvalidRequest,
    InvalidSessionId,
    InvalidWorkspace,
    PromptTooLarge,
    WorkspaceTooLarge,
)
from runtime.json_guard import JsonTooDeep

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{32,255}$")
MAX_METADATA_KEYS = 15
MAX_SUMMARY_CHARS = 160
#: The ``subtype`` of a result whose turn stopped at a tool call that waits for a person's approval.
AWAITING_APPROVAL = "awaiting_approval"
#: Bytes one prompt character may take in the body: a character outside the BMP sent as a ``\\u`` surrogate pair
#: (``json.dumps``' default, ``ensure_ascii=True``) is 12 bytes.
MAX_BYTES_PER_CHAR = 12
#: Room for the rest of the body (other fields, metadata, whitespace).
ENVELOPE_BYTES = 64 * 1024


def max_body_bytes(max_prompt_chars: int, max_workspace_bytes: int = 0) -> int:
    """The largest body that can still hold a prompt of ``max_prompt_chars`` characters, however encoded, and a
    workspace archive of ``max_workspace_bytes`` (base64: 4 characters per 3 bytes)."""
    return max_prompt_chars * MAX_BYTES_PER_CHAR + ENVELOPE_BYTES + b64_chars(max_workspace_bytes)


def b64_chars(size: int) -> int:
    """Characters of ``size`` bytes in padded base64."""
    return -(-size // 3) * 4


# -- events and replies --------------------------------------------------------------------------------------


class TextEvent(TypedDict):
    type: Literal["text"]
    text: str


class ToolUseEvent(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    input_summary: str


class ToolResultEvent(TypedDict):
    type: Literal["tool_result"]
    id: str
    name: str
    ok: bool
    summary: str


class Usage(TypedDict):
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int


class TurnFigures(TypedDict):
    """What a finished turn cost (in ``result`` events, and in ``partial`` of an error after a result)."""

    cost_usd: float
    sdk_cost_usd: float | None
    cost_complete: bool
    session_cost_usd: float | None
    usage: Usage


class PartialFigures(TurnFigures):
    subtype: str


class ResultEvent(TurnFigures):
    type: Literal["result"]
    session_id: str
    claude_session_id: str
    text: str
    subtype: str
    num_turns: int
    duration_ms: int
    resumed: bool
    continued: NotRequired[bool]
    #: Only in sessions that were sent a workspace snapshot: the change against the latest snapshot.
    patch: NotRequired[str]
    changed_files: NotRequired[list[str]]
    withheld_files: NotRequired[list[str]]
    #: Only when ``subtype`` is ``awaiting_approval``: the call that waits and how to answer it.
    approval: NotRequired[ApprovalCard]


class ErrorEvent(TypedDict):
    type: Literal["error"]
    code: str
    message: str
    partial: NotRequired[PartialFigures]


ToolEvent = ToolUseEvent | ToolResultEvent
Event = TextEvent | ToolUseEvent | ToolResultEvent | ResultEvent | ErrorEvent


class JsonReply(ResultEvent):
    """The non-streaming reply of a successful turn."""

    tool_events: list[ToolEvent]


class Withdrawal(TypedDict):
    """Who took a request back, when (epoch s) and why, as the request's record keeps it."""

    at: float
    by: str | None
    reason: str | None


class WithdrawnReply(TypedDict):
    """The reply to a ``withdraw`` (HTTP 200, JSON, no turn ran): the request's card, now ``withdrawn``, and the
    withdrawal. A repeated withdraw answers the same (the first withdrawal's who, when and why)."""

    type: Literal["approval_withdrawn"]
    session_id: str
    claude_session_id: str
    approval: ApprovalCard
    withdrawn: Withdrawal


@dataclass(frozen=True)
class Failure:
    """How a failed turn ends inside the runtime: the error event a client gets, and the HTTP status of a
    non-streaming reply (an error instance may differ from its class's status, e.g. a throttled model call)."""

    event: ErrorEvent
    http_status: int

    @classmethod
    def of(cls, exc: AgentKitError) -> Failure:
        return cls(error_event(exc), exc.http_status)


def error_event(exc: AgentKitError) -> ErrorEvent:
    """The error event for ``exc`` (the contract's ``{"type": "error", "code", "message"}``)."""
    return {"type": "error", "code": exc.code, "message": exc.message}


#: What a turn emits: progress and result events, and a :class:`Failure` last when it fails. An error event
#: travels only inside a Failure, which carries its HTTP status, so a bare one is not a turn item.
TurnItem = TextEvent | ToolUseEvent | ToolResultEvent | ResultEvent | Failure
#: How a turn runner hands each item to its caller.
Emit = Callable[[TurnItem], Awaitable[None]]


class WorkspaceSnapshot(BaseModel):
    """A repository's working tree: a tar.gz archive, base64-encoded inline or uploaded to S3
    (docs/repository-work.md). Exactly one of the two."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    tar_gz_b64: str | None = Field(default=None, min_length=1)
    s3_uri: str | None = Field(default=None, min_length=1, max_length=2048)

    @model_validator(mode="after")
    def _one_source(self) -> WorkspaceSnapshot:
        if (self.tar_gz_b64 is None) == (self.s3_uri is None):
            raise ValueError("give exactly one of tar_gz_b64 and s3_uri")
        return self

    def archive(self, max_bytes: int) -> bytes:
        """The archive's bytes.

        Raises:
            WorkspaceTooLarge: over ``max_bytes`` (checked before decoding).
            InvalidWorkspace: not base64.
        """
        if self.tar_gz_b64 is None:
            raise InvalidWorkspace("workspace has no inline archive")
        if max_bytes <= 0:
            raise InvalidWorkspace(
                "this runtime does not accept workspace snapshots (AGENTKIT_WORKSPACE_MAX_BYTES is 0)"
            )
        if len(self.tar_gz_b64) > b64_chars(max_bytes):
            raise WorkspaceTooLarge(
                f"the workspace archive is about {len(self.tar_gz_b64) * 3 // 4} bytes; the limit is {max_bytes} "
                "(AGENTKIT_WORKSPACE_MAX_BYTES). Send fewer files (.gitignore build output) or raise the limit."
            )
        try:
            return base64.b64decode(self.tar_gz_b64, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidWorkspace(
                "workspace.tar_gz_b64 is not valid base64; send the tar.gz archive base64-encoded"
            ) from None


JOB_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
#: The largest ``job.context``, as compact UTF-8 JSON: it is echoed in every event of the job.
MAX_CONTEXT_BYTES = 4096


class JobSpec(BaseModel):
    """The request's ``job``: an id of the caller's choosing and an opaque context echoed in every event."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(min_length=1, max_length=128)
    context: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id_charset(cls, value: str) -> str:
        if not JOB_ID_RE.match(value):
            raise ValueError("must be 1-128 characters of letters, digits and '.', '_', ':', '-'")
        if not value.strip("."):  # "." and ".." would name a directory in the patch's S3 key
            raise ValueError("must not consist of dots only")
        return value

    @field_validator("context")
    @classmethod
    def _small_context(cls, value: dict[str, Any]) -> dict[str, Any]:
        size = len(encode_context(value))
        if size > MAX_CONTEXT_BYTES:
            raise ValueError(
                f"is {size} bytes as JSON; at most {MAX_CONTEXT_BYTES}: send ids to look things up, not the things"
            )
        return value


def encode_context(context: dict[str, Any]) -> bytes:
    """``job.context`` as its size is counted: compact JSON, UTF-8."""
    return json.dumps(context, separators=(",", ":"), ensure_ascii=False).encode()


APPROVAL_ID_RE = r"^apv-[0-9a-f]{20}$"


class ApproveSpec(BaseModel):
    """The request's ``approve``: the approval to grant, who granted it (for the record) and an optional ``note``
    the agent is given with the approval."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(pattern=APPROVAL_ID_RE)
    by: str | None = Field(default=None, min_length=1, max_length=256)
    note: str | None = Field(default=None, min_length=1, max_length=2000)


class DenySpec(BaseModel):
    """The request's ``deny``: the approval to refuse, who refused it and why (the agent is told the reason)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(pattern=APPROVAL_ID_RE)
    by: str | None = Field(default=None, min_length=1, max_length=256)
    reason: str | None = Field(default=None, min_length=1, max_length=2000)


class WithdrawSpec(BaseModel):
    """The request's ``withdraw``: the waiting approval to take back unanswered (its job was stopped), who took it
    back and why (for the record). No turn starts."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(pattern=APPROVAL_ID_RE)
    by: str | None = Field(default=None, min_length=1, max_length=256)
    reason: str | None = Field(default=None, min_length=1, max_length=2000)


#: The body fields that shape a turn: refused with a ``withdraw``, which starts none.
TURN_FIELDS = ("max_turns", "max_budget_usd", "metadata", "workspace", "async_", "job")


class InvocationRequest(BaseModel):
    """A validated invocation body."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    prompt: str | None = Field(default=None, min_length=1)
    approve: ApproveSpec | None = None
    deny: DenySpec | None = None
    withdraw: WithdrawSpec | None = None
    stream: bool = True
    max_turns: int | None = Field(default=None, gt=0)
    max_budget_usd: float | None = Field(default=None, gt=0)
    metadata: dict[str, str] = Field(default_factory=dict)
    workspace: WorkspaceSnapshot | None = None
    #: ``"async": true``: answer ``202`` at once and report through SQS (:mod:`runtime.jobs`); needs ``job``.
    async_: bool = Field(default=False, alias="async")
    job: JobSpec | None = None

    @model_validator(mode="after")
    def _one_of_prompt_approve_deny(self) -> InvocationRequest:
        given = [
            name for name in ("prompt", "approve", "deny", "withdraw") if getattr(self, name) is not None
        ]
        if not given:
            raise ValueError(
                '\'prompt\' is required (or, to answer a tool call waiting for approval, "approve" or "deny")'
            )
        if len(given) > 1:
            raise ValueError(
                f'give exactly one of "prompt", "approve", "deny" and "withdraw" (got {", ".join(given)}): a prompt '
                'starts a turn; {"approve": {"id": "apv-…"}} or {"deny": {"id": "apv-…", "reason": "…"}} answers a '
                'tool call waiting for approval and starts the turn that follows; {"withdraw": {"id": "apv-…"}} '
                "takes a waiting request back and starts nothing"
            )
        if self.withdraw is not None:
            turn = [f for f in TURN_FIELDS if f in self.model_fields_set]
            if turn:
                names = ", ".join("async" if f == "async_" else f for f in turn)
                raise ValueError(
                    f'"withdraw" starts no turn, so it takes no {names}: send {{"withdraw": {{"id": "apv-…", '
                    '"by": "…", "reason": "…"}}'
                )
        return self

    @model_validator(mode="after")
    def _job_with_async(self) -> InvocationRequest:
        if self.async_ and self.job is None:
            raise ValueError('"async": true needs "job": {"id": "<your job id>", "context": {...}}')
        if self.job is not None and not self.async_:
            raise ValueError('"job" is only for asynchronous invocations: add "async": true')
        return self

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must contain non-whitespace text")
        return value

    @field_validator("metadata")
    @classmethod
    def _small_metadata(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_METADATA_KEYS:
            raise ValueError(f"at most {MAX_METADATA_KEYS} keys")
        return value


def parse_body(raw: bytes, *, max_prompt_chars: int, max_workspace_bytes: int = 0) -> InvocationRequest:
    """Parse and validate raw request bytes. Raises :class:`InvalidRequest` / :class:`PromptTooLarge`."""
    # A body that cannot hold a prompt (and a workspace) within the limits, however encoded, is refused unparsed.
    if len(raw) > max_body_bytes(max_prompt_chars, max_workspace_bytes):
        raise PromptTooLarge(
            f"request body is {len(raw)} bytes; prompts are limited to {max_prompt_chars} characters. "
            "Shorten the prompt or split the work over several turns of one session."
        )
    try:
        data = json_guard.loads(raw)
    except JsonTooDeep as exc:
        raise InvalidRequest(
            f"body is too deeply nested ({exc}). Send a flat JSON object such as "
            '{"prompt": "Summarise the open issues", "stream": true}.'
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequest(
            f"body is not valid UTF-8 JSON ({exc}). Send a JSON object such as "
            '{"prompt": "Summarise the open issues", "stream": true}.'
        ) from None
    return parse_payload(data, max_prompt_chars=max_prompt_chars)


def parse_payload(data: Any, *, max_prompt_chars: int) -> InvocationRequest:
    """Validate an already-decoded payload into an :class:`InvocationRequest`."""
    if not isinstance(data, dict):
        raise InvalidRequest(
            f"body must be a JSON object, got {type(data).__name__}. "
            'Send {"prompt": "...", "stream": true}.'
        )
    prompt = data.get("prompt")
    if isinstance(prompt, str) and len(prompt) > max_prompt_chars:
        raise PromptTooLarge(
            f"prompt has {len(prompt)} characters; the limit is {max_prompt_chars}. "
            "Shorten it or split the work over several turns of one session."
        )
    try:
        return InvocationRequest.model_validate(data)
    except ValidationError as exc:
        raise InvalidRequest(_explain(exc)) from None


def _explain(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"]) or "body"
        if error["type"] == "extra_forbidden" and loc.startswith("workspace."):
            problems.append(f"unknown field '{loc}' (allowed in workspace: tar_gz_b64, s3_uri)")
        elif error["type"] == "extra_forbidden" and loc.startswith("job."):
            problems.append(f"unknown field '{loc}' (allowed in job: id, context)")
        elif error["type"] == "extra_forbidden" and loc.startswith(("approve.", "deny.", "withdraw.")):
            problems.append(
                f"unknown field '{loc}' (allowed: id, by, and note in approve or reason in deny and withdraw)"
            )
        elif error["type"] == "string_pattern_mismatch" and loc.endswith(".id"):
            problems.append(
                f"'{loc}' is not an approval id (apv- and 20 hex digits, as the awaiting result gave it)"
            )
        elif error["type"] == "extra_forbidden":
            problems.append(
                f"unknown field '{loc}' (allowed: prompt, stream, max_turns, max_budget_usd, metadata, workspace, "
                "async, job, approve, deny, withdraw)"
            )
        elif loc == "body" and error["type"] == "value_error":
            problems.append(str(error["msg"]).removeprefix("Value error, "))
        elif error["type"] == "missing":
            problems.append(f"'{loc}' is required")
        else:
            problems.append(f"'{loc}': {error['msg']}")
    return (
        "invalid invocation body: " + "; ".join(problems) + '. Example: {"prompt": "Hello", "stream": true}.'
    )


def resolve_session_id(header_value: str | None) -> str:
    """Validate the runtime session id header, or generate one (when the header is absent or empty)."""
    if header_value is None or header_value == "":
        return f"agentkit-{uuid.uuid4().hex}"
    if not SESSION_ID_RE.match(header_value):
        raise InvalidSessionId(
            f"{SESSION_HEADER} must be 33-256 characters of letters, digits and '-', '.', ':' "
            f"starting with a letter or digit (got {len(header_value)} characters). "
            "Omit the header to get a new session id in the reply, or send e.g. 'agentkit-' + 32 hex digits."
        )
    return header_value


def summarize(value: Any, limit: int = MAX_SUMMARY_CHARS) -> str:
    """A short one-line rendering of a tool input or result, for progress events and logs."""
    if isinstance(value, list) and value and all(isinstance(v, dict) and "text" in v for v in value):
        text = " ".join(str(v["text"]) for v in value)  # MCP content blocks: show their text
    elif isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
