"""The AgentCore HTTP contract: ``POST /invocations`` and ``GET /ping`` (wiring only).

``build_app(settings)`` returns a ``BedrockAgentCoreApp`` whose invocation handler validates the request,
resolves the session and actor, and hands the turn to the session registry. The Claude Agent SDK is
imported lazily on the first invocation (and warmed in the background after start-up), so ``/ping``
answers in well under a second.

Reply formats are described in :mod:`runtime.protocol`. Every error is
``{"type": "error", "code": ..., "message": ...}`` with a fitting HTTP status: a failed turn ends with a
:class:`~runtime.protocol.Failure` that carries the status next to the error event; the server sends the event
and uses the status for non-streaming replies.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from bedrock_agentcore.runtime.models import PingStatus
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from runtime import restore
from runtime.app_adapter import AgentCoreAdapter
from runtime.env import DEFAULT_MAX_PROMPT_CHARS
from runtime.errors import AgentKitError, ConfigurationError, InvalidRequest, status_for_code
from runtime.http_limits import HttpGuard, abandon_on_disconnect
from runtime.identity import claude_session_id, resolve_actor
from runtime.protocol import (
    SESSION_HEADER,
    Event,
    Failure,
    JsonReply,
    ResultEvent,
    ToolEvent,
    TurnItem,
    error_event,
    max_body_bytes,
    parse_body,
    parse_payload,
    resolve_session_id,
)
from runtime.settings import Settings

if TYPE_CHECKING:
    from runtime.wiring import Services

logger = logging.getLogger(__name__)


def error_response(exc: AgentKitError) -> JSONResponse:
    return JSONResponse(error_event(exc), status_code=exc.http_status)


class AgentKitApp(AgentCoreAdapter):
    """``BedrockAgentCoreApp`` whose malformed-body errors follow our error contract."""

    max_prompt_chars: int = DEFAULT_MAX_PROMPT_CHARS
    max_workspace_bytes: int = 0
    _guard: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # The HTTP edge (body limit, error contract, disconnects) wraps everything, the framework's own
        # error middleware included.
        if self._guard is None:
            self._guard = HttpGuard(
                super().__call__,
                max_body_bytes=max_body_bytes(self.max_prompt_chars, self.max_workspace_bytes),
                limit_hint=f": prompts are limited to {self.max_prompt_chars} characters"
                + (
                    f", workspace archives to {self.max_workspace_bytes} bytes"
                    if self.max_workspace_bytes
                    else ""
                ),
                routes=self.http_routes(),
            )
        await self._guard(scope, receive, send)

    def http_routes(self) -> dict[str, frozenset[str]]:
        """Path → methods of every HTTP route the app serves (read on the first request, so routes added after
        ``build_app``, such as the local ``/stopruntimesession``, are known to the HTTP edge too)."""
        return {
            route.path: frozenset(route.methods)
            for route in self.routes
            if isinstance(route, Route) and route.methods
        }

    async def before_invocation(self, request: Request) -> Response | None:
        try:
            parse_body(
                await request.body(),
                max_prompt_chars=self.max_prompt_chars,
                max_workspace_bytes=self.max_workspace_bytes,
            )
            resolve_session_id(request.headers.get(SESSION_HEADER))
        except AgentKitError as exc:
            return error_response(exc)
        return None


class Runtime:
    """Holds the lazily built services; lives on the app's worker event loop."""

    def __init__(
        self, settings: Settings, services_factory: Callable[[Settings], Services] | None = None
    ) -> None:
        self.settings = settings
        self._services_factory = services_factory
        self.services: Services | None = None
        self._lock: asyncio.Lock | None = None

    async def get_services(self) -> Services:
        if self.services is None:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                if self.services is None:
                    factory = self._services_factory
                    if factory is None:
                        from runtime.wiring import build_services

                        factory = build_services
                    self.services = await asyncio.to_thread(factory, self.settings)
        return self.services

    async def close(self) -> None:
        if self.services is not None:
            await self.services.registry.close_all()
            await self.services.aclose()

    @property
    def busy(self) -> bool:
        return self.services is not None and self.services.registry.active_turns > 0


def build_app(
    settings: Settings, *, services_factory: Callable[[Settings], Services] | None = None
) -> AgentKitApp:
    """The runtime's ASGI app. ``services_factory`` lets tests inject their own wiring."""
    app = AgentKitApp()
    app.max_prompt_chars = settings.max_prompt_chars
    app.max_workspace_bytes = settings.workspace_max_bytes
    runtime = Runtime(settings, services_factory)
    app.state.runtime = runtime

    @app.ping
    def ping() -> PingStatus:
        return PingStatus.HEALTHY_BUSY if runtime.busy else PingStatus.HEALTHY

    @app.entrypoint
    async def invoke(payload: Any, context: Any) -> Any:
        restore.check()  # the first invocation of a process is the first after a V2 snapshot restore
        try:
            request = parse_payload(payload, max_prompt_chars=settings.max_prompt_chars)
            session_id = resolve_session_id(context.session_id)
            actor = resolve_actor(context.request_headers, actor_header=settings.actor_header)
            try:
                services = await runtime.get_services()
            except AgentKitError:
                raise
            except Exception as exc:  # wiring failed (bad store URL, AWS client set-up): say so in our format
                logger.exception("could not build the runtime")
                raise ConfigurationError(
                    f"the runtime could not start its dependencies ({type(exc).__name__}). "
                    "The details are in the runtime logs; check its AGENTKIT_* settings."
                ) from exc
            from runtime.sessions import TurnRequest

            snapshot = request.workspace
            archive = (
                snapshot.archive(settings.workspace_max_bytes)
                if snapshot is not None and snapshot.tar_gz_b64 is not None
                else None
            )
            turn = TurnRequest(
                prompt=request.prompt,
                workspace_archive=archive,
                workspace_s3_uri=snapshot.s3_uri if snapshot is not None else None,
                max_turns=request.max_turns,
                max_budget_usd=request.max_budget_usd,
                metadata=request.metadata,
                trace_headers=_trace_headers(context),
            )
            abandon_on_disconnect(turn.abandoned)
            services.runner.check_request(turn)
            events = await services.registry.invoke(
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


def _trace_headers(context: Any) -> dict[str, str]:
    """The raw request's trace headers (bedrock-agentcore keeps them out of ``context.request_headers``);
    extracted with the configured propagators when the turn's spans start (:mod:`runtime.observe.baggage`)."""
    from runtime.observe.baggage import trace_headers

    raw = getattr(context, "request", None)
    return trace_headers(raw.headers) if raw is not None else {}


def _unwrap(item: TurnItem) -> Event:
    """The event a client sees: a failure's error event."""
    return item.event if isinstance(item, Failure) else item


async def _stream(events: AsyncIterator[TurnItem], abandoned: asyncio.Event) -> AsyncIterator[Event]:
    finished = False
    try:
        async for item in events:
            yield _unwrap(item)
        finished = True
    finally:
        if not finished:  # the reply stream was closed early: the caller is gone
            abandoned.set()


async def _collect(events: AsyncIterator[TurnItem]) -> Response:
    """Non-streaming reply: the result event as one JSON body, plus the tool calls made."""
    tools: list[ToolEvent] = []
    final: ResultEvent | Failure | None = None
    async for item in events:
        if isinstance(item, Failure):
            final = item
        elif item["type"] == "tool_use" or item["type"] == "tool_result":
            tools.append(item)
        elif item["type"] == "result":
            final = item
        elif item["type"] == "error":  # an error event without a Failure around it: the status of its code
            final = Failure(item, status_for_code(item["code"]))
    if final is None:
        return error_response(AgentKitError("the turn ended without a result; retry the invocation"))
    if isinstance(final, Failure):
        return JSONResponse(final.event, status_code=final.http_status)
    reply: JsonReply = {**final, "tool_events": tools}
    return JSONResponse(reply)


__all__ = ["AgentKitApp", "InvalidRequest", "build_app"]
