"""The repository/project allowlists travel from the stack's settings to the receiver's environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.webhook.config import WebhookConfig
from infra.webhook.trackers import GitHubSettings, GitLabSettings, github_env, gitlab_env
from webhook import wiring
from webhook.settings import ENV

ROOT = Path(__file__).resolve().parents[3]


def test_allowlists_become_receiver_variables_the_wiring_reads() -> None:
    github = github_env(GitHubSettings(repository_ids=(42, 7, 42)), receiver=True)
    gitlab = gitlab_env(GitLabSettings(project_ids=(5,)), receiver=True)
    assert github[ENV["github_repository_ids"]] == "7,42" and gitlab[ENV["gitlab_project_ids"]] == "5"
    assert ENV["github_repository_ids"] not in github_env(GitHubSettings(repository_ids=(7,)), receiver=False)
    secrets = {ENV["github_webhook_secret_name"]: "gh", ENV["gitlab_webhook_secret_name"]: "gl"}
    env = {
        ENV["trackers"]: "github,gitlab",
        ENV["gitlab_token_secret_name"]: "t",
        **secrets,
        **github,
        **gitlab,
    }
    built = wiring.build_trackers("receiver", env=env, secrets_client=None)
    assert built["github"].repository_ids == {7, 42} and built["gitlab"].project_ids == {5}  # type: ignore[attr-defined]


@pytest.mark.parametrize("ids", [("owner/repo",), (0,), (True,)])
def test_allowlist_of_names_or_non_positive_ids_is_refused(ids: tuple[object, ...]) -> None:
    with pytest.raises(ValueError, match="numeric ids"):
        github_env(GitHubSettings(repository_ids=ids), receiver=True)  # type: ignore[arg-type]


def test_config_takes_numeric_ids_only() -> None:
    assert WebhookConfig(repository_ids=(123,)).repository_ids == (123,)
    with pytest.raises(ValueError, match="repository_ids"):
        WebhookConfig.model_validate({"repository_ids": ["octo/kit"]})


def test_cdk_json_allowlists_reach_the_receiver_environment() -> None:
    from infra.config import load_config
    from infra.webhook.props import WebhookProps, check

    raw = json.loads((ROOT / "cdk.json").read_text())["context"]["agentkit"]
    raw["webhook"] = {
        **raw["webhook"],
        "enabled": True,
        "trackers": ["github", "gitlab"],
        "repository_ids": [9, 3],
    }
    raw["webhook"]["gitlab"] = {**raw["webhook"]["gitlab"], "project_ids": [5]}
    config = load_config(raw, stage="dev", environ={"CDK_DEFAULT_REGION": "us-east-1"})
    receiver_env = check(WebhookProps.from_config(config)).receiver_env
    assert receiver_env[ENV["github_repository_ids"]] == "3,9"
    assert receiver_env[ENV["gitlab_project_ids"]] == "5"


@pytest.mark.parametrize(
    ("github_ids", "gitlab_ids", "warned"),
    [((), (), {"github", "gitlab"}), ((1,), (), {"gitlab"}), ((1,), (2,), set())],
)
def test_a_tracker_without_pinned_ids_is_a_synth_warning(
    github_ids: tuple[int, ...], gitlab_ids: tuple[int, ...], warned: set[str]
) -> None:
    """An empty allowlist answers nothing (safe), so synth says so instead of a silent, quiet webhook."""
    import aws_cdk as cdk
    from aws_cdk.assertions import Annotations, Match

    from infra.webhook.construct import IssueWebhook
    from infra.webhook.props import WebhookProps

    app = cdk.App()
    stack = cdk.Stack(app, "Hook")
    props = WebhookProps(
        trackers=("github", "gitlab"),
        github=GitHubSettings(repository_ids=github_ids),
        gitlab=GitLabSettings(project_ids=gitlab_ids),
    )
    IssueWebhook(
        stack, "GitHubWebhook", runtime_arn="arn:aws:bedrock-agentcore:us-east-1:1:runtime/r", props=props
    )
    found = {
        tracker
        for tracker in ("github", "gitlab")
        if Annotations.from_stack(stack).find_warning(
            "*", Match.string_like_regexp(f"the {tracker} webhook answers no event")
        )
    }
    assert found == warned
