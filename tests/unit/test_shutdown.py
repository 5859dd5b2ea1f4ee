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


def test_sigterm_while_the_runtime_warms_up_refuses_the_waiting_turns_instead_of_running_them(
    tmp_path: Any,
) -> None:
    """Platform V1 answers /ping before the SDK import and the wiring are done; turns that arrive meanwhile wait
    for them. SIGTERM then (EarlyClose.begin) must stop them: none runs, each gets a retryable 503."""
    from concurrent.futures import ThreadPoolExecutor

    from starlette.testclient import TestClient

    from harness.runtime_server import SESSION_HEADER, session_id
    from runtime.config.settings import Settings
    from runtime.http.server import build_app
    from runtime.sessions import SessionRegistry
    from runtime.wiring import Services
    from tests.unit.test_server_errors import OK, ScriptedRunner, _no_dependencies

    runner = ScriptedRunner([OK])
    warming = threading.Event()
    warmed = threading.Event()

    def slow_services(_settings: Settings) -> Services:  # the SDK import and the wiring, still running
        warming.set()
        assert warmed.wait(10)
        return Services(
            registry=SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=4),
            runner=runner,
            aclose=_no_dependencies,
        )

    app = build_app(Settings(state_dir=tmp_path), services_factory=slow_services)
    with TestClient(app) as client, ThreadPoolExecutor(3) as pool:
        replies = [
            pool.submit(
                client.post,
                "/invocations",
                json={"prompt": f"turn {n}", "stream": False},
                headers={SESSION_HEADER: session_id(f"warm-{n}")},
            )
            for n in range(3)
        ]
        assert warming.wait(10)
        closed = EarlyClose(app.state.runtime.close, app.worker_loop).begin()  # what SIGTERM does
        warmed.set()
        answered = [reply.result(10) for reply in replies]
        closed.result(10)
    assert [r.status_code for r in answered] == [503, 503, 503], [r.text for r in answered]
    assert {r.json()["code"] for r in answered} == {"shutting_down"}
    assert runner.actors == []  # no turn ran


def test_after_the_close_began_nothing_is_built_any_more(tmp_path: Any) -> None:
    """A warm-up step that starts after SIGTERM (platform V1 builds the services in the background) builds
    nothing the close would not see."""
    from runtime.config.settings import Settings
    from runtime.errors import ShuttingDown
    from runtime.http.server import Runtime

    built: list[object] = []

    def build(settings: Settings) -> Any:
        built.append(settings)
        raise AssertionError("built after the close began")

    runtime = Runtime(Settings(state_dir=tmp_path), build)

    async def scenario() -> None:
        await runtime.close()
        with pytest.raises(ShuttingDown):
            await runtime.get_services()

    asyncio.run(scenario())
    assert built == []
