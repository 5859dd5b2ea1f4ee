"""Cost model: model-id parsing, prices (global vs regional), cache tokens, overrides, unknown models,
and cumulative model_usage on a warm client. Expected figures are computed by hand in the comments."""

from __future__ import annotations

import logging

import pytest

from harness import fake_claude
from runtime.observe.costs import (
    TurnCostTracker,
    compute_turn_cost,
    load_price_table,
    parse_model,
    usage_delta,
)
from runtime.observe.prices import DEFAULT_PRICES

SONNET_US = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
SONNET_GLOBAL = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.mark.parametrize(
    ("model_id", "canonical", "route"),
    [
        (SONNET_US, "claude-sonnet-4-5", "regional"),
        (SONNET_GLOBAL, "claude-sonnet-4-5", "global"),
        ("eu.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5", "regional"),
        ("jp.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5", "regional"),
        ("apac.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4", "regional"),
        ("anthropic.claude-opus-4-1-20250805-v1:0", "claude-opus-4-1", "regional"),
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-opus-4-5-20251101-v1:0",
            "claude-opus-4-5",
            "global",
        ),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5", None),
        ("claude-sonnet-4-5[1m]", "claude-sonnet-4-5", None),
        ("claude-opus-4-20250514", "claude-opus-4", None),
        ("claude-opus-5", "claude-opus-5", None),  # not confused with opus-4-5
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet", None),  # the 3.x naming: version first
        ("us.anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku", "regional"),
        ("my-gateway-model", None, None),
    ],
)
def test_parse_model(model_id: str, canonical: str | None, route: str | None) -> None:
    ref = parse_model(model_id)
    assert (ref.canonical, ref.route) == (canonical, route)


def test_default_table_rates() -> None:
    p = DEFAULT_PRICES.prices
    assert (p["claude-sonnet-4-5"].input, p["claude-sonnet-4-5"].output) == (3.0, 15.0)
    assert (p["claude-haiku-4-5"].input, p["claude-haiku-4-5"].output) == (1.0, 5.0)
    assert (p["claude-opus-4-5"].input, p["claude-opus-4-5"].output) == (5.0, 25.0)
    assert (p["claude-opus-4-1"].input, p["claude-opus-4-1"].output) == (15.0, 75.0)
    opus = p["claude-opus-4-5"]
    assert (opus.cache_write_5m, opus.cache_write_1h, opus.cache_read) == (6.25, 10.0, 0.5)
    assert p["claude-sonnet-4-5"].regional_multiplier == pytest.approx(1.1)
    assert p["claude-opus-4-1"].regional_multiplier == 1.0  # the premium starts with the 4.5 generation
    assert DEFAULT_PRICES.as_of


MU_SONNET = {
    "inputTokens": 1200,
    "outputTokens": 350,
    "cacheReadInputTokens": 20_000,
    "cacheCreationInputTokens": 4000,
    "webSearchRequests": 0,
    "costUSD": 0.01,
    "contextWindow": 200_000,
    "maxOutputTokens": 64_000,
}


def test_model_usage_with_cache_tokens_global_and_regional() -> None:
    # 1200*3 + 350*15 + 20000*0.30 + 4000*3.75 = 3600 + 5250 + 6000 + 15000 = 29850 USD per 1e6 tokens
    glob = compute_turn_cost({SONNET_GLOBAL: MU_SONNET}, None, default_model=SONNET_GLOBAL)
    assert glob.total_cost_usd == pytest.approx(0.029850)
    regional = compute_turn_cost({SONNET_US: MU_SONNET}, None, default_model=SONNET_US)
    assert regional.total_cost_usd == pytest.approx(0.032835)  # +10 %
    mc = regional.per_model[SONNET_US]
    assert (mc.input_tokens, mc.output_tokens, mc.cache_read_tokens, mc.cache_write_tokens) == (
        1200,
        350,
        20_000,
        4000,
    )
    assert mc.reported_cost_usd == 0.01
    assert regional.source == "model_usage" and regional.complete
    assert (regional.input_tokens, regional.cache_read_tokens) == (1200, 20_000)


def test_older_generation_has_no_regional_premium() -> None:
    # Opus 4.1 in-Region: 1000*15 + 100*75 = 22500 → 0.0225
    cost = compute_turn_cost(
        {"anthropic.claude-opus-4-1-20250805-v1:0": {"inputTokens": 1000, "outputTokens": 100}},
        None,
        default_model=SONNET_US,
    )
    assert cost.total_cost_usd == pytest.approx(0.0225)


def test_usage_fallback_prices_one_hour_cache_writes() -> None:
    haiku = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
    usage = {
        "input_tokens": 10,
        "output_tokens": 20,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
    }
    # 10*1 + 20*5 + 1000*0.1 + 1000*1.25 + 2000*2 = 10 + 100 + 100 + 1250 + 4000 = 5460 → 0.00546
    cost = compute_turn_cost(None, usage, default_model=haiku)
    assert cost.source == "usage"
    assert cost.total_cost_usd == pytest.approx(0.00546)
    assert cost.per_model[haiku].cache_write_1h_tokens == 2000


def test_bare_cli_name_takes_the_configured_route() -> None:
    mu = {
        "claude-sonnet-4-5-20250929": {"inputTokens": 1_000_000},
        "claude-haiku-4-5-20251001": {"inputTokens": 1_000_000},
    }
    cost = compute_turn_cost(mu, None, default_model=SONNET_GLOBAL)
    assert cost.per_model["claude-sonnet-4-5-20250929"].route == "global"
    assert cost.per_model["claude-sonnet-4-5-20250929"].cost_usd == pytest.approx(3.0)
    # a different model with no routing info errs high: regional
    assert cost.per_model["claude-haiku-4-5-20251001"].cost_usd == pytest.approx(1.1)
    assert cost.total_cost_usd == pytest.approx(4.1)


def test_unknown_model_is_charged_at_the_cli_figure(caplog: pytest.LogCaptureFixture) -> None:
    # A model the table lacks (a subagent's, a fallback's) costs what the CLI says it cost, never 0.
    mu = {SONNET_US: MU_SONNET, "claude-mystery-9": {"inputTokens": 50, "outputTokens": 5, "costUSD": 0.2}}
    with caplog.at_level(logging.WARNING, logger="runtime.observe.costs"):
        cost = compute_turn_cost(mu, None, default_model=SONNET_US)
    assert cost.unknown_models == ["claude-mystery-9"]
    assert not cost.complete
    assert cost.per_model["claude-mystery-9"].cost_usd == pytest.approx(0.2)
    assert cost.per_model["claude-mystery-9"].priced_by == "cli"
    assert cost.total_cost_usd == pytest.approx(0.032835 + 0.2)
    assert cost.input_tokens == 1250 and cost.output_tokens == 355
    assert "claude-mystery-9" in caplog.text and "AGENTKIT_PRICES" in caplog.text


def test_unknown_model_without_a_cli_figure_is_estimated_at_the_dearest_rates() -> None:
    cost = compute_turn_cost({"claude-mystery-9": {"inputTokens": 1_000_000}}, None, default_model=SONNET_US)
    prices = DEFAULT_PRICES.prices.values()
    dearest = max(p.input for p in prices) * max(p.regional_multiplier for p in prices)  # each at its highest
    assert cost.per_model["claude-mystery-9"].priced_by == "estimate"
    assert cost.total_cost_usd == pytest.approx(dearest) and cost.total_cost_usd > 0


def test_usage_only_on_an_unpriced_model_takes_the_reported_total() -> None:
    usage = {"input_tokens": 100, "output_tokens": 10}
    cost = compute_turn_cost(
        None, usage, default_model="us.anthropic.claude-mystery-9", reported_total=0.0123
    )
    assert cost.total_cost_usd == pytest.approx(0.0123) and cost.unknown_models == [
        "us.anthropic.claude-mystery-9"
    ]


def test_every_model_in_the_catalog_is_priced_from_the_table() -> None:
    from runtime.models import MODELS

    for model in MODELS.values():
        for geography in model.geographies:
            cost = compute_turn_cost(None, {"input_tokens": 1000}, default_model=model.profile(geography))
            assert cost.complete and cost.total_cost_usd > 0, model.profile(geography)


def test_canonical_model_hint_prices_an_application_profile() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5"
    cost = compute_turn_cost(
        {arn: {"inputTokens": 1_000_000, "canonicalModel": "claude-opus-4-5"}}, None, default_model=arn
    )
    assert cost.complete
    assert cost.total_cost_usd == pytest.approx(5.5)  # no route in the id: regional


@pytest.mark.parametrize(
    ("model_usage", "usage"),
    [
        (None, None),
        ({}, {}),
        ({"x": "not a dict"}, None),
        (
            {SONNET_US: {"inputTokens": "many", "outputTokens": -3, "cacheReadInputTokens": float("nan")}},
            None,
        ),
        (None, {"input_tokens": None, "output_tokens": True}),
    ],
)
def test_odd_input_never_crashes(model_usage: object, usage: object) -> None:
    cost = compute_turn_cost(model_usage, usage, default_model=SONNET_US)  # type: ignore[arg-type]
    assert cost.total_cost_usd == 0.0
    assert cost.input_tokens == 0 and cost.output_tokens == 0


def test_overrides_as_json_or_mapping() -> None:
    table = load_price_table(overrides='{"claude-sonnet-4-5": {"input": 2, "output": 10}}')
    p = table.prices["claude-sonnet-4-5"]
    assert (p.input, p.output, p.cache_write_5m, p.cache_write_1h, p.cache_read) == (2, 10, 2.5, 4, 0.2)
    assert p.regional_multiplier == 1.0
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/zz9"
    table = load_price_table(overrides={arn: {"input": 1, "output": 1, "cache_read": 0}})
    mu = {arn: {"inputTokens": 2_000_000, "cacheReadInputTokens": 5}}
    cost = compute_turn_cost(mu, None, default_model=arn, table=table)
    assert cost.total_cost_usd == pytest.approx(2.0)
    assert load_price_table() is DEFAULT_PRICES and load_price_table(overrides="") is DEFAULT_PRICES


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"m": {"input": 1}}', "needs 'output'"),
        ('{"m": {"input": 1, "output": 1, "bogus": 2}}', "unknown fields"),
        ('{"m": {"input": -1, "output": 1}}', "non-negative"),
        ('{"m": 3}', "must be an object"),
    ],
)
def test_bad_overrides_are_clear_errors(raw: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_price_table(overrides=raw)


def test_fake_cli_fixed_usage_matches_hand_computed_cost() -> None:
    # The fake CLI reports 1000 input, 200 output, 300 cache write, 400 cache read per call, priced at the
    # Sonnet global list price: 1000*3 + 200*15 + 300*3.75 + 400*0.3 = 3000+3000+1125+120 = 7245 → 0.007245
    usage = {
        "input_tokens": fake_claude.CALL_INPUT_TOKENS,
        "output_tokens": fake_claude.CALL_OUTPUT_TOKENS,
        "cache_creation_input_tokens": fake_claude.CALL_CACHE_WRITE_TOKENS,
        "cache_read_input_tokens": fake_claude.CALL_CACHE_READ_TOKENS,
    }
    glob = compute_turn_cost(None, usage, default_model=SONNET_GLOBAL)
    assert glob.total_cost_usd == pytest.approx(0.007245)
    assert glob.total_cost_usd == pytest.approx(fake_claude.CALL_COST_USD)
    assert compute_turn_cost(None, usage, default_model=SONNET_US).total_cost_usd == pytest.approx(0.0079695)


def _mu(calls: int) -> dict[str, dict[str, float]]:
    return {SONNET_US: {"inputTokens": 1000 * calls, "outputTokens": 200 * calls, "costUSD": 0.006 * calls}}


def _usage(calls: int) -> dict[str, int]:
    return {"input_tokens": 1000 * calls, "output_tokens": 200 * calls}


def test_usage_delta_subtracts_and_detects_reset() -> None:
    assert usage_delta(_mu(3), _mu(1))[SONNET_US]["inputTokens"] == 2000
    assert usage_delta(_mu(1), _mu(3)) == _mu(1)  # counters went down: a new process
    assert usage_delta(_mu(2), _mu(2)) == {}  # nothing new


def test_tracker_prices_each_turn_of_a_warm_client_once() -> None:
    # 1000*3.3 + 200*16.5 = 6600 per call → 0.0066
    tracker = TurnCostTracker(default_model=SONNET_US)
    first = tracker.price(_mu(1), _usage(1))  # turn 1: 1 call
    second = tracker.price(_mu(3), _usage(2))  # turn 2: 2 calls, model_usage is cumulative (3)
    assert first.total_cost_usd == pytest.approx(0.0066)
    assert second.total_cost_usd == pytest.approx(0.0132)
    assert second.input_tokens == 2000 and second.source == "model_usage"
    fresh = TurnCostTracker(default_model=SONNET_US)  # reconnect: a new process gets a new tracker
    assert fresh.price(_mu(1), _usage(1)).total_cost_usd == pytest.approx(0.0066)


def test_tracker_first_turn_with_restored_history_uses_usage() -> None:
    tracker = TurnCostTracker(default_model=SONNET_US)
    cost = tracker.price(_mu(5), _usage(1))  # model_usage carries 4 calls from before this process
    assert cost.source == "usage"
    assert cost.total_cost_usd == pytest.approx(0.0066)
    assert tracker.price(_mu(6), _usage(1)).total_cost_usd == pytest.approx(0.0066)


def test_tracker_keeps_snapshot_across_a_result_without_model_usage() -> None:
    tracker = TurnCostTracker(default_model=SONNET_US)
    tracker.price(_mu(1), _usage(1))
    assert tracker.price({}, {"input_tokens": 0}).total_cost_usd == 0.0  # e.g. an error before any call
    assert tracker.price(_mu(2), _usage(1)).total_cost_usd == pytest.approx(0.0066)
