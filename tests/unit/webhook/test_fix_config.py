"""Fix settings from the Lambda environment, and the construct's checks of the same settings: clear errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.webhook.props import WebhookProps, check
from infra.webhook.trackers import JiraSettings
from webhook.errors import TrackerConfigError
from webhook.fix.config import fix_settings
from webhook.trackers.targets import RepoTarget

GOOD: dict[str, dict[str, Any]] = {
    "SP": {"tracker": "github", "repository": "octo/kit"},
    "OPS": {"tracker": "gitlab", "project_id": 5, "repository": "g/p"},
}


def test_defaults_and_a_full_setting() -> None:
    assert fix_settings({}).pr_mode == "draft_pr" and fix_settings({}).s3_location is None
    settings = fix_settings(
        {"PR_MODE": "branch", "JIRA_REPOSITORIES": json.dumps(GOOD), "WORKSPACE_S3_URI": "s3://kit-ws/dev/"}
    )
    assert settings.pr_mode == "branch" and settings.s3_location == ("kit-ws", "dev/")
    assert settings.jira_repositories == {
        "SP": RepoTarget("github", "octo/kit"),
        "OPS": RepoTarget("gitlab", "g/p", "5"),
    }


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PR_MODE": "merge"}, "PR_MODE='merge'"),
        ({"JIRA_REPOSITORIES": "{not json"}, "not valid JSON"),
        ({"JIRA_REPOSITORIES": json.dumps({"sp": GOOD["SP"]})}, "upper case"),
        ({"JIRA_REPOSITORIES": json.dumps({"SP": {"tracker": "bitbucket"}})}, "'github' or 'gitlab'"),
        ({"JIRA_REPOSITORIES": json.dumps({"SP": {"tracker": "gitlab", "repository": "g/p"}})}, "numeric id"),
        (
            {"JIRA_REPOSITORIES": json.dumps({"SP": {"tracker": "github", "repository": "nope"}})},
            "owner/repo",
        ),
        ({"WORKSPACE_S3_URI": "s3://bucket/no-slash"}, "s3://bucket/prefix/"),
        ({"PROGRESS_MIN_SECONDS": "-1"}, "at least 0"),
    ],
)
def test_bad_settings_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(TrackerConfigError, match=message.replace("(", r"\(").replace("[", r"\[")) as err:
        fix_settings(env)
    assert err.value.code == "misconfigured"


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (WebhookProps(pr_mode="merge"), "pr_mode 'merge'"),
        (WebhookProps(fix_label="agent, fix"), "fix_label"),
        (
            WebhookProps(
                trackers=["github", "jira"],
                jira=JiraSettings(site_url="https://x.atlassian.net"),
                jira_repositories={"SP": {"tracker": "gitlab", "project_id": 5, "repository": "g/p"}},
            ),
            "not in trackers",
        ),
        (
            WebhookProps(jira_repositories={"SP": {"tracker": "github", "repository": "octo/kit"}}),
            "'jira' is not in",
        ),
        (
            WebhookProps(
                trackers=["github", "jira"],
                jira=JiraSettings(site_url="https://x.atlassian.net"),
                jira_repositories={"SP": {"tracker": "github"}},
            ),
            "owner/repo",
        ),
    ],
)
def test_the_construct_refuses_bad_fix_settings_at_synth(props: WebhookProps, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check(props)


def test_the_construct_passes_the_settings_on() -> None:
    checked = check(
        WebhookProps(
            trackers=["github", "jira"],
            jira=JiraSettings(site_url="https://x.atlassian.net"),
            jira_repositories={"SP": GOOD["SP"]},
            pr_mode="branch",
        )
    )
    assert checked.receiver_env["FIX_TRIGGER_LABEL"] == "agent-fix"
    assert checked.fix_env["PR_MODE"] == "branch"
    assert fix_settings(checked.fix_env).jira_repositories == {"SP": RepoTarget("github", "octo/kit")}
