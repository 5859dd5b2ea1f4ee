"""AgentCore Memory ids and limits for the session store, and how its botocore failures are reported.

Memory ids must match ``[a-zA-Z0-9][a-zA-Z0-9-_]*`` (sessionId, ≤ 100 chars) and the same with ``/`` and
``:`` allowed (actorId, ≤ 255 chars). Every string is *escaped*: ``[A-Za-z0-9-]`` stays, every other UTF-8
byte becomes ``_hh`` (lowercase hex), so escaping is injective and the result fits both patterns. The table
of keys is in :mod:`runtime.session_store.agentcore.store`.

Limits, from botocore's ``bedrock-agentcore`` service model (``data/bedrock-agentcore/2024-02-28/
service-2.json``, botocore 1.44): ``PayloadTypeList`` max 100 items per ``CreateEvent``; ``ContentTextString``
max 100,000 characters; a ``json`` payload item "maximum size is 100 KB"; ``MaxResults`` of ``ListEvents``
1..100; ``ClientToken`` 33..256 characters. The model states no size for a ``blob`` item, so a blob item is
held to the documented 100 KB of a ``json`` item, measured as the bytes botocore sends.

Environment: none.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable

from botocore.exceptions import ClientError

from runtime.errors import SessionStoreError

MAX_PAYLOAD_ITEMS = 100
#: Bytes of one blob item's chunk as sent (see the module docstring).
MAX_ITEM_BYTES = 100_000
#: Bytes of entry data per ``CreateEvent`` request (100 items could otherwise make a 10 MB request).
MAX_EVENT_BYTES = 1_000_000
#: ``ListEvents`` ``maxResults`` ceiling: the service's default page is 20 events.
MAX_PAGE_SIZE = 100
MAX_SESSION_ID_CHARS = 100
MAX_ACTOR_ID_CHARS = 255
STATE_ACTOR_ID = "agentkit-state"
INDEX_SESSION_ID = "index"
RETRYABLE_CODES = frozenset(
    {"ThrottledException", "ThrottlingException", "ServiceException", "RetryableConflictException"}
)
MEMORY_ID_RE = re.compile(
    r"^(arn:(aws|aws-cn|aws-us-gov):bedrock-agentcore:[a-z0-9-]+:[0-9]{12}:memory/)?"
    r"[a-zA-Z][a-zA-Z0-9-_]{0,99}-[a-zA-Z0-9]{10}$"
)
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


def escape_id(value: str) -> str:
    """Injective escape of any string into ``[A-Za-z0-9_-]*``: unsafe UTF-8 bytes become ``_hh``."""
    out: list[str] = []
    for ch in value:
        if ch in _SAFE:
            out.append(ch)
        else:
            out.extend(f"_{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def actor_id_for(project_key: str) -> str:
    """Memory actorId of a project key."""
    readable = "p-" + escape_id(project_key)
    if len(readable) <= MAX_ACTOR_ID_CHARS:
        return readable
    return "h-" + hashlib.sha256(project_key.encode("utf-8", "surrogatepass")).hexdigest()


def session_id_for(session_id: str, subpath: str | None = None) -> str:
    """Memory sessionId of a transcript key."""
    if subpath == "":
        raise ValueError("subpath must be omitted for the main transcript, not empty")
    readable = "t-" + escape_id(session_id) + ("" if subpath is None else "_x" + escape_id(subpath))
    if len(readable) <= MAX_SESSION_ID_CHARS:
        return readable
    digest = hashlib.sha256(json.dumps([session_id, subpath]).encode()).hexdigest()
    return "h-" + digest[:64]


def wrap_client_error(exc: BaseException, action: str) -> SessionStoreError:
    """Turn a botocore failure into a :class:`SessionStoreError` naming the action and AWS code.

    ``retryable`` is False for errors a retry cannot cure (validation, access, missing memory); the spool
    dead-letters such a batch instead of retrying it for ever."""
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", "Unknown"))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        retryable = code in RETRYABLE_CODES or status in (429, 500, 502, 503, 504)
        return SessionStoreError(
            f"AgentCore Memory {action} failed: {code}: {exc}", aws_code=code, retryable=retryable
        )
    return SessionStoreError(
        f"AgentCore Memory {action} failed: {exc}", aws_code=type(exc).__name__, retryable=True
    )


#: The metric each billed Memory call is counted under (AgentCore bills short-term memory per event created and
#: long-term memory per retrieval; ``runtime/observe/prices.py``).
MEMORY_EVENTS_WRITTEN = "MemoryEventsWritten"
MEMORY_RETRIEVALS = "MemoryRetrievals"

#: Told about each billed Memory call that succeeded: the metric name and the Claude session it was made for
#: (None for writes no one session owns). Must not raise; failures are logged by the caller.
UsageMeter = Callable[[str, "str | None"], None]
