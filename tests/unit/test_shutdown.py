"""runtime.process.shutdown: a signal starts the close at once, the close runs once, the previous handler still runs."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.process.shutdown import EarlyClose


@pytest.fixture
def worker_loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_the_close_runs_once_on_the_owning_loop(worker_loop: asyncio.AbstractEventLoop) -> None:
    ran: list[asyncio.AbstractEventLoop] = []

    async def close() -> None:
        ran.append(asyncio.get_running_loop())

    early = EarlyClose(close, lambda: worker_loop)
    first, second = early.begin(), early.begin()
    assert first is second
    first.result(5)
    assert ran == [worker_loop]


def test_sigterm_starts_the_close_and_still_reaches_the_servers_handler(
    worker_loop: asyncio.AbstractEventLoop,
) -> None:
    closed = threading.Event()
    seen: list[int] = []

    async def close() -> None:
        closed.set()

    def server_handler(signum: int, frame: Any) -> None:  # stands in for uvicorn's handle_exit
        seen.append(signum)

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        signal.signal(signal.SIGTERM, server_handler)
        EarlyClose(close, lambda: worker_loop).install()
        signal.raise_signal(signal.SIGTERM)
        assert closed.wait(5), "SIGTERM did not start the close"
        assert seen == [signal.SIGTERM]
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
