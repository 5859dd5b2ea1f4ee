"""GitHub adapter through the receiver Lambda: signature, triggers, author associations, replays.

moto stands in for SQS, DynamoDB and Secrets Manager; payloads follow GitHub's ``issues`` and
``issue_comment`` webhook examples (``tests/fixtures/webhook/github``).
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from types import SimpleNamespace
from typing import Any

import pytest

from harness.webhook_scene import github_now, sign
from tests.unit.webhook.support import (
    GITHUB_REPOSITORY_ID,
    SECRET,
    call,
    configure_receiver,
    fixture,
    github_event,
    idempotency_items,
    queued,
)
from webhook import trackers

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def issue(
    number: int = 7,
    labels: tuple[str, ...] = (),
    body: str = "Build fails on arm64",
    association: str | None = "OWNER",
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "number": number,
        "title": "CI broken",
        "body": body,
        "user": {"login": "alice", "type": "User"},
        "labels": [{"name": n} for n in labels],
        "html_url": f"https://github.com/octo/kit/issues/{number}",
        "updated_at": github_now(),
    }
    if association is not None:
        doc["author_association"] = association
    return doc


def labeled_payload(label: str = "agent", number: int = 7) -> dict[str, Any]:
    return {
        "action": "labeled",
        "label": {"name": label},
        "issue": issue(number, (label,)),
        "repository": {"full_name": "octo/kit", "id": GITHUB_REPOSITORY_ID},
        "sender": {"login": "bob", "type": "User"},
    }


def comment_payload(
    text: str, login: str = "carol", user_type: str = "User", association: str | None = "MEMBER"
) -> dict[str, Any]:
    comment: dict[str, Any] = {
        "id": 99,
        "body": text,
        "user": {"login": login, "type": user_type},
        "updated_at": github_now(),
    }
    if association is not None:
        comment["author_association"] = association
    return {
        "action": "created",
        "issue": issue(),
        "comment": comment,
        "repository": {"full_name": "octo/kit", "id": GITHUB_REPOSITORY_ID},
        "sender": {"login": login, "type": user_type},
    }


def test_ping_answers_200(aws: SimpleNamespace) -> None:
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    assert call(github_event(body, event="ping")) == (200, {"status": "pong"})
    assert queued(aws) == []


def test_label_trigger_enqueues_one_task(aws: SimpleNamespace) -> None:
    body = json.dumps(labeled_payload()).encode()
    status, doc = call(github_event(body, delivery="d-label"))
    assert status == 202 and doc["status"] == "queued"
    msgs = queued(aws)
    assert len(msgs) == 1
    task = json.loads(msgs[0]["Body"])
    assert task["repository"] == "octo/kit" and task["issue_number"] == 7
    assert task["title"] == "CI broken" and task["body"] == "Build fails on arm64"
    assert task["author"] == "bob" and task["issue_author"] == "alice"
    assert task["delivery_id"] == "d-label" and task["comment"] is None
    # The worker stores its reply under the same key the receiver deduplicates on.
    assert task["idempotency_key"] == hashlib.sha256(body).hexdigest()
    expected = "gh-" + hashlib.sha256(f"{GITHUB_REPOSITORY_ID}#7".encode()).hexdigest()
    assert doc["session_id"] == expected and 33 <= len(expected) <= 256


def test_mention_in_comment_enqueues_with_comment(aws: SimpleNamespace) -> None:
    body = json.dumps(comment_payload("Hey /agent why does the build fail?")).encode()
    status, doc = call(github_event(body, event="issue_comment", delivery="d-c"))
    assert (status, doc["status"]) == (202, "queued")
    task = json.loads(queued(aws)[0]["Body"])
    assert task["comment"] == "Hey /agent why does the build fail?" and task["author"] == "carol"


def test_base64_encoded_body_is_verified_on_raw_bytes(aws: SimpleNamespace) -> None:
    body = json.dumps(labeled_payload()).encode()
    status, doc = call(github_event(body, b64=True))
    assert (status, doc["status"]) == (202, "queued")


def test_replay_of_a_delivery_enqueues_once(aws: SimpleNamespace) -> None:
    body = json.dumps(labeled_payload()).encode()
    first = call(github_event(body, delivery="d-replay"))
    second = call(github_event(body, delivery="d-replay"))
    assert first[1]["status"] == "queued"
    assert second == (202, {"status": "duplicate", "delivery_id": "d-replay"})
    assert len(queued(aws)) == 1
    # The unsigned delivery id is not the key: the same signed body under a new id is still a replay.
    assert call(github_event(body, delivery="d-forged")) == (
        202,
        {"status": "duplicate", "delivery_id": "d-forged"},
    )
    assert len(queued(aws)) == 1
    # A different (signed) body is a new request, whatever its delivery id.
    other = json.dumps(labeled_payload(number=9)).encode()
    assert call(github_event(other, delivery="d-replay"))[1]["status"] == "queued"
    assert len(queued(aws)) == 2 and idempotency_items(aws) == 2


@pytest.mark.parametrize(
    "signature",
    [None, "sha256=" + "0" * 64, sign(b"other body", SECRET), "sha1=abc", sign(b"x", "wrong")],
    ids=["missing", "zeros", "other-body", "wrong-algo", "wrong-secret"],
)
def test_bad_or_missing_signature_is_401_and_touches_nothing(
    aws: SimpleNamespace, signature: str | None
) -> None:
    body = json.dumps(labeled_payload()).encode()
    status, doc = call(github_event(body, signature=signature))
    assert status == 401 and doc["error"] == "invalid_signature"
    assert queued(aws) == [] and idempotency_items(aws) == 0


@pytest.mark.parametrize("missing", ["event", "delivery"])
def test_missing_github_headers_is_400(aws: SimpleNamespace, missing: str) -> None:
    body = json.dumps(labeled_payload()).encode()
    kwargs: dict[str, Any] = {missing: None}
    status, doc = call(github_event(body, **kwargs))
    assert status == 400 and doc["error"] == "bad_request"
    assert ("X-GitHub-Event" if missing == "event" else "X-GitHub-Delivery") in doc["message"]
    assert queued(aws) == []


def test_truncated_body_with_original_signature_is_401(aws: SimpleNamespace) -> None:
    body = json.dumps(labeled_payload()).encode()
    event = github_event(body[: len(body) // 2], signature=sign(body, SECRET))
    assert call(event)[0] == 401


def test_truncated_body_signed_as_sent_is_400(aws: SimpleNamespace) -> None:
    body = json.dumps(labeled_payload()).encode()[:-20]
    status, doc = call(github_event(body))
    assert status == 400 and "not valid JSON" in doc["message"]
    assert queued(aws) == []


def test_wrong_payload_shape_is_400(aws: SimpleNamespace) -> None:
    body = json.dumps(
        {"action": "labeled", "repository": {"full_name": "octo/kit", "id": GITHUB_REPOSITORY_ID}}
    ).encode()
    status, doc = call(github_event(body))
    assert status == 400 and "issue" in doc["message"]


def test_oversize_body_is_413(aws: SimpleNamespace) -> None:
    payload = labeled_payload()
    payload["issue"]["body"] = "x" * (1024 * 1024)
    body = json.dumps(payload).encode()
    status, doc = call(github_event(body))
    assert status == 413 and doc["error"] == "payload_too_large"
    assert queued(aws) == []


def test_form_encoded_delivery_is_415(aws: SimpleNamespace) -> None:
    body = b"payload=" + urllib.parse.quote(json.dumps(labeled_payload())).encode()
    status, doc = call(github_event(body, content_type="application/x-www-form-urlencoded"))
    assert status == 415 and "application/json" in doc["message"]


@pytest.mark.parametrize(
    ("event", "payload", "reason"),
    [
        ("push", {"ref": "refs/heads/main"}, "not handled"),
        ("issues", labeled_payload(label="bug"), "without the trigger"),
        ("issue_comment", comment_payload("no trigger word here"), "does not mention"),
        ("issue_comment", comment_payload("/agentfoo is not /agent-x"), "does not mention"),
        ("issue_comment", comment_payload("/agent again", login="agentkit-bot"), "bot itself"),
        ("issue_comment", comment_payload("/agent again", login="ci[bot]", user_type="Bot"), "bot itself"),
        ("issue_comment", comment_payload("answer /agent\n" + trackers.AGENT_REPLY_MARKER), "bot itself"),
        ("issues", {**labeled_payload(), "action": "closed"}, "without the trigger"),
    ],
    ids=[
        "unknown-event",
        "other-label",
        "no-mention",
        "mention-substring",
        "bot-login",
        "bot-type",
        "marker",
        "closed",
    ],
)
def test_unsupported_or_untriggered_events_are_202_ignored(
    aws: SimpleNamespace, event: str, payload: dict[str, Any], reason: str
) -> None:
    status, doc = call(github_event(json.dumps(payload).encode(), event=event))
    assert status == 202 and doc["status"] == "ignored" and reason in doc["reason"]
    assert queued(aws) == [] and idempotency_items(aws) == 0


def test_opened_issue_triggers_by_mention_only(aws: SimpleNamespace) -> None:
    opened = {**labeled_payload(), "action": "opened"}
    opened.pop("label")
    status, doc = call(github_event(json.dumps(opened).encode(), delivery="o-1"))
    assert (status, doc["status"]) == (202, "ignored") and "without the trigger" in doc["reason"]
    mention = {**opened, "issue": issue(8, (), body="/agent please triage")}
    assert call(github_event(json.dumps(mention).encode(), delivery="o-2"))[1]["status"] == "queued"
    assert len(queued(aws)) == 1


def test_issue_opened_with_the_label_runs_once(aws: SimpleNamespace) -> None:
    """GitHub sends ``opened`` (labels already set) and then ``labeled``: exactly one task."""
    opened = {**labeled_payload(), "action": "opened"}
    opened.pop("label")
    assert call(github_event(json.dumps(opened).encode(), delivery="g-1"))[1]["status"] == "ignored"
    assert call(github_event(json.dumps(labeled_payload()).encode(), delivery="g-2"))[1]["status"] == "queued"
    [msg] = queued(aws)
    assert json.loads(msg["Body"])["event"] == "issues.labeled"


@pytest.mark.parametrize(
    ("payload", "event", "association"),
    [
        (comment_payload("/agent run", association="NONE"), "issue_comment", "NONE"),
        (comment_payload("/agent run", association="CONTRIBUTOR"), "issue_comment", "CONTRIBUTOR"),
        (comment_payload("/agent run", association="FIRST_TIME_CONTRIBUTOR"), "issue_comment", "FIRST_"),
        (comment_payload("/agent run", association=None), "issue_comment", "NONE"),
        (
            {
                "action": "opened",
                "issue": issue(5, body="/agent do my homework", association="NONE"),
                "repository": {"full_name": "octo/kit", "id": GITHUB_REPOSITORY_ID},
                "sender": {"login": "alice", "type": "User"},
            },
            "issues",
            "NONE",
        ),
    ],
    ids=["none", "contributor", "first-time", "missing-field", "opened-by-stranger"],
)
def test_mentions_from_outsiders_are_ignored(
    aws: SimpleNamespace, payload: dict[str, Any], event: str, association: str
) -> None:
    status, doc = call(github_event(json.dumps(payload).encode(), event=event))
    assert (status, doc["status"]) == (202, "ignored")
    assert (
        f"author association {association}" in doc["reason"]
        and "COLLABORATOR, MEMBER, OWNER" in doc["reason"]
    )
    assert queued(aws) == [] and idempotency_items(aws) == 0


@pytest.mark.parametrize("association", ["OWNER", "MEMBER", "COLLABORATOR", "member"])
def test_mentions_from_allowed_associations_trigger(aws: SimpleNamespace, association: str) -> None:
    body = json.dumps(comment_payload("/agent go", association=association)).encode()
    assert call(github_event(body, event="issue_comment"))[1]["status"] == "queued"


def test_label_trigger_needs_no_association(aws: SimpleNamespace) -> None:
    """Only triage+ accounts can label; an outsider's issue is answered once a maintainer labels it."""
    payload = labeled_payload()
    payload["issue"] = issue(7, ("agent",), association="NONE")
    assert call(github_event(json.dumps(payload).encode()))[1]["status"] == "queued"


def test_allowed_associations_come_from_the_environment(aws: SimpleNamespace) -> None:
    def rewire(value: str) -> None:
        configure_receiver(aws, {**aws.tracker_env, "ALLOWED_ASSOCIATIONS": value})

    rewire("OWNER")
    member = json.dumps(comment_payload("/agent go", association="MEMBER")).encode()
    assert "author association MEMBER" in call(github_event(member, event="issue_comment"))[1]["reason"]
    rewire("*")
    stranger = json.dumps(comment_payload("/agent go", association="NONE")).encode()
    assert call(github_event(stranger, event="issue_comment"))[1]["status"] == "queued"
    with pytest.raises(trackers.TrackerConfigError, match=r"unknown author association.*ADMIN"):
        rewire("OWNER,ADMIN")
    with pytest.raises(trackers.TrackerConfigError, match="empty"):
        rewire(" , ")


def test_empty_webhook_secret_is_a_500_not_an_accept(aws: SimpleNamespace) -> None:
    aws.sm.put_secret_value(SecretId="agentkit/github-webhook-secret", SecretString="  ")
    configure_receiver(aws, aws.tracker_env)
    body = json.dumps(labeled_payload()).encode()
    assert call(github_event(body, signature=sign(body, "  ")))[0] == 500
    assert queued(aws) == []


def test_tracker_rejects_config_without_any_trigger() -> None:
    with pytest.raises(trackers.TrackerConfigError):
        trackers.GitHubTracker(trackers.TrackerOptions(trigger_label="", trigger_mention=""))


def test_documented_payload_shapes_are_accepted(aws: SimpleNamespace) -> None:
    """The full GitHub example shapes (many more fields than the models declare) parse and queue."""
    comment = json.dumps(fixture("github", "issue_comment_created")).encode()
    labeled = json.dumps(fixture("github", "issues_labeled")).encode()
    assert call(github_event(comment, event="issue_comment", delivery="d-f1"))[1]["status"] == "queued"
    assert call(github_event(labeled, event="issues", delivery="d-f2"))[1]["status"] == "queued"
    tasks = [json.loads(m["Body"]) for m in queued(aws)]
    assert {t["event"] for t in tasks} == {"issue_comment.created", "issues.labeled"}
    assert {t["html_url"] for t in tasks} == {
        "https://github.com/octo/kit/issues/7#issuecomment-492700400",
        "https://github.com/octo/kit/issues/7",
    }


QUOTED = [
    "> /agent please fix this\n\nI agree with the above.",
    "> Someone wrote\n/agent lazy continuation of the quote",
    "Run `/agent` to ask the bot.",
    "Like this:\n\n```\n/agent explain the failure\n```",
    "Like this:\n\n~~~text\n/agent explain\n~~~",
    "Example:\n\n    /agent indented code block",
    "<blockquote>/agent quoted in HTML</blockquote>",
    "<!-- /agent hidden --> nothing to see",
    "On Mon, Carol wrote:\n> /agent go\n> thanks",
]


@pytest.mark.parametrize("text", QUOTED, ids=[f"quoted-{i}" for i in range(len(QUOTED))])
def test_quoted_or_code_triggers_do_not_start_a_run(aws: SimpleNamespace, text: str) -> None:
    body = json.dumps(comment_payload(text)).encode()
    status, doc = call(github_event(body, event="issue_comment"))
    assert (status, doc["status"]) == (202, "ignored") and "does not mention" in doc["reason"]
    assert queued(aws) == []


@pytest.mark.parametrize(
    "text",
    [
        "> quoted context\n\n/agent now answer",
        "See `code` and then /agent go",
        "```\nx\n```\n/agent after code",
    ],
    ids=["after-quote", "beside-code", "after-fence"],
)
def test_an_unquoted_trigger_next_to_quotes_still_runs(aws: SimpleNamespace, text: str) -> None:
    body = json.dumps(comment_payload(text)).encode()
    assert call(github_event(body, event="issue_comment"))[1]["status"] == "queued"


def test_quoted_trigger_in_a_new_issue_body_is_ignored(aws: SimpleNamespace) -> None:
    payload = {
        "action": "opened",
        "issue": issue(body="> /agent from the template"),
        "repository": {"full_name": "octo/kit", "id": GITHUB_REPOSITORY_ID},
        "sender": {"login": "alice", "type": "User"},
    }
    assert call(github_event(json.dumps(payload).encode()))[1]["status"] == "ignored"
