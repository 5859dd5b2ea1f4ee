"""Tool-call telemetry as Claude Agent SDK hooks: time, count and trace every tool call.

``ToolTelemetry.hooks()`` returns ``{"PreToolUse": [...], "PostToolUse": [...], "PostToolUseFailure": [...]}``
to merge into ``ClaudeAgentOptions.hooks``. PreToolUse starts a clock and an ``execute_tool`` span;
PostToolUse / PostToolUseFailure stop them and record ToolCalls, ToolErrors and ToolLatencyMs (dimension
``Tool``). A denial by the permission policy is recorded with :meth:`ToolTelemetry.record_denied`
(ToolDenied): given the call's ``tool_use_id`` it closes that call's span as denied, whichever of the
PreToolUse callbacks (the policy's or ours) the CLI ran first, so a denied call never counts as a ToolError.

Hook input shapes (claude_agent_sdk/types.py, 0.2.187): ``input["tool_name"]``, ``input["tool_input"]`` (the
arguments, never recorded here), ``input["tool_use_id"]``, ``input["session_id"]`` (the Claude session id),
PostToolUseFailure adds ``input["error"]`` and optionally ``is_interrupt``; Post* may carry ``duration_ms``
(tool execution time reported by the CLI, preferred over our own clock when present).

The callbacks never raise into the SDK and always return ``{}`` (no decision), so they are safe with
``on_failure="block"`` matchers elsewhere.

Environment variables: none.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span

from runtime.observe.metrics import BaseMetrics, ToolRecord
from runtime.observe.tracing import Tracing

logger = logging.getLogger(__name__)

MAX_PENDING = 1024  # open tool calls kept; beyond this the oldest is closed as abandoned


@dataclass(slots=True)
class _Pending:
    tool: str
    started: float
    span: Span | None
    session_id: str | None  # the Claude session id from the hook input
    runtime_session_id: str | None = None
    caller: str | None = None


@dataclass(frozen=True, slots=True)
class _Binding:
    context: Context | None
    session_id: str | None
    caller: str | None


class ToolTelemetry:
    """Hook callbacks that turn tool calls into metrics and spans.

    Args:
        metrics: the metrics facade (``record_tool``).
        tracer: a :class:`runtime.observe.tracing.Tracing` (or None for no spans).
        clock: monotonic seconds, injectable for tests.
        session_id: the runtime session id put on metric properties (optional; one telemetry per session).
        caller: the caller/actor, a property only.
    """

    def __init__(
        self,
        metrics: BaseMetrics,
        tracer: Tracing | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        session_id: str | None = None,
        caller: str | None = None,
    ) -> None:
        self._metrics = metrics
        self._tracing = tracer
        self._clock = clock
        self.session_id = session_id
        self.caller = caller
        self._pending: dict[str, _Pending] = {}
        # Denied calls whose PreToolUse has not reached us (yet), oldest first.
        self._denied: dict[str, None] = {}
        self._bindings: dict[str | None, _Binding] = {}
        self._lock = threading.Lock()
        self.errors = 0  # internal failures swallowed by the callbacks

    # --- parent span binding ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def bind(
        self,
        parent: Span | Context | None,
        *,
        claude_session_id: str | None = None,
        session_id: str | None = None,
        caller: str | None = None,
    ) -> Iterator[None]:
        """Make tool spans children of ``parent`` (the turn span) while the block runs, and tag the tool
        metrics with ``session_id`` / ``caller`` (properties; default: the constructor's values).

        With ``claude_session_id`` the binding applies to hook calls whose ``input["session_id"]`` matches
        (one telemetry shared by many sessions); without it, to every call. On exit, tool calls still open
        for that binding are closed as abandoned (interrupted turn).
        """
        ctx = parent if isinstance(parent, Context) or parent is None else trace.set_span_in_context(parent)
        key = claude_session_id
        binding = _Binding(ctx, session_id or self.session_id, caller or self.caller)
        with self._lock:
            previous = self._bindings.get(key)
            self._bindings[key] = binding
        try:
            yield
        finally:
            with self._lock:
                if previous is None:
                    self._bindings.pop(key, None)
                else:
                    self._bindings[key] = previous
            self.abandon_pending(claude_session_id=claude_session_id)

    def _binding_for(self, claude_session_id: Any) -> _Binding:
        with self._lock:
            found = self._bindings.get(claude_session_id) if isinstance(claude_session_id, str) else None
            found = found or self._bindings.get(None)
        return found or _Binding(None, self.session_id, self.caller)

    # --- hook callbacks -----------------------------------------------------------------------------------
    async def pre_tool_use(
        self, input: Mapping[str, Any], tool_use_id: str | None, context: Any
    ) -> dict[str, Any]:
        """PreToolUse: start the clock and the span."""
        try:
            self._start(input, tool_use_id)
        except Exception:
            self._swallow("PreToolUse")
        return {}

    async def post_tool_use(
        self, input: Mapping[str, Any], tool_use_id: str | None, context: Any
    ) -> dict[str, Any]:
        """PostToolUse: a successful call."""
        try:
            self._finish(input, tool_use_id, error=None)
        except Exception:
            self._swallow("PostToolUse")
        return {}

    async def post_tool_use_failure(
        self, input: Mapping[str, Any], tool_use_id: str | None, context: Any
    ) -> dict[str, Any]:
        """PostToolUseFailure: a failed (or interrupted) call."""
        try:
            error = input.get("error") if isinstance(input, Mapping) else None
            self._finish(input, tool_use_id, error=str(error) if error else "tool failed")
        except Exception:
            self._swallow("PostToolUseFailure")
        return {}

    def record_denied(
        self, tool_name: str, *, tool_use_id: str | None = None, claude_session_id: str | None = None
    ) -> None:
        """Count a call refused by the permission policy; closes its span if open. With ``tool_use_id``, a
        PreToolUse for that call arriving later is ignored (the CLI may run PreToolUse callbacks in any order).
        """
        try:
            pending = self._pop(tool_use_id) if tool_use_id else None
            if tool_use_id and pending is None:
                with self._lock:
                    self._denied[tool_use_id] = None
                    while len(self._denied) > MAX_PENDING:
                        del self._denied[next(iter(self._denied))]
            binding = self._binding_for(claude_session_id or (pending.session_id if pending else None))
            if pending is not None and pending.span is not None:
                pending.span.set_attribute("agentkit.tool.denied", True)
                Tracing.end_tool(pending.span, error="denied by permission policy")
            self._metrics.record_tool(
                ToolRecord(
                    tool=tool_name or "unknown",
                    outcome="denied",
                    session_id=binding.session_id,
                    tool_use_id=tool_use_id,
                    caller=binding.caller,
                )
            )
        except Exception:
            self._swallow("record_denied")

    def hooks(self, *, timeout: float | None = None) -> dict[str, list[Any]]:
        """``{HookEvent: [HookMatcher]}`` for ``ClaudeAgentOptions.hooks`` (matcher None: every tool)."""
        from claude_agent_sdk import HookMatcher

        return {
            "PreToolUse": [HookMatcher(matcher=None, hooks=[cast(Any, self.pre_tool_use)], timeout=timeout)],
            "PostToolUse": [
                HookMatcher(matcher=None, hooks=[cast(Any, self.post_tool_use)], timeout=timeout)
            ],
            "PostToolUseFailure": [
                HookMatcher(matcher=None, hooks=[cast(Any, self.post_tool_use_failure)], timeout=timeout)
            ],
        }

    @property
    def pending(self) -> int:
        """Tool calls started and not finished."""
        return len(self._pending)

    def abandon_pending(self, *, claude_session_id: str | None = None) -> int:
        """Close open tool calls (of one Claude session, or all) as abandoned; returns how many.
        Counted as ToolErrors so an interrupted tool is visible."""
        with self._lock:
            keys = [
                k
                for k, p in self._pending.items()
                if claude_session_id is None or p.session_id == claude_session_id
            ]
            items = [(k, self._pending.pop(k)) for k in keys]
        for key, pending in items:
            self._complete(
                key, pending, error="abandoned: the turn ended before the tool finished", duration_ms=None
            )
        return len(items)

    # --- internals ----------------------------------------------------------------------------------------
    @staticmethod
    def _key(input: Mapping[str, Any], tool_use_id: str | None) -> str:
        key = tool_use_id or input.get("tool_use_id")
        if not key:
            raise ValueError("hook input without tool_use_id")
        return str(key)

    def _start(self, input: Mapping[str, Any], tool_use_id: str | None) -> None:
        key = self._key(input, tool_use_id)
        with self._lock:
            if key in self._denied:  # already refused by the policy: the tool never runs
                del self._denied[key]
                return
        tool = str(input.get("tool_name") or "unknown")
        session_id = input.get("session_id")
        binding = self._binding_for(session_id)
        span = None
        if self._tracing is not None:
            span = self._tracing.start_tool(tool_name=tool, tool_use_id=key, parent=binding.context)
        pending = _Pending(tool, self._clock(), span, session_id, binding.session_id, binding.caller)
        evicted: list[tuple[str, _Pending]] = []
        with self._lock:
            self._pending[key] = pending
            while len(self._pending) > MAX_PENDING:
                oldest = next(iter(self._pending))
                evicted.append((oldest, self._pending.pop(oldest)))
        for old_key, old in evicted:
            self._complete(old_key, old, error="abandoned: too many open tool calls", duration_ms=None)

    def _pop(self, key: str) -> _Pending | None:
        with self._lock:
            return self._pending.pop(key, None)

    def _finish(self, input: Mapping[str, Any], tool_use_id: str | None, *, error: str | None) -> None:
        key = self._key(input, tool_use_id)
        pending = self._pop(key)
        duration = input.get("duration_ms")
        duration_ms = (
            float(duration) if isinstance(duration, int | float) and not isinstance(duration, bool) else None
        )
        if pending is None:
            # No PreToolUse seen (e.g. hooks attached mid-turn): count it, no span, CLI duration if given.
            tool = str(input.get("tool_name") or "unknown")
            binding = self._binding_for(input.get("session_id"))
            pending = _Pending(
                tool, float("nan"), None, input.get("session_id"), binding.session_id, binding.caller
            )
        self._complete(key, pending, error=error, duration_ms=duration_ms)

    def _complete(self, key: str, pending: _Pending, *, error: str | None, duration_ms: float | None) -> None:
        latency = duration_ms
        if latency is None and pending.started == pending.started:  # not NaN
            latency = (self._clock() - pending.started) * 1000.0
        if pending.span is not None:
            Tracing.end_tool(pending.span, error=error, latency_ms=latency)
        self._metrics.record_tool(
            ToolRecord(
                tool=pending.tool,
                outcome="error" if error else "ok",
                latency_ms=latency,
                session_id=pending.runtime_session_id or self.session_id,
                tool_use_id=key,
                caller=pending.caller or self.caller,
            )
        )

    def _swallow(self, where: str) -> None:
        self.errors += 1
        logger.exception("tool telemetry: %s hook failed; the tool call is unaffected", where)
