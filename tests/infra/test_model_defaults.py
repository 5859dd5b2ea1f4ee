"""The default models are written in four places (the CDK config model, cdk.json, the runtime's settings and the
doctor's copy); each default must also have an AWS Marketplace product id (else the runtime role cannot subscribe
to it on the first call in a fresh account: infra/model_access.py) and a price (else the cost figures leave it
out: runtime/observe/costs.py). Moving a default in one place only, or to a model without a cited product id or
price, fails here."""

from __future__ import annotations

import sys

import pytest

from infra.config import AppConfig, inference_profile_parts
from infra.model_access import MARKETPLACE_PRODUCT_IDS
from runtime.models import DEFAULT_FALLBACK_MODEL, DEFAULT_MODEL, DEFAULT_SMALL_MODEL, MODELS
from runtime.observe.costs import parse_model
from runtime.observe.prices import DEFAULT_PRICES
from tests.infra.conftest import ROOT, base_context

if str(ROOT / "client") not in sys.path:
    sys.path.insert(0, str(ROOT / "client"))

from agentkit.doctor import core as doctor_core

pytestmark = pytest.mark.infra


def config_defaults() -> tuple[str, tuple[str, ...]]:
    fields = AppConfig.model_fields
    return str(fields["model"].default), (*fields["extra_models"].default, fields["fallback_model"].default)


def test_every_copy_of_the_defaults_agrees() -> None:
    model, extra = config_defaults()
    context = base_context()["agentkit"]
    assert (context["model"], (*context["extra_models"], context["fallback_model"])) == (model, extra)
    assert (model, extra) == (
        doctor_core.DEFAULT_MODEL,
        (*doctor_core.DEFAULT_EXTRA_MODELS, doctor_core.DEFAULT_FALLBACK_MODEL),
    )
    # The runtime's own defaults (a local run without cdk.json): the main model, the CLI's small/fast slot and the
    # fallback.
    assert (model, extra[0], extra[-1]) == (DEFAULT_MODEL, DEFAULT_SMALL_MODEL, DEFAULT_FALLBACK_MODEL)


@pytest.mark.parametrize("profile", [*config_defaults()[1], config_defaults()[0]])
def test_each_default_has_a_price_and_a_product_id_or_says_it_has_none(profile: str) -> None:
    """A price always. A product id where a source gives one; the current models' ids are not published in a source
    the kit could read, so such a default must be named in docs/configuration.md's list of unconfirmed facts (the
    synth warns about it too: infra/runtime.py)."""
    _, foundation_model = inference_profile_parts(profile)
    canonical = parse_model(profile).canonical
    assert canonical in DEFAULT_PRICES.prices, f"{profile}: no price in runtime/models/catalog.py"
    if foundation_model not in MARKETPLACE_PRODUCT_IDS:
        model = MODELS[str(canonical)]
        assert model.product_id is None
        docs = (ROOT / "docs" / "configuration.md").read_text()
        assert f"`{foundation_model}`" in docs.split("## Models", 1)[1], (
            f"{foundation_model}: not named in docs"
        )


def test_a_listed_model_gets_subscribe_under_its_product_id() -> None:
    """A model of the built-in table needs no ``marketplace_product_ids`` entry (Opus 4.6: its Bedrock model card)."""
    from infra.model_access import product_ids

    found, missing = product_ids(["global.anthropic.claude-opus-4-6-v1", "us.anthropic.claude-opus-9-9-v1"])
    assert (found, missing) == (["prod-5ukwuglpt66kg"], ["anthropic.claude-opus-9-9-v1"])
