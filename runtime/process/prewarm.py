"""Start-up work that neither ``/ping`` nor the first turn should wait for, ordered by platform version.

**Platform V2** (``AGENTKIT_PLATFORM_VERSION=v2``): AgentCore snapshots the process at its first healthy ``/ping``
and restores every new session from that image, so everything reusable is done *before* the server listens, in
the main thread, by :func:`initialise` (the SDK import, the CLI binary, the AWS service models — see
:func:`runtime.aws.warm` —, the object graph, the OpenTelemetry set-up); ``/ping`` is then healthy only once
the process is fully initialised, and no start-up thread is mid-flight when the image is taken. The CLI binary
is read through, so its pages are in the image's page cache. AgentCore allows 120 s from start to a healthy
``/ping`` (developer guide, ``runtime-v2-optimize``); ``benchmarks/platform_v2.py`` measures what this takes.
Nothing here produces a per-session value: those are renewed after a restore (:mod:`runtime.process.restore`).

**Platform V1** (default): daemon threads started with the server (uvicorn binds once the lifespan start-up
returns; the first health checks share the GIL with the import, which Python hands over every 5 ms) run, in
order:

1. (a thread of its own) the CLI binary's pages: the bundled CLI is a ~380 MB executable; the kernel is asked
   to read it ahead (``POSIX_FADV_WILLNEED``), so the first spawn in a fresh microVM does not fault it in
   from disk;
2. the Claude Agent SDK import (~1 s, mostly ``mcp``), via :mod:`runtime.agent.turn`;
3. the runtime's object graph (``Runtime.get_services``: boto3 clients, store connection, price table,
   agent definition), built on the app's worker loop as the first invocation would;
4. the OpenTelemetry set-up (:mod:`runtime.observe.otel_setup`). Last, because a new session's first
   invocation arrives right after ``/ping`` (AgentCore starts the microVM for it): the SDK import and the
   wiring are on its path, the tracer provider is needed only when its first span starts — after the CLI
   process was spawned, so the set-up overlaps the CLI's own start-up (``Observer.spans_ready`` waits for
   it there). A new session's first ``session.load`` span, started before the set-up ends, is not exported.

On V1 every step is best-effort: a failure is logged and the first invocation does the work (and reports the
error). On V2 a failure of a required step raises :class:`runtime.errors.ConfigurationError` (the process exits
and the runtime version never becomes healthy, rather than snapshotting a half-initialised process).

The steps are named and given by ``python -m runtime`` (:mod:`runtime.__main__`, the wiring); this module only
runs them, so it imports nothing of the agent and sits below the session store and the observer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

#: Held by whichever thread imports the runtime's object graph: the pre-warm's SDK import and the first
#: invocation's build of the services run on different threads, and two threads importing one graph that has an
#: import cycle inside a package (``runtime.workspace``'s ``__init__`` imports its submodules, which import the
#: package) can each get the other's half-initialised module ("cannot import name … from partially initialized
#: module"), failing the first turn with a 500. One importer at a time makes the import order single-threaded.
GRAPH_IMPORT = threading.Lock()

logger = logging.getLogger(__name__)

#: Read size when paging the CLI binary in.
_CHUNK = 8 * 1024 * 1024


def page_in(path: Path, *, read: bool = False) -> int:
    """Ask the kernel to read ``path`` into the page cache (``POSIX_FADV_WILLNEED``: asynchronous read-ahead,
    no CPU in this process); with ``read`` also read it through. Returns the bytes read (0 without ``read``)."""
    total = 0
    with open(path, "rb", buffering=0) as f:
        with contextlib.suppress(AttributeError, OSError):
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_WILLNEED)
        while read and (chunk := f.read(_CHUNK)):
            total += len(chunk)
    return total


def initialise(
    steps: list[tuple[str, Callable[[], object]]], *, required: frozenset[str] = frozenset()
) -> dict[str, float]:
    """Run ``steps`` in this thread, in order (platform V2: before the server listens). Returns the seconds each
    took.

    Raises:
        ConfigurationError: a step named in ``required`` failed (the others are logged and skipped).
    """
    from runtime.errors import ConfigurationError

    timings: dict[str, float] = {}
    for name, step in steps:
        started = time.perf_counter()
        try:
            step()
        except Exception as exc:
            if name in required:
                logger.exception("start-up step %s failed", name)
                raise ConfigurationError(
                    f"start-up step '{name}' failed ({type(exc).__name__}: {exc}); the runtime does not report "
                    "healthy half-initialised (platform v2). Check the AGENTKIT_* settings and the log above."
                ) from exc
            logger.warning("start-up step %s failed (the first invocation will retry): %r", name, exc)
        timings[name] = time.perf_counter() - started
    logger.info(
        "initialised before listening in %.0f ms: %s",
        sum(timings.values()) * 1000,
        ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in timings.items()),
    )
    return timings


class Prewarm:
    """The ordered background steps; ``steps`` are (name, callable) pairs run in one thread."""

    def __init__(
        self, steps: list[tuple[str, Callable[[], object]]], *, name: str = "agentkit-prewarm"
    ) -> None:
        self.steps = steps
        self.name = name
        self.timings: dict[str, float] = {}
        self.errors: dict[str, BaseException] = {}
        self.done = threading.Event()

    def run(self) -> None:
        try:
            for name, step in self.steps:
                started = time.perf_counter()
                try:
                    step()
                except Exception as exc:  # best effort: the first invocation redoes it and reports errors
                    self.errors[name] = exc
                    logger.info("pre-warm step %s failed (the first invocation will retry): %r", name, exc)
                self.timings[name] = time.perf_counter() - started
            logger.info(
                "pre-warmed: %s", ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in self.timings.items())
            )
        finally:
            self.done.set()

    def start(self, delay_s: float = 0.0) -> threading.Timer:
        timer = threading.Timer(delay_s, self.run)
        timer.name = self.name
        timer.daemon = True
        timer.start()
        return timer
