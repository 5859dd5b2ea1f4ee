"""The contract every tracker adapter keeps, run against each registered tracker through the real receiver.

One :class:`Tracker` per entry of ``webhook.trackers.registry.REGISTRY`` says how that tracker spells a comment, a
signature, a quote and its own bot; the cases are the same for all: a signed trigger is queued once for that
tracker, a wrong signature is refused before anything is stored, the bot's own comments and any reply the adapter
formats never trigger it again (the loop guard), a quoted trigger starts nothing, an oversize body is refused, and a
reply is posted once, to the issue the task names. The per-tracker suites (``test_github.py``, ``test_gitlab.py``,
``test_jira.py``) keep what only one tracker does.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentkit.doctor import secrets as doctor_secrets
from harness.github_repo_api import GitHubRepoApi
from harness.tracker_apis import GitLabApi, JiraApi
from harness.webhook_scene import sign
from tests.unit.webhook.support import (
    GITLAB_TOKEN,
    JIRA_BOT,
    JIRA_TOKEN,
    TOKEN,
    call,
    configure_receiver,
    github_event,
    gitlab_event,
    idempotency_items,
    jira_event,
    queued,
    task_json,
)
from tests.unit.webhook.test_github import comment_payload
from tests.unit.webhook.test_gitlab import note
from tests.unit.webhook.test_jira import comment as jira_comment
from webhook import trackers, wiring
from webhook.settings import ENV, WebhookSettings
from webhook.trackers.adapter import PER_TRACKER_SETTINGS, TrackerOptions, tracker_setting
from webhook.trackers.jira import jira_auth_header
from webhook.trackers.registry import REGISTRY
from webhook.trackers.reply_marks import reply_footer

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@dataclass(frozen=True)
class Tracker:
    """How one tracker spells what the contract cases need."""

    #: A comment by a member who may trigger, with ``text`` as its body.
    comment: Callable[[str], dict[str, Any]]
    #: The same comment written by the bot's own account.
    own_comment: Callable[[str], dict[str, Any]]
    #: A Function URL event delivering ``body``, signed right (``True``) or with another secret (``False``).
    event: Callable[[bytes, bool], dict[str, Any]]
    #: ``text`` quoted the way the tracker's editor quotes it.
    quote: Callable[[str], str]


TRACKERS: dict[str, Tracker] = {
    "github": Tracker(
        comment=lambda text: comment_payload(text),
        own_comment=lambda text: comment_payload(text, login="agentkit-bot"),
        event=lambda body, good: github_event(
            body, event="issue_comment", path="/github", signature="auto" if good else sign(body, "nope")
        ),
        quote=lambda text: f"> {text}\n\nthanks",
    ),
    "gitlab": Tracker(
        comment=lambda text: note(text),
        own_comment=lambda text: note(text, username="agentkit-bot"),
        event=lambda body, good: gitlab_event(body) if good else gitlab_event(body, token="another secret"),
        quote=lambda text: f"> {text}\n\nthanks",
    ),
    "jira": Tracker(
        comment=lambda text: jira_comment(text),
        own_comment=lambda text: jira_comment(text, accountId=JIRA_BOT),
        event=lambda body, good: jira_event(body) if good else jira_event(body, signature=sign(body, "nope")),
        quote=lambda text: "{quote}" + text + "{quote} was in the template",
    ),
}


def test_the_suite_and_the_doctor_cover_every_registered_tracker() -> None:
    assert set(TRACKERS) == set(REGISTRY)
    assert tuple(REGISTRY) == doctor_secrets.TRACKERS


def test_every_registered_tracker_declares_the_settings_its_lambdas_read() -> None:
    """Its two secrets' names and its own API root, trigger label and mention, under the names the registry and
    :meth:`TrackerOptions.from_settings` read (``<name>_…``)."""
    fields = set(WebhookSettings.model_fields)
    for name, entry in REGISTRY.items():
        own = {tracker_setting(name, field) for field in PER_TRACKER_SETTINGS}
        assert {entry.webhook_secret_setting, entry.token_secret_setting, *own} <= fields, name


def test_the_adding_a_tracker_checklist_names_files_every_tracker_has() -> None:
    """Every path the checklist names, with ``<name>`` read as each registered tracker, is there."""
    root = Path(__file__).resolve().parents[3]
    page = (root / "docs/webhook/adding-a-tracker.md").read_text()
    checklist = page.split("## Checklist", 1)[1].split("\n## ", 1)[0]
    paths = set(
        re.findall(r"`((?:webhook|infra|client|harness|tests)/[^`\s]+|cdk\.json|CHANGELOG\.md)`", checklist)
    )
    assert {"webhook/trackers/<name>.py", "webhook/trackers/registry.py", "cdk.json"} <= paths
    for name in REGISTRY:
        missing = sorted(p for p in paths if not (root / p.replace("<name>", name)).exists())
        assert missing == [], name


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


@pytest.fixture(params=list(REGISTRY))
def tracker(request: pytest.FixtureRequest) -> tuple[str, Tracker]:
    return request.param, TRACKERS[request.param]


def test_a_signed_trigger_is_queued_once_as_that_trackers_task(
    aws: SimpleNamespace, tracker: tuple[str, Tracker]
) -> None:
    name, t = tracker
    body = encode(t.comment("/agent why does the build fail?"))
    assert call(t.event(body, True))[1]["status"] == "queued"
    assert call(t.event(body, True))[1]["status"] == "duplicate"  # a redelivery of the same body
    (message,) = queued(aws)
    task = json.loads(message["Body"])
    assert task["tracker"] == name and task["comment"] == "/agent why does the build fail?"


def test_a_wrong_signature_is_refused_before_anything_is_stored(
    aws: SimpleNamespace, tracker: tuple[str, Tracker]
) -> None:
    _, t = tracker
    status, doc = call(t.event(encode(t.comment("/agent hello")), False))
    assert (status, doc["error"]) == (401, "invalid_signature")
    assert queued(aws) == [] and idempotency_items(aws) == 0


def test_the_bots_own_comment_does_not_trigger(aws: SimpleNamespace, tracker: tuple[str, Tracker]) -> None:
    _, t = tracker
    status, doc = call(t.event(encode(t.own_comment("/agent again")), True))
    assert (status, doc["status"]) == (202, "ignored") and "bot itself" in doc["reason"]
    assert queued(aws) == []


def test_a_reply_the_adapter_formats_does_not_trigger_it_again(
    aws: SimpleNamespace, tracker: tuple[str, Tracker]
) -> None:
    """The loop guard, end to end: the adapter's own reply, posted back as a comment by any account (a token
    shared with a human, a bot that is not the configured one), is recognised by what the reply carries."""
    name, t = tracker
    adapter = wiring.build_trackers("worker", env=aws.tracker_env, secrets_client=aws.sm)[name]
    reply = adapter.format_reply(
        "/agent fix would propose the change.", footer=reply_footer("github-0123456789abcdef")
    )
    status, doc = call(t.event(encode(t.comment(reply)), True))
    assert (status, doc["status"]) == (202, "ignored") and "bot itself" in doc["reason"]


def test_a_quoted_trigger_starts_nothing(aws: SimpleNamespace, tracker: tuple[str, Tracker]) -> None:
    _, t = tracker
    status, doc = call(t.event(encode(t.comment(t.quote("/agent please"))), True))
    assert (status, doc["status"]) == (202, "ignored") and queued(aws) == []


def test_an_oversize_body_is_refused(aws: SimpleNamespace, tracker: tuple[str, Tracker]) -> None:
    _, t = tracker
    configure_receiver(aws, {**aws.tracker_env, ENV["max_body_bytes"]: "512"})
    body = encode(t.comment("/agent " + "x" * 600))
    assert call(t.event(body, True))[0] == 413
    assert queued(aws) == [] and idempotency_items(aws) == 0


#: Where each tracker's stand-in is, the issue a task names, and the path its one reply must be posted to.
REPLY_TARGETS = {
    "github": ("github_api_url", "octo/kit", "/repos/octo/kit/issues/7/comments"),
    "gitlab": ("gitlab_api_url", "g/p", "/api/v4/projects/5/issues/7/notes"),
    "jira": ("jira_api_url", "SP", "/rest/api/3/issue/SP-7/comment"),
}


def test_a_reply_is_posted_once_on_the_tasks_issue(
    aws: SimpleNamespace, tracker: tuple[str, Tracker]
) -> None:
    name, _ = tracker
    setting, repository, path = REPLY_TARGETS[name]
    api: Any
    if name == "github":
        api = GitHubRepoApi(token=TOKEN, repository="octo/kit")
    elif name == "gitlab":
        api = GitLabApi(token=GITLAB_TOKEN)
    else:
        api = JiraApi(authorization=jira_auth_header(JIRA_TOKEN))
    with api:
        url = api.api_url if name == "gitlab" else api.url
        env = {**aws.tracker_env, ENV[setting]: url}
        adapter = wiring.build_trackers("worker", env=env, secrets_client=aws.sm)[name]
        task = trackers.AgentTask.model_validate_json(task_json(tracker=name, repository=repository))
        ref = adapter.post_reply(task, adapter.format_reply("the answer"))
    if name == "github":
        assert [(c["issue"], "the answer" in c["body"]) for c in api.comments.values()] == [(7, True)]
    else:
        posts = [r["path"] for r in api.requests if r["method"] == "POST"]
        assert posts == [path]
    assert ref.id is not None


def test_the_shared_settings_reach_every_adapter_as_its_options(
    aws: SimpleNamespace, tracker: tuple[str, Tracker]
) -> None:
    """Each tracker's own API root, trigger label and mention, and the shared fix label, body limit and
    idempotency window, as the worker builds the adapter."""
    name, _ = tracker
    env = {
        **aws.tracker_env,
        ENV[tracker_setting(name, "api_url")]: "http://127.0.0.1:9/root/",
        ENV[tracker_setting(name, "trigger_label")]: "Ask-Bot",
        ENV[tracker_setting(name, "trigger_mention")]: "/helper",
        ENV["fix_trigger_label"]: "bot-fix",
        ENV["max_body_bytes"]: "4096",
        ENV["idempotency_ttl_seconds"]: "7200",
    }
    adapter: Any = wiring.build_trackers("worker", env=env, secrets_client=aws.sm)[name]
    assert adapter.options.token is not None and adapter.options.webhook_secret is None
    assert dataclasses.replace(adapter.options, token=None) == TrackerOptions(
        api_url="http://127.0.0.1:9/root/",
        trigger_label="Ask-Bot",
        trigger_mention="/helper",
        fix_label="bot-fix",
        max_body_bytes=4096,
        max_age_seconds=7200,
    )
    assert (adapter.api_url, adapter.trigger_label, adapter.fix_label) == (
        "http://127.0.0.1:9/root",
        "ask-bot",
        "bot-fix",
    )


def test_a_trackers_own_trigger_mention_is_the_one_its_receiver_answers(
    aws: SimpleNamespace, tracker: tuple[str, Tracker]
) -> None:
    name, t = tracker
    configure_receiver(aws, {**aws.tracker_env, ENV[tracker_setting(name, "trigger_mention")]: "/helper"})
    status, doc = call(t.event(encode(t.comment("/agent why does the build fail?")), True))
    assert (status, doc["status"]) == (202, "ignored") and queued(aws) == []
    assert call(t.event(encode(t.comment("/helper why does the build fail?")), True))[1]["status"] == "queued"
    (message,) = queued(aws)
    assert json.loads(message["Body"])["tracker"] == name


def test_an_adapter_built_without_an_api_root_uses_its_trackers_own() -> None:
    """The public API roots for GitHub and GitLab; Jira Cloud serves its API on the site itself."""
    assert trackers.GitHubTracker(trackers.TrackerOptions()).api_url == "https://api.github.com"
    assert trackers.GitLabTracker(trackers.TrackerOptions()).api_url == "https://gitlab.com/api/v4"
    jira = trackers.JiraTracker(trackers.TrackerOptions(), site_url="https://acme.atlassian.net/")
    assert jira.api_url == "https://acme.atlassian.net"
