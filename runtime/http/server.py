"""The AgentCore HTTP contract: ``POST /invocations`` and ``GET /ping``.

``build_app(settings)`` returns a ``BedrockAgentCoreApp`` whose invocation route is answered here, once per
request: the body (already read under a size limit by :mod:`runtime.http.edge`) is decoded and validated once,
the session id checked once and the actor resolved; then the turn is handed to the session registry on the
app's worker loop (where the warm clients live) and its events come back to the server's loop one hop each
(:mod:`runtime.http.loop_bridge`). The Claude Agent SDK is imported lazily on the first invocation (and warmed in the
background after start-up), so ``/ping`` answers in well under a second.

Reply formats are described in :mod:`runtime.protocol`. Every error is
``{"type": "error", "code": ..., "message": ...}`` with a fitting HTTP status: a failed turn ends with a
:class:`~runtime.protocol.Failure` that carries the status next to the error event; the server sends the event
and uses the status for non-streaming replies.

Environment: none read here (:class:`runtime.config.settings.Settings` is passed in).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bedrock_agentcore.runtime.models import PingStatus
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from runtime.config.settings import Settings
from runtime.env import DEFAULT_MAX_PROMPT_CHARS, ENV_JOB_EVENTS_QUEUE_URL
from runtime.errors import AgentKitError, ConfigurationError, JobsNotConfigured, ShuttingDown
from runtime.http.app_adapter import AgentCoreAdapter
from runtime.http.edge import DisconnectSignal, HttpGuard, disconnect_signal, log_refusal, set_on_loop
from runtime.http.json_reply import SafeJSONResponse, json_bytes
from runtime.http.loop_bridge import LoopStream, start_on
from runtime.identity import claude_session_id, resolve_actor
from runtime.process import restore
from runtime.process.shutdown import SHUTDOWN_BUDGET_S, close_together
from runtime.protocol import (
    SESSION_HEADER,
    Event,
    Failure,
    InvocationRequest,
    JsonReply,
    ResultEvent,
    ToolEvent,
    TurnItem,
    WithdrawnReply,
    error_event,
    max_body_bytes,
    parse_body,
    resolve_session_id,
)

if TYPE_CHECKING:
    from runtime.wiring import Services

logger = logging.getLogger(__name__)


def error_response(exc: AgentKitError) -> JSONResponse:
    return JSONResponse(error_event(exc), status_code=exc.http_status)


def refuse(exc: AgentKitError, session: str | None, *, path: str = "POST /invocations") -> JSONResponse:
    """The error reply of a request refused before a turn ran (an invocation's bad body or session id, limits
    above the ceilings, busy session, shutting down; a local stop of an unknown session), logged as one line."""
    log_refusal(exc.http_status, exc.code, exc.message, session=session, path=path)
    return error_response(exc)


@dataclass(frozen=True)
class Invocation:
    """One validated invocation, as the worker loop gets it."""

    request: InvocationRequest
    session_id: str
    actor: str | None
    trace_headers: dict[str, str]
    disconnect: DisconnectSignal


class AgentKitApp(AgentCoreAdapter):
    """``BedrockAgentCoreApp`` behind the HTTP edge, answering ``POST /invocations`` itself."""

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

    def ping_details(self) -> dict[str, Any]:
        """``limits``: each session's memory and process limits and how they are enforced
        (:mod:`runtime.guard.resources`), once start-up has decided them (``docs/http-api.md``)."""
        from runtime.guard import resources

        limits = resources.decided()
        return {"limits": limits.describe()} if limits is not None else {}

    def http_routes(self) -> dict[str, frozenset[str]]:
        """Path → methods of every HTTP route the app serves (read on the first request, so routes added after
        ``build_app``, such as the local ``/stopruntimesession``, are known to the HTTP edge too)."""
        return {
            route.path: frozenset(route.methods)
            for route in self.routes
            if isinstance(route, Route) and route.methods
        }

    async def handle_invocation(self, request: Request) -> Response:
        """``POST /invocations``: validate once, run the turn on the worker loop, reply as JSON or SSE."""
        runtime: Runtime = self.state.runtime
        try:
            body = parse_body(
                await request.body(),
                max_prompt_chars=self.max_prompt_chars,
                max_workspace_bytes=self.max_workspace_bytes,
            )
            session_id = resolve_session_id(request.headers.get(SESSION_HEADER))
            context = self.request_context(request)
            actor = resolve_actor(context.request_headers, actor_header=runtime.settings.actor_header)
        except AgentKitError as exc:
            return refuse(exc, request.headers.get(SESSION_HEADER))
        call = Invocation(
            request=body,
            session_id=session_id,
            actor=actor,
            trace_headers=_trace_headers(request),
            disconnect=disconnect_signal(request.scope),
        )
        reply: Response | LoopStream[TurnItem] = await start_on(
            self.worker_loop(), lambda: runtime.answer(call)
        )
        if isinstance(reply, LoopStream):
            return StreamingResponse(_sse(reply, call.disconnect), media_type="text/event-stream")
        return reply


def _build_services(settings: Settings) -> Services:
    """The runtime's object graph (:func:`runtime.wiring.build_services`), imported by one thread at a time with the
    pre-warm's SDK import (:data:`runtime.process.prewarm.GRAPH_IMPORT`)."""
    from runtime.process.prewarm import GRAPH_IMPORT

    with GRAPH_IMPORT:
        from runtime.wiring import build_services
    return build_services(settings)


class Runtime:
    """Holds the lazily built services; lives on the app's worker event loop."""

    def __init__(
        self, settings: Settings, services_factory: Callable[[Settings], Services] | None = None
    ) -> None:
        self.settings = settings
        self._services_factory = services_factory
        self.services: Services | None = None
        self._lock: asyncio.Lock | None = None
        self._closing = False

    async def get_services(self) -> Services:
        if (
            self.services is None and self._closing
        ):  # nothing is built (and left unclosed) once the close began
            raise ShuttingDown("the runtime is shutting down; retry the invocation")
        if self.services is None:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                if self.services is None:
                    factory = self._services_factory or _build_services
                    self.services = await asyncio.to_thread(factory, self.settings)
                    if self.services.jobs is not None:  # results an earlier process could not send
                        self.services.jobs.start()
        if self.services.retention is not None:
            # idempotent; here, not in wiring: it runs on this loop, which owns the registry it reads, and on
            # platform V2 only after the restore (the services are built before the snapshot, off this loop)
            self.services.retention.start()
        return self.services

    async def answer(self, call: Invocation) -> Response | AsyncIterator[TurnItem]:
        """On the worker loop: queue the turn on its session. Returns the error reply of a turn that cannot
        start, the JSON reply of a non-streaming turn, or the events of a streaming one."""
        restore.check()  # the first invocation of a process is the first after a V2 snapshot restore
        services: Services | None = None
        key, answered = "", None  # answered: an approve / deny recorded for this call
        try:
            job = call.request.job
            if job is not None and not self.settings.job_events_queue_url:
                raise JobsNotConfigured(
                    f"this runtime runs no asynchronous jobs: {ENV_JOB_EVENTS_QUEUE_URL} is unset. Set it to the SQS "
                    'queue for job events (the stack does with its webhook), or invoke without "async" and wait '
                    "for the reply"
                )
            services = await self._services()
            if self._closing:  # SIGTERM while the services were built (warm-up): no turn starts any more
                raise ShuttingDown("the runtime is shutting down; retry the invocation")
            from runtime.turn_request import TurnRequest

            snapshot = call.request.workspace
            archive = (
                snapshot.archive(self.settings.workspace_max_bytes)
                if snapshot is not None and snapshot.tar_gz_b64 is not None
                else None
            )
            key = claude_session_id(call.session_id, call.actor)
            if call.request.withdraw is not None:  # starts no turn: answered here, whatever "stream" says
                return await self._withdraw(services, call, key)
            prompt = call.request.prompt
            if (
                prompt is None
            ):  # an approve / deny: the answer is recorded and the next turn's prompt made from it
                if services.approvals is None:
                    raise ConfigurationError("this runtime does not take approvals")
                from runtime.approvals.service import answer_of

                answer = answer_of(call.request.approve, call.request.deny)
                _, prompt = await services.approvals.answer(key, answer)
                answered = answer
            turn = TurnRequest(
                prompt=prompt,
                job_id=job.id if job is not None else None,
                workspace_archive=archive,
                workspace_s3_uri=snapshot.s3_uri if snapshot is not None else None,
                max_turns=call.request.max_turns,
                max_budget_usd=call.request.max_budget_usd,
                metadata=call.request.metadata,
                trace_headers=call.trace_headers,
                # Nobody waits for a job's reply: it may run as long as AGENTKIT_JOB_TIMEOUT, not a caller's turn.
                timeout_s=self.settings.job_timeout_s if call.request.job is not None else None,
                answers_approval=answered is not None,
            )
            services.runner.check_request(turn)

            def submit() -> Awaitable[AsyncIterator[TurnItem]]:
                return services.registry.invoke(
                    key=key,
                    runtime_session_id=call.session_id,
                    claude_session_id=key,
                    actor_id=call.actor,
                    request=turn,
                )

            if job is not None:  # the caller does not wait: its leaving does not interrupt the turn
                jobs = services.jobs
                if jobs is None:  # unreachable with the setting set: wiring builds jobs from it
                    raise JobsNotConfigured(f"asynchronous jobs are off ({ENV_JOB_EVENTS_QUEUE_URL})")
                jobs.start()
                accepted = await jobs.accept(
                    job, session_key=key, session_id=call.session_id, request=turn, submit=submit
                )
                return JSONResponse(accepted, status_code=202)
            call.disconnect.add(set_on_loop(asyncio.get_running_loop(), turn.abandoned))
            events = await submit()
        except AgentKitError as exc:
            if answered is not None and services is not None and services.approvals is not None:
                await services.approvals.undo(
                    key, answered.approval_id
                )  # not used: the retry finds it pending
            return refuse(exc, call.session_id)
        if call.request.stream:
            return events
        return await _collect(events)

    async def _withdraw(self, services: Services, call: Invocation, key: str) -> Response:
        """A ``withdraw``: the pending request is taken back unanswered (:meth:`runtime.approvals.Approvals.withdraw`)
        and the reply is its new state; no turn starts, so the session's turns are neither waited for nor queued."""
        spec = call.request.withdraw
        assert spec is not None
        if services.approvals is None:
            raise ConfigurationError("this runtime does not take approvals")
        record = await services.approvals.withdraw(key, spec.id, by=spec.by, reason=spec.reason)
        reply: WithdrawnReply = {
            "type": "approval_withdrawn",
            "session_id": call.session_id,
            "claude_session_id": key,
            "approval": record.card(),
            "withdrawn": {
                "at": round(record.decided_at or 0.0, 3),
                "by": record.decided_by,
                "reason": record.reason,
            },
        }
        return SafeJSONResponse(reply)

    async def _services(self) -> Services:
        try:
            return await self.get_services()
        except AgentKitError:
            raise
        except Exception as exc:  # wiring failed (bad store URL, AWS client set-up): say so in our format
            logger.exception("could not build the runtime")
            raise ConfigurationError(
                f"the runtime could not start its dependencies ({type(exc).__name__}). "
                "The details are in the runtime logs; check its AGENTKIT_* settings."
            ) from exc

    async def close(self) -> None:
        self._closing = True
        if self.services is None and self._lock is not None and self._lock.locked():
            # The services are being built (warm-up, seconds): wait, then close what that builds. The turns waiting
            # for them are refused above instead of run; AgentCore gives a terminating session up to 15 s (developer
            # guide, runtime-lifecycle-settings: "Termination can last up to 15 seconds").
            async with self._lock:
                pass
        if self.services is not None:
            if self.services.retention is not None:  # no sweep while the sessions close
                await self.services.retention.stop()
            await self.services.registry.close_all()
            if self.services.retention is not None:  # their closes are their last uses
                await self.services.retention.aclose()
            # The closed turns' jobs send (or keep) their stopped results while the store flushes its spool: one
            # after the other they could outlast the termination AgentCore allows.
            closers = [self.services.close_store]
            if self.services.jobs is not None:
                closers.append(self.services.jobs.close)
            await close_together(closers, SHUTDOWN_BUDGET_S)
            await self.services.aclose()  # last: the jobs and the store report their ends to the metrics

    @property
    def busy(self) -> bool:
        """A turn is running, or store writes or job results are still only on this microVM's disk."""
        services = self.services
        return services is not None and (
            services.registry.active_turns > 0
            or services.pending_writes() > 0
            or (services.jobs is not None and services.jobs.unsettled > 0)
        )


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

    return app


def _trace_headers(request: Request) -> dict[str, str]:
    """The request's trace headers (bedrock-agentcore keeps them out of its forwarded headers); extracted with
    the configured propagators when the turn's spans start (:mod:`runtime.observe.baggage`)."""
    from runtime.observe.baggage import trace_headers

    return trace_headers(request.headers)


def _unwrap(item: TurnItem) -> Event:
    """The event a client sees: a failure's error event."""
    return item.event if isinstance(item, Failure) else item


def _frame(event: Event) -> bytes:
    """One SSE frame (what bedrock-agentcore writes for a streamed entrypoint: UTF-8 JSON, not ASCII-escaped)."""
    return b"data: " + json_bytes(event) + b"\n\n"


async def _sse(events: LoopStream[TurnItem], disconnect: DisconnectSignal) -> AsyncIterator[bytes]:
    finished = False
    try:
        try:
            async for item in events:
                yield _frame(_unwrap(item))
        except Exception as exc:  # the reply has started: end it with an error event in our format
            logger.error("a turn's event stream failed", exc_info=exc)
            yield _frame(
                error_event(
                    AgentKitError(
                        "internal error; the details are in the runtime logs. Retry the invocation."
                    )
                )
            )
        finished = True
    finally:
        if not finished:  # the reply stream was closed early: the caller is gone
            disconnect.fire()
            events.cancel()


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
    if final is None:
        return error_response(AgentKitError("the turn ended without a result; retry the invocation"))
    if isinstance(final, Failure):
        return SafeJSONResponse(final.event, status_code=final.http_status)
    reply: JsonReply = {**final, "tool_events": tools}
    return SafeJSONResponse(reply)


__all__ = ["AgentKitApp", "build_app"]
