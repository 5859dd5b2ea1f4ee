"""Per-turn cost of a Claude turn on Amazon Bedrock, computed from token usage and a dated price table.

Why not the SDK's ``ResultMessage.total_cost_usd``? It is the CLI's own estimate and is known to
underreport on Bedrock when prompt-cache tokens are involved, and it ignores the regional-profile premium.
This module prices the result's per-model ``model_usage`` (falling back to ``usage``) with
:data:`DEFAULT_PRICES` (the kit's price table, :mod:`runtime.observe.prices`); the SDK figure is kept beside it as a second number by the caller.

Shapes priced (claude-agent-sdk 0.2.190, ``claude_agent_sdk/types.py``):

* ``ResultMessage.model_usage``: ``{model_id: {"inputTokens", "outputTokens", "cacheReadInputTokens",
  "cacheCreationInputTokens", "webSearchRequests", "costUSD", "contextWindow", "maxOutputTokens",
  "canonicalModel"?, "provider"?}}`` (camelCase, passed through verbatim from the CLI). Keys are the
  model strings the CLI called, e.g. ``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` or
  ``claude-sonnet-4-5-20250929``.
* ``ResultMessage.usage``: the Anthropic API usage block, snake_case: ``input_tokens``, ``output_tokens``,
  ``cache_read_input_tokens``, ``cache_creation_input_tokens`` and optionally
  ``cache_creation: {"ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"}``.

``InputTokens`` everywhere means *uncached* input tokens (the API's ``input_tokens``); cache reads and writes
are counted separately.

Environment variables: none read here; ``AGENTKIT_PRICES`` (JSON price overrides) reaches
:func:`load_price_table` through :class:`runtime.config.settings.Settings`.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from runtime.env import ENV_PRICES
from runtime.models import ModelPrice
from runtime.observe.prices import (
    DEFAULT_PRICES,
    PRICES_AS_OF,
    PriceTable,
)

__all__ = [
    "TurnCost",
    "TurnCostTracker",
    "compute_turn_cost",
    "load_price_table",
]

logger = logging.getLogger(__name__)

Route = Literal["global", "regional"]

GLOBAL_PREFIX = "global"
# The first segment of a cross-Region inference profile id (``us.``, ``eu.``, ``apac.``, ``jp.``, ``au.``,
# ``us-gov.`` ...): anything other than ``global.`` is a geographic profile and gets the regional price.

_FIELDS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read", "regional_multiplier")


# --- Model id parsing -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ModelRef:
    """A model string taken apart: ``canonical`` is ``claude-<family>-<major>[-<minor>]`` or None."""

    raw: str
    canonical: str | None
    route: Route | None  # None: the string does not say (bare CLI name)


_FAMILIES = "opus|sonnet|haiku|fable|mythos"
_FAMILY_RE = re.compile(rf"claude-({_FAMILIES})-(\d+)(?:-(\d{{1,2}}))?(?=$|[-@:\[])")
# The 3.x generation put the version first: claude-3-5-haiku-20241022, claude-3-7-sonnet-20250219.
_OLD_FAMILY_RE = re.compile(rf"claude-(\d)(?:-(\d))?-({_FAMILIES})(?=$|[-@:\[])")


def parse_model(model_id: str) -> ModelRef:
    """Parse a Bedrock inference profile id, ARN, foundation-model id or CLI model name.

    ``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` → (claude-sonnet-4-5, regional);
    ``global.anthropic.claude-haiku-4-5-20251001-v1:0`` → (claude-haiku-4-5, global);
    ``anthropic.claude-opus-4-1-20250805-v1:0`` (in-Region on-demand) → regional;
    ``claude-sonnet-4-5-20250929`` / ``claude-sonnet-4-5[1m]`` → route unknown.
    """
    raw = model_id
    text = model_id.strip().lower()
    if text.startswith("arn:"):
        text = text.rsplit("/", 1)[-1]
    route: Route | None = None
    head, sep, rest = text.partition(".")
    if sep and rest.startswith("anthropic."):
        route, text = ("global" if head == GLOBAL_PREFIX else "regional"), rest
    if text.startswith("anthropic."):
        text = text[len("anthropic.") :]
        route = route or "regional"  # a bare foundation-model id is served in-Region
    old = _OLD_FAMILY_RE.search(text)
    if old is not None:
        major, minor, family = old.groups()
        version = f"{major}-{minor}" if minor else major
        return ModelRef(raw=raw, canonical=f"claude-{version}-{family}", route=route)
    match = _FAMILY_RE.search(text)
    if match is None:
        return ModelRef(raw=raw, canonical=None, route=route)
    family, major, minor = match.groups()
    canonical = f"claude-{family}-{major}" + (f"-{minor}" if minor else "")
    return ModelRef(raw=raw, canonical=canonical, route=route)


def resolve_price(
    model_id: str, table: PriceTable, *, canonical_hint: str | None = None
) -> ModelPrice | None:
    """The price of ``model_id``: an exact override key first, then its canonical name, then
    ``canonical_hint`` (the CLI's ``canonicalModel``). None when unknown."""
    if model_id in table.prices:
        return table.prices[model_id]
    ref = parse_model(model_id)
    for key in (ref.canonical, parse_model(canonical_hint).canonical if canonical_hint else None):
        if key and key in table.prices:
            return table.prices[key]
    return None


# --- Overrides ------------------------------------------------------------------------------------
def _parse_price(key: str, spec: Any) -> ModelPrice:
    if not isinstance(spec, Mapping):
        raise ValueError(f"price override for {key!r} must be an object, got {type(spec).__name__}")
    unknown = set(spec) - set(_FIELDS)
    if unknown:
        raise ValueError(
            f"price override for {key!r} has unknown fields {sorted(unknown)}; allowed: {_FIELDS}"
        )
    for name in ("input", "output"):
        if name not in spec:
            raise ValueError(f"price override for {key!r} needs {name!r} (USD per million tokens)")
    values: dict[str, float] = {}
    for name, value in spec.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            raise ValueError(f"price override {key!r}.{name} must be a non-negative number, got {value!r}")
        values[name] = float(value)
    base = ModelPrice.from_base(
        values["input"], values["output"], regional_multiplier=values.get("regional_multiplier", 1.0)
    )
    return replace(base, **{k: v for k, v in values.items() if k not in ("input", "output")})


def load_price_table(
    *, overrides: Mapping[str, Any] | str | None = None, base: PriceTable = DEFAULT_PRICES
) -> PriceTable:
    """The default table with ``overrides`` applied (``Settings.prices``, from ``AGENTKIT_PRICES``).

    Overrides are a JSON object (or mapping) ``{key: {"input": 3, "output": 15, "cache_write_5m"?: ...,
    "cache_write_1h"?: ..., "cache_read"?: ..., "regional_multiplier"?: 1.1}}``. A key is a canonical name
    (``claude-sonnet-4-5``) or an exact model id / application-inference-profile ARN as the CLI reports it.
    Missing cache rates are derived from ``input``; ``regional_multiplier`` defaults to 1.0.

    Raises:
        ValueError: the JSON is malformed, a field is unknown, or a rate is negative / not a number.
    """
    if not overrides:
        return base
    if isinstance(overrides, str):
        try:
            overrides = json.loads(overrides)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{ENV_PRICES} is not valid JSON: {exc}") from exc
        if not isinstance(overrides, Mapping):
            raise ValueError(f"{ENV_PRICES} must be a JSON object keyed by model")
    prices = dict(base.prices)
    for key, spec in overrides.items():
        prices[str(key)] = _parse_price(str(key), spec)
    return replace(base, prices=prices, as_of=f"{base.as_of} + overrides")


# --- Cost computation -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ModelCost:
    """Tokens and cost of one model within a turn. ``cost_usd`` is None when the model is not in the table."""

    model: str
    canonical: str | None
    route: Route | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int  # all cache writes, both TTLs
    cache_write_1h_tokens: int  # the 1-hour-TTL share of cache_write_tokens
    cost_usd: float | None
    reported_cost_usd: float | None  # the CLI's own costUSD for this model, if it gave one
    # How cost_usd was found: the kit's table; the CLI's own figure (a model the table lacks); or, with neither, an
    # estimate at the dearest rates in the table. Spend that happened is never counted as 0.
    priced_by: Literal["table", "cli", "estimate", "none"] = "table"


@dataclass(frozen=True, slots=True)
class TurnCost:
    """The priced usage of one turn. ``total_cost_usd`` covers every model: one missing from the table
    (``unknown_models``) is charged at the CLI's own figure, or estimated at the table's dearest rates."""

    per_model: dict[str, ModelCost] = field(default_factory=dict)
    total_cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    unknown_models: list[str] = field(default_factory=list)
    source: Literal["model_usage", "usage", "none"] = "none"
    prices_as_of: str = PRICES_AS_OF

    @property
    def complete(self) -> bool:
        """True when every model used was priced from the kit's table."""
        return not self.unknown_models


def _count(entry: Mapping[str, Any], *keys: str) -> int:
    for key in keys:
        value = entry.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float) and math.isfinite(value) and value >= 0:
            return int(value)
        if value is not None:
            logger.warning("ignoring non-numeric usage field %s=%r", key, value)
    return 0


def dearest_price(table: PriceTable) -> ModelPrice | None:
    """The highest rate of each token class over the table (and its highest regional multiplier): what a model the
    table lacks is charged when the CLI gave no figure for it either. None for an empty table."""
    prices = list(table.prices.values())
    if not prices:
        return None
    return ModelPrice(
        **{name: max(getattr(p, name) for p in prices) for name in _FIELDS}  # type: ignore[arg-type]
    )


def _route_for(ref: ModelRef, default_ref: ModelRef) -> Route:
    if ref.route is not None:
        return ref.route
    # A bare CLI name says nothing about routing: assume the configured profile's route when it is the same
    # model, otherwise the (dearer) regional route so the figure errs high rather than low.
    if default_ref.canonical == ref.canonical and default_ref.route is not None:
        return default_ref.route
    return "regional"


def _price_model(
    model: str,
    *,
    tokens: tuple[int, int, int, int, int],
    reported: float | None,
    canonical_hint: str | None,
    default_ref: ModelRef,
    table: PriceTable,
) -> ModelCost:
    """Price one model's tokens: the table's rate; else the CLI's own ``costUSD``; else the dearest rate in the
    table (so an unpriced model never reads as free)."""
    input_t, output_t, read_t, write_t, write_1h_t = tokens
    ref = parse_model(model)
    if ref.canonical is None and canonical_hint:
        ref = ModelRef(raw=model, canonical=parse_model(canonical_hint).canonical, route=ref.route)
    route = _route_for(ref, default_ref)
    price = resolve_price(model, table, canonical_hint=canonical_hint)
    priced_by: Literal["table", "cli", "estimate", "none"] = "table"
    if price is None and reported is not None and math.isfinite(reported) and reported >= 0:
        price, priced_by = None, "cli"
    elif price is None:
        price, priced_by, route = dearest_price(table), "estimate", "regional"
    cost: float | None = reported if priced_by == "cli" else None
    if price is not None:
        multiplier = price.regional_multiplier if route == "regional" else 1.0
        usd_per_mtok = (
            input_t * price.input
            + output_t * price.output
            + read_t * price.cache_read
            + (write_t - write_1h_t) * price.cache_write_5m
            + write_1h_t * price.cache_write_1h
        )
        cost = usd_per_mtok * multiplier / 1_000_000
    return ModelCost(
        model=model,
        canonical=ref.canonical,
        route=route,
        input_tokens=input_t,
        output_tokens=output_t,
        cache_read_tokens=read_t,
        cache_write_tokens=write_t,
        cache_write_1h_tokens=write_1h_t,
        cost_usd=cost,
        reported_cost_usd=reported,
        priced_by=priced_by if price is not None or cost is not None else "none",
    )


def _one_hour_writes(usage: Mapping[str, Any] | None) -> int:
    if not usage or not isinstance(usage.get("cache_creation"), Mapping):
        return 0
    return _count(usage["cache_creation"], "ephemeral_1h_input_tokens")


def compute_turn_cost(
    model_usage: Mapping[str, Any] | None,
    usage: Mapping[str, Any] | None,
    *,
    default_model: str,
    table: PriceTable = DEFAULT_PRICES,
    reported_total: float | None = None,
) -> TurnCost:
    """Price one turn from ``ResultMessage.model_usage`` (preferred) or ``ResultMessage.usage``.

    ``usage`` is attributed to ``default_model`` (the configured inference profile) when ``model_usage`` is
    empty. Cache writes are priced at the 5-minute rate unless ``usage.cache_creation`` splits out 1-hour
    writes and only one model was used. A model missing from ``table`` is listed in ``unknown_models``, logged
    as a warning, and charged at the CLI's own figure: its ``costUSD`` in ``model_usage``, or ``reported_total``
    (the turn's part of the result's ``total_cost_usd``) when ``usage`` is all there is; with neither, at the
    table's dearest rates. Never raises on odd input: bad fields count as 0.

    ``model_usage`` must cover this turn only: the CLI accumulates it over its process, so on a warm client
    use :class:`TurnCostTracker` (or pass ``usage_delta(current, previous)``).
    """
    default_ref = parse_model(default_model)
    per_model: dict[str, ModelCost] = {}
    source: Literal["model_usage", "usage", "none"] = "none"
    if isinstance(model_usage, Mapping) and model_usage:
        source = "model_usage"
        entries = [(str(k), v) for k, v in model_usage.items() if isinstance(v, Mapping)]
        split_1h = _one_hour_writes(usage) if len(entries) == 1 else 0
        for model, entry in entries:
            write_t = _count(entry, "cacheCreationInputTokens", "cache_creation_input_tokens")
            reported = entry.get("costUSD")
            per_model[model] = _price_model(
                model,
                tokens=(
                    _count(entry, "inputTokens", "input_tokens"),
                    _count(entry, "outputTokens", "output_tokens"),
                    _count(entry, "cacheReadInputTokens", "cache_read_input_tokens"),
                    write_t,
                    min(split_1h, write_t),
                ),
                reported=float(reported) if isinstance(reported, int | float) else None,
                canonical_hint=entry.get("canonicalModel")
                if isinstance(entry.get("canonicalModel"), str)
                else None,
                default_ref=default_ref,
                table=table,
            )
    elif isinstance(usage, Mapping) and usage:
        source = "usage"
        write_t = _count(usage, "cache_creation_input_tokens")
        per_model[default_model] = _price_model(
            default_model,
            tokens=(
                _count(usage, "input_tokens"),
                _count(usage, "output_tokens"),
                _count(usage, "cache_read_input_tokens"),
                write_t,
                min(_one_hour_writes(usage), write_t),
            ),
            reported=reported_total,
            canonical_hint=None,
            default_ref=default_ref,
            table=table,
        )
    unknown = [m for m, c in per_model.items() if c.priced_by != "table"]
    if unknown:
        logger.warning(
            "no price for model(s) %s in the kit's table: charged at %s; add them to %s",
            ", ".join(unknown),
            ", ".join(sorted({c.priced_by for m, c in per_model.items() if m in unknown})),
            ENV_PRICES,
        )
    costs = per_model.values()
    return TurnCost(
        per_model=per_model,
        total_cost_usd=sum(c.cost_usd for c in costs if c.cost_usd is not None),
        input_tokens=sum(c.input_tokens for c in costs),
        output_tokens=sum(c.output_tokens for c in costs),
        cache_read_tokens=sum(c.cache_read_tokens for c in costs),
        cache_write_tokens=sum(c.cache_write_tokens for c in costs),
        unknown_models=unknown,
        source=source,
        prices_as_of=table.as_of,
    )


# --- Cumulative model_usage on a warm client -------------------------------------------------------
# The CLI reports ``usage`` for the turn but ``modelUsage`` / ``total_cost_usd`` accumulated over the CLI
# process (the fake CLI in harness/ mirrors this). On a warm ClaudeSDKClient, turn N's model_usage
# includes turns 1..N-1, so pricing it directly overcounts. TurnCostTracker prices the difference.
_COUNTERS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens", "costUSD")


def usage_delta(current: Mapping[str, Any], previous: Mapping[str, Any] | None) -> dict[str, Any]:
    """``current`` minus ``previous``, per model and counter. A counter that went down means the CLI process
    was replaced: ``current`` is returned unchanged. Models with no new usage are dropped."""
    if not previous:
        return {k: dict(v) for k, v in current.items() if isinstance(v, Mapping)}
    delta: dict[str, Any] = {}
    for model, entry in current.items():
        if not isinstance(entry, Mapping):
            continue
        before = previous.get(model)
        before = before if isinstance(before, Mapping) else {}
        diff = dict(entry)
        for key in _COUNTERS:
            now, then = entry.get(key), before.get(key, 0)
            if isinstance(now, int | float) and isinstance(then, int | float):
                if now < then:
                    return {k: dict(v) for k, v in current.items() if isinstance(v, Mapping)}
                diff[key] = now - then
        if any(diff.get(k) for k in _COUNTERS):
            delta[model] = diff
    return delta


_TOKEN_KEYS_CAMEL = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")
_TOKEN_KEYS_SNAKE = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _token_sum(entry: Mapping[str, Any], keys: tuple[str, ...]) -> int:
    return sum(_count(entry, k) for k in keys)


class TurnCostTracker:
    """Prices successive results of one CLI process (one warm client): keeps the last cumulative
    ``model_usage`` and prices each turn's increase. A new CLI process gets a new tracker.

    On the first result of a process, ``model_usage`` may already hold earlier usage (a CLI that restored
    its cost state on ``--resume``): when its token total exceeds the turn's ``usage``, the turn is priced
    from ``usage`` instead.
    """

    def __init__(self, *, default_model: str, table: PriceTable = DEFAULT_PRICES) -> None:
        self.default_model = default_model
        self.table = table
        self._last: dict[str, Any] | None = None

    def price(
        self,
        model_usage: Mapping[str, Any] | None,
        usage: Mapping[str, Any] | None,
        *,
        reported_total: float | None = None,
    ) -> TurnCost:
        """The cost of the turn that produced this result (``reported_total``: this turn's part of the CLI's
        ``total_cost_usd``, charged for an unpriced model when only ``usage`` is there). Never raises."""
        current = {str(k): v for k, v in model_usage.items()} if isinstance(model_usage, Mapping) else {}
        previous = self._last
        if current:
            self._last = current
        delta = usage_delta(current, previous)
        if previous is None and delta and isinstance(usage, Mapping) and usage:
            mu_tokens = sum(_token_sum(e, _TOKEN_KEYS_CAMEL) for e in delta.values())
            turn_tokens = _token_sum(usage, _TOKEN_KEYS_SNAKE)
            if mu_tokens > turn_tokens > 0:
                return compute_turn_cost(
                    None,
                    usage,
                    default_model=self.default_model,
                    table=self.table,
                    reported_total=reported_total,
                )
        return compute_turn_cost(
            delta, usage, default_model=self.default_model, table=self.table, reported_total=reported_total
        )
