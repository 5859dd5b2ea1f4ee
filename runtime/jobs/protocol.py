"""The asynchronous job contract: the request's ``job`` object, the ``202`` answer and the events sent to SQS.

A job is an invocation with ``"async": true`` and ``"job": {"id": ..., "context": {...}}``. It is answered at once
with ``202`` :class:`JobAccepted`; its turn runs in the background and reports through SQS, one JSON message per
event (docs/http-api.md#asynchronous-jobs)::

    {"v": 1, "job_id", "session_id", "seq": 1, 2, ..., "kind": "progress" | "result", "at": <epoch s>,
     "context": <job.context as sent>,
     progress: "elapsed_s", "tool_calls", "last_tool", "cost_usd"
     result:   "result": the final event of the synchronous JSON reply ({"type": "result", ...} or
               {"type": "error", "code", "message", "cost_usd", "partial"?})}

Consumers deduplicate on ``(job_id, seq)``: delivery is at least once. Imports nothing of the runtime but its
errors, so the webhook side's tests can read the shapes without the runtime's dependencies.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Version of the event schema (``v``): a consumer refuses a version it does not know.
EVENT_VERSION = 1
JOB_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
#: The largest ``job.context``, as compact UTF-8 JSON: it is echoed in every event of the job.
MAX_CONTEXT_BYTES = 4096
#: SQS's limit on one message body: "The maximum size is 1 MiB or 1,048,576 bytes" (botocore's SQS model
#: 2012-11-05, ``SendMessageRequest.MessageBody``; a queue's ``MaximumMessageSize`` defaults to it, and the stack
#: sets it on the events queue: ``infra/job_events.py``).
SQS_MAX_MESSAGE_BYTES = 1_048_576
#: Where a patch too large for one message goes in the workspace bucket (``AGENTKIT_WORKSPACE_BUCKET``).
PATCH_KEY = "jobs/{job_id}/patch.diff"


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


class JobAccepted(TypedDict):
    """The ``202`` answer to a job request (also to a repeated one: the same job, no second turn)."""

    type: Literal["job_accepted"]
    job_id: str
    session_id: str


class _JobMessage(TypedDict):
    v: int
    job_id: str
    session_id: str
    seq: int
    kind: str
    at: float
    context: dict[str, Any]


class ProgressMessage(_JobMessage):
    """A progress event (``kind`` ``progress``): at most one per ``AGENTKIT_JOB_PROGRESS_SECONDS``, plus one at the
    first tool call; never after the result."""

    elapsed_s: float
    tool_calls: int
    last_tool: str | None
    cost_usd: float


class ResultMessage(_JobMessage):
    """The result event (``kind`` ``result``): exactly one per job, the last. ``result`` is the synchronous reply's
    final event; its ``patch`` may be replaced by ``patch_s3_uri`` (:func:`runtime.jobs.fit.fit_message`)."""

    result: dict[str, Any]


JobMessage = ProgressMessage | ResultMessage


def encode_message(message: JobMessage | dict[str, Any]) -> str:
    """One SQS message body. ASCII-only JSON: SQS accepts only some Unicode characters in a body (#x9, #xA, #xD,
    #x20-#xD7FF, #xE000-#xFFFD, #x10000-#x10FFFF; botocore's SQS model, ``SendMessage``), and escaped JSON holds
    none of the others, whatever a patch contains. Its length is its size in bytes."""
    return json.dumps(message, ensure_ascii=True, separators=(",", ":"))
