"""GitLab adapter through the receiver (``POST /gitlab``): token and signed webhooks, triggers, members.

Payloads: ``tests/fixtures/webhook/gitlab`` (shapes of the *Comment on an issue* and *Issue events*
examples in GitLab's webhook events docs). The members API is a loopback stand-in
(:class:`harness.tracker_apis.GitLabApi`) holding project 5's members.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import time
from types import SimpleNamespace
from typing import Any

import pytest

from harness.tracker_apis import GitLabApi
from tests.unit.webhook.support import (
    GITLAB_SECRET,
    GITLAB_TOKEN,
    call,
    configure_receiver,
    fixture,
    gitlab_event,
    idempotency_items,
    queued,
    standard_webhook_headers,
)
from webhook import trackers

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

SIGNING_KEY = bytes(range(32))
SIGNING_TOKEN = "whsec_" + base64.b64encode(SIGNING_KEY).decode()


def note(text: str = "/agent why does the arm64 build fail?", **user: Any) -> dict[str, Any]:
    payload = fixture("gitlab", "note_on_issue")
    payload["object_attributes"]["note"] = text
    payload["user"].update(user)
    return payload


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def test_member_note_is_queued_with_the_gitlab_task(aws: SimpleNamespace, gitlab_api: GitLabApi) -> None:
    body = encode(note())
    status, doc = call(gitlab_event(body))
    assert (status, doc["status"]) == (202, "queued")
    task = json.loads(queued(aws)[0]["Body"])
    assert task["tracker"] == "gitlab" and task["repository"] == "gitlab-org/gitlab-test"
    assert task["issue_number"] == 17 and task["title"] == "arm64 build broken"
    assert task["comment"] == "/agent why does the arm64 build fail?" and task["author"] == "root"
    assert task["body"] == "The arm64 image fails at `pip install`."
    assert task["html_url"] == "http://example.com/gitlab-org/gitlab-test/issues/17"
    assert task["delivery_id"] == "idem-1" and task["idempotency_key"] == hashlib.sha256(body).hexdigest()
    assert doc["session_id"] == "gitlab-" + hashlib.sha256(b"5#17").hexdigest()  # project.id, iid
    # One members API call with the project access token.
    [ask] = gitlab_api.requests
    assert ask["method"] == "GET" and ask["path"] == "/api/v4/projects/5/members/all/1"
    assert ask["headers"]["private-token"] == GITLAB_TOKEN


def test_label_added_by_a_maintainer_is_queued(aws: SimpleNamespace) -> None:
    status, doc = call(gitlab_event(encode(fixture("gitlab", "issue_labeled")), event="Issue Hook"))
    assert (status, doc["status"]) == (202, "queued")
    task = json.loads(queued(aws)[0]["Body"])
    assert (task["issue_number"], task["comment"], task["author"]) == (23, None, "dev1")
    assert task["event"] == "issue.update" and task["body"].startswith("Create new API")


def test_label_already_present_does_not_trigger_again(aws: SimpleNamespace) -> None:
    payload = fixture("gitlab", "issue_labeled")
    payload["changes"]["labels"]["previous"] = payload["changes"]["labels"]["current"]
    status, doc = call(gitlab_event(encode(payload), event="Issue Hook"))
    assert (status, doc["status"]) == (202, "ignored") and "without the trigger" in doc["reason"]


def test_new_issue_mentioning_the_agent_is_queued(aws: SimpleNamespace) -> None:
    payload = fixture("gitlab", "issue_labeled")
    payload["object_attributes"].update(action="open", description="Please help /agent")
    del payload["changes"]["labels"]
    assert call(gitlab_event(encode(payload), event="Issue Hook"))[1]["status"] == "queued"


@pytest.mark.parametrize(
    ("user", "reason"),
    [({"id": 9, "username": "rep"}, "access level 20"), ({"id": 77, "username": "stranger"}, "not a member")],
    ids=["reporter", "non-member"],
)
def test_non_members_and_low_roles_cannot_trigger(
    aws: SimpleNamespace, user: dict[str, Any], reason: str
) -> None:
    status, doc = call(gitlab_event(encode(note(**user))))
    assert (status, doc["status"]) == (202, "ignored") and reason in doc["reason"]
    assert queued(aws) == [] and idempotency_items(aws) == 0


def test_min_access_level_is_configurable(aws: SimpleNamespace) -> None:
    configure_receiver(aws, {**aws.tracker_env, "GITLAB_MIN_ACCESS_LEVEL": "20"})
    assert call(gitlab_event(encode(note(id=9, username="rep"))))[1]["status"] == "queued"
    with pytest.raises(trackers.TrackerConfigError, match="access level 25"):
        configure_receiver(aws, {**aws.tracker_env, "GITLAB_MIN_ACCESS_LEVEL": "25"})


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"user": {"username": "agentkit-bot"}}, "bot itself"),
        ({"user": {"username": "project_5_bot_3f2a9c"}}, "bot itself"),
        ({"object_attributes": {"note": "/agent done\n\n" + trackers.AGENT_REPLY_MARKER}}, "bot itself"),
        ({"object_attributes": {"system": True}}, "system"),
        ({"object_attributes": {"internal": True}}, "internal"),
        ({"issue": {"confidential": True}}, "confidential"),
        ({"object_attributes": {"action": "update"}}, "note.update"),
        ({"object_attributes": {"note": "> /agent quoted\n\nthanks"}}, "does not mention"),
        ({"object_attributes": {"note": "use `/agent` like this"}}, "does not mention"),
        ({"object_attributes": {"note": "```\n/agent in code\n```"}}, "does not mention"),
    ],
    ids=[
        "bot-user",
        "token-bot",
        "marker",
        "system",
        "internal",
        "confidential",
        "edit",
        "quote",
        "code",
        "fence",
    ],
)
def test_notes_that_never_trigger(
    aws: SimpleNamespace, gitlab_api: GitLabApi, change: dict[str, Any], reason: str
) -> None:
    payload = note()
    for part, values in change.items():
        payload[part].update(values)
    status, doc = call(gitlab_event(encode(payload)))
    assert (status, doc["status"]) == (202, "ignored") and reason in doc["reason"]
    assert gitlab_api.requests == []  # decided without asking the members API


def test_merge_request_notes_and_other_events_are_ignored(aws: SimpleNamespace) -> None:
    mr = encode(fixture("gitlab", "note_on_merge_request"))
    assert "MergeRequest" in call(gitlab_event(mr))[1]["reason"]
    assert "not handled" in call(gitlab_event(b'{"object_kind": "push"}', event="Push Hook"))[1]["reason"]
    assert "confidential" in call(gitlab_event(encode(note()), event="Confidential Note Hook"))[1]["reason"]


@pytest.mark.parametrize(
    "token",
    [None, "", "wrong-token", GITLAB_SECRET + "x", GITLAB_SECRET[:-1]],
    ids=["missing", "empty", "wrong", "longer", "shorter"],
)
def test_bad_or_missing_token_is_401_and_touches_nothing(
    aws: SimpleNamespace, gitlab_api: GitLabApi, token: str | None
) -> None:
    status, doc = call(gitlab_event(encode(note()), token=token))
    assert (status, doc["error"]) == (401, "invalid_signature")
    assert queued(aws) == [] and idempotency_items(aws) == 0 and gitlab_api.requests == []


def test_replayed_delivery_is_queued_once(aws: SimpleNamespace) -> None:
    body = encode(note())
    assert call(gitlab_event(body))[1]["status"] == "queued"
    # GitLab's "Resend Request" (same body) and a forged Idempotency-Key both hit the body hash.
    assert call(gitlab_event(body))[1]["status"] == "duplicate"
    assert call(gitlab_event(body, **{"idempotency-key": "forged"}))[1]["status"] == "duplicate"
    assert len(queued(aws)) == 1


def test_oversize_bad_json_wrong_shape_and_missing_event(aws: SimpleNamespace) -> None:
    big = encode(note("/agent " + "x" * (1024 * 1024)))
    assert call(gitlab_event(big))[0] == 413
    assert call(gitlab_event(b'{"object_kind": "note", '))[0] == 400
    assert call(gitlab_event(b'{"object_kind": "note"}'))[0] == 400
    assert call(gitlab_event(encode(note()), event=None))[1]["message"] == "missing header: X-Gitlab-Event"
    assert queued(aws) == []


def test_members_api_failure_is_a_502_so_gitlab_retries(aws: SimpleNamespace, gitlab_api: GitLabApi) -> None:
    gitlab_api.script = [(503, {"message": "down"})]
    status, doc = call(gitlab_event(encode(note())))
    assert (status, doc["error"]) == (502, "tracker_api_error") and queued(aws) == []
    # GitLab redelivers: the same body is not a duplicate, since nothing was enqueued.
    assert call(gitlab_event(encode(note())))[1]["status"] == "queued"


# --------------------------------------------------------------------------- signed webhooks
def signed_secret(aws: SimpleNamespace, value: dict[str, str]) -> None:
    aws.sm.put_secret_value(SecretId="agentkit/gitlab-webhook-secret", SecretString=json.dumps(value))
    configure_receiver(aws, aws.tracker_env)


def test_signed_webhook_is_verified_and_queued(aws: SimpleNamespace) -> None:
    signed_secret(aws, {"signing_token": SIGNING_TOKEN})
    body = encode(note())
    headers = standard_webhook_headers(body, SIGNING_KEY)
    assert call(gitlab_event(body, token=None, **headers))[1]["status"] == "queued"


@pytest.mark.parametrize(
    "tamper",
    ["missing", "other-key", "other-body", "other-id", "stale", "future"],
)
def test_signed_webhook_attacks_are_refused(aws: SimpleNamespace, tamper: str) -> None:
    signed_secret(aws, {"token": GITLAB_SECRET, "signing_token": SIGNING_TOKEN})
    body = encode(note())
    now = int(time.time())
    headers = {
        "missing": {},
        "other-key": standard_webhook_headers(body, b"k" * 32),
        "other-body": standard_webhook_headers(body + b" ", SIGNING_KEY),
        "other-id": {**standard_webhook_headers(body, SIGNING_KEY, wid="a"), "webhook-id": "b"},
        "stale": standard_webhook_headers(body, SIGNING_KEY, stamp=now - 3600),
        "future": standard_webhook_headers(body, SIGNING_KEY, stamp=now + 3600),
    }[tamper]
    status, doc = call(gitlab_event(body, **headers))
    expected = 400 if tamper in ("stale", "future") else 401
    assert status == expected and doc["error"] in ("invalid_signature", "stale_delivery")
    assert queued(aws) == []


def test_token_is_still_required_next_to_a_signature(aws: SimpleNamespace) -> None:
    signed_secret(aws, {"token": GITLAB_SECRET, "signing_token": SIGNING_TOKEN})
    body = encode(note())
    assert call(gitlab_event(body, token="wrong", **standard_webhook_headers(body, SIGNING_KEY)))[0] == 401


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("  ", "blank"),
        ('{"signing_token": "abc"}', "whsec_"),
        ('{"signing_token": "whsec_***"}', "base64"),
        ("{", "JSON"),
    ],
)
def test_bad_webhook_secret_is_a_500(value: str, match: str) -> None:
    with pytest.raises(trackers.TrackerConfigError, match=match):
        trackers.GitLabWebhookSecret.parse(value)


def test_tracker_needs_a_trigger() -> None:
    with pytest.raises(trackers.TrackerConfigError):
        trackers.GitLabTracker(trackers.TrackerOptions(trigger_label="", trigger_mention=""))


def test_label_trigger_is_case_insensitive_and_by_title(aws: SimpleNamespace) -> None:
    payload = copy.deepcopy(fixture("gitlab", "issue_labeled"))
    payload["changes"]["labels"]["current"][1]["title"] = "Agent"
    assert call(gitlab_event(encode(payload), event="Issue Hook"))[1]["status"] == "queued"
