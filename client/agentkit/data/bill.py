"""A session's or a day's cost in parts: model tokens + AgentCore Runtime compute + AgentCore Memory.

A part is ``None`` when it was not measured for that row (shown as ``n/a``), which is not the same as 0: a local
run has no AgentCore compute to read, and the CloudWatch metric sink keeps no per-session Memory counts.
Compute and Memory are priced here with :mod:`agentkit.data.prices`; model cost is the runtime's own figure.

Memory from a local run's EMF file: every billed call is one ``MemoryEventsWritten`` / ``MemoryRetrievals``
document carrying the Claude session it served (``ClaudeSessionId``); each turn's main document carries both
that id and the runtime session (``SessionId``), which joins them. Writes no one session owns (none today) are
listed under ``(shared)``.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agentkit.data import names
from agentkit.data.agentcore_usage import Compute
from agentkit.data.emf import Sample
from agentkit.data.prices import AgentCorePrices
from agentkit.data.usage import Period, align

SHARED = "(shared)"
Slot = tuple[dt.datetime, str]


@dataclass(frozen=True)
class Memory:
    """AgentCore Memory usage: short-term events written and long-term retrievals."""

    events: float = 0.0
    retrievals: float = 0.0

    def __add__(self, other: Memory) -> Memory:
        return Memory(self.events + other.events, self.retrievals + other.retrievals)


@dataclass(frozen=True)
class Breakdown:
    """The cost of one key (a session, or ``all``) in the period starting at ``start``, in parts."""

    start: dt.datetime
    key: str
    model_usd: float | None
    compute: Compute | None
    memory: Memory | None
    prices: AgentCorePrices

    @property
    def compute_usd(self) -> float | None:
        if self.compute is None:
            return None
        return self.compute.vcpu_hours * self.prices.vcpu_hour + self.compute.gb_hours * self.prices.gb_hour

    @property
    def memory_usd(self) -> float | None:
        if self.memory is None:
            return None
        return (
            self.memory.events * self.prices.memory_event
            + self.memory.retrievals * self.prices.memory_retrieval
        )

    @property
    def total_usd(self) -> float:
        """The parts that were measured, added."""
        return sum(part for part in (self.model_usd, self.compute_usd, self.memory_usd) if part is not None)

    def as_dict(self) -> dict[str, object]:
        return {
            "start": self.start.isoformat(),
            "key": self.key,
            "model_usd": self.model_usd,
            "compute_usd": self.compute_usd,
            "memory_usd": self.memory_usd,
            "total_usd": self.total_usd,
            "vcpu_hours": self.compute.vcpu_hours if self.compute else None,
            "gb_hours": self.compute.gb_hours if self.compute else None,
            "memory_events": self.memory.events if self.memory else None,
            "memory_retrievals": self.memory.retrievals if self.memory else None,
        }


def combine(
    *,
    model: Mapping[Slot, float] | None,
    compute: Mapping[Slot, Compute] | None,
    memory: Mapping[Slot, Memory] | None,
    prices: AgentCorePrices,
) -> list[Breakdown]:
    """One :class:`Breakdown` per slot any part has, sorted; a part given as None is unmeasured everywhere,
    a slot missing from a given part counts 0 for it."""
    slots: set[Slot] = set()
    for part in (model, compute, memory):
        slots |= set(part or {})
    return sorted(
        (
            Breakdown(
                start=slot[0],
                key=slot[1],
                model_usd=None if model is None else model.get(slot, 0.0),
                compute=None if compute is None else compute.get(slot, Compute()),
                memory=None if memory is None else memory.get(slot, Memory()),
                prices=prices,
            )
            for slot in slots
        ),
        key=lambda b: (b.start, b.key),
    )


def per_period(rows: Iterable[Breakdown], period: Period) -> list[Breakdown]:
    """``rows`` added up per period (key ``all``); a part unmeasured in every row of a period stays None."""
    groups: dict[dt.datetime, list[Breakdown]] = defaultdict(list)
    for row in rows:
        groups[align(row.start, period)].append(row)
    out: list[Breakdown] = []
    for start, group in sorted(groups.items()):
        models = [r.model_usd for r in group if r.model_usd is not None]
        computes = [r.compute for r in group if r.compute is not None]
        memories = [r.memory for r in group if r.memory is not None]
        out.append(
            Breakdown(
                start=start,
                key="all",
                model_usd=sum(models) if models else None,
                compute=sum(computes, Compute()) if computes else None,
                memory=sum(memories, Memory()) if memories else None,
                prices=group[0].prices,
            )
        )
    return out


def memory_by_session(samples: Iterable[Sample], period: Period) -> dict[Slot, Memory]:
    """Memory usage per period and runtime session from a local run's EMF documents (module docstring)."""
    samples = list(samples)
    runtime_session = {
        str(s.properties[names.PROP_CLAUDE_SESSION]): str(s.properties[names.PROP_SESSION])
        for s in samples
        if s.properties.get(names.PROP_CLAUDE_SESSION) and s.properties.get(names.PROP_SESSION)
    }
    out: dict[Slot, Memory] = defaultdict(Memory)
    for s in samples:
        events, retrievals = s.total(names.MEMORY_EVENTS), s.total(names.MEMORY_RETRIEVALS)
        if not events and not retrievals:
            continue
        claude = s.properties.get(names.PROP_CLAUDE_SESSION)
        key = runtime_session.get(str(claude), f"claude:{claude}") if claude else SHARED
        out[(align(s.timestamp, period), key)] += Memory(events, retrievals)
    return dict(out)
