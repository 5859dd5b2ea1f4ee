"""Run work on another thread's event loop and get its answer, or its stream of items, on the running loop.

The runtime's warm Claude clients live on bedrock-agentcore's worker loop (a thread of its own, so ``/ping``
answers while turns run), and the HTTP server writes replies on uvicorn's loop. Each item a turn streams crosses
between the two exactly once here: the worker loop posts it with ``call_soon_threadsafe`` into an
``asyncio.Queue`` of the server's loop, and the reply writer awaits that queue. (bedrock-agentcore's own bridge
for an async-generator entrypoint crosses twice per item: worker loop → a ``queue.Queue`` → a thread-pool thread
blocked on it, then that thread → the server loop, for every ``next()`` of a sync generator.)

Environment: none.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_END = object()
_STREAM = object()


@dataclass(frozen=True)
class _Raised:
    exc: BaseException


@dataclass(frozen=True)
class _Answer:
    value: Any


class LoopStream(Generic[T]):
    """Items of an async iterator that runs on another loop, read on this one. :meth:`cancel` stops the
    producer (when the reader gives up early)."""

    def __init__(self, inbox: asyncio.Queue[Any], future: concurrent.futures.Future[None]) -> None:
        self._inbox = inbox
        self._future = future

    def __aiter__(self) -> LoopStream[T]:
        return self

    async def __anext__(self) -> T:
        item = await self._inbox.get()
        if item is _END:
            raise StopAsyncIteration
        if isinstance(item, _Raised):
            raise item.exc
        return item  # type: ignore[no-any-return]

    def cancel(self) -> None:
        """Stop the producer (thread-safe; a no-op once it has finished)."""
        self._future.cancel()


async def start_on(loop: asyncio.AbstractEventLoop, start: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``start()`` on ``loop``. Its result comes back as it is, unless it is an async iterator: then the
    iterator runs on ``loop`` and its items arrive here through the returned :class:`LoopStream` (the caller
    tells the two apart with ``isinstance``).

    Raises:
        whatever ``start()`` raises (an exception while iterating is raised by the stream instead).
    """
    here = asyncio.get_running_loop()
    inbox: asyncio.Queue[Any] = asyncio.Queue()

    def post(item: Any) -> None:
        with contextlib.suppress(RuntimeError):  # this loop is closed: nobody is left to read
            here.call_soon_threadsafe(inbox.put_nowait, item)

    async def produce() -> None:
        try:
            first = await start()
            if not isinstance(first, AsyncIterator):
                post(_Answer(first))
                return
            post(_STREAM)
            try:
                async for item in first:
                    post(item)
            finally:
                aclose = getattr(first, "aclose", None)
                if aclose is not None:  # release the source at once, also when the reader gave up
                    with contextlib.suppress(Exception):
                        await aclose()
            post(_END)
        except BaseException as exc:  # the reader must never wait for an item that will not come
            post(_Raised(exc))
            raise

    # The coroutine runs in a copy of this task's context (call_soon_threadsafe copies it), so context
    # variables set for the request are visible there.
    future = asyncio.run_coroutine_threadsafe(produce(), loop)
    try:
        head = await inbox.get()
    except asyncio.CancelledError:
        future.cancel()
        raise
    if isinstance(head, _Raised):
        raise head.exc
    if isinstance(head, _Answer):
        return head.value
    return LoopStream(inbox, future)
