"""The ``emf`` sink: CloudWatch Embedded Metric Format lines via Powertools (no IAM needed)."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from runtime.observe.metrics.base import (
    BaseMetrics,
    MetricDoc,
)


class EmfMetrics(BaseMetrics):
    """``emf``: one CloudWatch Embedded Metric Format JSON line per document, written by Powertools'
    non-singleton provider (``EphemeralMetrics``) to ``stream`` (default: the current ``sys.stdout``).

    Each line carries the primary dimension set and the ``[Agent]`` roll-up.
    """

    def __init__(
        self,
        *,
        namespace: str,
        agent: str,
        stream: TextIO | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(namespace=namespace, agent=agent, now=now)
        from aws_lambda_powertools.metrics import EphemeralMetrics

        # One non-singleton provider per sink, cleared before each document (guarded by the lock): same
        # output as a fresh EphemeralMetrics per document, without its construction cost.
        self._emf = EphemeralMetrics(namespace=namespace)
        self._emf.service = None  # type: ignore[assignment]  # no implicit "service" dimension from the env
        self._stream = stream
        self._lock = threading.Lock()

    def _serialize_locked(self, doc: MetricDoc) -> dict[str, Any]:
        emf = self._emf
        emf.clear_metrics()
        for dim_name, dim_value in doc.dimensions.items():
            emf.add_dimension(name=dim_name, value=dim_value)
        if set(doc.dimensions) != {"Agent"}:
            emf.add_dimensions(Agent=self.agent)
        for name, unit, value in doc.metrics:
            emf.add_metric(name=name, unit=unit, value=value)
        for key, value in doc.properties.items():
            emf.add_metadata(key=key, value=value)
        emf.set_timestamp(int(doc.timestamp * 1000))
        return dict(emf.serialize_metric_set())

    def _emit(self, doc: MetricDoc) -> None:
        self._emit_all([doc])

    def _emit_all(self, docs: list[MetricDoc]) -> None:
        # one write and one flush per record, however many documents it produced
        stream = self._stream or sys.stdout
        with self._lock:
            text = "".join(
                json.dumps(self._serialize_locked(d), separators=(",", ":"), default=str) + "\n" for d in docs
            )
            stream.write(text)
            stream.flush()
        self.stats["emitted"] += len(docs)
