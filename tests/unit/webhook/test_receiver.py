"""Receiver Lambda: one Function URL, one path per tracker, metrics with a ``Tracker`` dimension."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tests.unit.webhook.support import (
    call,
    configure_receiver,
    emf_lines,
    fixture,
    fresh_jira,
    github_event,
    gitlab_event,
    jira_event,
    queued,
    url_event,
)
from webhook import receiver, trackers, wiring
from webhook.settings import ENV, WebhookSettings

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def github_body() -> bytes:
    return json.dumps(fixture("github", "issues_labeled")).encode()


@pytest.mark.parametrize("path", ["/", "/github", "/GitHub"])
def test_github_answers_on_its_path_and_the_bare_url(aws: SimpleNamespace, path: str) -> None:
    status, doc = call(github_event(github_body(), path=path))
    assert (status, doc["status"]) == (202, "queued")


def test_each_tracker_has_its_own_path(aws: SimpleNamespace) -> None:
    gitlab = json.dumps(fixture("gitlab", "note_on_issue")).encode()
    jira = json.dumps(fresh_jira(fixture("jira", "comment_created"))).encode()
    assert call(github_event(github_body(), path="/github"))[1]["status"] == "queued"
    assert call(gitlab_event(gitlab))[1]["status"] == "queued"
    assert call(jira_event(jira))[1]["status"] == "queued"
    assert sorted(json.loads(m["Body"])["tracker"] for m in queued(aws)) == ["github", "gitlab", "jira"]


def test_a_delivery_on_the_wrong_path_fails_verification(aws: SimpleNamespace) -> None:
    """A GitHub-signed body sent to /jira is checked against Jira's secret and header: refused."""
    status, doc = call(github_event(github_body(), path="/jira"))
    assert (status, doc["error"]) == (401, "invalid_signature") and queued(aws) == []


def test_unknown_or_disabled_tracker_paths_are_404(aws: SimpleNamespace) -> None:
    assert call(url_event(b"{}", path="/bitbucket"))[0] == 404
    configure_receiver(aws, {**aws.tracker_env, ENV["trackers"]: "github"})
    status, doc = call(jira_event(json.dumps(fresh_jira(fixture("jira", "comment_created"))).encode()))
    assert (status, doc["error"]) == (404, "not_found") and "github" in doc["message"]
    assert call(github_event(github_body()))[1]["status"] == "queued"  # GitHub still answers


def test_gitlab_only_deployment_has_no_bare_url(aws: SimpleNamespace) -> None:
    configure_receiver(aws, {**aws.tracker_env, ENV["trackers"]: "gitlab"})
    assert call(github_event(github_body()))[0] == 404


def test_get_is_not_a_webhook(aws: SimpleNamespace) -> None:
    assert call(url_event(b"", path="/github", method="GET"))[0] == 404


@pytest.mark.parametrize("value", ["", "github,svn", " , "])
def test_bad_tracker_list_is_a_config_error(value: str) -> None:
    with pytest.raises(trackers.TrackerConfigError, match="TRACKERS"):
        WebhookSettings.from_env({ENV["trackers"]: value})


def test_receiver_gets_webhook_secrets_and_worker_gets_tokens_only(aws: SimpleNamespace) -> None:
    recv = wiring.build_trackers("receiver", env=aws.tracker_env, secrets_client=aws.sm)
    work = wiring.build_trackers("worker", env=aws.tracker_env, secrets_client=aws.sm)
    providers = {
        (role, name, kind): getattr(adapters[name], kind) is not None
        for role, adapters in (("receiver", recv), ("worker", work))
        for name in ("github", "gitlab", "jira")
        for kind in ("_secret", "_token")
    }
    assert [key for key, present in providers.items() if present] == [
        ("receiver", "github", "_secret"),
        ("receiver", "gitlab", "_secret"),
        ("receiver", "gitlab", "_token"),  # the members API
        ("receiver", "jira", "_secret"),
        ("worker", "github", "_token"),
        ("worker", "gitlab", "_token"),
        ("worker", "jira", "_token"),
    ]
    missing = {k: v for k, v in aws.tracker_env.items() if k != ENV["jira_webhook_secret_name"]}
    with pytest.raises(trackers.TrackerConfigError, match="JIRA_WEBHOOK_SECRET_NAME"):
        wiring.build_trackers("receiver", env=missing, secrets_client=aws.sm)


def test_metrics_carry_the_tracker_dimension(
    aws: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    gitlab = json.dumps(fixture("gitlab", "note_on_issue")).encode()
    call(gitlab_event(gitlab))  # accepted
    call(gitlab_event(gitlab))  # duplicate
    call(jira_event(b"{}", signature=None))  # rejected
    call(github_event(json.dumps(fixture("github", "issue_comment_created") | {"action": "edited"}).encode()))
    docs = emf_lines(capsys.readouterr().out)
    seen = [(m["Name"], d["Tracker"]) for d in docs for m in d["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
    assert seen == [
        ("WebhookAccepted", "gitlab"),
        ("WebhookDuplicate", "gitlab"),
        ("WebhookRejected", "jira"),
        ("WebhookIgnored", "github"),
    ]
    assert all(
        d["service"] == receiver.SERVICE
        and d["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service", "Tracker"]]
        for d in docs
    )
