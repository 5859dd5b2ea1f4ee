"""The one place that relies on ``BedrockAgentCoreApp``'s private methods (bedrock-agentcore has no public seam).

- ``_handle_invocation(request)`` is the ``POST /invocations`` route: :class:`AgentCoreAdapter` sends it to
  :meth:`~AgentCoreAdapter.handle_invocation`, which a subclass overrides to answer the whole invocation itself
  (the base app decodes the body again, runs a sync-generator bridge through the thread pool for every streamed
  event, and answers its own errors as ``{"error": ...}``, outside our contract). Not overridden, the base app's
  own handling runs.
- ``_build_request_context(request)`` is what the base app does first for every invocation: it sets
  bedrock-agentcore's context variables (request id, workload access token, forwarded headers, config bundle)
  that its identity helpers read, and returns the ``RequestContext`` an entrypoint gets;
  :meth:`~AgentCoreAdapter.request_context` exposes it.
- ``_ensure_worker_loop()`` is the event loop async entrypoints run on; :meth:`~AgentCoreAdapter.worker_loop`
  exposes it (the warm clients live there, and shutdown must close them on the loop that owns them).
- ``_handle_ping(request)`` is the ``GET /ping`` route: :class:`AgentCoreAdapter` adds the fields of
  :meth:`~AgentCoreAdapter.ping_details` to the base app's answer (``status`` and ``time_of_last_update`` stay as
  the base app computes them; AgentCore reads ``status``).
- ``_last_status_update_time`` is the ``time_of_last_update`` ``/ping`` reports, set when the app is built;
  :meth:`~AgentCoreAdapter.reset_ping_clock` renews it after a snapshot restore (:mod:`runtime.process.restore`).

The base app also gives its logger ``bedrock_agentcore.app`` a handler of its own (JSON lines) when it has none,
while the record still propagates to the root logger that ``python -m runtime`` configures: every line was
written twice, once as JSON and once as text. The adapter removes that handler, so the process's one logging
set-up writes each line once.

``tests/unit/test_app_adapter.py`` fails when bedrock-agentcore changes these methods' signatures or behaviour.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp, RequestContext
from starlette.requests import Request
from starlette.responses import JSONResponse, Response


class AgentCoreAdapter(BedrockAgentCoreApp):
    """``BedrockAgentCoreApp`` with public seams over the private methods this runtime needs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        logger = logging.getLogger("bedrock_agentcore.app")
        own = list(logger.handlers)
        super().__init__(*args, **kwargs)
        for handler in logger.handlers:
            if handler not in own:  # the base app's own JSON handler (see the module docstring)
                logger.removeHandler(handler)

    async def handle_invocation(self, request: Request) -> Response:
        """Answer ``POST /invocations``. This default is the base app's own handling (body → entrypoint)."""
        return await super()._handle_invocation(request)

    def request_context(self, request: Request) -> RequestContext:
        """bedrock-agentcore's context of ``request`` (session id, forwarded headers), its context variables set."""
        return self._build_request_context(request)

    def ping_details(self) -> dict[str, Any]:
        """Fields added to ``/ping``'s answer (none by default). Must not raise: ``/ping`` is the health check."""
        return {}

    def _handle_ping(self, request: Request) -> Response:
        response: Response = super()._handle_ping(request)
        try:
            details = self.ping_details()
            if not details:
                return response
            body = json.loads(bytes(response.body))
            return JSONResponse({**details, **body}, status_code=response.status_code)
        except Exception:  # the health answer itself must never fail over an extra field
            logging.getLogger(__name__).exception("could not add details to /ping")
            return response

    def reset_ping_clock(self) -> None:
        """Make ``/ping``'s ``time_of_last_update`` now (a restored process would report the image's time)."""
        self._last_status_update_time = time.time()

    def worker_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the async entrypoint runs on (started if needed)."""
        return self._ensure_worker_loop()

    async def _handle_invocation(self, request: Request) -> Response:
        return await self.handle_invocation(request)
