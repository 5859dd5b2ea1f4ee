"""Close the warm sessions the moment SIGTERM arrives, not after the HTTP server has drained.

On SIGTERM uvicorn stops accepting connections and then *waits for the requests in flight* before it runs
the lifespan shutdown. Closing the sessions only there would let the running turn finish at leisure and, worse,
start the turns queued behind it: paid work for callers who will never see the reply. So the runtime chains a
handler in front of uvicorn's (uvicorn installs its own with ``signal.signal`` before the lifespan starts, and
restores the previous ones when it exits: ``uvicorn.Server.capture_signals``). The handler starts the close at
once; the running and queued turns then end with a retryable ``shutting_down`` reply, the connections drain,
and the lifespan shutdown awaits the same close.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import signal
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any

logger = logging.getLogger(__name__)

#: The signals that end the process (AgentCore stops a session's microVM with SIGTERM).
SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: What the close's last steps (the jobs' results and the session store's spool, concurrently) may take together.
#: AgentCore gives a terminating session "up to 15 seconds due to logging and other process completion" (AgentCore
#: developer guide, runtime lifecycle settings); the rest is left for the metrics' flush and the process's exit.
SHUTDOWN_BUDGET_S = 13.0


async def close_together(closers: Iterable[Callable[[float], Awaitable[None]]], budget_s: float) -> None:
    """Start every closer at once, each told it has ``budget_s``, and wait for them all within that budget.

    Each closer bounds itself; one still running at the end of the budget (a store call already in flight when its
    deadline came) is cancelled: what it has not delivered stays on this microVM's disk, as it would after the
    SIGKILL that ends an overrun termination. One that fails is logged and does not stop the others.
    """
    tasks = [asyncio.ensure_future(closer(budget_s)) for closer in closers]
    if not tasks:
        return
    done, late = await asyncio.wait(tasks, timeout=budget_s)
    for task in late:
        task.cancel()
    if late:
        logger.warning("%d shutdown step(s) did not end within %.0f s: cancelled", len(late), budget_s)
        await asyncio.wait(late)
    for task in done:
        if not task.cancelled() and (exc := task.exception()) is not None:
            logger.error("a shutdown step failed", exc_info=exc)


class EarlyClose:
    """Runs ``close()`` once on ``loop``, whether a signal or the lifespan shutdown asks first."""

    def __init__(
        self, close: Callable[[], Coroutine[Any, Any, None]], loop: Callable[[], asyncio.AbstractEventLoop]
    ) -> None:
        self._close = close
        self._loop = loop
        self._future: concurrent.futures.Future[None] | None = None
        self._lock = threading.Lock()

    def begin(self) -> concurrent.futures.Future[None]:
        """Start closing (idempotent); returns the future of the one close."""
        with self._lock:
            if self._future is None:
                self._future = asyncio.run_coroutine_threadsafe(self._close(), self._loop())
            return self._future

    def install(self) -> None:
        """Chain a handler in front of the current ones for :data:`SIGNALS` (main thread only: a no-op
        elsewhere, as in tests that serve from a thread)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in SIGNALS:
            previous = signal.getsignal(sig)

            def handler(signum: int, frame: Any, previous: Any = previous) -> None:
                self.begin()
                if callable(previous):
                    previous(signum, frame)
                elif previous is not None:  # SIG_DFL / SIG_IGN: what the signal would have done without us
                    signal.signal(signum, previous)
                    signal.raise_signal(signum)

            signal.signal(sig, handler)
