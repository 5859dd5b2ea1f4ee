"""Each synthesized webhook Lambda's environment goes through the Lambdas' own settings model
(:class:`webhook.settings.WebhookSettings`): a variable the code does not declare, a required one the template
lacks, or a value the model refuses fails here, at synth, instead of at the Lambda's first cold start.

The ``optional`` stack has every tracker on and fix jobs on (workspace bucket), so the receiver, the worker and the
reporter each carry their fullest environment.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.webhook.props import WebhookProps, fix_env
from infra.webhook.trackers import GitLabSettings, gitlab_env
from tests.infra.conftest import Synth
from webhook.settings import ENV, LAMBDAS, WebhookSettings

pytestmark = pytest.mark.infra

#: What a CloudFormation reference stands for in a value read here: a name, an ARN or a bucket.
TOKEN = "token"


def resolved(value: Any) -> str:
    """A template value as a string: literals as they are, ``Ref``/``GetAtt`` as :data:`TOKEN`, ``Fn::Join``
    joined (``s3://<bucket>/dev/`` stays a well-formed S3 URI)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(resolved(p) for p in parts)
    if isinstance(value, dict) and ({"Ref", "Fn::GetAtt"} & set(value)):
        return TOKEN
    raise AssertionError(f"unexpected template value {value!r}")


def problems(function: str, env: dict[str, Any]) -> list[str]:
    """What is wrong with ``env`` as the environment of the Lambda ``function`` (empty: nothing)."""
    found = [
        f"{name} is not a variable the webhook code reads" for name in sorted(set(env) - set(ENV.values()))
    ]
    try:
        settings = WebhookSettings.from_env({k: resolved(v) for k, v in env.items()})
    except Exception as exc:  # the model's own error names the variable
        return [*found, f"refused: {exc}"]
    missing = WebhookSettings.required(function, settings.trackers, given=set(env)) - set(env)  # type: ignore[arg-type]
    return found + [f"{name} is required by the {function} and not set" for name in sorted(missing)]


def environments(s: Synth) -> dict[str, dict[str, Any]]:
    """Lambda name (``receiver``, …) → its synthesized environment, for the webhook's functions."""
    out: dict[str, dict[str, Any]] = {}
    for resource in s.raw["Resources"].values():
        props = resource.get("Properties", {})
        handler = str(props.get("Handler", ""))
        if resource["Type"] == "AWS::Lambda::Function" and handler.startswith("webhook."):
            function = handler.split(".")[1]
            assert function not in out, f"two {function} functions"
            out[function] = props["Environment"]["Variables"]
    return out


def test_every_webhook_lambda_is_checked(optional: Synth) -> None:
    assert set(environments(optional)) == set(LAMBDAS)


@pytest.mark.parametrize("function", LAMBDAS)
def test_the_lambda_environment_is_what_the_code_reads(optional: Synth, function: str) -> None:
    env = environments(optional)[function]
    assert problems(function, env) == []
    settings = WebhookSettings.from_env({k: resolved(v) for k, v in env.items()})
    assert settings.trackers == ("github", "gitlab", "jira")


def test_the_check_names_an_unknown_a_missing_and_a_bad_variable(optional: Synth) -> None:
    """The check above is live: a typo, a dropped required variable and a refused value are each reported."""
    env = dict(environments(optional)["worker"])
    env["TRACKER"] = env.pop(ENV["trackers"])  # a typo: the Lambda would serve GitHub only, silently
    del env[ENV["agent_runtime_arn"]]
    assert problems("worker", env) == [
        "TRACKER is not a variable the webhook code reads",
        "AGENT_RUNTIME_ARN is required by the worker and not set",
        "TRACKERS is required by the worker and not set",
    ]
    env = dict(environments(optional)["reporter"], JOB_LEASE_SECONDS="5")
    assert problems("reporter", env) == ["refused: JOB_LEASE_SECONDS='5' must be at least 30"]


def test_the_fix_job_settings_of_cdk_json_reach_the_lambdas(optional: Synth) -> None:
    """``agentkit.webhook`` fix settings (switch, where branches live, hourly caps, GitLab's fix threshold, a Jira
    mapping's allow-list), as the Lambdas read them from their synthesized environments."""
    read = {
        function: WebhookSettings.from_env({k: resolved(v) for k, v in env.items()})
        for function, env in environments(optional).items()
    }
    for function in ("worker", "reporter"):
        s = read[function]
        assert (s.fix_jobs, s.fix_branches) == ("on", "same_repository")
        assert (s.fix_max_per_actor_per_hour, s.fix_max_per_repository_per_hour) == (3, 0)
        target = s.jira_repositories["PROJ"]
        assert target.fix_account_ids == ("5b10ac8d82e05b22cc7d4ef5",) and target.fix_group == "fixers"
    assert read["receiver"].gitlab_fix_min_access_level == 40


def test_the_construct_refuses_fix_settings_the_lambdas_would_refuse() -> None:
    assert fix_env(WebhookProps(fix_jobs=False), ("github",))[ENV["fix_jobs"]] == "off"
    with pytest.raises(ValueError, match="fix_branches"):
        fix_env(WebhookProps(fix_branches="upstream"), ("github",))
    with pytest.raises(ValueError, match="fix_max_per_actor_per_hour"):
        fix_env(WebhookProps(fix_max_per_actor_per_hour=-1), ("github",))
    with pytest.raises(ValueError, match="fix_min_access_level"):
        gitlab_env(GitLabSettings(fix_min_access_level=20), receiver=True)


@pytest.fixture(scope="module")
def read_tokens_env() -> dict[str, dict[str, Any]]:
    """The webhook Lambdas' environments with read tokens on (every tracker, secrets referenced by name)."""
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from infra.webhook.construct import IssueWebhook
    from infra.webhook.props import WebhookProps
    from infra.webhook.trackers import JiraSettings

    stack = cdk.Stack(cdk.App(), "ReadTokens")
    IssueWebhook(
        stack,
        "Webhook",
        runtime_arn="arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/agentkit_rt-AbCdEf1234",
        props=WebhookProps(
            trackers=["github", "gitlab", "jira"],
            read_tokens=True,
            create_secrets=False,
            jira=JiraSettings(site_url="https://example.atlassian.net"),
        ),
    )
    raw = Template.from_stack(stack).to_json()
    return environments(Synth(None, raw, None, stack, None))  # type: ignore[arg-type]


@pytest.mark.parametrize("function", LAMBDAS)
def test_with_read_tokens_the_lambda_environment_is_what_the_code_reads(
    read_tokens_env: dict[str, dict[str, Any]], function: str
) -> None:
    env = read_tokens_env[function]
    assert problems(function, env) == []
    pushing = {ENV["github_token_secret_name"], ENV["gitlab_token_secret_name"]}
    assert bool(pushing & set(env)) == (function == "reporter")
    assert (ENV["gitlab_members_token_secret_name"] in env) == (function == "receiver")


def test_a_reporter_without_the_token_that_pushes_is_reported(
    read_tokens_env: dict[str, dict[str, Any]],
) -> None:
    env = dict(read_tokens_env["reporter"])
    # The read token is there, but the reporter pushes with the token.
    del env[ENV["gitlab_token_secret_name"]]
    assert problems("reporter", env) == [
        f"{ENV['gitlab_token_secret_name']} is required by the reporter and not set"
    ]


def test_read_tokens_in_cdk_json_reach_the_construct() -> None:
    """``agentkit.webhook.read_tokens`` (off by default) is what ``WebhookProps.read_tokens`` is built from."""
    from infra.config import load_config
    from tests.infra.conftest import base_context

    context = base_context()["agentkit"]
    context["webhook"] = {**context["webhook"], "enabled": True}
    assert WebhookProps.from_config(load_config(context, stage="dev")).read_tokens is False
    context["webhook"]["read_tokens"] = True
    assert WebhookProps.from_config(load_config(context, stage="dev")).read_tokens is True
