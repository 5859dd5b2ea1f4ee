"""Jira Cloud adapter through the receiver (``POST /jira``): signature, freshness, triggers, loop guard.

Payloads: ``tests/fixtures/webhook/jira`` (shapes of the issue and comment callback examples in
Atlassian's Jira Cloud webhook docs), with ``timestamp`` set to now.
"""

from __future__ import annotations

import hashlib
import json
import time
from types import SimpleNamespace
from typing import Any

import pytest

from harness.webhook_scene import sign
from tests.unit.webhook.support import (
    JIRA_BOT,
    JIRA_SECRET,
    call,
    configure_receiver,
    fixture,
    fresh_jira,
    idempotency_items,
    jira_event,
    queued,
)
from webhook import trackers

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def comment(body: Any = "/agent why is the export slow?", **author: Any) -> dict[str, Any]:
    payload = fresh_jira(fixture("jira", "comment_created"))
    payload["comment"]["body"] = body
    payload["comment"]["author"].update(author)
    return payload


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def test_signed_comment_is_queued_as_a_jira_task(aws: SimpleNamespace) -> None:
    body = encode(comment())
    status, doc = call(jira_event(body))
    assert (status, doc["status"]) == (202, "queued")
    task = json.loads(queued(aws)[0]["Body"])
    assert task["tracker"] == "jira" and (task["repository"], task["issue_number"]) == ("SP", 9)
    assert task["title"] == "Export takes minutes" and task["comment"] == "/agent why is the export slow?"
    assert task["author"] == "Mia Krystof" and task["delivery_id"] == "jira-d-1"
    assert task["html_url"] == "https://example.atlassian.net/browse/SP-9"
    assert doc["session_id"] == "jira-" + hashlib.sha256(b"example.atlassian.net#10148").hexdigest()


def test_label_added_in_an_update_is_queued(aws: SimpleNamespace) -> None:
    body = encode(fresh_jira(fixture("jira", "issue_updated_labels")))
    assert call(jira_event(body))[1]["status"] == "queued"
    task = json.loads(queued(aws)[0]["Body"])
    assert (task["repository"], task["issue_number"], task["comment"]) == ("JRA", 20002, None)
    assert task["body"] == "Please make the issue nav load faster"


def test_update_that_keeps_the_label_does_not_trigger(aws: SimpleNamespace) -> None:
    payload = fresh_jira(fixture("jira", "issue_updated_labels"))
    payload["changelog"]["items"][0]["fromString"] = "UI agent"
    assert "without the trigger" in call(jira_event(encode(payload)))[1]["reason"]


def test_created_issue_with_label_or_mention_is_queued(aws: SimpleNamespace) -> None:
    created = fresh_jira(fixture("jira", "issue_created"))
    assert call(jira_event(encode(created)))[1]["status"] == "queued"  # "/agent please investigate"
    labeled = fresh_jira(fixture("jira", "issue_created"))
    labeled["issue"]["fields"].update(description="no mention", labels=["Agent"])
    labeled["issue"]["key"] = "SP-11"
    assert call(jira_event(encode(labeled)))[1]["status"] == "queued"
    neither = fresh_jira(fixture("jira", "issue_created"))
    neither["issue"]["fields"]["description"] = "{quote}/agent please{quote} was in the template"
    assert call(jira_event(encode(neither)))[1]["status"] == "ignored"


def test_mention_of_the_bot_account_triggers(aws: SimpleNamespace) -> None:
    body = encode(comment(f"[~accountid:{JIRA_BOT}] can you look?"))
    assert call(jira_event(body))[1]["status"] == "queued"


@pytest.mark.parametrize(
    "text",
    [
        "{quote}/agent do it{quote} I agree",
        "bq. /agent do it",
        "{code:python}# /agent\nprint(1){code}",
        "{noformat}/agent{noformat}",
        "Type {{/agent}} to ask",
        f"{{quote}}[~accountid:{JIRA_BOT}] hi{{quote}}",
    ],
    ids=["quote", "bq", "code", "noformat", "monospace", "quoted-mention"],
)
def test_quoted_or_code_wiki_triggers_do_not_start_a_run(aws: SimpleNamespace, text: str) -> None:
    status, doc = call(jira_event(encode(comment(text))))
    assert (status, doc["status"]) == (202, "ignored") and "does not mention" in doc["reason"]


def test_adf_comment_bodies_are_read_without_quotes_and_code(aws: SimpleNamespace) -> None:
    quoted = {
        "version": 1,
        "type": "doc",
        "content": [
            {
                "type": "blockquote",
                "content": [{"type": "paragraph", "content": [{"type": "text", "text": "/agent x"}]}],
            },
            {
                "type": "paragraph",
                "content": [{"type": "text", "text": "/agent", "marks": [{"type": "code"}]}],
            },
            {"type": "codeBlock", "content": [{"type": "text", "text": "/agent"}]},
        ],
    }
    assert call(jira_event(encode(comment(quoted))))[1]["status"] == "ignored"
    plain = {
        "version": 1,
        "type": "doc",
        "content": [{"type": "paragraph", "content": [{"type": "text", "text": "hey /agent"}]}],
    }
    assert call(jira_event(encode(comment(plain))))[1]["status"] == "queued"
    mention = {
        "version": 1,
        "type": "doc",
        "content": [
            {
                "type": "paragraph",
                "content": [{"type": "mention", "attrs": {"id": JIRA_BOT, "text": "@agentkit"}}],
            }
        ],
    }
    assert (
        call(jira_event(encode(comment(mention) | {"timestamp": int(time.time() * 1000) + 1})))[1]["status"]
        == "queued"
    )


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (lambda: comment(accountId=JIRA_BOT), "bot itself"),
        (lambda: comment(accountType="app"), "bot itself"),
        (lambda: comment(f"/agent done\n\n_{trackers.JIRA_REPLY_MARKER} session jira-…_"), "bot itself"),
        (lambda: comment(accountType="customer"), "account type 'customer'"),
        (lambda: comment(accountType=""), "account type 'unknown'"),
        (lambda: comment() | {"comment": comment()["comment"] | {"jsdPublic": False}}, "internal (JSM)"),
    ],
    ids=["bot-account", "app", "marker", "portal-customer", "no-account-type", "jsm-internal"],
)
def test_comments_that_never_trigger(aws: SimpleNamespace, payload: Any, reason: str) -> None:
    status, doc = call(jira_event(encode(payload())))
    assert (status, doc["status"]) == (202, "ignored") and reason in doc["reason"]


@pytest.mark.parametrize(
    "signature",
    [None, "", "sha256=" + "0" * 64, sign(b"other", JIRA_SECRET), sign(b"x", "wrong"), "sha1=abc"],
    ids=["unsigned", "empty", "zeros", "other-body", "wrong-secret", "wrong-method"],
)
def test_unsigned_or_badly_signed_calls_are_401_and_touch_nothing(
    aws: SimpleNamespace, signature: str | None
) -> None:
    status, doc = call(jira_event(encode(comment()), signature=signature))
    assert (status, doc["error"]) == (401, "invalid_signature")
    assert queued(aws) == [] and idempotency_items(aws) == 0


def test_signature_over_a_modified_body_is_refused(aws: SimpleNamespace) -> None:
    body = encode(comment())
    forged = body.replace(b"why is the export slow", b"delete every branch!!!")
    assert call(jira_event(forged, signature=sign(body, JIRA_SECRET)))[0] == 401


@pytest.mark.parametrize("age_s", [8 * 24 * 3600, -3600], ids=["older-than-ttl", "future"])
def test_stale_signed_bodies_are_refused(aws: SimpleNamespace, age_s: int) -> None:
    payload = comment()
    payload["timestamp"] = int((time.time() - age_s) * 1000)
    status, doc = call(jira_event(encode(payload)))
    assert (status, doc["error"]) == (400, "stale_delivery") and queued(aws) == []


def test_replays_are_queued_once(aws: SimpleNamespace) -> None:
    body = encode(comment())
    assert call(jira_event(body))[1]["status"] == "queued"
    assert call(jira_event(body))[1]["status"] == "duplicate"
    assert call(jira_event(body, **{"x-atlassian-webhook-identifier": "new-id"}))[1]["status"] == "duplicate"
    assert len(queued(aws)) == 1


def test_oversize_bad_json_wrong_shape_and_other_events(aws: SimpleNamespace) -> None:
    big = encode(comment("/agent " + "x" * (1024 * 1024)))
    assert call(jira_event(big))[0] == 413
    assert call(jira_event(b'{"timestamp": '))[0] == 400
    bad_key = comment()
    bad_key["issue"]["key"] = "not a key"
    assert call(jira_event(encode(bad_key)))[0] == 400
    other = fresh_jira({"timestamp": 0, "webhookEvent": "worklog_created"})
    assert "not handled" in call(jira_event(encode(other)))[1]["reason"]
    assert call(jira_event(encode(comment()), content_type="text/plain"))[0] == 415


def test_blank_secret_is_a_500(aws: SimpleNamespace) -> None:
    aws.sm.put_secret_value(SecretId="agentkit/jira-webhook-secret", SecretString=" ")
    configure_receiver(aws, aws.tracker_env)
    body = encode(comment())
    assert call(jira_event(body, signature=sign(body, " ")))[0] == 500


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"email": "a@b.c", "api_token": "t"}', "Basic YUBiLmM6dA=="),
        ('{"access_token": "oauth"}', "Bearer oauth"),
    ],
)
def test_token_secret_forms(value: str, expected: str) -> None:
    assert trackers.jira_auth_header(value) == expected


@pytest.mark.parametrize("value", ["plain-token", "{}", '{"email": "a@b.c"}'])
def test_bad_token_secret_is_a_config_error(value: str) -> None:
    with pytest.raises(trackers.TrackerConfigError):
        trackers.jira_auth_header(value)


def test_site_url_must_be_https() -> None:
    with pytest.raises(trackers.TrackerConfigError, match="https"):
        trackers.JiraTracker(trackers.TrackerOptions(), site_url="http://example.atlassian.net")
