"""Asynchronous jobs: accept a job, follow its turn, send its progress and its one result to SQS.

:meth:`Jobs.accept` runs on the worker loop when an invocation with ``"async": true`` arrives. A job id already
queued, running or finished on that session (in this process; the last :data:`REMEMBERED_JOBS` finished ones)
gets the same ``202`` and no second turn. Otherwise the turn is queued on its session like any other (the
session's order, limits and errors apply: a busy session is still ``429``), and a task per job follows its
events:

- ``tool_use`` events and the turn's running cost (from its streamed usage, ``TurnRequest.on_cost``) feed its
  :class:`~runtime.jobs.progress.Progress`; a progress event is sent when one is due. One that cannot be sent is
  dropped (the next one carries the figures again).
- The turn's last event becomes the one result event: the ``result`` event of the synchronous reply, or its
  ``error`` event with ``cost_usd`` (this turn's spend so far). A turn ended by a session close (the local stop
  route, SIGTERM) reports ``stopped``. The result is written to the outbox first (:mod:`runtime.jobs.outbox`),
  then sent (its patch moved to S3 when the message would be too large, :mod:`runtime.jobs.fit`); one that
  cannot be sent stays there and is re-sent in the background with growing delays, and at the next start.

:attr:`Jobs.unsettled` counts jobs whose result is not yet in SQS (running, or waiting in the outbox): ``/ping``
stays ``HealthyBusy`` while it is above zero, so AgentCore keeps the microVM (and its disk) up to the session's
maximum lifetime.

Environment: none read here (``AGENTKIT_JOB_PROGRESS_SECONDS`` arrives as ``progress_s``). IAM: see
:mod:`runtime.jobs.sink`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from runtime.errors import JobStopped, ShuttingDown
from runtime.jobs.fit import fit_message
from runtime.jobs.outbox import Outbox
from runtime.jobs.progress import Progress
from runtime.jobs.protocol import (
    EVENT_VERSION,
    SQS_MAX_MESSAGE_BYTES,
    JobAccepted,
    ProgressMessage,
    ResultMessage,
)
from runtime.jobs.sink import EventsUnavailable, S3Patches, SqsEvents
from runtime.protocol import Failure, JobSpec, TurnItem
from runtime.turn_request import TurnRequest

logger = logging.getLogger(__name__)

#: Finished job ids remembered per process, so a retried request is not run (and paid) twice.
REMEMBERED_JOBS = 4096
#: Seconds before the first re-send of a result that could not be sent, and the most between two.
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 30.0
#: How long a shutdown waits for the jobs' results to be written and sent.
CLOSE_TIMEOUT_S = 8.0
#: Threads for sending events and writing the outbox.
IO_THREADS = 4

T = TypeVar("T")


class _Cost:
    """The turn's running cost, passed through the job's inbox."""

    __slots__ = ("usd",)

    def __init__(self, usd: float) -> None:
        self.usd = usd


class _End:
    """The turn's events are over."""


_END = _End()


@dataclass
class _Job:
    spec: JobSpec
    session_id: str
    progress: Progress
    inbox: asyncio.Queue[TurnItem | _Cost | _End] = field(default_factory=asyncio.Queue)
    seq: int = 0
    task: asyncio.Task[None] | None = None


class Jobs:
    """The runtime's asynchronous jobs. Lives on the app's worker loop.

    Args:
        events: where messages are sent.
        outbox: results not yet sent.
        patches: where a patch too large for a message goes (None: such a result is ``result_too_large``).
        progress_s: least seconds between two progress events of a job.
        clock: monotonic seconds (elapsed time, throttling). wall: epoch seconds (``at``).
        on_event: told a metric name when a job is accepted (``JobsAccepted``) or its result waits in the outbox
            (``JobResultsKept``).
    """

    def __init__(
        self,
        *,
        events: SqsEvents,
        outbox: Outbox,
        patches: S3Patches | None,
        progress_s: float,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        max_message_bytes: int = SQS_MAX_MESSAGE_BYTES,
        retry_first_s: float = RETRY_FIRST_S,
        retry_max_s: float = RETRY_MAX_S,
        on_event: Callable[[str], None] = lambda name: None,
    ) -> None:
        self.events, self.outbox, self.patches = events, outbox, patches
        self.progress_s = progress_s
        self._clock, self._wall = clock, wall
        self.max_message_bytes = max_message_bytes
        self._retry_first_s, self._retry_max_s = retry_first_s, retry_max_s
        self._on_event = on_event  # a metric name: JobsAccepted, JobResultsKept
        self._jobs: dict[tuple[str, str], _Job] = {}
        self._finished: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._in_flight: set[Path] = set()
        self._resender: asyncio.Task[None] | None = None
        self._started = False
        # Its own threads: sends that wait out the client's retries while SQS is down must not take the default
        # executor's few threads (2 cores: 6) from the rest of the runtime (workspace snapshots, ...).
        self._executor = ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="job-events")

    @property
    def unsettled(self) -> int:
        """Jobs whose result is not yet in SQS: running, or waiting in the outbox."""
        return len(self._jobs) + self.outbox.count

    def session_keys(self) -> set[str]:
        """The sessions (registry keys: Claude session ids) with a job queued, running or writing its result."""
        return {session_key for session_key, _ in self._jobs}

    def start(self) -> None:
        """Re-send what an earlier process left in the outbox (idempotent; call on the worker loop)."""
        if self._started:
            return
        self._started = True
        if self.outbox.count:
            logger.warning("job outbox: %d result(s) from before wait to be sent", self.outbox.count)
            self._kick()

    async def accept(
        self,
        spec: JobSpec,
        *,
        session_key: str,
        session_id: str,
        request: TurnRequest,
        submit: Callable[[], Awaitable[AsyncIterator[TurnItem]]],
    ) -> JobAccepted:
        """Queue the job's turn (``submit``) unless this session already has the job; the ``202`` answer.

        Raises what ``submit`` raises (:class:`~runtime.errors.SessionBusy`, ...): nothing is queued then.
        """
        accepted: JobAccepted = {"type": "job_accepted", "job_id": spec.id, "session_id": session_id}
        key = (session_key, spec.id)
        if key in self._jobs or key in self._finished:
            logger.info("job %s on session %s: already accepted; not run again", spec.id, session_id)
            return accepted
        job = _Job(
            spec=spec,
            session_id=session_id,
            progress=Progress(interval_s=self.progress_s, started=self._clock()),
        )
        self._jobs[key] = job  # reserved before the first await: a concurrent repeat finds it
        request.on_cost = lambda usd: job.inbox.put_nowait(_Cost(usd))
        try:
            events = await submit()
        except BaseException:
            del self._jobs[key]
            raise
        job.task = asyncio.create_task(self._follow(key, job, events), name=f"job-{spec.id[:24]}")
        self._on_event("JobsAccepted")
        logger.info("job %s accepted on session %s", spec.id, session_id)
        return accepted

    async def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """At shutdown, after the sessions are closed: let the jobs write and send their results (bounded); what
        is not sent by then stays in the outbox."""
        tasks = [job.task for job in self._jobs.values() if job.task is not None]
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=timeout_s)
            for task in late:
                task.cancel()
            if late:
                logger.warning(
                    "%d job(s) did not send their result within %.0f s of shutdown", len(late), timeout_s
                )
        if self._resender is not None:
            self._resender.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self.outbox.count:
            logger.warning("job outbox: %d result(s) not sent; sent at the next start", self.outbox.count)

    async def _io(self, call: Callable[..., T], *args: Any) -> T:
        """Run a blocking call (boto3, disk) on the jobs' threads."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, partial(call, *args))

    # -- one job ------------------------------------------------------------------------------------------------

    async def _follow(self, key: tuple[str, str], job: _Job, events: AsyncIterator[TurnItem]) -> None:
        pump = asyncio.create_task(_pump(events, job.inbox), name=f"job-events-{job.spec.id[:24]}")
        final: TurnItem | None = None
        try:
            while True:
                # Once the turn's last event is in, only the result goes out.
                delay = job.progress.due_in(self._clock()) if final is None else None
                if delay == 0:
                    await self._progress(job)
                    continue
                try:
                    async with asyncio.timeout(delay):
                        item = await job.inbox.get()
                except TimeoutError:
                    continue
                if isinstance(item, _End):
                    break
                if isinstance(item, _Cost):
                    job.progress.cost(item.usd)
                elif isinstance(item, Failure) or item["type"] == "result":
                    final = item
                elif item["type"] == "tool_use":
                    job.progress.tool_call(item["name"])
            await self._result(job, final)
        finally:
            pump.cancel()
            del self._jobs[key]
            self._finished[key] = None
            while len(self._finished) > REMEMBERED_JOBS:
                self._finished.popitem(last=False)

    def _envelope(self, job: _Job) -> dict[str, Any]:
        job.seq += 1
        return {
            "v": EVENT_VERSION,
            "job_id": job.spec.id,
            "session_id": job.session_id,
            "seq": job.seq,
            "at": round(self._wall(), 3),
            "context": job.spec.context,
        }

    async def _progress(self, job: _Job) -> None:
        figures = job.progress.take(self._clock())
        message: ProgressMessage = {
            **self._envelope(job),  # type: ignore[typeddict-item]
            "kind": "progress",
            "elapsed_s": figures.elapsed_s,
            "tool_calls": figures.tool_calls,
            "last_tool": figures.last_tool,
            "cost_usd": figures.cost_usd,
        }
        try:
            await self._io(self.events.send, message)
        except EventsUnavailable as exc:  # the next progress event (or the result) says it again
            logger.warning("job %s: progress event %d not sent: %s", job.spec.id, message["seq"], exc)

    async def _result(self, job: _Job, final: TurnItem | None) -> None:
        message: ResultMessage = {
            **self._envelope(job),  # type: ignore[typeddict-item]
            "kind": "result",
            "result": _result_of(final, job.progress.cost_usd),
        }
        path = self.outbox.path_for(message)
        self._in_flight.add(path)
        try:
            await self._io(self.outbox.put, message)
            sent = await self._deliver(path, message)
        finally:
            self._in_flight.discard(path)
        outcome = message["result"].get("code") or message["result"].get("subtype") or "result"
        if sent:
            logger.info("job %s: result sent (%s, seq %d)", job.spec.id, outcome, message["seq"])
        else:
            self._on_event("JobResultsKept")
            logger.warning(
                "job %s: result (%s) kept in the outbox; re-sent in the background", job.spec.id, outcome
            )
            self._kick()

    async def _deliver(self, path: Path, message: ResultMessage) -> bool:
        """Fit and send a result; removes it from the outbox once SQS has it. False: not sent (kept)."""
        put = self.patches.put if self.patches is not None else None
        try:
            fitted = await self._io(
                partial(fit_message, message, limit=self.max_message_bytes, put_patch=put)
            )
            await self._io(self.events.send, fitted)
        except EventsUnavailable as exc:
            logger.warning("job %s: result (seq %d) not sent: %s", message["job_id"], message["seq"], exc)
            return False
        except Exception:
            logger.exception("job %s: result (seq %d) not sent", message["job_id"], message["seq"])
            return False
        self.outbox.remove(path)
        return True

    # -- the outbox's background re-send ------------------------------------------------------------------------

    def _kick(self) -> None:
        if self._resender is None or self._resender.done():
            self._resender = asyncio.get_running_loop().create_task(self._resend(), name="job-outbox-resend")

    async def _resend(self) -> None:
        delay = self._retry_first_s
        while True:
            waiting = [path for path in self.outbox.paths() if path not in self._in_flight]
            if not waiting:
                return
            await asyncio.sleep(delay)
            sent_all = True
            for path in waiting:
                if path in self._in_flight:
                    continue
                message = self.outbox.read(path)
                if message is None:
                    continue
                self._in_flight.add(path)
                try:
                    sent_all = await self._deliver(path, message)
                finally:
                    self._in_flight.discard(path)
                if not sent_all:
                    break
                logger.info("job %s: result (seq %d) sent from the outbox", message["job_id"], message["seq"])
            delay = self._retry_first_s if sent_all else min(delay * 2, self._retry_max_s)


async def _pump(events: AsyncIterator[TurnItem], inbox: asyncio.Queue[TurnItem | _Cost | _End]) -> None:
    """The turn's events into the job's inbox (which can be waited on with a timeout; the events cannot)."""
    try:
        async for item in events:
            inbox.put_nowait(item)
    finally:
        inbox.put_nowait(_END)


def _result_of(final: TurnItem | None, cost_so_far: float) -> dict[str, Any]:
    """The job's result: the synchronous reply's final event; an error carries ``cost_usd`` (this turn's cost:
    the CLI's figure when the turn got that far, else its streamed usage priced so far)."""
    if final is None:
        return {
            "type": "error",
            "code": "internal_error",
            "message": "the turn ended without a result; the details are in the runtime logs. Retry the job.",
            "cost_usd": round(cost_so_far, 6),
        }
    if not isinstance(final, Failure):
        return dict(final)
    event: dict[str, Any] = dict(final.event)
    partial = event.get("partial")
    cost = partial["cost_usd"] if isinstance(partial, dict) and "cost_usd" in partial else cost_so_far
    if event["code"] == ShuttingDown.code:  # the session was closed under the turn: stopped
        stopped = JobStopped(
            "the job was stopped (the session was stopped or the runtime shut down) before it finished; what it "
            "did so far is in the session, and cost_usd is what it cost"
        )
        event = {"type": "error", "code": stopped.code, "message": stopped.message}
    event["cost_usd"] = round(float(cost), 6)
    return event
