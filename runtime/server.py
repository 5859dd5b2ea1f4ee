"""The AgentCore HTTP contract: ``POST /invocations`` and ``GET /ping`` (wiring only).

``build_app(settings)`` returns a ``BedrockAgentCoreApp`` whose invocation handler validates the request,
resolves the session and actor, and hands the turn to the session registry. The Claude Agent SDK is
imported lazily on the first invocation (and warmed in the background after start-up), so ``/ping``
answers in well under a second.

Reply formats are described in :mod:`runtime.protocol`. Every error is
``{"type": "error", "code": ..., "message": ...}`` with a fitting HTTP status: error events carry their
status inside the runtime (``_http_status``, set where they are raised), which is used for non-streaming
replies and removed from every event sent to a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from bedrock_agentcore.runtime.models import PingStatus
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from runtime.errors import AgentKitError, InvalidRequest
from runtime.http_limits import HttpGuard, abandon_on_disconnect
from runtime.identity import claude_session_id, resolve_actor
from runtime.protocol import SESSION_HEADER, max_body_bytes, parse_body, parse_payload, resolve_session_id
from runtime.settings import Settings

logger = logging.getLogger(__name__)

Event = dict[str, Any]


def error_response(exc: AgentKitError) -> JSONResponse:
    return JSONResponse(exc.to_event(), status_code=exc.http_status)


class AgentKitApp(BedrockAgentCoreApp):
    """``BedrockAgentCoreApp`` whose malformed-body errors follow our error contract."""

    max_prompt_chars: int = 100_000
    _guard: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # The HTTP edge (body limit, error contract, disconnects) wraps everything, the framework's own
        # error middleware included.
        if self._guard is None:
            self._guard = HttpGuard(
                super().__call__,
                max_body_bytes=max_body_bytes(self.max_prompt_chars),
                limit_hint=f": prompts are limited to {self.max_prompt_chars} characters",
            )
        await self._guard(scope, receive, send)

    async def _handle_invocation(self, request: Request) -> Response:
        try:
            parse_body(await request.body(), max_prompt_chars=self.max_prompt_chars)
            resolve_session_id(request.headers.get(SESSION_HEADER))
        except AgentKitError as exc:
            return error_response(exc)
        return await super()._handle_invocation(request)


class Runtime:
    """Holds the lazily built registry; lives on the app's worker event loop."""

    def __init__(self, settings: Settings, registry_factory: Callable[[Settings], Any] | None = None) -> None:
        self.settings = settings
        self._registry_factory = registry_factory
        self.registry: Any = None
        self._lock: asyncio.Lock | None = None

    async def get_registry(self) -> Any:
        if self.registry is None:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                if self.registry is None:
                    factory = self._registry_factory
                    if factory is None:
                        from runtime.wiring import build_registry

                        factory = build_registry
                    self.registry = await asyncio.to_thread(factory, self.settings)
        return self.registry

    async def close(self) -> None:
        if self.registry is not None:
            await self.registry.close_all()
            closer = getattr(self.registry, "aclose_dependencies", None)
            if closer is not None:
                await closer()

    @property
    def busy(self) -> bool:
        return bool(self.registry is not None and self.registry.active_turns > 0)


def build_app(
    settings: Settings, *, registry_factory: Callable[[Settings], Any] | None = None
) -> AgentKitApp:
    """The runtime's ASGI app. ``registry_factory`` lets tests inject their own wiring."""
    app = AgentKitApp()
    app.max_prompt_chars = settings.max_prompt_chars
    runtime = Runtime(settings, registry_factory)
    app.state.runtime = runtime

    @app.ping
    def ping() -> PingStatus:
        return PingStatus.HEALTHY_BUSY if runtime.busy else PingStatus.HEALTHY

    @app.entrypoint
    async def invoke(payload: Any, context: Any) -> Any:
        try:
            request = parse_payload(payload, max_prompt_chars=settings.max_prompt_chars)
            session_id, _generated = resolve_session_id(context.session_id)
            actor = resolve_actor(context.request_headers, actor_header=settings.actor_header)
            try:
                registry = await runtime.get_registry()
            except AgentKitError:
                raise
            except Exception as exc:  # wiring failed (bad store URL, AWS client set-up): say so in our format
                logger.exception("could not build the runtime")
                raise AgentKitError(
                    f"the runtime could not start its dependencies ({type(exc).__name__}). "
                    "The details are in the runtime logs; check its AGENTKIT_* settings.",
                    code="configuration_error",
                ) from exc
            from runtime.sessions import TurnRequest

            turn = TurnRequest(
                prompt=request.prompt,
                max_turns=request.max_turns,
                max_budget_usd=request.max_budget_usd,
                metadata=request.metadata,
            )
            abandon_on_disconnect(turn.abandoned)
            checker = getattr(registry.runner, "check_request", None)
            if checker is not None:
                checker(turn)
            events = await registry.invoke(
                key=claude_session_id(session_id, actor),
                runtime_session_id=session_id,
                claude_session_id=claude_session_id(session_id, actor),
                actor_id=actor,
                request=turn,
            )
        except AgentKitError as exc:
            return error_response(exc)
        if request.stream:
            return _stream(events, turn.abandoned)
        return await _collect(events)

    return app


_HTTP_STATUS_KEY = "_http_status"  # runtime.sessions.HTTP_STATUS_KEY (not imported: keeps start-up light)


def _public(event: Event) -> Event:
    """The event as a client sees it (without the runtime-internal HTTP status)."""
    if _HTTP_STATUS_KEY in event:
        return {k: v for k, v in event.items() if k != _HTTP_STATUS_KEY}
    return event


async def _stream(events: AsyncIterator[Event], abandoned: asyncio.Event) -> AsyncIterator[Event]:
    finished = False
    try:
        async for event in events:
            yield _public(event)
        finished = True
    finally:
        if not finished:  # the reply stream was closed early: the caller is gone
            abandoned.set()


async def _collect(events: AsyncIterator[Event]) -> Response:
    """Non-streaming reply: the result event as one JSON body, plus the tool calls made."""
    tools: list[Event] = []
    final: Event | None = None
    async for event in events:
        if event["type"] in ("tool_use", "tool_result"):
            tools.append(event)
        elif event["type"] in ("result", "error"):
            final = event
    if final is None:
        return error_response(AgentKitError("the turn ended without a result; retry the invocation"))
    if final["type"] == "error":
        status = final.get(_HTTP_STATUS_KEY)
        if not isinstance(status, int) or isinstance(status, bool):
            status = _status_for(final["code"])
        return JSONResponse(_public(final), status_code=status)
    return JSONResponse({**_public(final), "tool_events": tools})


def _status_for(code: str) -> int:
    """The default HTTP status of an error code (for events emitted without ``_http_status``)."""
    from runtime import errors

    for cls in vars(errors).values():
        if isinstance(cls, type) and issubclass(cls, AgentKitError) and cls.code == code:
            return cls.http_status
    return {
        "max_turns_exceeded": 422,
        "model_error": 502,
        "shutting_down": 503,
        "session_store_unavailable": 503,
    }.get(code, 500)


def warm_sdk_import(delay_s: float = 0.5) -> threading.Timer:
    """Import the Claude Agent SDK in the background so the first turn does not pay for it.

    The import holds the GIL for most of a second, so it starts ``delay_s`` after start-up: the first
    health checks are answered before it, not behind it.
    """

    def _import() -> None:
        with contextlib.suppress(Exception):
            import runtime.agent.turn  # noqa: F401

    timer = threading.Timer(delay_s, _import)
    timer.name = "agentkit-warm-import"
    timer.daemon = True
    timer.start()
    return timer


__all__ = ["AgentKitApp", "InvalidRequest", "build_app", "warm_sdk_import"]
