"""The kit's model table against the bundled CLI's own model catalog (read out of the binary the pinned SDK ships):
after an SDK bump, a model the CLI can call on Bedrock that the kit cannot price fails here, naming it."""

from __future__ import annotations

import datetime as dt

import pytest

from harness.cli_catalog import CliCatalog, read_catalog
from runtime.models import DEFAULT_FALLBACK_MODEL, DEFAULT_MODEL, MODELS
from runtime.observe.costs import parse_model, resolve_price
from runtime.observe.prices import DEFAULT_PRICES


@pytest.fixture(scope="module")
def catalog() -> CliCatalog:
    return read_catalog()


def _date(text: str) -> dt.date:
    return dt.datetime.strptime(text, "%B %d, %Y").date()


def test_the_catalog_is_read(catalog: CliCatalog) -> None:
    assert len(catalog.on_bedrock()) >= 15
    assert catalog.models["claude-sonnet-4-5"].bedrock == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def test_every_model_the_cli_calls_on_bedrock_is_in_the_kit_table(catalog: CliCatalog) -> None:
    missing = [
        f"{name} ({m.bedrock})"
        for name, m in catalog.on_bedrock().items()
        if m.bedrock is None
        or parse_model(m.bedrock).canonical not in MODELS
        or resolve_price(m.bedrock, DEFAULT_PRICES) is None
    ]
    assert not missing, f"add to runtime/models/catalog.py (with a price and its source): {missing}"


def test_the_kit_profile_ids_are_the_ones_the_cli_calls(catalog: CliCatalog) -> None:
    for m in catalog.on_bedrock().values():
        assert m.bedrock is not None
        ours = MODELS[str(parse_model(m.bedrock).canonical)]
        assert ours.profile("us") == m.bedrock, ours.name


def test_no_price_is_below_the_cli_own_figure(catalog: CliCatalog) -> None:
    # The CLI's tier is what its own total_cost_usd uses; the kit may err high (a budget then stops early), never low.
    for m in catalog.on_bedrock().values():
        assert m.bedrock is not None
        ours = MODELS[str(parse_model(m.bedrock).canonical)].price
        for rate in ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read"):
            assert getattr(ours, rate) >= m.pricing[rate], (m.name, rate)


def test_retirement_dates_match_the_cli(catalog: CliCatalog) -> None:
    for name, dates in catalog.retirements.items():
        cli_model = catalog.models.get(name)
        if cli_model is None or not cli_model.bedrock:
            continue
        ours = MODELS[str(parse_model(cli_model.bedrock).canonical)]
        if dates.get("firstParty"):
            assert ours.retires == _date(str(dates["firstParty"])), name
        if dates.get("bedrock"):
            assert ours.retires_on_bedrock == _date(str(dates["bedrock"])), name


def test_the_default_is_the_cli_current_sonnet_and_falls_back_as_the_cli_does(catalog: CliCatalog) -> None:
    latest = catalog.models[catalog.aliases_latest("sonnet")]
    assert latest.bedrock == DEFAULT_MODEL
    assert latest.fallback is not None and catalog.models[latest.fallback].bedrock == DEFAULT_FALLBACK_MODEL
