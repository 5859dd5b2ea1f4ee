"""Cost and token rows per period and key (model, session or actor), from EMF documents.

``by="model"`` uses every document's ``CostUSD`` and token metrics under its ``Model`` dimension.
``by="session"`` / ``by="actor"`` use the turn's ``TurnCostUSD`` property (all models of the turn) and the
``SessionId`` / ``Caller`` properties, which the runtime puts on one document per turn; the token metrics of
the turn's other documents (a second model) are attributed to it when they carry the same timestamp (the
runtime writes a turn's documents with one timestamp) and no other turn shares it.

Percentiles use the nearest-rank method: the value at rank ``ceil(p/100 * n)`` of the sorted samples.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from agentkit.data import names
from agentkit.data.emf import Sample

Period = Literal["day", "hour"]
By = Literal["model", "session", "actor"]
ANONYMOUS = "(anonymous)"


@dataclass(frozen=True, order=True)
class CostRow:
    """Cost and tokens of one key (model, session or actor) in one period starting at ``start`` (UTC)."""

    start: dt.datetime
    key: str
    cost_usd: float
    tokens: dict[str, float] = field(
        default_factory=dict, compare=False
    )  # input/output/cache_read/cache_write

    def as_dict(self) -> dict[str, object]:
        return {
            "start": self.start.isoformat(),
            "key": self.key,
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
        }


def utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def align(value: dt.datetime, period: Period) -> dt.datetime:
    """The start of the period holding ``value`` (UTC)."""
    value = utc(value).replace(minute=0, second=0, microsecond=0)
    return value.replace(hour=0) if period == "day" else value


def empty_tokens() -> dict[str, float]:
    return dict.fromkeys(names.TOKEN_TYPES.values(), 0.0)


def for_agent(samples: Iterable[Sample], agent: str | None) -> list[Sample]:
    """The documents of one agent (all when ``agent`` is None)."""
    return [s for s in samples if agent is None or s.dimensions.get(names.AGENT) == agent]


def cost_rows(
    samples: Sequence[Sample],
    *,
    by: By = "model",
    period: Period = "day",
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
) -> list[CostRow]:
    """Cost and tokens per period and key, sorted by period then key; documents outside
    ``[start, end)`` are left out."""
    lo = align(start, period) if start else None
    hi = utc(end) if end else None
    chosen = [s for s in samples if (lo is None or s.timestamp >= lo) and (hi is None or s.timestamp < hi)]
    cost: dict[tuple[dt.datetime, str], float] = defaultdict(float)
    tokens: dict[tuple[dt.datetime, str], dict[str, float]] = defaultdict(empty_tokens)
    if by == "model":
        for s in chosen:
            model = s.dimensions.get(names.MODEL)
            if model is None:
                continue
            slot = (align(s.timestamp, period), model)
            cost[slot] += s.total(names.COST)
            _add_tokens(tokens[slot], s)
    else:
        prop = names.PROP_SESSION if by == "session" else names.PROP_CALLER
        for owner, group in _turns(chosen):
            key = str(owner.properties.get(prop) or (ANONYMOUS if by == "actor" else "(unknown)"))
            slot = (align(owner.timestamp, period), key)
            cost[slot] += float(owner.properties.get(names.PROP_TURN_COST) or 0.0)
            for s in group:
                _add_tokens(tokens[slot], s)
    return sorted(CostRow(start=k[0], key=k[1], cost_usd=v, tokens=dict(tokens[k])) for k, v in cost.items())


def _add_tokens(into: dict[str, float], sample: Sample) -> None:
    for metric, short in names.TOKEN_TYPES.items():
        into[short] += sample.total(metric)


def _turns(samples: Sequence[Sample]) -> list[tuple[Sample, list[Sample]]]:
    """Each turn's main document (the one with ``TurnCostUSD``) and the turn documents it owns."""
    by_time: dict[dt.datetime, list[Sample]] = defaultdict(list)
    for s in samples:
        if names.MODEL in s.dimensions:
            by_time[s.timestamp].append(s)
    turns: list[tuple[Sample, list[Sample]]] = []
    for group in by_time.values():
        owners = [s for s in group if names.PROP_TURN_COST in s.properties]
        if len(owners) == 1:
            turns.append((owners[0], group))
        else:
            turns += [(o, [o]) for o in owners]
    return turns


def turns(samples: Sequence[Sample]) -> list[tuple[Sample, list[Sample]]]:
    """Each turn's main document (the one with ``TurnCostUSD``, which carries the session, the latency and the
    time to first token) and every document of that turn (one per model it used), in time order."""
    return sorted(_turns(samples), key=lambda turn: turn[0].timestamp)


def error_counts(samples: Iterable[Sample]) -> dict[str, float]:
    """``InvocationErrors`` per ``ErrorCode``, most frequent first."""
    counts: dict[str, float] = defaultdict(float)
    for s in samples:
        code = s.dimensions.get(names.ERROR_CODE)
        if code is not None and names.INVOCATION_ERRORS in s.metrics:
            counts[code] += s.total(names.INVOCATION_ERRORS)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile (``p`` in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def metric_values(samples: Iterable[Sample], metric: str) -> list[float]:
    """Every value of ``metric`` across documents (latency and TTFT samples)."""
    return [v for s in samples for v in s.metrics.get(metric, ())]


def tool_stats(samples: Iterable[Sample]) -> dict[str, dict[str, float]]:
    """Per tool: ``calls``, ``errors``, ``denied``, sorted by calls (descending) then name."""
    stats: dict[str, dict[str, float]] = defaultdict(lambda: {"calls": 0.0, "errors": 0.0, "denied": 0.0})
    for s in samples:
        tool = s.dimensions.get(names.TOOL)
        if tool is None:
            continue
        stats[tool]["calls"] += s.total(names.TOOL_CALLS)
        stats[tool]["errors"] += s.total(names.TOOL_ERRORS)
        stats[tool]["denied"] += s.total(names.TOOL_DENIED)
    return dict(sorted(stats.items(), key=lambda kv: (-kv[1]["calls"], kv[0])))


def totals(rows: Iterable[CostRow]) -> tuple[float, dict[str, float]]:
    """Total cost and tokens by type over ``rows``."""
    cost, tokens = 0.0, empty_tokens()
    for row in rows:
        cost += row.cost_usd
        for k, v in row.tokens.items():
            tokens[k] = tokens.get(k, 0.0) + v
    return cost, tokens


def cache_hit_rate(tokens: dict[str, float]) -> float | None:
    """Share of input tokens read from the prompt cache: cache_read / (input + cache_read + cache_write)."""
    denominator = tokens.get("input", 0.0) + tokens.get("cache_read", 0.0) + tokens.get("cache_write", 0.0)
    return tokens.get("cache_read", 0.0) / denominator if denominator else None
