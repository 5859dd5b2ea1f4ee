"""Fix jobs and approvals asked for and answered on a Jira issue, the change proposed on the mapped GitHub repository.

The scene of tests/functional/test_webhook_approvals.py (signed deliveries → receiver → SQS → worker → the real
``python -m runtime`` with the fake CLI behind the AgentCore data-plane stand-in → job events on SQS → reporter;
moto for SQS, DynamoDB and Secrets Manager), driven by signed Jira ``comment_created`` deliveries on issue
``SP-9``. Project ``SP`` is mapped to the GitHub stand-in's ``octo/kit`` (``JIRA_REPOSITORIES``), naming two
accounts (``fix_account_ids``) and one group (``fix_group``): only they may start a fix or answer its approval, and
under the two-person rule not the account that asked (known by its account id: display names are neither unique
nor fixed). Progress comments, approval cards and refusals are Jira comments (the stand-in accepts only valid ADF);
the pull request opens on GitHub.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.adf_check import adf_errors
from harness.webhook_scene import LAMBDA_CONTEXT, sqs_event
from tests.functional.fix_flow import (
    EDIT,
    FIXED,
    JIRA_ACCOUNTS,
    TOKEN_CHECKED_MARKS,
    adf_text,
    assert_no_token_reached_the_runtime,
    jira_comment,
    make_world,
    pump_events,
    run_worker,
)
from tests.functional.test_webhook_approvals import items, paused_job, pump_result
from tests.unit.webhook.support import call
from webhook import reporter

pytest_plugins = ["tests.functional.fix_flow"]  # the fixture TOKEN_CHECKED_MARKS names
pytestmark = [pytest.mark.timeout(180), *TOKEN_CHECKED_MARKS]
APPROVAL = re.compile(r"apv-[0-9a-f]{20}")


@pytest.fixture
def plain(tmp_path: Path, moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """The scene without approval rules: a fix runs to its pull request."""
    with make_world(tmp_path, moto_server, monkeypatch, {}) as world:
        yield world


@pytest.fixture
def world(tmp_path: Path, moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """The scene whose runtime asks for approval before an edit under ``src/``."""
    with make_world(tmp_path, moto_server, monkeypatch, {"paths": ["src/**"]}) as world:
        yield world


def texts(world: SimpleNamespace) -> list[str]:
    """Every comment the Jira stand-in accepted, as text, oldest first."""
    return [adf_text(c["body"]) for c in world.jira.replies]


def replies(world: SimpleNamespace) -> list[str]:
    """The Jira comments other than the progress comment (refusals), oldest first."""
    return texts(world)[1:]


def assert_every_jira_body_was_valid_adf(world: SimpleNamespace) -> None:
    """Every comment the kit posted or edited on Jira was valid ADF as first sent (the adapter sends a refused
    body again as plain paragraphs, which would hide a converter's mistake from the stand-in's answer)."""
    sent = [r for r in world.jira.requests if r["method"] in ("POST", "PUT")]
    assert sent
    for request in sent:
        assert adf_errors(json.loads(request["body"])["body"]) == [], request["path"]


def fix_request(world: SimpleNamespace, comment_id: int = 20101) -> str:
    """``/agent fix`` by mia (named by the mapping) whose scripted edit needs approval; the job pauses. Returns the
    paused result's event body."""
    status, doc = call(jira_comment(f"/agent fix the add function {EDIT}", comment_id)[0])
    assert (status, doc["status"]) == (202, "queued"), doc
    run_worker(world)
    result = pump_result(world)
    assert json.loads(result)["result"]["subtype"] == "awaiting_approval"
    return result


def pause(world: SimpleNamespace) -> tuple[str, dict[str, Any]]:
    """The paused job's approval id and its card (the Jira progress comment), which is posted once."""
    result = fix_request(world)
    [card] = world.jira.replies
    [approval_id] = set(APPROVAL.findall(adf_text(card["body"])))
    edits = card.get("edits", 0)
    # SQS delivering the paused result again edits nothing and posts nothing.
    assert reporter.handler(sqs_event(result), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert card.get("edits", 0) == edits and len(world.jira.replies) == 1
    return approval_id, card


def answer(world: SimpleNamespace, text: str, comment_id: int, **who: Any) -> None:
    status, doc = call(jira_comment(text, comment_id, **who)[0])
    assert (status, doc["status"]) == (202, "queued"), doc
    run_worker(world)


def test_a_paused_jira_fix_shows_the_card_once_and_another_mapped_account_approves(
    world: SimpleNamespace,
) -> None:
    approval_id, card = pause(world)
    assert card["issue"] == "SP-9"
    text = adf_text(card["body"])
    assert text.startswith("Waiting for approval.") and "Edit" in text and "src/**" in text
    assert f"/agent approve {approval_id}" in text and "sha256:" in text
    # It says who may answer on Jira: the mapping's people (not GitHub's writers of the target repository).
    assert "The people this Jira project's repository mapping names can answer" in text
    # The model's input is one code block holding exactly the call's input as JSON.
    [block] = [n for n in card["body"]["content"] if n["type"] == "codeBlock"]
    assert json.loads(block["content"][0]["text"]) == {
        "file_path": "src/calc.py",
        "new_string": "a + b",
        "old_string": "a - b",
    }
    assert not world.github.pulls
    item = paused_job(world)
    assert item["status"]["S"] == "awaiting_approval"
    record = json.loads(item["approval"]["S"])
    assert record["id"] == approval_id and record["tool"] == "Edit"
    assert record["requester"] == JIRA_ACCOUNTS["mia"][1]

    # noah (the mapping's other account) approves; the note carries the scripted model's repeat of the call.
    answer(world, f"/agent approve {approval_id} go ahead {EDIT}", 20102, account="noah")
    resumed = world.plane.calls[-1]
    sent = json.loads(resumed["body"])
    assert "prompt" not in sent and sent["approve"]["id"] == approval_id
    # Who approved, as the runtime records it: the display name and the immutable account id.
    assert sent["approve"]["by"] == f"jira:{JIRA_ACCOUNTS['noah'][1]} ({JIRA_ACCOUNTS['noah'][0]})"
    assert sent["job"]["id"] == approval_id and sent["async"] is True
    assert resumed["session"] == world.plane.calls[0]["session"] and resumed["status"] == 202
    assert adf_text(card["body"]).startswith(f"Approved by @{JIRA_ACCOUNTS['noah'][1]}")
    decision = json.loads(paused_job(world)["approval_decision"]["S"])
    assert (decision["outcome"], decision["by_id"]) == ("approved", JIRA_ACCOUNTS["noah"][0])

    pump_result(world, approval_id)
    [pull] = world.github.pulls
    assert pull["draft"] is True and pull["base"]["ref"] == "main"
    assert world.github.branch_changes(pull["head"]["ref"]) == {"src/calc.py": FIXED}
    assert pull["html_url"] in adf_text(card["body"])  # the same Jira comment, now the answer
    assert items(world)[f"reply#{approval_id}"]["status"]["S"] == "done"
    assert len(world.jira.replies) == 1  # no other comment was posted
    assert_every_jira_body_was_valid_adf(world)
    assert_no_token_reached_the_runtime(world)

    # A replay of the approval (another comment, same id) is refused and starts nothing; on another issue of the
    # project the id names nothing.
    calls = len(world.plane.calls)
    answer(world, f"/agent approve {approval_id} {EDIT}", 20103, account="olga")
    answer(world, f"/agent approve {approval_id} {EDIT}", 20104, account="olga", issue="SP-12")
    assert len(world.plane.calls) == calls
    used, elsewhere = replies(world)
    assert "answered already" in used and world.jira.replies[1]["issue"] == "SP-9"
    assert "no tool call waiting for approval" in elsewhere and world.jira.replies[2]["issue"] == "SP-12"


def test_a_member_of_the_mapped_group_approves(world: SimpleNamespace) -> None:
    approval_id, card = pause(world)
    olga = JIRA_ACCOUNTS["olga"][0]
    answer(world, f"/agent approve {approval_id} {EDIT}", 20111, account="olga")
    # Her groups were asked of Jira, by her account id.
    asked = [r["path"] for r in world.jira.requests if r["path"].startswith("/rest/api/3/user/groups")]
    assert asked == [f"/rest/api/3/user/groups?accountId={olga.replace(':', '%3A')}"]
    name, account = JIRA_ACCOUNTS["olga"][1], JIRA_ACCOUNTS["olga"][0]
    assert json.loads(world.plane.calls[-1]["body"])["approve"]["by"] == f"jira:{name} ({account})"
    pump_result(world, approval_id)
    [pull] = world.github.pulls
    assert world.github.branch_changes(pull["head"]["ref"]) == {"src/calc.py": FIXED}
    assert pull["html_url"] in adf_text(card["body"])


def test_the_requester_cannot_approve_their_own_run(world: SimpleNamespace) -> None:
    approval_id, card = pause(world)
    calls = len(world.plane.calls)
    answer(world, f"/agent approve {approval_id} {EDIT}", 20121)  # mia asked for the fix
    assert len(world.plane.calls) == calls
    [refusal] = replies(world)
    assert "two-person rule" in refusal
    assert world.jira.replies[1]["issue"] == "SP-9"
    assert paused_job(world)["status"]["S"] == "awaiting_approval"
    assert adf_text(card["body"]).startswith("Waiting for approval.") and not world.github.pulls
    assert_every_jira_body_was_valid_adf(world)


def test_a_requester_who_renamed_themselves_is_still_the_requester_and_a_namesake_is_not(
    world: SimpleNamespace,
) -> None:
    approval_id, _ = pause(world)
    calls = len(world.plane.calls)
    # mia changed her display name after asking: her account is still the one that asked.
    answer(world, f"/agent approve {approval_id} {EDIT}", 20125, name="Mia K.")
    assert len(world.plane.calls) == calls
    [refusal] = replies(world)
    assert "two-person rule" in refusal
    assert paused_job(world)["status"]["S"] == "awaiting_approval"
    # noah, another account that happens to show the requester's name, may answer.
    answer(world, f"/agent approve {approval_id} {EDIT}", 20126, account="noah", name=JIRA_ACCOUNTS["mia"][1])
    assert len(world.plane.calls) == calls + 1
    sent = json.loads(world.plane.calls[-1]["body"])["approve"]
    assert sent["id"] == approval_id
    # The runtime's record of who approved names noah's account, not the requester whose name he shows.
    mia, noah = JIRA_ACCOUNTS["mia"][0], JIRA_ACCOUNTS["noah"][0]
    assert sent["by"] == f"jira:{JIRA_ACCOUNTS['mia'][1]} ({noah})" and mia not in sent["by"]
    job = json.loads(paused_job(world)["job"]["S"])
    assert job["author_id"] == JIRA_ACCOUNTS["mia"][0]


def test_an_account_the_mapping_does_not_name_can_neither_answer_nor_start_a_fix(
    world: SimpleNamespace,
) -> None:
    approval_id, card = pause(world)
    calls = len(world.plane.calls)
    answer(world, f"/agent approve {approval_id} {EDIT}", 20131, account="rex")  # in another group only
    answer(world, f"/agent deny {approval_id} no", 20132, account="rex")
    assert len(world.plane.calls) == calls
    approve_refusal, deny_refusal = replies(world)
    for refusal in (approve_refusal, deny_refusal):
        assert refusal.startswith("Only the people this Jira project's repository mapping names can answer")
    assert paused_job(world)["status"]["S"] == "awaiting_approval"
    assert adf_text(card["body"]).startswith("Waiting for approval.")
    # Nor can rex start a fix on another issue of the project: nothing is fetched or started.
    fetched = len(world.github.requests)
    answer(world, f"/agent fix it {EDIT}", 20133, account="rex", issue="SP-12")
    assert len(world.plane.calls) == calls and len(world.github.requests) == fetched
    refused = world.jira.replies[-1]
    assert refused["issue"] == "SP-12" and "mapping names may start a fix" in adf_text(refused["body"])
    assert_every_jira_body_was_valid_adf(world)


def test_a_denial_reaches_the_agent_and_no_pull_request_opens(world: SimpleNamespace) -> None:
    approval_id, card = pause(world)
    answer(world, f"/agent deny {approval_id} not on a Friday", 20141, account="noah")
    sent = json.loads(world.plane.calls[-1]["body"])
    assert sent["deny"] == {
        "id": approval_id,
        "by": f"jira:{JIRA_ACCOUNTS['noah'][1]} ({JIRA_ACCOUNTS['noah'][0]})",
        "reason": "not on a Friday",
    }
    assert adf_text(card["body"]).startswith(f"Denied by @{JIRA_ACCOUNTS['noah'][1]}")
    result = pump_result(world, approval_id)
    assert "was denied" in json.loads(result)["result"]["text"]
    assert not world.github.pulls
    assert "No change to propose" in adf_text(card["body"])
    decision = json.loads(paused_job(world)["approval_decision"]["S"])
    assert (decision["outcome"], decision["reason"]) == ("denied", "not on a Friday")
    assert len(world.jira.replies) == 1
    assert_every_jira_body_was_valid_adf(world)


def test_a_jira_fix_opens_the_pull_request_on_the_mapped_github_repository(plain: SimpleNamespace) -> None:
    event, _ = jira_comment(f"/agent fix the add function {EDIT}", 20001)
    status, doc = call(event)
    assert (status, doc["status"]) == (202, "queued"), doc
    run_worker(plain)
    pump_events(plain, until="result")
    [pull] = plain.github.pulls
    assert plain.github.branch_changes(pull["head"]["ref"]) == {"src/calc.py": FIXED}
    [progress] = plain.jira.replies
    assert progress["issue"] == "SP-9"
    assert pull["html_url"] in adf_text(progress["body"])
    assert_no_token_reached_the_runtime(plain)


def test_stop_while_waiting_ends_the_job_only_for_a_mapped_account(world: SimpleNamespace) -> None:
    approval_id, card = pause(world)
    answer(world, "/agent stop", 20151, account="rex")  # not named by the mapping: refused, the job waits on
    [refused] = replies(world)
    assert "mapping names may stop a fix" in refused
    assert paused_job(world)["status"]["S"] == "awaiting_approval"
    answer(world, "/agent stop", 20152, account="olga")
    assert adf_text(card["body"]).startswith(f"Stopped by @{JIRA_ACCOUNTS['olga'][1]}")
    assert paused_job(world)["status"]["S"] == "stopped"
    calls = len(world.plane.calls)
    answer(world, f"/agent approve {approval_id} {EDIT}", 20153, account="noah")
    assert len(world.plane.calls) == calls
    assert "was stopped" in replies(world)[-1]
    assert not world.github.pulls
    assert_every_jira_body_was_valid_adf(world)


def test_an_expired_approval_ends_the_job_and_its_jira_card_says_so(
    tmp_path: Path, moto_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 0.0003 h ≈ 1.1 s: the request expires while nobody answers.
    with make_world(
        tmp_path, moto_server, monkeypatch, {"paths": ["src/**"], "expiry_hours": 0.0003}
    ) as world:
        approval_id, card = pause(world)
        expires_at = json.loads(paused_job(world)["approval"]["S"])["expires_at"]
        while time.time() < expires_at + 0.1:
            time.sleep(0.1)
        calls = len(world.plane.calls)
        answer(world, f"/agent approve {approval_id} {EDIT}", 20161, account="noah")
        assert len(world.plane.calls) == calls
        [refusal] = replies(world)
        assert "expired" in refusal
        assert paused_job(world)["status"]["S"] == "expired"
        text = adf_text(card["body"])
        assert "expired at" in text and "did not run" in text
        assert not world.github.pulls
        assert_every_jira_body_was_valid_adf(world)
