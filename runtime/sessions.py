"""Warm sessions: one connected ``ClaudeSDKClient`` per runtime session, owned by one asyncio task.

Why a task per session: the SDK client keeps an anyio task group open from ``connect()`` to ``disconnect()``,
so every operation on it must happen in the task that connected it. Each :class:`WarmSession` therefore runs
a small actor loop that owns its client and takes turns from a FIFO queue, which also gives the ordering
guarantee: concurrent invocations on one session run one after another in arrival order, none lost, none
interleaved.

- The first turn in this process connects with ``session_id=<claude session id>`` or, when the store already
  holds the transcript, ``resume=<claude session id>`` (see :mod:`runtime.identity`).
- Each turn has a timeout; a timed-out or crashed CLI is disconnected, the turn ends with an error event, and
  the next turn reconnects transparently (resuming from the store).
- A session idle for ``idle_timeout_s`` closes its client and leaves the registry. ``close_all()`` (SIGTERM)
  closes every client; a turn's post-reply persistence still running is given up to
  ``PERSIST_GRACE_S`` to finish first.
- At most ``max_sessions`` sessions are warm (each holds a CLI process): a new one closes the least recently
  used idle session, or is refused with :class:`~runtime.errors.SessionBusy` when every session is busy.

The turn logic itself (prompt → events, :mod:`runtime.agent.turn`) is injected as a :class:`TurnRunner`, so this
module is about lifecycle only. Each session carries its account (:class:`runtime.accounting.SessionAccount`: the
spend persisted with the session), opened by the registry and kept across reconnects.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Generic, Protocol, TypeGuard, TypeVar

from runtime.accounting import Accounting, SessionAccount
from runtime.errors import AgentKitError, SessionBusy, ShuttingDown
from runtime.protocol import Emit, Failure, TextEvent, TurnItem, summarize
from runtime.turn_request import END as _END
from runtime.turn_request import End as _End
from runtime.turn_request import TurnRequest

logger = logging.getLogger(__name__)


#: How long shutdown waits for a turn's post-reply persistence (its spend) before cancelling it.
PERSIST_GRACE_S = 5.0
#: How long closing a client (the CLI process) may take before it is given up.
DISCONNECT_TIMEOUT_S = 15.0
#: Upper bound on :meth:`WarmSession.close`: persistence grace, client disconnect, and a margin.
CLOSE_TIMEOUT_S = PERSIST_GRACE_S + DISCONNECT_TIMEOUT_S + 5.0


class Connection(Protocol):
    """A session's connected client, as the runner made it (:class:`runtime.agent.runner.CliProcess`)."""

    async def disconnect(self) -> None: ...


C = TypeVar("C", bound=Connection)


class TurnRunner(Protocol[C]):
    """Connects clients and runs turns. Implemented by :class:`runtime.agent.runner.AgentTurnRunner`."""

    def check_request(self, request: TurnRequest) -> None:
        """Validate a request before it is queued (raises :class:`~runtime.errors.InvalidRequest`)."""
        ...

    async def prepare(self, session: WarmSession[C], request: TurnRequest) -> None:
        """Set the session up for the request before its client is checked (e.g. unpack its workspace
        snapshot). Raises :class:`~runtime.errors.AgentKitError`; a 4xx keeps the warm client."""
        ...

    async def connect(self, session: WarmSession[C], request: TurnRequest) -> C: ...

    def wants_reconnect(self, session: WarmSession[C], request: TurnRequest) -> bool: ...

    async def run_turn(
        self,
        session: WarmSession[C],
        client: C,
        request: TurnRequest,
        emit: Emit,
    ) -> Awaitable[None] | None:
        """Run the turn; may return work to finish after the reply is complete (before the next turn)."""
        ...


class WarmSession(Generic[C]):
    """One runtime session (per actor): its identity, its account, its warm client and its turn queue."""

    def __init__(
        self,
        *,
        key: str,
        runtime_session_id: str,
        claude_session_id: str,
        actor_id: str | None,
        runner: TurnRunner[C],
        account: SessionAccount,
        idle_timeout_s: float,
        max_queued: int,
        on_closed: Callable[[WarmSession[C]], None] = lambda session: None,
        on_client_dropped: Callable[[WarmSession[C]], None] = lambda session: None,
        on_finished: Callable[[WarmSession[C]], None] = lambda session: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.key = key
        self.runtime_session_id = runtime_session_id
        self.claude_session_id = claude_session_id
        self.actor_id = actor_id
        self.runner = runner
        self.idle_timeout_s = idle_timeout_s
        self.max_queued = max_queued
        self._on_closed = on_closed  # tells the owner (the registry) that this session is gone
        #: Called after the client (its CLI process) is closed: the process's private directories go with it.
        self._on_client_dropped = on_client_dropped
        #: Called once the session's loop has ended and its client is closed: nothing of it runs any more.
        self._on_finished = on_finished
        self._clock = clock
        #: The session's spend (read, added, persisted) and long-term memory write; survives reconnects.
        self.account = account
        #: The runner's connected client (its CLI process); None until the first turn, and after a failure.
        self.client: C | None = None
        self.turns_done = 0  # turns completed in this process
        self.client_turns = 0  # turns completed on the current client
        self.closing = False
        self.last_used = self._clock()
        self.serving = False  # a turn (or its post-reply work) is in progress
        self._unfinished = 0  # turns submitted and not yet finished (queued, taken off the queue, or serving)
        self._queue: asyncio.Queue[TurnRequest] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    # -- public ---------------------------------------------------------------------------------------------

    def submit(self, request: TurnRequest) -> None:
        """Queue a turn. Raises :class:`SessionBusy` when too many are waiting."""
        if self._queue.qsize() >= self.max_queued:
            raise SessionBusy(
                f"{self._queue.qsize()} invocations are already waiting on this session; "
                "wait for them to finish or use another session id."
            )
        self._queue.put_nowait(request)
        self._unfinished += 1
        self.last_used = self._clock()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"session-{self.key[:12]}")
            # a callback, not the loop's own finally: it also runs for a task cancelled before it started
            self._task.add_done_callback(lambda task: self._on_finished(self))

    @property
    def idle(self) -> bool:
        """No turn running or waiting: closing the session loses nothing.

        A turn counts from :meth:`submit` until it is finished, so a session that has taken a request off its
        queue but not started it yet is not idle (it must not be evicted in between)."""
        return self._unfinished == 0

    async def close(self) -> None:
        """Shut down now (SIGTERM): the running turn and every queued one end with a ``shutting_down``
        error the caller can retry, and the client is closed. What the turn already said is in the store; a
        finished turn's persistence still running gets up to ``PERSIST_GRACE_S`` to complete."""
        self.closing = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            # Bounded: the loop's own waits are bounded (persistence grace, disconnect timeout); this is the
            # backstop so a SIGTERM never overruns its deadline.
            done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)
            if not done:
                logger.warning(
                    "session %s did not close within %.0f s", self.runtime_session_id, CLOSE_TIMEOUT_S
                )

    # -- actor loop -----------------------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while True:
                try:
                    # Not asyncio.wait_for: on Python 3.11 it can swallow a cancellation that arrives as the
                    # queue hands over an item (CPython gh-86296), which ran queued turns after close().
                    async with asyncio.timeout(self.idle_timeout_s):
                        request = await self._queue.get()
                except TimeoutError:
                    if not self._queue.empty():
                        continue
                    # No await between this check and leaving the registry: a new submit either came
                    # before (queue not empty) or will create a fresh session.
                    self.closing = True
                    self._on_closed(self)
                    logger.info("session %s idle, closing its client", self.runtime_session_id)
                    break
                if self.closing:  # closed while the request was handed over: it must not run
                    self._refuse(request)
                    break
                await self._serve(request)
        finally:
            self._on_closed(self)
            await self._drop_client()
            while not self._queue.empty():
                self._refuse(self._queue.get_nowait())

    def _log_failure(self, failure: Failure) -> None:
        """One log line per failed turn: code, HTTP status, session, what the turn and the session spent so far
        (the turn's cost when the CLI reported one; an aborted turn's spend is already in the session's)."""
        event = failure.event
        partial = event.get("partial")
        turn_cost = partial.get("cost_usd") if partial is not None else None
        session_cost = self.account.total_usd
        logger.warning(
            "turn failed: %d %s session=%s turn_cost=%s session_cost=%s: %s",
            failure.http_status,
            event["code"],
            self.runtime_session_id,
            f"${turn_cost:.6f}" if isinstance(turn_cost, int | float) else "-",
            f"${session_cost:.6f}" if session_cost is not None else "unknown",
            summarize(event["message"], 300),
        )

    def _refuse(self, request: TurnRequest) -> None:
        """End a turn that will not run with a retryable ``shutting_down`` error."""
        self._unfinished -= 1
        request.events.put_nowait(_shutting_down())
        request.events.put_nowait(_END)

    async def _serve(self, request: TurnRequest) -> None:
        async def emit(event: TurnItem) -> None:
            if isinstance(event, Failure):
                self._log_failure(event)
            request.events.put_nowait(event)

        self.serving = True
        after: Awaitable[None] | None = None
        completed = False
        try:
            await self.runner.prepare(self, request)
            if self.client is not None and self.runner.wants_reconnect(self, request):
                await self._drop_client()
            if self.client is None:
                self.client = await self.runner.connect(self, request)
                self.client_turns = 0
            after = await self.runner.run_turn(self, self.client, request, emit)
            completed = True
        except AgentKitError as exc:
            if exc.http_status >= 500:  # the client may be broken (dead CLI, timeout): start afresh next turn
                await self._drop_client()
            await emit(Failure.of(exc))
        except asyncio.CancelledError:  # shutdown: tell the caller, then let the cancellation go on
            self.serving = False
            self._unfinished -= 1
            await emit(_shutting_down())
            raise
        except Exception as exc:  # the session must survive anything a turn throws
            logger.exception("turn failed on session %s", self.runtime_session_id)
            await self._drop_client()
            await emit(
                Failure.of(
                    AgentKitError(
                        f"internal error ({type(exc).__name__}); the details are in the runtime logs. "
                        "Retry the invocation."
                    )
                )
            )
        finally:
            request.events.put_nowait(_END)
        try:
            if after is not None:
                await _finish_shielded(after)  # persistence: after the reply, before this session's next turn
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("post-turn work failed on session %s", self.runtime_session_id)
        finally:
            if completed:
                self.turns_done += 1
                self.client_turns += 1
            self.serving = False
            self._unfinished -= 1
            self.last_used = self._clock()

    async def _drop_client(self) -> None:
        client, self.client = self.client, None
        try:
            if client is not None:  # also after a failed connect: the cleanup below still runs
                async with asyncio.timeout(DISCONNECT_TIMEOUT_S):
                    await client.disconnect()
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                raise
            logger.debug("ignored error while closing a client: %r", exc)
        finally:
            try:
                self._on_client_dropped(self)
            except Exception:
                logger.exception("cleaning up after the client of session %s failed", self.runtime_session_id)


class SessionRegistry(Generic[C]):
    """All warm sessions of this process, keyed by (actor, runtime session).

    Args:
        runner: connects clients and runs turns.
        accounting: opens each new session's account (default: spend kept in this process only).
        idle_timeout_s: a session idle this long closes its client.
        max_queued: invocations that may wait on one session.
        max_sessions: warm sessions (CLI processes) kept at most (``AGENTKIT_MAX_SESSIONS``).
        on_client_dropped: called with the session after its client (CLI process) was closed.
        on_finished: called with a session once it is over (closed, its client too); until then it is in use
            (:meth:`claude_session_ids_in_use`).
        clock: monotonic seconds, for "least recently used".
    """

    def __init__(
        self,
        *,
        runner: TurnRunner[C],
        idle_timeout_s: float,
        max_queued: int,
        max_sessions: int = 32,
        accounting: Accounting | None = None,
        on_client_dropped: Callable[[WarmSession[C]], None] = lambda session: None,
        on_finished: Callable[[WarmSession[C]], None] = lambda session: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        self.runner = runner
        self.accounting = accounting or Accounting()
        self.idle_timeout_s = idle_timeout_s
        self.max_queued = max_queued
        self.max_sessions = max_sessions
        self._clock = clock
        self._on_client_dropped = on_client_dropped
        self._on_finished = on_finished
        self._sessions: dict[str, WarmSession[C]] = {}
        #: Every session from its creation until its loop ended, including those closing (idle, evicted).
        self._open: set[WarmSession[C]] = set()
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def active_turns(self) -> int:
        """Turns running now (or finishing their post-reply work), over every warm session."""
        return sum(1 for s in self._sessions.values() if s.serving)

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: str) -> WarmSession[C] | None:
        return self._sessions.get(key)

    def claude_session_ids_in_use(self) -> set[str]:
        """The Claude session ids of every session warm, busy or still closing its client (their workspaces are in
        use: :mod:`runtime.workspace.retention` leaves them alone)."""
        return {s.claude_session_id for s in self._open}  # every session in _sessions is in _open too

    def _finished(self, session: WarmSession[C]) -> None:
        self._open.discard(session)
        self._on_finished(session)

    async def invoke(
        self,
        *,
        key: str,
        runtime_session_id: str,
        claude_session_id: str,
        actor_id: str | None,
        request: TurnRequest,
    ) -> AsyncIterator[TurnItem]:
        """Queue ``request`` on its session and yield its events as they arrive (last: result or error).

        Raises:
            SessionBusy: too many invocations wait on the session, or ``max_sessions`` sessions are all busy.
        """
        session = self._sessions.get(key)
        if session is None or session.closing:
            self._make_room()
            session = WarmSession(
                key=key,
                runtime_session_id=runtime_session_id,
                claude_session_id=claude_session_id,
                actor_id=actor_id,
                runner=self.runner,
                account=self.accounting.open(
                    claude_session_id=claude_session_id,
                    runtime_session_id=runtime_session_id,
                    actor_id=actor_id,
                ),
                idle_timeout_s=self.idle_timeout_s,
                max_queued=self.max_queued,
                on_closed=self._forget,
                on_client_dropped=self._on_client_dropped,
                on_finished=self._finished,
                clock=self._clock,
            )
            self._sessions[key] = session
            self._open.add(session)
        session.submit(request)
        return _drain(request.events)

    def _make_room(self) -> None:
        """Before a new session: at the cap, close the least recently used idle session (in the background).

        Raises:
            SessionBusy: every warm session is running or waiting for a turn.
        """
        live = [s for s in self._sessions.values() if not s.closing]
        if len(live) < self.max_sessions:
            return
        idle = [s for s in live if s.idle]
        if not idle:
            raise SessionBusy(
                f"too many active sessions: all {self.max_sessions} warm sessions are running turns; "
                "retry shortly (AGENTKIT_MAX_SESSIONS sets the limit)"
            )
        victim = min(idle, key=lambda s: s.last_used)
        victim.closing = True
        self._forget(victim)
        logger.info("session limit %d reached: closing idle session %s", self.max_sessions, victim.key[:12])
        task = asyncio.create_task(victim.close(), name=f"evict-{victim.key[:12]}")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close_all(self) -> None:
        sessions = list(self._sessions.values())
        closing = list(self._closing)
        await asyncio.gather(*(s.close() for s in sessions), *closing, return_exceptions=True)

    def _forget(self, session: WarmSession[C]) -> None:
        if self._sessions.get(session.key) is session:
            del self._sessions[session.key]


async def _finish_shielded(after: Awaitable[None]) -> None:
    """Await post-turn work; if the session is cancelled meanwhile (shutdown), let the work finish for up to
    ``PERSIST_GRACE_S`` (then cancel it) before the cancellation goes on."""
    task = asyncio.ensure_future(after)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        done, _ = await asyncio.wait({task}, timeout=PERSIST_GRACE_S)
        if not done:
            logger.warning("post-turn persistence did not finish within %.0f s at shutdown", PERSIST_GRACE_S)
            task.cancel()
        elif not task.cancelled() and task.exception() is not None:
            logger.warning("post-turn work failed at shutdown: %s", task.exception())
        raise


def _shutting_down() -> Failure:
    return Failure.of(
        ShuttingDown("the runtime is shutting down; retry the invocation (the session resumes elsewhere)")
    )


async def _drain(queue: asyncio.Queue[TurnItem | _End]) -> AsyncIterator[TurnItem]:
    """Yield a turn's events. Text deltas that are already waiting are merged into one event: each event
    costs an SSE frame and a hop between the server's loops, so a fast stream is sent in fewer, larger
    pieces while a slow one still goes out delta by delta."""
    pending: TurnItem | _End | None = None
    while True:
        item = pending if pending is not None else await queue.get()
        pending = None
        if isinstance(item, _End):
            return
        if _is_text(item):
            parts = [item["text"]]
            while not queue.empty():
                nxt = queue.get_nowait()
                if _is_text(nxt):
                    parts.append(nxt["text"])
                else:
                    pending = nxt
                    break
            if len(parts) > 1:
                item = {"type": "text", "text": "".join(parts)}
        yield item


def _is_text(item: TurnItem | _End) -> TypeGuard[TextEvent]:
    return isinstance(item, dict) and item.get("type") == "text"
