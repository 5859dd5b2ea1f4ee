"""``python -m runtime``: serve the AgentCore HTTP contract (``POST /invocations``, ``GET /ping``).

Binds ``AGENTKIT_HOST`` (default 127.0.0.1; 0.0.0.0 in a container) and ``AGENTKIT_PORT`` (default 8080).
SIGTERM/SIGINT close every warm Claude session cleanly before the process exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator
from typing import Any

from runtime.errors import ConfigurationError
from runtime.server import build_app, warm_sdk_import
from runtime.settings import Settings

#: Longest a shutdown may take (closing CLI processes, flushing the store and metrics) before the process exits.
SHUTDOWN_TIMEOUT_S = 25.0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = Settings.from_env()
    except ConfigurationError as exc:
        print(f"agentkit runtime: {exc.message}", file=sys.stderr)
        return 2
    app = build_app(settings)
    runtime = app.state.runtime

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        warm_sdk_import()
        yield
        # Shutdown (SIGTERM): close warm clients on the loop that owns them.
        loop = app._ensure_worker_loop()
        future = asyncio.run_coroutine_threadsafe(runtime.close(), loop)
        try:
            await asyncio.wait_for(asyncio.wrap_future(future), timeout=SHUTDOWN_TIMEOUT_S)
            _flush_traces()
            logging.getLogger(__name__).info("shutdown complete: every Claude session closed")
        except Exception as exc:  # shutdown must finish
            logging.getLogger(__name__).warning("error while closing sessions: %s", exc)

    app.router.lifespan_context = lifespan
    logging.getLogger(__name__).info(
        "agentkit runtime on %s:%s (model %s)", settings.host, settings.port, settings.model
    )
    from runtime.http_limits import ContractH11Protocol

    app.run(port=settings.port, host=settings.host, http=ContractH11Protocol)
    return 0


def _flush_traces() -> None:
    """Export buffered spans now: uvicorn re-raises SIGTERM after shutdown, so atexit hooks never run."""
    from opentelemetry import trace

    flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if flush is not None:
        flush(5000)


if __name__ == "__main__":
    sys.exit(main())
