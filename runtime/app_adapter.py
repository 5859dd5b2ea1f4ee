"""The one place that relies on ``BedrockAgentCoreApp``'s private methods (bedrock-agentcore has no public seam).

- ``_handle_invocation(request)`` is the ``POST /invocations`` route: :class:`AgentCoreAdapter` runs
  :meth:`~AgentCoreAdapter.before_invocation` first, so a request can be refused in our error format before the
  base app parses it (its own errors are ``{"error": ...}``, outside our contract).
- ``_ensure_worker_loop()`` is the event loop async entrypoints run on; :meth:`~AgentCoreAdapter.worker_loop`
  exposes it (shutdown must close the warm clients on the loop that owns them).
- ``_last_status_update_time`` is the ``time_of_last_update`` ``/ping`` reports, set when the app is built;
  :meth:`~AgentCoreAdapter.reset_ping_clock` renews it after a snapshot restore (:mod:`runtime.restore`).

``tests/unit/test_app_adapter.py`` fails when bedrock-agentcore changes either method's signature or behaviour.
"""

from __future__ import annotations

import asyncio
import time

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from starlette.requests import Request
from starlette.responses import Response


class AgentCoreAdapter(BedrockAgentCoreApp):
    """``BedrockAgentCoreApp`` with public seams over the private methods this runtime needs."""

    async def before_invocation(self, request: Request) -> Response | None:
        """Return a response to answer the invocation without running the entrypoint, or None to go on."""
        return None

    def reset_ping_clock(self) -> None:
        """Make ``/ping``'s ``time_of_last_update`` now (a restored process would report the image's time)."""
        self._last_status_update_time = time.time()

    def worker_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the async entrypoint runs on (started if needed)."""
        return self._ensure_worker_loop()

    async def _handle_invocation(self, request: Request) -> Response:
        early = await self.before_invocation(request)
        if early is not None:
            return early
        return await super()._handle_invocation(request)
