"""The ``cloudwatch`` sink: batched ``PutMetricData`` from a background task (IAM: cloudwatch:PutMetricData)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import threading
import time
from collections.abc import Callable
from typing import Any

from runtime.observe.metrics.base import (
    MAX_VALUES_PER_DATUM,
    BaseMetrics,
    MetricDoc,
    logger,
)


class CloudWatchMetrics(BaseMetrics):
    """``cloudwatch``: ``PutMetricData`` from a background asyncio task.

    ``record_*`` append to a bounded in-memory buffer and return at once: when the buffer holds
    ``max_queue`` samples, new ones are dropped and counted (``stats["dropped"]``). Samples of one metric,
    dimension set and minute are sent as one datum with ``Values``/``Counts`` (percentiles still work), so
    the payload stays small. The sender task starts on the first record made inside a running event loop,
    wakes every ``flush_interval_s`` (or when ``batch_size`` series are waiting), and sends up to
    ``batch_size`` datums per call in a worker thread. A failed call is logged and
    counted (``stats["failed_batches"]``, ``stats["failed_samples"]``); its datums are not retried beyond the
    client's own retry policy. Session id and caller are logged at DEBUG, never sent as dimensions.

    IAM: ``cloudwatch:PutMetricData``.
    """

    def __init__(
        self,
        *,
        namespace: str,
        agent: str,
        client: Any,
        max_queue: int = 10_000,
        batch_size: int = 500,
        flush_interval_s: float = 1.0,
        now: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(namespace=namespace, agent=agent, now=now)
        if max_queue < 1 or not 1 <= batch_size <= 1000 or flush_interval_s <= 0:
            raise ValueError("need max_queue >= 1, 1 <= batch_size <= 1000 and flush_interval_s > 0")
        self._client = client
        self._max_queue = max_queue
        self._batch_size = batch_size
        self._interval = flush_interval_s
        # (name, unit, dimensions, minute) → {value: count}; insertion-ordered
        self._buffer: dict[tuple[str, str, tuple[tuple[str, str], ...], int], dict[float, int]] = {}
        self._pending = 0
        self._lock = threading.Lock()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._closing = False

    @property
    def pending(self) -> int:
        """Samples buffered and not yet sent."""
        return self._pending

    def samples(self, doc: MetricDoc) -> list[tuple[str, str, tuple[tuple[str, str], ...], float]]:
        """(name, unit, dimensions, value) for ``doc``: its dimension set plus the ``[Agent]`` roll-up."""
        dim_sets = [tuple(doc.dimensions.items())]
        if set(doc.dimensions) != {"Agent"}:
            dim_sets.append((("Agent", self.agent),))
        return [(name, unit, dims, float(value)) for dims in dim_sets for name, unit, value in doc.metrics]

    def _emit(self, doc: MetricDoc) -> None:
        samples = self.samples(doc)
        if self._closing:
            self.stats["dropped"] += len(samples)
            return
        if doc.properties:
            logger.debug("metrics %s %s", doc.dimensions, doc.properties)
        minute = int(doc.timestamp // 60 * 60)
        with self._lock:
            accepted = samples[: max(self._max_queue - self._pending, 0)]
            for name, unit, dims, value in accepted:
                series = self._buffer.setdefault((name, unit, dims, minute), {})
                series[value] = series.get(value, 0) + 1
            self._pending += len(accepted)
            full = len(self._buffer) >= self._batch_size
        if len(accepted) < len(samples):
            self.stats["dropped"] += len(samples) - len(accepted)
        self._ensure_sender(wake=full)

    def _ensure_sender(self, *, wake: bool) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        alive = self._task is not None and not self._task.done()
        if alive and self._loop is not None and not self._loop.is_closed():
            if wake and self._wake is not None:
                if loop is self._loop:
                    self._wake.set()
                elif not self._loop.is_closed():
                    self._loop.call_soon_threadsafe(self._wake.set)
            return
        if loop is None:
            return  # no loop here: the buffer waits for flush()/close() or a record made inside a loop
        self._loop = loop
        self._wake = asyncio.Event()
        self._task = loop.create_task(self._run(), name="agentkit-metrics-sender")

    async def _run(self) -> None:
        assert self._wake is not None
        while not self._closing:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._interval)
            self._wake.clear()
            await self._drain()

    def _take(self) -> tuple[list[dict[str, Any]], int]:
        """Up to ``batch_size`` datums (``Values``/``Counts``, ≤ 150 distinct values each) and their sample count."""
        batch: list[dict[str, Any]] = []
        taken = 0
        with self._lock:
            while self._buffer and len(batch) < self._batch_size:
                key = next(iter(self._buffer))
                (name, unit, dims, minute), series = key, self._buffer.pop(key)
                items = list(series.items())
                for i in range(0, len(items), MAX_VALUES_PER_DATUM):
                    chunk = items[i : i + MAX_VALUES_PER_DATUM]
                    batch.append(
                        {
                            "MetricName": name,
                            "Dimensions": [{"Name": k, "Value": v} for k, v in dims],
                            "Timestamp": dt.datetime.fromtimestamp(minute, tz=dt.UTC),
                            "Values": [v for v, _ in chunk],
                            "Counts": [float(c) for _, c in chunk],
                            "Unit": unit,
                        }
                    )
                    taken += sum(c for _, c in chunk)
            self._pending -= taken
        return batch, taken

    async def _drain(self) -> None:
        while True:
            batch, samples = self._take()
            if not batch:
                return
            await asyncio.to_thread(self._send, batch, samples)

    def _send(self, batch: list[dict[str, Any]], samples: int) -> None:
        try:
            self._client.put_metric_data(Namespace=self.namespace, MetricData=batch)
        except Exception as exc:
            self.stats["failed_batches"] += 1
            self.stats["failed_samples"] += samples
            logger.warning("metrics: PutMetricData failed (%d samples dropped): %s", samples, exc)
        else:
            self.stats["sent"] += samples
            self.stats["datums"] += len(batch)

    async def flush(self) -> None:
        """Send everything buffered now (in this loop). Never raises."""
        await self._drain()

    async def close(self) -> None:
        """Stop the sender task and send what is left. Records made afterwards are dropped and counted."""
        self._closing = True
        task = self._task
        if task is not None and not task.done():
            if self._wake is not None and self._loop is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._wake.set)
            if self._loop is asyncio.get_running_loop():
                await asyncio.gather(task, return_exceptions=True)
        await self._drain()
