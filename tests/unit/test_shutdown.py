"""runtime.process.shutdown: a signal starts the close at once, the close runs once, the previous handler still runs."""

from __future__ import annotations

import asyncio
import signal
import threading
from typing import Any

import pytest

from runtime.process.shutdown import EarlyClose


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


def test_the_jobs_and_the_store_close_together_within_one_budget_under_agentcores_15_s(tmp_path: Any) -> None:
    """The jobs' results and the store's spool flush used to close one after the other (8 s + 10 s), past the 15 s
    AgentCore gives a terminating session. Now both start at once, each told the one shared budget, and the
    metrics close after both."""
    from runtime.config.settings import Settings
    from runtime.http.server import Runtime
    from runtime.process.shutdown import SHUTDOWN_BUDGET_S
    from runtime.sessions import SessionRegistry
    from runtime.wiring import Services
    from tests.unit.test_server_errors import OK, ScriptedRunner

    assert SHUTDOWN_BUDGET_S < 15
    budgets: dict[str, float] = {}
    started = {"jobs": asyncio.Event(), "store": asyncio.Event()}
    order: list[str] = []

    def closer(name: str, other: str) -> Any:
        async def close(budget_s: float) -> None:
            budgets[name] = budget_s
            started[name].set()
            try:  # closing one after the other, the second would start only after the first gave up waiting
                await asyncio.wait_for(started[other].wait(), 5)
            except TimeoutError:
                order.append(f"{name} ended before {other} started")
                return
            order.append(f"{name} closed")

        return close

    class SlowJobs:
        close = staticmethod(closer("jobs", "store"))

        def start(self) -> None:  # nothing left over from an earlier process
            pass

    async def metrics() -> None:
        order.append("metrics closed")

    def build(_settings: Settings) -> Services:
        runner = ScriptedRunner([OK])
        return Services(
            registry=SessionRegistry(runner=runner, idle_timeout_s=5, max_queued=4),
            runner=runner,
            aclose=metrics,
            jobs=SlowJobs(),  # type: ignore[arg-type]  # only its close is used by the shutdown
            close_store=closer("store", "jobs"),
        )

    runtime = Runtime(Settings(state_dir=tmp_path), build)

    async def scenario() -> None:
        await runtime.get_services()
        await runtime.close()

    asyncio.run(scenario())
    assert budgets == {"jobs": SHUTDOWN_BUDGET_S, "store": SHUTDOWN_BUDGET_S}
    assert sorted(order[:2]) == ["jobs closed", "store closed"], order
    assert order[2:] == ["metrics closed"]


def test_a_shutdown_step_past_the_budget_is_cancelled_and_the_others_still_end() -> None:
    from runtime.process.shutdown import close_together

    ended: list[str] = []

    async def overruns(budget_s: float) -> None:
        try:
            await asyncio.Event().wait()  # a store call in flight when the deadline comes
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise

    async def fails(budget_s: float) -> None:
        raise RuntimeError("the queue is gone")

    async def ends(budget_s: float) -> None:
        await asyncio.sleep(0)
        ended.append("ended")

    async def scenario() -> None:
        async with asyncio.timeout(30):
            await close_together([overruns, fails, ends], 0.05)

    asyncio.run(scenario())
    assert sorted(ended) == ["cancelled", "ended"]
