"""agentkit doctor ``model-lifecycle`` for the kit's default model while its provider retires it: Bedrock's own
state (``GetFoundationModel``'s ``modelLifecycle``) decides ok / warn / fail, the provider's announced retirement
turns an ACTIVE answer into a warning, public extended access is named (the cost figures use list prices), and a
model Bedrock no longer offers fails. botocore's Stubber validates every request and answer against the model."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from agentkit import doctor
from agentkit.doctor.models import PROVIDER_RETIREMENTS
from tests.unit.test_doctor import foundation, stubbed

SONNET_45 = "anthropic.claude-sonnet-4-5-20250929-v1:0"
HAIKU_45 = "anthropic.claude-haiku-4-5-20251001-v1:0"
BEFORE = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
AFTER = dt.datetime(2026, 12, 5, 12, 0, tzinfo=dt.UTC)


def lifecycle(model_id: str, state: dict[str, Any], now: dt.datetime) -> doctor.CheckResult:
    bedrock, stub = stubbed("bedrock")
    stub.add_response("get_foundation_model", foundation(model_id, state), {"modelIdentifier": model_id})
    with stub:
        return doctor.check_lifecycle(bedrock, model_id, now)


def test_the_default_sonnet_is_active_on_bedrock_but_retiring_upstream() -> None:
    before = lifecycle(SONNET_45, {"status": "ACTIVE"}, BEFORE)
    after = lifecycle(SONNET_45, {"status": "ACTIVE"}, AFTER)
    assert before.status == after.status == "warn", (before.line(), after.line())
    assert "ACTIVE; Anthropic retires it on 2026-11-30" in before.detail
    assert (
        "Anthropic retired it on 2026-11-30" in after.detail
    )  # Bedrock still serves it: its dates apply there
    assert "apply on Bedrock" in after.detail and "ACTIVE model" in after.fix


def test_a_model_without_an_announced_retirement_stays_ok() -> None:
    assert HAIKU_45 not in PROVIDER_RETIREMENTS
    assert lifecycle(HAIKU_45, {"status": "ACTIVE"}, AFTER).status == "ok"


def test_public_extended_access_and_a_near_end_of_life_are_named() -> None:
    result = lifecycle(
        SONNET_45,
        {
            "status": "LEGACY",
            "legacyTime": dt.datetime(2026, 6, 1, tzinfo=dt.UTC),
            "publicExtendedAccessTime": dt.datetime(2026, 10, 1, tzinfo=dt.UTC),
            "endOfLifeTime": dt.datetime(2026, 12, 15, tzinfo=dt.UTC),
        },
        BEFORE,
    )
    assert result.status == "warn", result.line()
    for fragment in (
        "LEGACY (legacy since 2026-06-01; extended access (higher price) from 2026-10-01; end of life 2026-12-15)",
        "in public extended access since 2026-10-01: billed above the list prices",
        "end of life in 19 days",
    ):
        assert fragment in result.detail, result.detail


def test_past_bedrocks_end_of_life_is_a_failure() -> None:
    result = lifecycle(
        SONNET_45, {"status": "LEGACY", "endOfLifeTime": dt.datetime(2026, 12, 1, tzinfo=dt.UTC)}, AFTER
    )
    assert (result.status, "end of life was 2026-12-01; calls fail" in result.detail) == ("fail", True)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ResourceNotFoundException", "fail"),
        ("ValidationException", "fail"),
        ("AccessDeniedException", "warn"),
    ],
)
def test_a_model_bedrock_no_longer_offers_fails(code: str, status: str) -> None:
    """Once a model is removed from the catalog, GetFoundationModel no longer answers for it: that is not a
    'cannot tell' (access denied is)."""
    bedrock, stub = stubbed("bedrock")
    stub.add_client_error(
        "get_foundation_model", code, "nope", expected_params={"modelIdentifier": SONNET_45}
    )
    with stub:
        result = doctor.check_lifecycle(bedrock, SONNET_45, AFTER)
    assert result.status == status, result.line()
    if status == "fail":
        assert "does not offer it here" in result.detail and "ACTIVE model" in result.fix
