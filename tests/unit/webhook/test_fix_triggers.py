"""What a trigger asks for: ``/agent fix …`` and the fix label ask for a change, ``/agent stop`` for a stop,
plain ``/agent`` for an answer — through the receiver, with the same allow-list and loop guard as answers."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from tests.unit.webhook.support import (
    GITHUB_REPOSITORY_ID,
    JIRA_BOT,
    call,
    configure_receiver,
    fixture,
    fresh_jira,
    github_event,
    gitlab_event,
    jira_event,
    queued,
)
from tests.unit.webhook.test_github import comment_payload, labeled_payload
from webhook import trackers
from webhook.settings import ENV
from webhook.trackers.triggers import markdown_unquoted, mention_intent, mention_pattern

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
AGENT = mention_pattern("/agent")


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("/agent fix the flaky test", "fix"),
        ("/agent FIX it", "fix"),
        ("/agent: fix the test", "fix"),
        ("/agent, stop", "stop"),
        ("/agent stop", "stop"),
        ("/agent why does it fail?", "answer"),
        ("/agent fixed yet?", "answer"),  # a whole word only
        ("/agent", "answer"),
        ("/agent why? and later /agent fix", "answer"),  # the first mention decides
        ("> /agent fix\n\n/agent what do you think?", "answer"),  # a quoted command is not one
        ("`/agent fix`\n\n/agent stop", "stop"),
        ("no mention here, fix it", None),
    ],
)
def test_mention_intent(text: str, intent: str | None) -> None:
    assert mention_intent(AGENT, markdown_unquoted(text)) == intent


@pytest.fixture
def fix_label(aws: SimpleNamespace) -> SimpleNamespace:
    configure_receiver(aws, {**aws.tracker_env, ENV["fix_trigger_label"]: "agent-fix"})
    return aws


def queued_task(aws: SimpleNamespace, event: dict[str, Any]) -> dict[str, Any]:
    status, doc = call(event)
    assert (status, doc["status"]) == (202, "queued"), doc
    [msg] = queued(aws)
    aws.sqs.delete_message(QueueUrl=aws.queue_url, ReceiptHandle=msg["ReceiptHandle"])
    return dict(json.loads(msg["Body"]))


def github_comment(text: str, **kwargs: Any) -> dict[str, Any]:
    body = json.dumps(comment_payload(text, **kwargs)).encode()
    return github_event(body, event="issue_comment", path="/github")


@pytest.mark.parametrize(
    ("text", "intent"),
    [("/agent fix the arm64 build", "fix"), ("/agent stop", "stop"), ("/agent why?", "answer")],
)
def test_github_comment_intents(fix_label: SimpleNamespace, text: str, intent: str) -> None:
    task = queued_task(fix_label, github_comment(text))
    assert task["intent"] == intent and task["comment"] == text and task["pull_request"] is False


def test_github_comment_on_a_pull_request_is_marked(fix_label: SimpleNamespace) -> None:
    payload = comment_payload("/agent fix the lint errors")
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/octo/kit/pulls/7"}
    body = json.dumps(payload).encode()
    task = queued_task(fix_label, github_event(body, event="issue_comment", path="/github"))
    assert (task["intent"], task["pull_request"]) == ("fix", True)


@pytest.mark.parametrize(
    ("label", "intent"), [("agent-fix", "fix"), ("Agent-Fix", "fix"), ("agent", "answer")]
)
def test_github_labels(fix_label: SimpleNamespace, label: str, intent: str) -> None:
    body = json.dumps(labeled_payload(label)).encode()
    assert queued_task(fix_label, github_event(body, event="issues"))["intent"] == intent


def test_github_issue_opened_with_the_fix_label_waits_for_its_labeled_event(
    fix_label: SimpleNamespace,
) -> None:
    payload = labeled_payload("agent-fix")
    payload["action"] = "opened"
    payload["issue"]["body"] = "/agent fix please"
    status, doc = call(github_event(json.dumps(payload).encode(), event="issues"))
    assert (status, doc["status"]) == (202, "ignored") and not queued(fix_label)


def test_without_a_fix_label_the_label_does_nothing(aws: SimpleNamespace) -> None:
    status, doc = call(github_event(json.dumps(labeled_payload("agent-fix")).encode(), event="issues"))
    assert (status, doc["status"]) == (202, "ignored") and not queued(aws)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"association": "NONE"},  # a stranger on a public repository
        {"association": "CONTRIBUTOR"},
        {"login": "agentkit-bot"},  # the bot's own comment (loop guard)
        {"login": "ci[bot]", "user_type": "Bot"},
    ],
)
def test_stop_and_fix_follow_the_same_allow_list_and_loop_guard(
    fix_label: SimpleNamespace, kwargs: Any
) -> None:
    for text in ("/agent stop", "/agent fix everything"):
        status, doc = call(github_comment(text, **kwargs))
        assert (status, doc["status"]) == (202, "ignored"), (text, kwargs)
    assert not queued(fix_label)


def test_a_forged_signature_never_stops_anything(fix_label: SimpleNamespace) -> None:
    body = json.dumps(comment_payload("/agent stop")).encode()
    status, _ = call(github_event(body, event="issue_comment", signature="sha256=" + "0" * 64))
    assert status == 401 and not queued(fix_label)


def test_gitlab_note_and_label(fix_label: SimpleNamespace) -> None:
    note = fixture("gitlab", "note_on_issue")
    note["object_attributes"]["note"] = "/agent fix the arm64 build"
    assert queued_task(fix_label, gitlab_event(json.dumps(note).encode()))["intent"] == "fix"
    labeled = fixture("gitlab", "issue_labeled")
    labeled["changes"]["labels"]["current"][-1]["title"] = "agent-fix"
    event = gitlab_event(json.dumps(labeled).encode(), event="Issue Hook", **{"idempotency-key": "idem-2"})
    assert queued_task(fix_label, event)["intent"] == "fix"


def test_gitlab_stop_by_a_reporter_is_ignored(fix_label: SimpleNamespace) -> None:
    note = fixture("gitlab", "note_on_issue")
    note["object_attributes"]["note"] = "/agent stop"
    note["user"]["id"] = 9  # a Reporter: below the Developer level needed
    status, doc = call(gitlab_event(json.dumps(note).encode()))
    assert (status, doc["status"]) == (202, "ignored") and not queued(fix_label)


@pytest.mark.parametrize(
    ("text", "intent"),
    [("/agent stop", "stop"), (f"[~accountid:{JIRA_BOT}] fix the export", "fix"), ("/agent why?", "answer")],
)
def test_jira_comment_intents(fix_label: SimpleNamespace, text: str, intent: str) -> None:
    payload = fresh_jira(fixture("jira", "comment_created"))
    payload["comment"]["body"] = text
    assert queued_task(fix_label, jira_event(json.dumps(payload).encode()))["intent"] == intent


def test_jira_fix_label(fix_label: SimpleNamespace) -> None:
    payload = fresh_jira(fixture("jira", "issue_updated_labels"))
    payload["changelog"]["items"][0]["toString"] = "UI dialogue move agent-fix"
    assert queued_task(fix_label, jira_event(json.dumps(payload).encode()))["intent"] == "fix"


def test_repository_ids_still_pin_fix_triggers(fix_label: SimpleNamespace) -> None:
    payload = comment_payload("/agent fix")
    payload["repository"]["id"] = GITHUB_REPOSITORY_ID + 1
    status, doc = call(github_event(json.dumps(payload).encode(), event="issue_comment"))
    assert (status, doc["status"]) == (202, "ignored") and not queued(fix_label)


def test_gitlab_merge_request_notes_ask_for_fixes_and_stops_but_not_answers(
    fix_label: SimpleNamespace,
) -> None:
    note = fixture("gitlab", "note_on_merge_request")
    note["object_attributes"]["note"] = "/agent fix the lint errors"
    task = queued_task(fix_label, gitlab_event(json.dumps(note).encode()))
    assert (task["intent"], task["pull_request"], task["issue_number"]) == ("fix", True, 1)
    assert task["html_url"] == "http://example.com/gitlab-org/gitlab-test/merge_requests/1"
    # GitLab numbers issues and merge requests apart: !1 is not issue #1's conversation.
    mr = trackers.AgentTask.model_validate(task)
    assert mr.runtime_session_id != mr.model_copy(update={"pull_request": False}).runtime_session_id
    note["object_attributes"]["note"] = "/agent why is this slow?"
    status, doc = call(gitlab_event(json.dumps(note).encode(), **{"idempotency-key": "idem-9"}))
    assert (status, doc["status"]) == (202, "ignored") and "MergeRequest" in doc["reason"]


APPROVAL_ID = "apv-0123456789abcdef0123"


@pytest.mark.parametrize(
    ("text", "intent"),
    [(f"/agent approve {APPROVAL_ID}", "approve"), (f"/agent deny {APPROVAL_ID} not now", "deny")],
)
def test_approval_answers_on_every_tracker(fix_label: SimpleNamespace, text: str, intent: str) -> None:
    assert (
        mention_intent(AGENT, markdown_unquoted(f"> {text}\n\n/agent why?")) == "answer"
    )  # quoted: no answer
    assert queued_task(fix_label, github_comment(text))["intent"] == intent
    note = fixture("gitlab", "note_on_issue")
    note["object_attributes"]["note"] = text
    assert queued_task(fix_label, gitlab_event(json.dumps(note).encode()))["intent"] == intent
    payload = fresh_jira(fixture("jira", "comment_created"))
    payload["comment"]["body"] = text
    task = queued_task(fix_label, jira_event(json.dumps(payload).encode()))
    assert task["intent"] == intent and APPROVAL_ID in task["comment"]


def test_gitlab_approval_by_a_reporter_is_ignored(fix_label: SimpleNamespace) -> None:
    note = fixture("gitlab", "note_on_issue")
    note["object_attributes"]["note"] = f"/agent approve {APPROVAL_ID}"
    note["user"]["id"] = 9  # a Reporter: below the Developer level needed
    status, doc = call(gitlab_event(json.dumps(note).encode()))
    assert (status, doc["status"]) == (202, "ignored") and not queued(fix_label)
