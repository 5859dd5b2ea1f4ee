"""The ``off`` sink: validates like the others, sends nothing."""

from __future__ import annotations

from typing import Any

from runtime.observe.metrics.base import (
    DEFAULT_NAMESPACE,
    BaseMetrics,
    MetricDoc,
    ToolRecord,
    TurnRecord,
)


class NullMetrics(BaseMetrics):
    """``off``: builds nothing, sends nothing."""

    def __init__(self, *, namespace: str = DEFAULT_NAMESPACE, agent: str = "agentkit") -> None:
        super().__init__(namespace=namespace, agent=agent)

    def record_turn(self, record: TurnRecord) -> None:
        return None

    def record_tool(self, record: ToolRecord) -> None:
        return None

    def record_event(self, name: str, **kwargs: Any) -> None:
        self.event_doc(name, **kwargs)  # same validation as the real sinks, then nothing

    def _emit(self, doc: MetricDoc) -> None:
        return None
