"""One invocation as it is queued on a warm session (:mod:`runtime.sessions`): the prompt, its options, the queue
its events go to, and the signals the HTTP edge and asynchronous jobs attach to it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from runtime.protocol import TurnItem


class End:
    """Marks the end of a turn's events in its queue."""


END = End()


@dataclass
class TurnRequest:
    """One invocation queued on a session. Events go to ``events``; the last one is a result or a
    :class:`~runtime.protocol.Failure`."""

    prompt: str
    max_turns: int | None = None
    max_budget_usd: float | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    #: A workspace snapshot (tar.gz bytes) the session works on from this turn on (:mod:`runtime.workspace`).
    workspace_archive: bytes | None = None
    #: ... or the S3 URI of one, read when the turn starts (:mod:`runtime.workspace.s3`).
    workspace_s3_uri: str | None = None
    events: asyncio.Queue[TurnItem | End] = field(default_factory=asyncio.Queue)
    #: The request's trace headers (``traceparent``, ``X-Amzn-Trace-Id``, ``baggage``, ...): the turn's spans
    #: continue that trace (:mod:`runtime.observe.baggage`). None: a new trace.
    trace_headers: dict[str, str] | None = None
    #: The one disconnect signal: the HTTP edge sets it when the caller leaves before the reply is complete;
    #: the turn reads it (skipped while queued, interrupted while running; :mod:`runtime.agent.turn`).
    abandoned: asyncio.Event = field(default_factory=asyncio.Event)
    #: Told the turn's running cost (USD, priced from its streamed usage) after each model call, and what an
    #: aborted turn cost: an asynchronous job reports it in its progress (:mod:`runtime.jobs.service`).
    on_cost: Callable[[float], None] | None = None
    #: The asynchronous job this turn is (its ``job.id``), for the approval it may wait for (runtime.approvals).
    job_id: str | None = None
    #: The turn answers a call that waited for approval (an ``approve`` / ``deny`` invocation): on a microVM
    #: without the session's workspace, the work of the paused turn is restored (:mod:`runtime.workspace.paused`).
    answers_approval: bool = False
    #: Seconds this turn may take, when not ``AGENTKIT_TURN_TIMEOUT`` (an asynchronous job's, ``AGENTKIT_JOB_TIMEOUT``).
    timeout_s: float | None = None
