"""-c overrides and the deploy Region: infra.overrides, infra.context, infra.config.resolve_region."""

from __future__ import annotations

import pytest

from infra.config import AppConfig, ConfigError, StageConfig
from infra.context import config_from_context, overrides_from
from infra.overrides import known_keys
from tests.infra.conftest import base_context


def config(extra: dict[str, object] | None = None, environ: dict[str, str] | None = None):
    return config_from_context({**base_context(), **(extra or {})}, environ=environ or {})


def test_flat_dotted_and_stage_overrides_are_typed() -> None:
    c = config(
        {
            "image_build": "codebuild",
            "gateway.enabled": "false",
            "observability.transaction_search": "yes",
            "daily_budget_usd": "25.5",
            "log_retention_days": "30",
            "extra_models": "us.anthropic.claude-haiku-4-5-20251001-v1:0,us.anthropic.claude-sonnet-4-20250514-v1:0",
            "webhook.allowed_author_associations": '["OWNER"]',
            "observability.alarm_email": "ops@example.com",
        }
    )
    assert c.image_build == "codebuild"
    assert c.gateway.enabled is False and c.gateway.authorizer == "iam"  # the rest of gateway kept
    assert c.observability.transaction_search is True
    assert c.settings.daily_budget_usd == 25.5 and c.settings.log_retention_days == 30
    assert c.extra_models == (
        "us.anthropic.claude-haiku-4-5-20251001-v1:0",
        "us.anthropic.claude-sonnet-4-20250514-v1:0",
    )
    assert c.webhook.allowed_author_associations == ("OWNER",)
    assert c.observability.alarm_email == "ops@example.com"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("true", True),
        (" Yes ", True),
        ("on", True),
        ("1", True),
        ("FALSE", False),
        ("no", False),
        ("off", False),
    ],
)
def test_boolean_spellings(text: str, expected: bool) -> None:
    assert config({"gateway.enabled": text}).gateway.enabled is expected


def test_numbers_and_integer_choices() -> None:
    c = config(
        {
            "p99_latency_alarm_ms": "3e4",
            "daily_budget_usd": " 7.5 ",
            "idle_timeout_minutes": "20.0",
            "log_retention_days": "30",
            "webhook.gitlab.min_access_level": "40",
        }
    )
    assert (c.settings.p99_latency_alarm_ms, c.settings.daily_budget_usd) == (30000, 7.5)
    assert (c.settings.idle_timeout_minutes, c.settings.log_retention_days) == (20, 30)
    assert c.webhook.gitlab.min_access_level == 40
    with pytest.raises(ConfigError) as err:
        config({"idle_timeout_minutes": "12.5"})
    assert "fractional part (set by -c idle_timeout_minutes)" in str(err.value)
    with pytest.raises(ConfigError) as err:
        config({"log_retention_days": "31"})
    assert err.value.key == "agentkit.stages.dev.log_retention_days" and err.value.allowed.startswith(
        "1, 3, 5,"
    )
    with pytest.raises(ConfigError) as err:
        config({"daily_budget_usd": "ten"})
    assert err.value.allowed == "a number" and "set by -c daily_budget_usd" in str(err.value)


def test_overrides_win_over_the_stage_overrides() -> None:
    assert config({"stage": "prod"}).memory.customer_managed_key is True  # cdk.json's prod override
    assert (
        config({"stage": "prod", "memory.customer_managed_key": "false"}).memory.customer_managed_key is False
    )


def test_a_json_object_merges_into_the_setting() -> None:
    c = config({"gateway": '{"invoices_tool": false}', "gateway.enabled": "false"})
    assert (c.gateway.enabled, c.gateway.invoices_tool, c.gateway.authorizer) == (False, False, "iam")


def test_null_clears_an_optional_setting() -> None:
    c = config({"observability.alarm_email": "ops@example.com"})
    assert c.observability.alarm_email == "ops@example.com"
    assert config({"observability.alarm_email": "null"}).observability.alarm_email is None


def test_unknown_key_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        config({"image-build": "codebuild"})
    assert err.value.key == "-c image-build"
    assert "is not an agentkit setting" in str(err.value)
    for key in ("image_build", "gateway.enabled", "daily_budget_usd"):
        assert key in err.value.allowed


def test_bad_value_names_the_key_and_the_override() -> None:
    with pytest.raises(ConfigError) as err:
        config({"gateway.enabled": "maybe"})
    assert err.value.key == "agentkit.gateway.enabled"
    assert "set by -c gateway.enabled" in str(err.value)
    assert err.value.allowed == "true or false"


def test_cdk_keys_are_not_overrides() -> None:
    context = {
        "stage": "dev",
        "agentkit": {},
        "@aws-cdk/core:explicitStackTags": True,
        "aws:cdk:enable-path-metadata": True,
        "availability-zones:account=123456789012:region=us-east-1": ["us-east-1a"],
        "acknowledged-issue-numbers": [1],
        "image_build": "codebuild",
    }
    assert overrides_from(context) == {"image_build": "codebuild"}


def test_agentkit_as_json_replaces_the_object_or_says_why_not() -> None:
    full = base_context()["agentkit"]
    import json

    replaced = config({"agentkit": json.dumps({**full, "image_build": "codebuild"})})
    assert replaced.image_build == "codebuild"
    with pytest.raises(ConfigError) as err:
        config({"agentkit": '{"image_build": "codebuild"}'})
    assert "stage settings are missing" in str(err.value) and "-c image_build=codebuild" in str(err.value)
    with pytest.raises(ConfigError, match="is not JSON"):
        config({"agentkit": "{image_build: codebuild}"})
    with pytest.raises(ConfigError, match="-c gateway"):
        config({"gateway": "[1]"})


def test_every_setting_is_reachable() -> None:
    keys = known_keys(AppConfig, StageConfig)
    assert {"image_build", "gateway.enabled", "auth.jwt.discovery_url", "daily_budget_usd", "region"} <= set(
        keys
    )
    assert "stage" not in keys and "settings" not in keys


# --- the deploy Region -----------------------------------------------------------------------------------


@pytest.mark.parametrize("region", ["ca-central-1", "us-east-1", "eu-west-1"])
def test_no_region_table_refuses_a_profile(region: str) -> None:
    """Which source Regions may call a profile is Bedrock's answer (agentkit doctor asks GetInferenceProfile):
    the app keeps no table of its own, which refused valid source Regions such as ca-central-1 for ``us.``."""
    assert config(environ={"CDK_DEFAULT_REGION": region}).deploy_region == region


def test_region_precedence_and_default() -> None:
    environ = {"CDK_DEFAULT_REGION": "us-west-2", "AWS_REGION": "eu-west-1"}
    assert config(environ=environ).deploy_region == "us-west-2"
    c = config({"region": "us-east-2"}, environ=environ)
    assert (c.deploy_region, c.deploy_region_source) == ("us-east-2", "agentkit.region")
    c = config()
    assert (c.deploy_region, c.deploy_region_source) == ("us-east-1", "the default")


def test_global_and_regional_profiles_in_their_geography() -> None:
    c = config(
        {
            "model": "eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "extra_models": "global.anthropic.claude-haiku-4-5-20251001-v1:0",
        },
        environ={"CDK_DEFAULT_REGION": "eu-west-1"},
    )
    assert c.deploy_region == "eu-west-1"


def test_a_mapping_setting_takes_a_json_object() -> None:
    c = config({"marketplace_product_ids": '{"anthropic.claude-opus-9-20300101-v1:0": "prod-abc123"}'})
    assert c.marketplace_product_ids == {"anthropic.claude-opus-9-20300101-v1:0": "prod-abc123"}
    with pytest.raises(ConfigError, match="not an AWS Marketplace product id"):
        config({"marketplace_product_ids": '{"anthropic.claude-opus-9-20300101-v1:0": "nope"}'})
