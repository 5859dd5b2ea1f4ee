"""Hostile but correctly signed deliveries through the real receiver: none may start a paid run, hang the
receiver or crash it. (The receiver half of the attack classes; replies and the worker:
``test_attacks_worker.py``.)

Every delivery is signed with the deployment's secret: the attacker is someone who can write on an
issue, a repository or site that shares the secret, or a captured delivery replayed later.
"""

from __future__ import annotations

import copy
import gc
import json
import time
from types import SimpleNamespace
from typing import Any

import pytest

from harness.tracker_apis import GitLabApi
from harness.webhook_scene import github_now
from tests.unit.webhook.support import (
    GITHUB_REPOSITORY_ID,
    GITLAB_PROJECT_ID,
    SECRET_NAMES,
    call,
    configure_receiver,
    fixture,
    fresh_jira,
    github_event,
    gitlab_event,
    idempotency_items,
    jira_event,
    queued,
)
from webhook import receiver, settings, wiring
from webhook.settings import ENV

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

#: The size of the timed notes: the receiver's body limit (1 MiB) less room for the JSON around them.
NOTE_CHARS = 1_000_000
#: How much longer than a benign note of the same size a hostile one may take through the receiver
#: (before the scans were linear: over a thousand times longer; a 1 MB note took about 90 s).
MAX_SLOWDOWN = 5.0
BENIGN_LINE = "lorem ipsum dolor sit amet\n"


def filled(head: str, unit: str) -> str:
    """``head`` then ``unit`` repeated, about :data:`NOTE_CHARS` bytes once JSON-encoded."""
    return head + unit * (NOTE_CHARS // (len(json.dumps(unit)) - 2))


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def gitlab_note(text: str, user_id: int = 1, project_id: int = GITLAB_PROJECT_ID) -> bytes:
    payload = fixture("gitlab", "note_on_issue")
    payload["object_attributes"]["note"] = text
    payload["user"]["id"] = user_id
    payload["project"]["id"] = project_id
    return encode(payload)


def github_comment(text: str, *, association: str = "MEMBER", repo_id: int = GITHUB_REPOSITORY_ID) -> bytes:
    payload = fixture("github", "issue_comment_created")
    payload["comment"]["body"] = text
    payload["comment"]["author_association"] = association
    payload["repository"]["id"] = repo_id
    return encode(payload)


def jira_comment(body: Any, **author: Any) -> dict[str, Any]:
    payload = fresh_jira(fixture("jira", "comment_created"))
    payload["comment"]["body"] = body
    payload["comment"]["author"].update(author)
    return payload


def best_time(event: dict[str, Any], runs: int = 5) -> float:
    """The fastest of ``runs`` receiver calls (the least disturbed by other load on the machine), garbage
    collection off as ``timeit`` does."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            start = time.perf_counter()
            status, doc = call(event)
            best = min(best, time.perf_counter() - start)
            assert status == 202 and doc["status"] == "ignored", doc
    finally:
        gc.enable()
    return best


# --------------------------------------------------------------------------- 1: linear, cheap checks first
HOSTILE_MARKDOWN = {
    "unclosed <pre tags": "<pre",
    "unclosed <code attributes": "<code x=",
}


@pytest.mark.parametrize("unit", HOSTILE_MARKDOWN.values(), ids=HOSTILE_MARKDOWN.keys())
def test_hostile_gitlab_note_of_a_non_member_costs_what_a_benign_one_does(
    aws: SimpleNamespace, gitlab_api: GitLabApi, unit: str
) -> None:
    # A non-member (user 77) writes the mention, then a megabyte built to make quote stripping backtrack.
    hostile, benign = filled("/agent ", unit), filled("/agent ", BENIGN_LINE)
    benign_s = best_time(gitlab_event(gitlab_note(benign, user_id=77)))
    hostile_s = best_time(gitlab_event(gitlab_note(hostile, user_id=77)))
    assert hostile_s / benign_s < MAX_SLOWDOWN, f"hostile {hostile_s:.3f}s vs benign {benign_s:.3f}s"
    assert queued(aws) == []


HOSTILE_WIKI = {"unclosed monospace": "{{", "unclosed code macros": "{code:", "blank lines": "\n"}


@pytest.mark.parametrize("unit", HOSTILE_WIKI.values(), ids=HOSTILE_WIKI.keys())
@pytest.mark.parametrize("account_type", ["customer", "atlassian"])
def test_hostile_jira_comment_costs_what_a_benign_one_does(
    aws: SimpleNamespace, unit: str, account_type: str
) -> None:
    # A service-desk customer's comment must be refused before it is parsed at all; a licensed user's
    # is parsed (its only mention is quoted), and the parse must stay linear.
    head = "/agent " if account_type == "customer" else "{quote}/agent{quote} "
    hostile, benign = filled(head, unit), filled(head, BENIGN_LINE)
    hostile_doc = jira_comment(hostile, accountType=account_type)
    benign_doc = jira_comment(benign, accountType=account_type)
    benign_s = best_time(jira_event(encode(benign_doc)))
    hostile_s = best_time(jira_event(encode(hostile_doc)))
    assert hostile_s / benign_s < MAX_SLOWDOWN, f"hostile {hostile_s:.3f}s vs benign {benign_s:.3f}s"


# --------------------------------------------------------------------------- 3: restricted Jira comments
def test_jira_comment_restricted_to_a_role_is_not_answered_in_public(aws: SimpleNamespace) -> None:
    payload = jira_comment("/agent summarise the incident")
    payload["comment"]["visibility"] = {
        "type": "role",
        "value": "Administrators",
        "identifier": "Administrators",
    }
    status, doc = call(jira_event(encode(payload)))
    assert (status, doc["status"]) == (202, "ignored") and "restricted" in doc["reason"]
    assert queued(aws) == []


# --------------------------------------------------------------------------- 5 and 6: GitHub label trigger
def github_issue_event(action: str, *, sender: str, association: str, body: str = "/agent go") -> bytes:
    payload = fixture("github", "issues_labeled")
    payload["action"] = action
    payload["issue"]["body"] = body
    payload["issue"]["author_association"] = association
    payload["issue"]["labels"] = [{"name": "agent"}]
    payload["sender"]["login"] = sender
    if action == "opened":
        payload.pop("label")
    return encode(payload)


def test_issue_opened_with_the_label_and_the_mention_runs_once(aws: SimpleNamespace) -> None:
    opened = github_issue_event("opened", sender="alice", association="OWNER")
    labeled = github_issue_event("labeled", sender="alice", association="OWNER")
    statuses = [
        call(github_event(opened, delivery="d-open"))[1],
        call(github_event(labeled, delivery="d-lab"))[1],
    ]
    assert [s["status"] for s in statuses] == ["ignored", "queued"]
    assert len(queued(aws)) == 1


def test_label_applied_by_an_outsiders_issue_template_does_not_trigger(aws: SimpleNamespace) -> None:
    # An issue form applies the label for its author: the labeled event's sender is the author.
    body = github_issue_event("labeled", sender="alice", association="NONE")
    status, doc = call(github_event(body))
    assert (status, doc["status"]) == (202, "ignored") and "NONE" in doc["reason"]
    assert queued(aws) == []
    # A maintainer labelling the outsider's issue (labels need triage access) does trigger.
    maintainer = github_issue_event("labeled", sender="bob", association="NONE")
    assert call(github_event(maintainer, delivery="d-2"))[1]["status"] == "queued"


# --------------------------------------------------------------------------- 7: pinned before any cost
def test_github_event_of_another_repository_is_ignored_before_any_cost(aws: SimpleNamespace) -> None:
    status, doc = call(github_event(github_comment("/agent help", repo_id=999), event="issue_comment"))
    assert (status, doc["status"]) == (202, "ignored") and "999" in doc["reason"]
    assert queued(aws) == [] and idempotency_items(aws) == 0


def test_gitlab_event_of_another_project_is_ignored_before_the_members_api(
    aws: SimpleNamespace, gitlab_api: GitLabApi
) -> None:
    status, doc = call(gitlab_event(gitlab_note("/agent help", project_id=6)))
    assert (status, doc["status"]) == (202, "ignored") and "project id 6" in doc["reason"]
    assert queued(aws) == [] and gitlab_api.requests == []


def test_jira_event_of_another_site_is_not_answered_here(aws: SimpleNamespace) -> None:
    payload = jira_comment("/agent help")
    payload["issue"]["self"] = "https://other.atlassian.net/rest/api/2/issue/10148"
    status, doc = call(jira_event(encode(payload)))
    assert (status, doc["status"]) == (202, "ignored") and "site" in doc["reason"]
    assert queued(aws) == []


# --------------------------------------------------------------------------- 8: immutable ids
def test_recreated_repository_of_the_same_name_gets_another_session(aws: SimpleNamespace) -> None:
    env = {**aws.tracker_env, ENV["github_repository_ids"]: f"{GITHUB_REPOSITORY_ID},4242"}
    configure_receiver(aws, env)
    original = call(github_event(github_comment("/agent a"), event="issue_comment", delivery="d-a"))[1]
    recreated = github_comment("/agent b", repo_id=4242)  # same owner/name and issue number
    other = call(github_event(recreated, event="issue_comment", delivery="d-b"))[1]
    renamed_payload = json.loads(github_comment("/agent c"))
    renamed_payload["repository"]["full_name"] = "octo/renamed"
    renamed = call(github_event(encode(renamed_payload), event="issue_comment", delivery="d-c"))[1]
    assert original["session_id"] != other["session_id"]
    assert original["session_id"] == renamed["session_id"] and len(original["session_id"]) >= 33
    actors = {json.loads(m["Body"])["scope_id"] for m in queued(aws)}
    assert actors == {str(GITHUB_REPOSITORY_ID), "4242"}


def test_reused_gitlab_path_and_moved_jira_issue_keep_their_sessions_apart(
    aws: SimpleNamespace, gitlab_api: GitLabApi
) -> None:
    env = {**aws.tracker_env, ENV["gitlab_project_ids"]: f"{GITLAB_PROJECT_ID},6"}
    configure_receiver(aws, env)
    gitlab_api.members[("6", 1)] = 30
    first = call(gitlab_event(gitlab_note("/agent a")))[1]
    reused = call(gitlab_event(gitlab_note("/agent b", project_id=6), **{"idempotency-key": "k2"}))[1]
    assert first["session_id"] != reused["session_id"]
    jira_a = jira_comment("/agent a")
    jira_b = copy.deepcopy(jira_a)
    jira_b["issue"]["id"] = "20001"  # another issue that now carries the key SP-9
    jira_b["issue"]["self"] = "https://example.atlassian.net/rest/api/2/issue/20001"
    one = call(jira_event(encode(jira_a)))[1]
    two = call(jira_event(encode(jira_b)))[1]
    assert one["session_id"] != two["session_id"]


# --------------------------------------------------------------------------- 9, 10: quoted, code, hidden
QUOTED = {
    "gitlab multi-line quote": ">>>\nquoted text\n\n/agent go\n>>>",
    "quote in a bullet": "- > /agent go",
    "quote in an ordered item": "1. > /agent go",
    "fence in an ordered list item": "1. item\n    ```\n    /agent go\n    ```",
    "code span over lines": "`x\n/agent go\nx`",
    "kbd": "<kbd>/agent go</kbd>",
    "samp": "<samp>/agent go</samp>",
    "tt": "<tt>/agent go</tt>",
    "q": "<q>/agent go</q>",
    "link reference definition": "[//]: # (/agent go)",
    "zero-width space": "\u200b/agent go",
    "bidi override": "\u202e/agent go",
}


@pytest.mark.parametrize("text", QUOTED.values(), ids=QUOTED.keys())
def test_quoted_code_or_invisible_trigger_does_not_run(
    aws: SimpleNamespace, gitlab_api: GitLabApi, text: str
) -> None:
    status, doc = call(gitlab_event(gitlab_note(text)))
    assert (status, doc["status"]) == (202, "ignored"), doc
    status, doc = call(github_event(github_comment(text), event="issue_comment"))
    assert (status, doc["status"]) == (202, "ignored"), doc
    assert queued(aws) == []


# --------------------------------------------------------------------------- 12: replays after the window
def test_jira_delivery_older_than_the_window_less_the_future_skew_is_stale(aws: SimpleNamespace) -> None:
    # Dated 200 s in the future (within the accepted skew), its idempotency record would expire 200 s
    # before the delivery itself is too old: the age limit must leave that margin.
    payload = jira_comment("/agent again")
    payload["timestamp"] = int((time.time() - settings.DEFAULT_IDEMPOTENCY_TTL_SECONDS + 200) * 1000)
    status, doc = call(jira_event(encode(payload)))
    assert (status, doc["error"]) == (400, "stale_delivery")


def test_github_body_replayed_after_the_window_is_stale(aws: SimpleNamespace) -> None:
    # GitHub signs no delivery time, but the comment's updated_at is signed with the body.
    payload = json.loads(github_comment("/agent again"))
    payload["comment"]["updated_at"] = github_now(200 - settings.DEFAULT_IDEMPOTENCY_TTL_SECONDS)
    status, doc = call(github_event(encode(payload), event="issue_comment"))
    assert (status, doc["error"]) == (400, "stale_delivery")
    labeled = json.loads(github_issue_event("labeled", sender="bob", association="OWNER"))
    labeled["issue"]["updated_at"] = github_now(-8 * 24 * 3600)
    assert call(github_event(encode(labeled)))[1]["error"] == "stale_delivery"
    assert queued(aws) == []


# --------------------------------------------------------------------------- 13: cross-tracker loops
SYNCED_REPLIES = {
    "jira reply synced to github": "/agent is mentioned in the answer\n\n_agentkit reply · session jira-4f2…_",
    "github footer synced without its html comment": "/agent again\n\nagentkit · session gh-1163a12a665f…",
}


@pytest.mark.parametrize("text", SYNCED_REPLIES.values(), ids=SYNCED_REPLIES.keys())
def test_reply_synced_from_another_tracker_is_not_answered(aws: SimpleNamespace, text: str) -> None:
    assert call(github_event(github_comment(text), event="issue_comment"))[1]["status"] == "ignored"
    assert call(jira_event(encode(jira_comment(text))))[1]["status"] == "ignored"
    assert queued(aws) == []


# --------------------------------------------------------------------------- 17, 18: crashes
def test_characters_sqs_refuses_are_replaced_not_fatal(aws: SimpleNamespace) -> None:
    raw = github_comment("/agent look at this\uffff").replace(b"\\uffff", b"\\uffff \\ud800")
    status, doc = call(github_event(raw, event="issue_comment"))
    assert (status, doc["status"]) == (202, "queued")
    [message] = queued(aws)
    assert json.loads(message["Body"])["comment"] == "/agent look at this\ufffd \ufffd"


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p.__setitem__("timestamp", 10**400),
        lambda p: p["comment"].__setitem__("body", {"type": "doc", "content": 5}),
        lambda p: p["comment"].__setitem__(
            "body",
            {"type": "doc", "content": [{"type": "mention", "attrs": ["x"]}, {"type": "text", "text": 7}]},
        ),
    ],
    ids=[
        "huge timestamp",
        "content not a list",
        "attrs and text of the wrong type",
    ],
)
def test_odd_but_signed_jira_shapes_get_a_contract_answer(aws: SimpleNamespace, change: Any) -> None:
    payload = jira_comment("/agent x")
    change(payload)
    status, doc = call(jira_event(encode(payload)))
    assert status in (202, 400) and ("status" in doc or "error" in doc)


# --------------------------------------------------------------------------- 19: unusable secrets
def put_secret(aws: SimpleNamespace, var: str, value: str) -> None:
    aws.sm.put_secret_value(SecretId=SECRET_NAMES[var][0], SecretString=value)
    configure_receiver(aws, aws.tracker_env)  # a fresh secret cache, as after a cold start


def test_gitlab_signing_token_without_a_key_is_refused_not_ignored(aws: SimpleNamespace) -> None:
    put_secret(
        aws,
        ENV["gitlab_webhook_secret_name"],
        json.dumps({"token": "gl-webhook-token-123", "signing_token": "whsec_"}),
    )
    status, doc = call(gitlab_event(gitlab_note("/agent unsigned")))  # token only, no webhook-signature
    assert (status, doc["error"]) == (500, "misconfigured") and "no key" in doc["message"]
    assert queued(aws) == []
    problems = receiver.check_secrets(
        wiring.build_trackers("receiver", env=aws.tracker_env, secrets_client=aws.sm)
    )
    assert any(p.startswith("gitlab:") for p in problems)


def test_webhook_secret_stored_with_a_newline_is_named_not_a_signature_mismatch(aws: SimpleNamespace) -> None:
    put_secret(aws, ENV["github_webhook_secret_name"], "s3cr3t-webhook\n")
    status, doc = call(github_event(github_comment("/agent x"), event="issue_comment"))
    assert (status, doc["error"]) == (500, "misconfigured") and "whitespace" in doc["message"]
    problems = receiver.check_secrets(
        wiring.build_trackers("receiver", env=aws.tracker_env, secrets_client=aws.sm)
    )
    assert problems == [
        "github: github webhook secret has leading or trailing whitespace (a newline stored with it?); store the exact value"
    ]
