"""The asynchronous job contract: the request's ``job`` object, the ``202`` answer and the events sent to SQS.

A job is an invocation with ``"async": true`` and ``"job": {"id": ..., "context": {...}}``. It is answered at once
with ``202`` :class:`JobAccepted`; its turn runs in the background and reports through SQS, one JSON message per
event (docs/http-api.md#asynchronous-jobs)::

    {"v": 1, "job_id", "session_id", "seq": 1, 2, ..., "kind": "progress" | "result", "at": <epoch s>,
     "context": <job.context as sent>,
     progress: "elapsed_s", "tool_calls", "last_tool", "cost_usd"
     result:   "result": the final event of the synchronous JSON reply ({"type": "result", ...} or
               {"type": "error", "code", "message", "cost_usd", "partial"?})}

Consumers deduplicate on ``(job_id, seq)``: delivery is at least once. The request's ``job`` itself is
:class:`runtime.protocol.JobSpec`, with the rest of the request. Imports nothing of the runtime.
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypedDict

#: Version of the event schema (``v``): a consumer refuses a version it does not know.
EVENT_VERSION = 1
#: SQS's limit on one message body: "The maximum size is 1 MiB or 1,048,576 bytes" (botocore's SQS model
#: 2012-11-05, ``SendMessageRequest.MessageBody``; a queue's ``MaximumMessageSize`` defaults to it, and the stack
#: sets it on the events queue: ``infra/job_events.py``).
SQS_MAX_MESSAGE_BYTES = 1_048_576
#: Where a patch too large for one message goes in the workspace bucket (``AGENTKIT_WORKSPACE_BUCKET``): under the
#: runtime session too, since job ids are the caller's and two sessions may use the same one (session ids are
#: ``[A-Za-z0-9._:-]``, safe as a key part: ``runtime.protocol.SESSION_ID_RE``).
PATCH_KEY = "jobs/{session_id}/{job_id}/patch.diff"


class JobAccepted(TypedDict):
    """The ``202`` answer to a job request (also to a repeated one: the same job, no second turn)."""

    type: Literal["job_accepted"]
    job_id: str
    session_id: str


class JobEnvelope(TypedDict):
    """The fields every job message has."""

    v: int
    job_id: str
    session_id: str
    seq: int
    at: float
    context: dict[str, Any]


class ProgressMessage(JobEnvelope):
    """A progress event (``kind`` ``progress``): at most one per ``AGENTKIT_JOB_PROGRESS_SECONDS``, plus one at the
    first tool call; never after the result."""

    kind: Literal["progress"]
    elapsed_s: float
    tool_calls: int
    last_tool: str | None
    cost_usd: float


class ResultMessage(JobEnvelope):
    """The result event (``kind`` ``result``): exactly one per job, the last. ``result`` is the synchronous reply's
    final event; its ``patch`` may be replaced by ``patch_s3_uri`` (:func:`runtime.jobs.fit.fit_message`)."""

    kind: Literal["result"]
    result: dict[str, Any]


JobMessage = ProgressMessage | ResultMessage


def encode_message(message: JobMessage | dict[str, Any]) -> str:
    """One SQS message body. ASCII-only JSON: SQS accepts only some Unicode characters in a body (#x9, #xA, #xD,
    #x20-#xD7FF, #xE000-#xFFFD, #x10000-#x10FFFF; botocore's SQS model, ``SendMessage``), and escaped JSON holds
    none of the others, whatever a patch contains. Its length is its size in bytes."""
    return json.dumps(message, ensure_ascii=True, separators=(",", ":"))
