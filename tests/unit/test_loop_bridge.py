"""Work started on another thread's event loop: its answer, its stream of items, its errors and an early stop
arrive on the caller's loop. A real second loop runs in a thread (as bedrock-agentcore's worker loop does)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest

from runtime.http.loop_bridge import LoopStream, start_on


def test_an_answer_comes_back_as_it_is_and_runs_on_the_other_loop(
    worker_loop: asyncio.AbstractEventLoop,
) -> None:
    async def answer() -> tuple[str, asyncio.AbstractEventLoop]:
        return "done", asyncio.get_running_loop()

    async def main() -> None:
        value, ran_on = await start_on(worker_loop, answer)
        assert value == "done" and ran_on is worker_loop

    asyncio.run(main())


def test_a_stream_delivers_every_item_in_order_then_ends(worker_loop: asyncio.AbstractEventLoop) -> None:
    seen_on: list[asyncio.AbstractEventLoop] = []

    async def items() -> AsyncIterator[int]:
        for i in range(50):
            seen_on.append(asyncio.get_running_loop())
            yield i

    async def start() -> AsyncIterator[int]:
        return items()

    async def main() -> list[int]:
        stream = await start_on(worker_loop, start)
        assert isinstance(stream, LoopStream)
        return [i async for i in stream]

    assert asyncio.run(main()) == list(range(50))
    assert set(seen_on) == {worker_loop}


def test_errors_before_and_during_the_stream_reach_the_reader(worker_loop: asyncio.AbstractEventLoop) -> None:
    async def refuse() -> AsyncIterator[int]:
        raise LookupError("no such session")

    async def items() -> AsyncIterator[int]:
        yield 1
        raise RuntimeError("the source broke")

    async def start() -> AsyncIterator[int]:
        return items()

    async def main() -> list[int]:
        with pytest.raises(LookupError, match="no such session"):
            await start_on(worker_loop, refuse)
        stream = await start_on(worker_loop, start)
        assert isinstance(stream, LoopStream)
        got = []
        with pytest.raises(RuntimeError, match="the source broke"):
            async for i in stream:
                got.append(i)
        return got

    assert asyncio.run(main()) == [1]


def test_cancel_stops_the_producer_and_closes_its_source(worker_loop: asyncio.AbstractEventLoop) -> None:
    closed = threading.Event()

    async def endless() -> AsyncIterator[int]:
        try:
            i = 0
            while True:
                yield i
                i += 1
                await asyncio.sleep(0.001)
        finally:
            closed.set()

    async def start() -> AsyncIterator[int]:
        return endless()

    async def main() -> None:
        stream = await start_on(worker_loop, start)
        assert isinstance(stream, LoopStream)
        assert await anext(stream) == 0
        stream.cancel()

    asyncio.run(main())
    assert closed.wait(5), "the source was not closed after cancel()"
