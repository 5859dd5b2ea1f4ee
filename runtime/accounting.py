"""A session's account: what it has spent (read, added, persisted with the session) and what each turn leaves
in long-term memory.

Each warm session (:class:`runtime.sessions.WarmSession`) holds one :class:`SessionAccount`, opened by the
registry from the process-wide :class:`Accounting`; the turn (:mod:`runtime.agent.turn`) reads the spend in its
*begin* phase, adds each turn's cost in *settle* and persists in *persist*, after the reply.

Spend is persisted with the session through the session store's ``get_state``/``put_state`` (so a session
budget survives a new microVM and a redeploy). The stored base is read lazily and never overwritten from an
unknown base: while the read fails, the spend of this process waits in the ledger as *unpersisted* and no write
is made; the next successful read folds it in (stored + unpersisted). Writes of one session are serialised and
always write the newest totals, so a write finishing late never replaces a newer one.

Nothing here raises into a turn: store failures are reported through ``on_store_error`` (the observer's
``SessionStoreErrors`` metric) and logged. Environment variables: none. IAM: what the store needs
(for AgentCore Memory ``bedrock-agentcore:CreateEvent``, ``ListEvents`` and ``DeleteEvent``: the state is an
event, older ones are pruned; see :mod:`runtime.session_store.agentcore.store`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

logger = logging.getLogger(__name__)


class SpendStore(Protocol):
    """Where a session's totals are persisted (the session stores of :mod:`runtime.session_store` implement it)."""

    async def get_state(self, session_id: str) -> dict[str, Any] | None: ...

    async def put_state(self, session_id: str, state: dict[str, Any]) -> None: ...


class TurnMemory(Protocol):
    """Long-term memory that takes each finished turn (:class:`runtime.session_store.recall.MemoryRecall`)."""

    async def record_turn(
        self, *, actor_id: str, session_id: str, user_text: str, assistant_text: str
    ) -> bool: ...


#: Told about each failed store operation (``"get_state"`` / ``"put_state"``) and its error.
StoreErrorSink = Callable[[str, BaseException], None]


def _log_store_error(operation: str, exc: BaseException) -> None:
    logger.warning("session store %s failed: %s", operation, exc)


class SpendLedger:
    """A session's cumulative spend and turn count, as persisted with the session (it outlives the microVM).

    The stored base is unknown until :meth:`load` (not read yet, or the read failed); spend counted meanwhile
    waits as *unpersisted* and is folded into the base once, when it is loaded. ``lock`` serialises writes.
    """

    def __init__(self) -> None:
        self._spent_usd: float | None = None
        self._turns: int | None = None
        self._unpersisted_usd = 0.0
        self._unpersisted_turns = 0
        self.lock = asyncio.Lock()

    @property
    def known(self) -> bool:
        """Whether the stored base has been loaded (only then is the total worth reporting or writing)."""
        return self._spent_usd is not None

    @property
    def spent_usd(self) -> float | None:
        """The session's total spend, or None while the stored base is unknown."""
        return self._spent_usd

    @property
    def unpersisted_usd(self) -> float:
        """Spend counted while the stored base was unknown (0 once it is loaded)."""
        return self._unpersisted_usd

    @property
    def turns(self) -> int | None:
        """Turns counted over the session's life, or None while the stored base is unknown."""
        return self._turns

    def so_far(self) -> float:
        """The spend known now: the total, or (base unknown) what this process has counted."""
        return self._spent_usd if self._spent_usd is not None else self._unpersisted_usd

    def load(self, state: dict[str, Any]) -> None:
        """Take the stored ``{"spent_usd", "turns"}`` as the base (once: a later load changes nothing)."""
        if self._spent_usd is not None:
            return
        self._spent_usd = float(state.get("spent_usd", 0.0)) + self._unpersisted_usd
        self._turns = int(state.get("turns", 0)) + self._unpersisted_turns
        self._unpersisted_usd, self._unpersisted_turns = 0.0, 0

    def add(self, usd: float, *, turns: int = 1) -> float:
        """Count ``usd`` (and ``turns``); returns the spend now known."""
        if self._spent_usd is None:
            self._unpersisted_usd += usd
            self._unpersisted_turns += turns
            return self._unpersisted_usd
        self._spent_usd += usd
        self._turns = (self._turns or 0) + turns
        return self._spent_usd

    def state(self) -> dict[str, Any]:
        """What is persisted: ``{"spent_usd", "turns"}`` (only meaningful once :attr:`known`)."""
        return {"spent_usd": self._spent_usd, "turns": self._turns}


class Accounting:
    """What every session's account shares: the store, long-term memory, and the background writes.

    Args:
        store: where spend is persisted (None: spend lives in this process only).
        memory: long-term memory for finished turns (None: off).
        on_store_error: told about each failed ``get_state`` / ``put_state``.
    """

    def __init__(
        self,
        *,
        store: SpendStore | None = None,
        memory: TurnMemory | None = None,
        on_store_error: StoreErrorSink = _log_store_error,
    ) -> None:
        self.store = store
        self.memory = memory
        self.on_store_error = on_store_error
        self._background: set[asyncio.Task[object]] = set()

    def open(
        self, *, claude_session_id: str, runtime_session_id: str, actor_id: str | None
    ) -> SessionAccount:
        """The account of one session (its spend is keyed by the Claude session id, like its transcript)."""
        return SessionAccount(
            self,
            claude_session_id=claude_session_id,
            runtime_session_id=runtime_session_id,
            actor_id=actor_id,
        )

    def in_background(self, work: Coroutine[Any, Any, object], *, what: str) -> asyncio.Task[object]:
        """Run ``work`` without holding up the session (after the reply, or beside a CLI start); failures are
        logged, and :meth:`drain` waits for it."""
        task: asyncio.Task[object] = asyncio.create_task(work)
        self._background.add(task)

        def _done(t: asyncio.Task[object]) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                logger.warning("background %s failed: %s", what, t.exception())

        task.add_done_callback(_done)
        return task

    async def drain(self) -> None:
        """Wait for background work (memory and spend writes); call before closing the store."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)


class SessionAccount:
    """One session's spend (read, add, persist) and its turns' long-term memory write."""

    def __init__(
        self,
        accounting: Accounting,
        *,
        claude_session_id: str,
        runtime_session_id: str,
        actor_id: str | None,
    ) -> None:
        self._accounting = accounting
        self.claude_session_id = claude_session_id
        self.runtime_session_id = runtime_session_id
        self.actor_id = actor_id
        self.ledger = SpendLedger()
        #: The read of the stored base in flight, shared by every caller that needs it meanwhile.
        self._reading: asyncio.Task[object] | None = None

    @property
    def total_usd(self) -> float | None:
        """The session's total spend, or None while the stored base is unknown (a partial sum would mislead)."""
        return self.ledger.spent_usd

    async def spent(self) -> float:
        """The session's cumulative cost so far (persisted with the session, survives a new microVM).

        Read from the store on first use (or joined, when :meth:`prefetch` started the read). When the read fails
        (reported to ``on_store_error``) the base stays unknown and this returns what this process has counted;
        a later call reads again.
        """
        if not self.ledger.known and self._accounting.store is None:
            self.ledger.load({})  # spend lives in this process only
        if not self.ledger.known:
            # Shielded: a caller that is cancelled (a turn shut down) does not cancel the read other callers share.
            await asyncio.shield(self._read_base())
        return self.ledger.so_far()

    def prefetch(self) -> None:
        """Start reading the stored spend now, in the background, if it is not known yet.

        A session's first turn needs it right after its CLI process has started; started beside the CLI's start-up
        (:meth:`runtime.agent.runner.AgentTurnRunner.connect`), the store round trip overlaps the spawn instead of
        following it. Never raises; :meth:`spent` joins the read.
        """
        if not self.ledger.known and self._accounting.store is not None:
            self._read_base()

    def _read_base(self) -> asyncio.Task[object]:
        """The read of the stored base: the one in flight, or a new one (the accounting's drain waits for it)."""
        if self._reading is None:
            self._reading = self._accounting.in_background(self._load_base(), what="session spend read")
        return self._reading

    async def _load_base(self) -> None:
        store = self._accounting.store
        try:
            if store is None:
                return
            try:
                state = await store.get_state(self.claude_session_id) or {}
            except Exception as exc:
                self._accounting.on_store_error("get_state", exc)
                return
            self.ledger.load(state)  # a load before this one wins: then this changes nothing
        finally:
            self._reading = None

    def add(self, usd: float, *, turns: int = 1) -> float:
        """Count ``usd`` (and ``turns``) into the session; returns the spend now known."""
        return self.ledger.add(usd, turns=turns)

    async def persist(self) -> None:
        """Write the session's totals (``spent_usd``, ``turns``) to the store. Never raises.

        Skipped while the stored base is unknown (one more read is tried first): writing then would replace
        the stored total with this process's part of it.
        """
        store, ledger = self._accounting.store, self.ledger
        if store is None:
            return
        async with ledger.lock:
            if not ledger.known:
                await self.spent()
                if not ledger.known:
                    logger.warning(
                        "session %s: stored spend unknown, $%.6f kept in memory until the store answers",
                        self.runtime_session_id,
                        ledger.unpersisted_usd,
                    )
                    return
            try:
                await store.put_state(self.claude_session_id, ledger.state())
            except Exception as exc:
                self._accounting.on_store_error("put_state", exc)

    def persist_soon(self) -> None:
        """:meth:`persist` in the background (for a turn that ended without a reply to wait for)."""
        self._accounting.in_background(self.persist(), what="session spend write")

    def remember(self, *, prompt: str, answer: str) -> None:
        """Feed the exchange to long-term memory, in the background (only for a known caller)."""
        memory = self._accounting.memory
        if memory is None or self.actor_id is None:
            return
        self._accounting.in_background(
            memory.record_turn(
                actor_id=self.actor_id,
                session_id=self.claude_session_id,
                user_text=prompt,
                assistant_text=answer,
            ),
            what="memory write",
        )
