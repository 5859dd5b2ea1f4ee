"""Scripted model replies for the Bedrock Runtime stand-in, and its deterministic default "model".

A :class:`Reply` is what one model call (``invoke-with-response-stream`` or ``invoke``) answers: a message
made of :class:`Text` / :class:`ToolUse` blocks with :class:`Usage`, an HTTP error shaped like Bedrock's,
or a stream that breaks with an exception frame. :func:`render_events` turns a message reply into the
Anthropic streaming events Bedrock carries; :func:`render_message` into the non-streaming JSON body.

:func:`default_reply` answers when no reply is queued (useful for a demo): it calls a preferred tool the
request offers, summarises a tool result once one comes back, and otherwise echoes the prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ERROR_TYPES",
    "Reply",
    "Text",
    "ToolUse",
    "Usage",
    "default_reply",
    "model_name",
    "render_events",
    "render_message",
]

#: Bedrock Runtime's error names by HTTP status (sent in ``x-amzn-ErrorType``).
ERROR_TYPES: Mapping[int, str] = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
_ERROR_MESSAGES: Mapping[int, str] = {
    400: "Malformed input request, please reformat your input and try again.",
    429: "Too many requests, please wait before trying again.",
    500: "The system encountered an unexpected error during processing. Try your request again.",
    503: "Bedrock is unable to process your request.",
}
_STOP_REASONS = frozenset({"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"})
_CHUNK = 24


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Token counts one model call reports (``message_start`` carries input/cache, ``message_delta`` output).

    Raises:
        ValueError: a count is negative or not an int.
    """

    input_tokens: int = 850
    output_tokens: int = 64
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __post_init__(self) -> None:
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Usage.{name} must be a non-negative int, got {value!r}")

    def as_dict(self) -> dict[str, int]:
        """The ``usage`` object of a complete (non-streaming) message."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": self.output_tokens,
        }


@dataclass(frozen=True)
class Text:
    """A text content block."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` content block; ``id`` is generated when omitted."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("ToolUse.name must not be empty")
        if not isinstance(self.input, Mapping):
            raise ValueError(f"ToolUse.input must be a JSON object, got {type(self.input).__name__}")
        json.dumps(self.input)  # raises TypeError early for non-JSON input


Block = Text | ToolUse


@dataclass(frozen=True, kw_only=True)
class Reply:
    """One scripted answer to one model call. Build it with the class methods.

    ``delay_s`` waits before the response starts; ``chunk_delay_s`` between stream frames.
    """

    blocks: tuple[Block, ...] = ()
    usage: Usage | None = None
    stop_reason: str | None = None
    status: int = 200
    error_message: str | None = None
    error_type: str | None = None
    retry_after_s: float | None = None
    exception_type: str | None = None
    exception_message: str = "The model stream failed."
    exception_after: int = 1
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0

    def __post_init__(self) -> None:
        if self.status != 200 and not 400 <= self.status <= 599:
            raise ValueError(f"Reply.status must be 200 or an HTTP error status, got {self.status}")
        if self.status == 200 and not self.blocks:
            raise ValueError("a successful Reply needs at least one block")
        if self.stop_reason is not None and self.stop_reason not in _STOP_REASONS:
            raise ValueError(f"unknown stop_reason {self.stop_reason!r}")
        if self.delay_s < 0 or self.chunk_delay_s < 0 or self.exception_after < 0:
            raise ValueError("delays and exception_after must be non-negative")

    @classmethod
    def text(
        cls, text: str, *, usage: Usage | None = None, delay_s: float = 0.0, chunk_delay_s: float = 0.0
    ) -> Reply:
        """A message with one text block (stop reason ``end_turn``)."""
        return cls(blocks=(Text(text),), usage=usage, delay_s=delay_s, chunk_delay_s=chunk_delay_s)

    @classmethod
    def tool_use(
        cls,
        name: str,
        input: Mapping[str, Any] | None = None,
        *,
        text: str | None = None,
        tool_use_id: str | None = None,
        usage: Usage | None = None,
        delay_s: float = 0.0,
        chunk_delay_s: float = 0.0,
    ) -> Reply:
        """A message calling tool ``name`` with ``input`` (optionally preceded by a text block)."""
        blocks: list[Block] = [Text(text)] if text else []
        blocks.append(ToolUse(name, dict(input or {}), tool_use_id))
        return cls(blocks=tuple(blocks), usage=usage, delay_s=delay_s, chunk_delay_s=chunk_delay_s)

    @classmethod
    def message(
        cls,
        *blocks: Block,
        usage: Usage | None = None,
        stop_reason: str | None = None,
        delay_s: float = 0.0,
        chunk_delay_s: float = 0.0,
    ) -> Reply:
        """A message with several blocks, e.g. ``Reply.message(Text("a"), ToolUse("t", {}))``."""
        return cls(
            blocks=blocks, usage=usage, stop_reason=stop_reason, delay_s=delay_s, chunk_delay_s=chunk_delay_s
        )

    @classmethod
    def error(
        cls,
        status: int,
        *,
        message: str | None = None,
        error_type: str | None = None,
        retry_after_s: float | None = None,
        delay_s: float = 0.0,
    ) -> Reply:
        """An HTTP error like Bedrock's: JSON ``{"message": ...}`` plus an ``x-amzn-ErrorType`` header.

        ``retry_after_s`` is sent as ``retry-after-ms``; Claude Code 2.1.330 ignores it and retries a
        429/500 after ~0.6 s, then ~1.1 s. It does not retry a 400: the turn ends with an error result.
        """
        if not 400 <= status <= 599:
            raise ValueError(f"error status must be 4xx or 5xx, got {status}")
        return cls(
            status=status,
            error_message=message or _ERROR_MESSAGES.get(status, f"Error {status}."),
            error_type=error_type or ERROR_TYPES.get(status, "InternalServerException"),
            retry_after_s=retry_after_s,
            delay_s=delay_s,
        )

    @classmethod
    def stream_exception(
        cls,
        exception_type: str = "internalServerException",
        *,
        message: str = "The model stream failed.",
        after_events: int = 1,
        partial: Reply | None = None,
    ) -> Reply:
        """A stream that sends the first ``after_events`` events of ``partial`` then an exception frame.

        On ``/invoke`` (the CLI's fallback) such a reply answers HTTP 500.
        """
        base = partial or cls.text("partial answer")
        return cls(
            blocks=base.blocks,
            usage=base.usage,
            stop_reason=base.stop_reason,
            exception_type=exception_type,
            exception_message=message,
            exception_after=after_events,
            delay_s=base.delay_s,
            chunk_delay_s=base.chunk_delay_s,
        )

    @property
    def is_error(self) -> bool:
        return self.status != 200

    def effective_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


def model_name(model_id: str) -> str:
    """The model name Bedrock reports for an id or inference profile (``us.anthropic.x-v1:0`` → ``x``)."""
    name = re.sub(r"^(?:[a-z]+\.)?anthropic\.", "", model_id)
    return re.sub(r"-v\d+(?::\d+)?$", "", name)


def _pieces(text: str) -> list[str]:
    return [text[i : i + _CHUNK] for i in range(0, len(text), _CHUNK)] or [""]


def _tool_id(block: ToolUse, seq: int, index: int) -> str:
    return block.id or f"toolu_bdrk_{seq:06d}{index:02d}"


def render_events(reply: Reply, *, model_id: str, seq: int, usage: Usage) -> list[dict[str, Any]]:
    """The Anthropic streaming events for a successful ``reply`` (``seq`` makes ids unique, deterministic)."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": f"msg_bdrk_{seq:06d}",
                "type": "message",
                "role": "assistant",
                "model": model_name(model_id),
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {**usage.as_dict(), "output_tokens": 1},
            },
        }
    ]
    for index, block in enumerate(reply.blocks):
        if isinstance(block, Text):
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block.text)]
        else:
            start = {"type": "tool_use", "id": _tool_id(block, seq, index), "name": block.name, "input": {}}
            raw = json.dumps(block.input, separators=(",", ":"))
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in _pieces(raw)]
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events.extend({"type": "content_block_delta", "index": index, "delta": d} for d in deltas)
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.effective_stop_reason(), "stop_sequence": None},
            "usage": {"output_tokens": usage.output_tokens},
        }
    )
    events.append(
        {
            "type": "message_stop",
            "amazon-bedrock-invocationMetrics": {
                "inputTokenCount": usage.input_tokens,
                "outputTokenCount": usage.output_tokens,
                "invocationLatency": 42,
                "firstByteLatency": 21,
                "cacheReadInputTokenCount": usage.cache_read_input_tokens,
                "cacheWriteInputTokenCount": usage.cache_creation_input_tokens,
            },
        }
    )
    return events


def render_message(reply: Reply, *, model_id: str, seq: int, usage: Usage) -> dict[str, Any]:
    """The complete Message JSON ``/invoke`` answers for a successful ``reply``."""
    content: list[dict[str, Any]] = []
    for index, block in enumerate(reply.blocks):
        if isinstance(block, Text):
            content.append({"type": "text", "text": block.text})
        else:
            tool_id = _tool_id(block, seq, index)
            content.append(
                {"type": "tool_use", "id": tool_id, "name": block.name, "input": dict(block.input)}
            )
    return {
        "id": f"msg_bdrk_{seq:06d}",
        "type": "message",
        "role": "assistant",
        "model": model_name(model_id),
        "content": content,
        "stop_reason": reply.effective_stop_reason(),
        "stop_sequence": None,
        "usage": usage.as_dict(),
    }


# --- the default, deterministic "model" -------------------------------------------------------------

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return _REMINDER.sub("", content).strip()
    if isinstance(content, list):
        parts = [
            _text_of(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        ]
        return " ".join(p for p in parts if p)
    return ""


def _blocks(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


#: Ends every summary the default "model" writes, so nobody mistakes the demo's answers for a model's.
STAND_IN_NOTE = "(A scripted answer from the local Bedrock stand-in: no model was called.)"


def _describe(output: str, *, limit: int = 200) -> str:
    """A short, complete description of a tool's output: the scalar fields and list sizes of a JSON object,
    the length of a JSON list, or the first line of text cut at a word (never a cut-off JSON dump)."""
    try:
        data = json.loads(output)
    except ValueError:
        data = None
    if isinstance(data, dict) and data:
        scalars = [f"{k} {v}" for k, v in data.items() if isinstance(v, str | int | float | bool)][:4]
        sizes = [f"{len(v)} {k}" for k, v in data.items() if isinstance(v, list | dict)][:3]
        return ", ".join([*scalars, *sizes]) or f"an object with {len(data)} fields"
    if isinstance(data, list):
        return f"{len(data)} item{'s' if len(data) != 1 else ''}"
    first = output.strip().splitlines()[0] if output.strip() else "(no output)"
    if len(first) <= limit:
        return first.rstrip(".")
    return first[:limit].rsplit(" ", 1)[0].rstrip(" ,;:.") + " …"


def _tool_name(messages: Sequence[Any], tool_use_id: str) -> str:
    for message in reversed(messages):
        for block in _blocks(message):
            if block.get("type") == "tool_use" and block.get("id") == tool_use_id:
                return str(block.get("name", "the tool"))
    return "the tool"


def _sample_value(name: str, schema: Mapping[str, Any], prompt: str) -> Any:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type", "string")
    number = re.search(r"\b\d+\b", prompt)
    if kind == "integer":
        return int(number.group()) if number else 1
    if kind == "number":
        return float(number.group()) if number else 1.0
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    lowered = name.lower()
    if schema.get("format") == "date" or "date" in lowered or lowered in ("as_of", "since", "until"):
        found = re.search(r"\b\d{4}-\d{2}-\d{2}\b", prompt)
        return found.group() if found else "2026-11-22"  # a fixed date keeps the stand-in deterministic
    ident = re.search(r"\b[A-Za-z]{2,}-\d+\b", prompt)
    if ident:
        return ident.group()
    if "invoice" in name.lower() or name.lower().endswith("id"):
        return f"INV-{number.group()}" if number else "INV-1001"
    return prompt[:80] or "sample"


def _sample_input(schema: Any, prompt: str) -> dict[str, Any]:
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return {}
    props: dict[str, Any] = schema["properties"]
    wanted = [n for n in schema.get("required", []) if n in props] or list(props)
    return {n: _sample_value(n, props[n] if isinstance(props[n], dict) else {}, prompt) for n in wanted}


def _pick_tool(tools: Any, prefer_tools: Sequence[str]) -> dict[str, Any] | None:
    offered = [t for t in tools if isinstance(t, dict) and t.get("name")] if isinstance(tools, list) else []
    for wanted in prefer_tools:
        for tool in offered:
            if wanted.lower() in str(tool["name"]).lower():
                return tool
    return None


def default_reply(body: Any, *, prefer_tools: Sequence[str] = ("invoice",)) -> Reply:
    """What the stand-in answers when nothing is queued; a pure function of the request ``body``.

    - the user's turn (every message after the model's last one) carries a ``tool_result`` → a text summarising it;
    - else a tool whose name contains an entry of ``prefer_tools`` (case-insensitive) is offered → call it,
      with input built from its JSON schema and numbers/ids in the prompt;
    - else → a short text echoing the prompt.
    """
    messages = body.get("messages") if isinstance(body, dict) else None
    messages = messages if isinstance(messages, list) else []
    # The user's turn is every message after the model's last one: the CLI may add a message of its own after a
    # tool result (2.1.337 adds a budget reminder when the turn has a budget), which is not a new prompt.
    since_model = len(messages)
    while since_model > 0 and not (
        isinstance(messages[since_model - 1], dict) and messages[since_model - 1].get("role") == "assistant"
    ):
        since_model -= 1
    results = [b for m in messages[since_model:] for b in _blocks(m) if b.get("type") == "tool_result"]
    if results:
        summaries = []
        for result in results:
            name = _tool_name(messages, str(result.get("tool_use_id", "")))
            output = _text_of(result.get("content", "")) or "(no output)"
            verb = "failed with" if result.get("is_error") else "returned"
            summaries.append(f"{name} {verb}: {_describe(output)}.")
        return Reply.text(" ".join(summaries) + " " + STAND_IN_NOTE)
    # the user's own words come first in the turn, anything the CLI adds after them
    prompt = "\n".join(
        _text_of(m.get("content", "")) for m in messages[since_model:] if isinstance(m, dict)
    ).strip()
    tool = _pick_tool(body.get("tools") if isinstance(body, dict) else None, prefer_tools)
    if tool is not None:
        return Reply.tool_use(
            str(tool["name"]),
            _sample_input(tool.get("input_schema"), prompt),
            text=f"Let me call {tool['name']}.",
        )
    return Reply.text(f"You said: {prompt[:500]}" if prompt else "Hello from the Bedrock stand-in.")
