"""A caller that leaves mid-turn: interrupt the turn so it stops spending, count it, keep the session.

The HTTP edge (:mod:`runtime.http_edge`) sets the request's ``abandoned`` event when the client goes away
before its reply is complete (SSE or JSON). A turn still waiting in the session's queue is then skipped; a
running one gets the SDK client's ``interrupt()`` — the CLI ends the turn with an interrupted result at its
next step, its spend so far is counted as usual, and the warm client stays connected for the next turn.
Each abandoned invocation counts one ``Disconnected`` metric.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from runtime.errors import ClientDisconnected

if TYPE_CHECKING:
    from runtime.agent.turn_stream import TurnState
    from runtime.observe.telemetry import Telemetry
    from runtime.sessions import TurnRequest, WarmSession

logger = logging.getLogger(__name__)


class DisconnectWatch:
    """Whether the caller of the current turn left while it ran."""

    def __init__(self) -> None:
        self.fired = False


def skip_if_abandoned(request: TurnRequest, telemetry: Telemetry, session: WarmSession) -> None:
    """Before a queued turn starts. Raises :class:`ClientDisconnected` when its caller already left."""
    if request.abandoned.is_set():
        telemetry.client_disconnected(session)
        logger.info("session %s: caller left before its turn started; skipped", session.runtime_session_id)
        raise ClientDisconnected("the caller disconnected before the turn started")


@contextlib.asynccontextmanager
async def interrupt_on_disconnect(
    request: TurnRequest, state: TurnState, telemetry: Telemetry, session: WarmSession
) -> AsyncIterator[DisconnectWatch]:
    """While the body runs: if the caller leaves, interrupt the turn (as a task, like the budget interrupt:
    the SDK reads the interrupt's answer only after the messages before it are consumed)."""
    watch = DisconnectWatch()

    async def wait() -> None:
        await request.abandoned.wait()
        watch.fired = True
        telemetry.client_disconnected(session)
        logger.info("session %s: caller disconnected mid-turn; interrupting", session.runtime_session_id)
        if state.interrupt_task is None:
            state.interrupt_task = asyncio.create_task(state.client.interrupt(), name="turn-interrupt")

    task = asyncio.create_task(wait(), name="turn-disconnect-watch")
    try:
        yield watch
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
