"""Server-sent events: parse a runtime's reply stream into event dicts (the contract in docs/http-api.md#replies).

Events: ``text``, ``tool_use``, ``tool_result``, ``result``, ``error`` (see ``runtime/protocol.py``). Any
other reply value is mapped onto that contract by :func:`normalize_event`.

Env vars: none. IAM actions: none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from agentkit.errors import AgentkitError, ExitCode


def iter_sse_events(chunks: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """Parse an SSE byte stream (any chunking) into event dicts, yielding each as soon as it is complete.

    ``data:`` lines of one event are joined with newlines and decoded as JSON. A JSON string becomes a
    ``text`` event; a dict without ``type`` but with ``error`` (the BedrockAgentCoreApp's own failure shape)
    becomes an ``error`` event. Comments, ``event:`` and ``id:`` lines are ignored.

    Raises:
        AgentkitError: an event's data is not JSON (exit code 1).
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
        raise AgentkitError(
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
