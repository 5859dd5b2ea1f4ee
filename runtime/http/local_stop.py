"""``POST /stopruntimesession`` for a local runtime: the kill switch ``agentkit sessions stop --local`` uses.

AgentCore's ``StopRuntimeSession`` (data plane ``POST /runtimes/{arn}/stopruntimesession`` with the
``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`` header; botocore model ``bedrock-agentcore``) ends a
session's microVM. AgentCore forwards only ``/invocations`` and ``/ping`` to a container, so this route is
reachable only where the runtime is served directly (``python -m runtime`` on a laptop or CI runner).

Here it closes the caller's warm session: its running and queued turns end with a ``shutting_down`` error
and its Claude process is closed; the transcript stays in the session store, so the next turn resumes it.
The caller is identified as for ``/invocations`` (bearer token ``sub`` or the trusted actor header).

Replies: ``200 {"runtimeSessionId": …, "statusCode": 200}``; ``404`` (no warm session by that id for this
caller) or ``400`` (bad or missing session id) as ``{"type": "error", "code", "message"}``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from runtime.errors import AgentKitError, InvalidSessionId, SessionNotFound
from runtime.http.server import refuse
from runtime.identity import claude_session_id, resolve_actor
from runtime.protocol import SESSION_HEADER, resolve_session_id

STOP_PATH = "/stopruntimesession"


def _not_found(session_id: str) -> JSONResponse:
    return refuse(
        SessionNotFound(f"no warm session {session_id} in this runtime for this caller (nothing to stop)"),
        session_id,
        path=f"POST {STOP_PATH}",
    )


async def _close(registry: Any, key: str) -> bool:
    session = registry.get(key)
    if session is None or session.closing:
        return False
    await session.close()
    return True


def add_stop_route(app: Any, *, actor_header: str | None) -> None:
    """Add ``POST /stopruntimesession`` to a ``BedrockAgentCoreApp`` built by ``runtime.http.server.build_app``."""

    async def stop(request: Request) -> JSONResponse:
        header = request.headers.get(SESSION_HEADER)
        try:
            if not header:
                raise InvalidSessionId(f"{SESSION_HEADER} is required: it names the session to stop")
            session_id = resolve_session_id(header)
            actor = resolve_actor(request.headers, actor_header=actor_header)
        except AgentKitError as exc:
            return refuse(exc, header, path=f"POST {STOP_PATH}")
        services = app.state.runtime.services
        if services is None:
            return _not_found(session_id)
        registry = services.registry
        loop = app.worker_loop()  # the registry's sessions live on the app's worker loop
        future = asyncio.run_coroutine_threadsafe(
            _close(registry, claude_session_id(session_id, actor)), loop
        )
        if not await asyncio.wrap_future(future):
            return _not_found(session_id)
        return JSONResponse({"runtimeSessionId": session_id, "statusCode": 200})

    app.router.add_route(STOP_PATH, stop, methods=["POST"])
