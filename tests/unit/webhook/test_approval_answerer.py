"""``by``, who answered an approval as the runtime records it: the tracker's immutable id goes with the name where
the tracker gives one, and the result is always a ``by`` the runtime's request models accept."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.protocol import ApproveSpec, WithdrawSpec
from webhook.fix.approvals import BY_MAX, answerer
from webhook.trackers import AgentTask

APPROVAL_ID = "apv-" + "0" * 20


def task(tracker: str, author: str, author_id: str = "") -> AgentTask:
    fields: dict[str, Any] = {
        "tracker": tracker,
        "repository": "SP" if tracker == "jira" else "octo/kit",
        "issue_number": 9,
        "scope_id": "sp",
        "issue_id": "10009",
        "title": "t",
        "comment": f"/agent approve {APPROVAL_ID}",
        "author": author,
        "author_id": author_id,
        "delivery_id": "d-1",
        "event": "comment_created",
    }
    return AgentTask(**fields)


def test_two_jira_accounts_with_one_display_name_are_two_approvers() -> None:
    first = answerer(task("jira", "Noah Berg", "5b10ac8d82e05b22cc7d4ef6"))
    second = answerer(task("jira", "Noah Berg", "712020:0e3a5f9c-41d7-4c2b-9d5e-2f6a8b1c7d90"))
    assert first == "jira:Noah Berg (5b10ac8d82e05b22cc7d4ef6)"
    assert second == "jira:Noah Berg (712020:0e3a5f9c-41d7-4c2b-9d5e-2f6a8b1c7d90)"


def test_gitlab_carries_the_user_id_and_github_keeps_the_login() -> None:
    assert answerer(task("gitlab", "maint", "3")) == "gitlab:maint (3)"
    assert answerer(task("github", "dave")) == "github:dave"


@pytest.mark.parametrize(
    ("tracker", "author", "author_id"),
    [
        ("jira", "N" * 400, "712020:" + "a" * 121),  # the longest id a task holds (128)
        ("gitlab", "m" * 300, "9" * 20),
        ("github", "d" * 300, ""),
        ("jira", "", "5b10ac8d82e05b22cc7d4ef6"),  # no display name: the id alone
    ],
)
def test_a_long_name_is_shortened_never_the_id_and_the_runtime_accepts_it(
    tracker: str, author: str, author_id: str
) -> None:
    by = answerer(task(tracker, author, author_id))
    assert len(by) <= BY_MAX and by.startswith(f"{tracker}:")
    if author_id:
        assert by.endswith(f"({author_id})") if author else by == f"{tracker}:{author_id}"
    # The runtime's own validation of an answer's and a withdrawal's ``by`` (runtime/protocol.py).
    assert ApproveSpec(id=APPROVAL_ID, by=by).by == by
    assert WithdrawSpec(id=APPROVAL_ID, by=by).by == by
