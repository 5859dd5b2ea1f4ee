"""A warning in the log when the model has sent nothing for a while, long before the CLI gives up.

A hung Bedrock connection shows nothing: the CLI waits on its HTTP request (its own API timeout is minutes), and
its first retry notice (:meth:`runtime.agent.turn.Turn._log_retry`) comes only after that. A CI job would sit
silent all that time. While a turn waits on the model (not on one of its tools, which may run long on purpose),
:class:`SilenceWatch` logs ``no bytes from the model for N s`` every ``AGENTKIT_MODEL_SILENCE_WARN_SECONDS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

logger = logging.getLogger(__name__)


class SilenceWatch:
    """Call :meth:`heard` for every message from the CLI (``waiting_on_tool`` when the model asked for a tool and
    its result has not come back); :meth:`watching` runs the watch for the duration of a turn."""

    def __init__(
        self,
        *,
        after_s: float,
        session: str,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        warn: Callable[..., None] = logger.warning,
    ) -> None:
        self.after_s = after_s
        self.session = session
        self.clock = clock
        self.sleep = sleep
        self.warn = warn
        self.last = clock()
        self.waiting_on_tool = False
        self.warnings = 0

    def heard(self, *, waiting_on_tool: bool = False) -> None:
        self.last = self.clock()
        self.waiting_on_tool = waiting_on_tool

    async def run(self) -> None:
        """Warn once per ``after_s`` of silence from the model (never while a tool runs)."""
        while True:
            silent = self.clock() - self.last
            if silent < self.after_s:
                await self.sleep(self.after_s - silent)
                continue
            if not self.waiting_on_tool:
                self.warnings += 1
                self.warn(
                    "session %s: no bytes from the model for %.0f s; the CLI is still waiting on Bedrock (its own "
                    "timeout and retries take minutes: check the model's Region, quotas and the network)",
                    self.session,
                    silent,
                )
            self.last = self.clock()  # the next warning after another full interval
            await self.sleep(self.after_s)

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[SilenceWatch]:
        if self.after_s <= 0:
            yield self
            return
        self.last = self.clock()
        task = asyncio.create_task(self.run(), name=f"silence-{self.session}")
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
