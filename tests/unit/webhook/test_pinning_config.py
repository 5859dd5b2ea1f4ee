"""The repository/project allowlists travel from the stack's settings to the receiver's environment."""

from __future__ import annotations

import pytest
import wiring

from infra.config import WebhookConfig
from infra.webhook_trackers import GitHubSettings, GitLabSettings, github_env, gitlab_env


def test_allowlists_become_receiver_variables_the_wiring_reads() -> None:
    github = github_env(GitHubSettings(repository_ids=(42, 7, 42)), receiver=True)
    gitlab = gitlab_env(GitLabSettings(project_ids=(5,)), receiver=True)
    assert github[wiring.GITHUB_REPOSITORY_IDS] == "7,42" and gitlab[wiring.GITLAB_PROJECT_IDS] == "5"
    assert wiring.GITHUB_REPOSITORY_IDS not in github_env(GitHubSettings(repository_ids=(7,)), receiver=False)
    secrets = {wiring.GITHUB_WEBHOOK_SECRET_NAME: "gh", wiring.GITLAB_WEBHOOK_SECRET_NAME: "gl"}
    env = {
        wiring.TRACKERS: "github,gitlab",
        wiring.GITLAB_TOKEN_SECRET_NAME: "t",
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
