"""``runtime/agent/silence.py``: a turn waiting on a silent model says so in the log at the configured interval,
not after the CLI's own minutes-long timeout; a running tool is not the model's silence."""

from __future__ import annotations

import asyncio

from runtime.agent.silence import SilenceWatch


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def _watch(clock: Clock, said: list[str]) -> SilenceWatch:
    return SilenceWatch(
        after_s=60, session="s-1", clock=clock, sleep=clock.sleep, warn=lambda fmt, *a: said.append(fmt % a)
    )


def test_a_silent_model_is_reported_every_interval() -> None:
    clock, said = Clock(), list[str]()

    async def scenario() -> None:
        async with _watch(clock, said).watching():
            while clock.now < 185:
                await asyncio.sleep(0)

    asyncio.run(scenario())
    assert len(said) == 3 and said[0].startswith("session s-1: no bytes from the model for 60 s")


def test_a_running_tool_or_a_talking_model_is_not_silence() -> None:
    clock, said = Clock(), list[str]()

    async def scenario() -> None:
        async with _watch(clock, said).watching() as watch:
            watch.heard(waiting_on_tool=True)  # the model asked for a tool: a long command is not the model's
            while clock.now < 200:
                await asyncio.sleep(0)
            watch.heard()  # the tool's result went back: from now on the model is awaited again
            start = clock.now
            while clock.now < start + 30:
                await asyncio.sleep(0)

    asyncio.run(scenario())
    assert said == []


def test_zero_turns_the_watch_off() -> None:
    clock, said = Clock(), list[str]()

    async def scenario() -> None:
        watch = SilenceWatch(
            after_s=0, session="s", clock=clock, sleep=clock.sleep, warn=lambda *a: said.append("")
        )
        async with watch.watching():
            for _ in range(100):
                await asyncio.sleep(0)

    asyncio.run(scenario())
    assert said == []
