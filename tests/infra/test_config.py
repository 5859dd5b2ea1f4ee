"""infra.config: typed validation with errors that name the key and the allowed values."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from infra.config import ConfigError, load_config
from tests.infra.conftest import base_context


def raw() -> dict:
    return copy.deepcopy(base_context()["agentkit"])


def test_defaults_load_for_both_stages() -> None:
    dev = load_config(raw(), stage="dev")
    prod = load_config(raw(), stage="prod")
    assert dev.runtime_name == "agentkit_dev"
    assert dev.settings.removal_policy == "destroy" and prod.settings.removal_policy == "retain"
    assert prod.settings.daily_budget_usd > dev.settings.daily_budget_usd
    assert prod.settings.log_retention_days > dev.settings.log_retention_days
    assert prod.memory.customer_managed_key and not dev.memory.customer_managed_key  # stage override


def test_unknown_stage_names_allowed_values() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(raw(), stage="qa")
    assert err.value.key == "stage"
    assert "dev, prod" in str(err.value)


def test_bare_foundation_model_is_rejected_with_key() -> None:
    data = raw()
    data["model"] = "anthropic.claude-sonnet-4-5-20250929-v1:0"
    with pytest.raises(ConfigError) as err:
        load_config(data, stage="dev")
    assert err.value.key == "agentkit.model"
    assert "inference profile" in str(err.value)
    assert "us." in err.value.allowed and "global." in err.value.allowed


def test_extra_models_are_checked_too() -> None:
    data = raw()
    data["extra_models"] = ["us.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-3"]
    with pytest.raises(ConfigError, match=r"agentkit\.extra_models"):
        load_config(data, stage="dev")


@pytest.mark.parametrize("budget", [0, -5])
def test_budget_must_be_positive(budget: float) -> None:
    data = raw()
    data["stages"]["dev"]["daily_budget_usd"] = budget
    with pytest.raises(ConfigError) as err:
        load_config(data, stage="dev")
    assert err.value.key == "agentkit.stages.dev.daily_budget_usd"
    assert "greater than 0" in err.value.allowed


def test_project_name_keeps_runtime_name_valid() -> None:
    data = raw()
    data["project_name"] = "My-Agent"
    with pytest.raises(ConfigError) as err:
        load_config(data, stage="dev")
    assert err.value.key == "agentkit.project_name"


def test_literal_errors_list_choices() -> None:
    data = raw()
    data["image_build"] = "docker"
    with pytest.raises(ConfigError) as err:
        load_config(data, stage="dev")
    assert err.value.key == "agentkit.image_build"
    assert "'local'" in err.value.allowed and "'codebuild'" in err.value.allowed


def test_retention_must_be_a_cloudwatch_value() -> None:
    data = raw()
    data["stages"]["prod"]["log_retention_days"] = 10
    with pytest.raises(ConfigError, match=r"agentkit\.stages\.prod\.log_retention_days"):
        load_config(data, stage="prod")


def test_unknown_key_is_rejected() -> None:
    data = raw()
    data["modle"] = "x"
    with pytest.raises(ConfigError, match=r"agentkit\.modle"):
        load_config(data, stage="dev")


def test_a_misspelt_stage_key_is_named_with_the_key_it_means_and_every_problem() -> None:
    data = raw()
    stage = data["stages"]["dev"]
    stage["daily_budget_usdd"] = stage.pop("daily_budget_usd")
    stage["log_retention_days"] = 13
    with pytest.raises(ConfigError) as caught:
        load_config(data, stage="dev")
    assert (
        caught.value.key == "agentkit.stages.dev.daily_budget_usdd"
    )  # the misspelt key first, not "required"
    message = str(caught.value)
    assert "did you mean 'daily_budget_usd'" in message
    assert "agentkit.stages.dev.log_retention_days" in message  # the other problem is not hidden


def test_jwt_mode_requires_settings() -> None:
    data = raw()
    data["auth"] = {"mode": "jwt"}
    with pytest.raises(ConfigError, match=r"agentkit\.auth"):
        load_config(data, stage="dev")


def test_github_oidc_requires_repository() -> None:
    data = raw()
    data["github_oidc"] = {"enabled": True}
    with pytest.raises(ConfigError, match=r"agentkit\.github_oidc"):
        load_config(data, stage="dev")


def test_github_oidc_uses_the_accounts_provider_by_default() -> None:
    data = raw()
    data["github_oidc"] = {"enabled": True, "repository": "acme/agent"}
    assert load_config(data, stage="dev").github_oidc.create_provider is False


@pytest.mark.parametrize("repository", ["acme/agent", "acme@1234567/agent@89012345"])
def test_github_oidc_accepts_name_and_immutable_repositories(repository: str) -> None:
    data = raw()
    data["github_oidc"] = {"enabled": True, "repository": repository}
    assert load_config(data, stage="dev").github_oidc.repository == repository


@pytest.mark.parametrize("repository", ["acme@*/agent@*", "acme@123/agent", "acme/agent@*"])
def test_github_oidc_refuses_unpinned_immutable_ids(repository: str) -> None:
    data = raw()
    data["github_oidc"] = {"enabled": True, "repository": repository}
    with pytest.raises(ConfigError, match=r"agentkit\.github_oidc\.repository"):
        load_config(data, stage="dev")


def test_missing_stage_settings() -> None:
    data = raw()
    del data["stages"]["prod"]
    with pytest.raises(ConfigError, match=r"agentkit\.stages\.prod"):
        load_config(data, stage="prod")


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (
            lambda d: d.update(
                auth={
                    "mode": "jwt",
                    "jwt": {
                        "discovery_url": "https://idp.example.com/.well-known/openid-configuration",
                        "allowed_clients": ["c"],
                    },
                },
                webhook={"enabled": True},
            ),
            "refuses SigV4 callers",
        ),
        (
            lambda d: d["stages"]["dev"].update(idle_timeout_minutes=180, max_lifetime_hours=2),
            "exceeds max_lifetime",
        ),
    ],
)
def test_inconsistent_settings_are_refused(change, fragment: str) -> None:
    data = raw()
    change(data)
    with pytest.raises(ConfigError) as err:
        load_config(data, stage="dev")
    assert fragment in str(err.value)


def test_eu_profiles_in_an_eu_region_are_accepted() -> None:
    data = raw()
    data.update(
        region="eu-west-1",
        model="eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
        extra_models=["global.anthropic.claude-haiku-4-5-20251001-v1:0"],
    )
    assert load_config(data, stage="dev").region == "eu-west-1"


def test_cdk_json_enables_github_alone_as_the_docs_say() -> None:
    """docs/webhook/setup.md: GitHub is the default tracker; the other trackers' settings are there to fill in."""
    config = load_config(raw(), stage="dev")
    assert config.webhook.trackers == ("github",)
    assert config.webhook.gitlab.min_access_level == 30 and config.webhook.jira.site_url is None
    page = " ".join(
        (Path(__file__).resolve().parents[2] / "docs" / "webhook" / "setup.md").read_text().split()
    )
    assert '`cdk.json` ships `"trackers": ["github"]` (GitHub alone, the default)' in page


def test_enabling_the_webhook_as_shipped_works() -> None:
    """``-c webhook.enabled=true`` on cdk.json as shipped, the first step of docs/webhook/setup.md."""
    config = load_config(raw(), stage="dev", overrides={"webhook.enabled": "true"})
    assert config.webhook.enabled and config.webhook.trackers == ("github",)


def test_jira_without_a_site_offers_both_fixes() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(
            raw(),
            stage="dev",
            overrides={"webhook.enabled": "true", "webhook.trackers": "github,gitlab,jira"},
        )
    message = str(err.value)
    assert "-c webhook.jira.site_url=https://<site>.atlassian.net" in message
    assert "or remove jira from webhook.trackers (-c webhook.trackers=github,gitlab)" in message
    # the fix it offers is accepted as written
    fixed = load_config(
        raw(), stage="dev", overrides={"webhook.enabled": "true", "webhook.trackers": "github,gitlab"}
    )
    assert fixed.webhook.trackers == ("github", "gitlab")


@pytest.mark.parametrize(
    ("webhook", "fragment"),
    [
        ({"enabled": True, "trackers": ["jira"]}, "webhook.jira.site_url"),
        ({"trackers": ["svn"]}, "agentkit.webhook.trackers"),
        ({"trackers": []}, "at least one"),
        ({"trackers": ["gitlab", "gitlab"]}, "at most once"),
        ({"gitlab": {"min_access_level": 25}}, "agentkit.webhook.gitlab.min_access_level"),
        ({"gitlab": {"api_url": "http://gitlab.example.com/api/v4"}}, "agentkit.webhook.gitlab.api_url"),
        ({"jira": {"site_url": "example.atlassian.net"}}, "agentkit.webhook.jira.site_url"),
        ({"jira": {"secret": "x"}}, "agentkit.webhook.jira.secret"),
    ],
)
def test_bad_webhook_tracker_settings_are_refused(webhook: dict, fragment: str) -> None:
    data = raw()
    data["webhook"] = webhook
    with pytest.raises(ConfigError) as err:
        load_config(data, stage="dev")
    assert fragment in str(err.value)


def test_jira_with_a_site_is_accepted_when_enabled() -> None:
    data = raw()
    data["webhook"] = {
        "enabled": True,
        "trackers": ["jira", "gitlab"],
        "jira": {"site_url": "https://acme.atlassian.net"},
    }
    config = load_config(data, stage="dev")
    assert (
        config.webhook.trackers == ("jira", "gitlab")
        and config.webhook.jira.site_url == "https://acme.atlassian.net"
    )


def test_agent_profile_and_sandbox_keys() -> None:
    data = raw()
    assert load_config(data, stage="dev").agent_profile == "readonly"
    data["agent_profile"], data["sandbox"] = "developer", "unsafe-no-isolation"
    cfg = load_config(data, stage="dev")
    assert (cfg.agent_profile, cfg.sandbox) == ("developer", "unsafe-no-isolation")
    data["agent_profile"] = "root"
    with pytest.raises(ConfigError) as err:
        load_config(data, stage="dev")
    assert err.value.key == "agentkit.agent_profile" and "developer" in str(err.value)


def test_allowed_protected_paths_reach_the_runtime_and_the_reporter_per_stage() -> None:
    from infra.stack import runtime_environment
    from infra.webhook.props import WebhookProps, fix_env

    data = raw()
    data["stages"]["prod"]["overrides"]["allow_protected_paths"] = ["executable", "ci_config"]
    dev, prod = load_config(data, stage="dev"), load_config(data, stage="prod")
    assert dev.allow_protected_paths == () and prod.allow_protected_paths == ("ci_config", "executable")
    env = runtime_environment(prod, memory_id="m", gateway_url=None, region="us-east-1")
    assert env["AGENTKIT_WORKSPACE_ALLOW_PROTECTED"] == "ci_config,executable"
    assert "AGENTKIT_WORKSPACE_ALLOW_PROTECTED" not in runtime_environment(
        dev, memory_id="m", gateway_url=None, region="us-east-1"
    )
    assert (
        fix_env(WebhookProps.from_config(prod), ["github"])["PATCH_ALLOW_PROTECTED"] == "ci_config,executable"
    )
    assert fix_env(WebhookProps.from_config(dev), ["github"])["PATCH_ALLOW_PROTECTED"] == ""
    data["allow_protected_paths"] = ["workflows"]
    with pytest.raises(ConfigError) as err:
        load_config(data, stage="dev")
    assert err.value.key == "agentkit.allow_protected_paths" and "ci_config" in str(err.value)


def test_the_two_person_rule_for_approvals_reaches_the_worker_per_stage() -> None:
    from infra.webhook.props import WebhookProps, fix_env
    from webhook.fix.config import fix_settings

    data = raw()
    data["stages"]["dev"].setdefault("overrides", {})["webhook"] = {"approval_two_person": False}
    dev, prod = load_config(data, stage="dev"), load_config(data, stage="prod")
    assert fix_settings(fix_env(WebhookProps.from_config(prod), ["github"])).approval_two_person is True
    assert fix_settings(fix_env(WebhookProps.from_config(dev), ["github"])).approval_two_person is False
    data["webhook"]["approval_two_person"] = "sometimes"
    with pytest.raises(ConfigError):
        load_config(data, stage="prod")
