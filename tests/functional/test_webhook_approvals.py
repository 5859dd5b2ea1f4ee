"""A fix job whose tool call needs a person's approval, answered on the issue, through the REAL runtime.

The scene of tests/functional/test_webhook_fix.py (signed GitHub comments → receiver → SQS → worker → the real
``python -m runtime`` with the fake CLI behind the AgentCore data-plane stand-in → job events on SQS → reporter →
the GitHub stand-in; moto for SQS, DynamoDB and Secrets Manager), with ``AGENTKIT_APPROVALS`` naming ``src/**``:
the scripted model's ``Edit`` of ``src/calc.py`` waits for approval. The paused job's progress comment becomes the
approval card (once); ``/agent approve <id>`` by another maintainer starts the answer as a new job on the same
session and exactly that edit runs; the pull request opens from the continuation's result. Denials, expiry, the
requester under the two-person rule, an outsider, a replay and ``/agent stop`` while waiting start nothing more.
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

from harness.webhook_scene import LAMBDA_CONTEXT as CTX
from harness.webhook_scene import sqs_event
from tests.functional.fix_flow import (
    EDIT,
    FIXED,
    SCENE_MARKS,
    assert_no_token_reached_the_runtime,
    github_comment,
    make_world,
    pump_events,
    run_worker,
)
from tests.unit.webhook.support import call, fixture, github_event, gitlab_event
from webhook import reporter, sweeper, worker
from webhook.settings import ENV

pytestmark = [pytest.mark.timeout(180), *SCENE_MARKS]
APPROVAL = re.compile(r"apv-[0-9a-f]{20}")


#: What GitHub answers for each commenter's permission on octo/kit (the worker asks it before an answer counts).
PERMISSIONS = {"carol": "admin", "dave": "write", "erin": "maintain", "rita": "read"}


@pytest.fixture
def world(tmp_path: Path, moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    with make_world(tmp_path, moto_server, monkeypatch, {"paths": ["src/**"]}) as world:
        world.github.permissions.update(PERMISSIONS)
        yield world


def comment_by(
    text: str, comment_id: int, *, login: str = "dave", association: str = "MEMBER", issue: int = 0
) -> dict[str, Any]:
    """A signed issue comment by ``login`` (the fixture's requester is ``carol``), on the fixture's issue or on
    ``issue``."""
    _, raw = github_comment(text, comment_id)
    payload = json.loads(raw)
    if issue:
        payload["issue"]["number"] = issue
    payload["comment"]["user"]["login"] = payload["sender"]["login"] = login
    payload["comment"]["author_association"] = association
    body = json.dumps(payload).encode()
    return github_event(body, event="issue_comment", path="/github", delivery=f"d-{comment_id}")


def items(world: SimpleNamespace) -> dict[str, dict[str, Any]]:
    return {i["id"]["S"]: i for i in world.aws.ddb.scan(TableName=world.table)["Items"]}


def paused_job(world: SimpleNamespace) -> dict[str, Any]:
    [item] = [i for i in items(world).values() if "approval" in i]
    return item


def pause(world: SimpleNamespace) -> tuple[str, dict[str, Any]]:
    """``/agent fix`` by carol whose scripted edit needs approval: the job pauses. Returns (id, the comment)."""
    assert call(github_comment(f"/agent fix the add function {EDIT}", 101)[0])[0] == 202
    run_worker(world)
    result = pump_result(world)
    assert json.loads(result)["result"]["subtype"] == "awaiting_approval"
    [card] = world.github.comments.values()
    [approval_id] = set(APPROVAL.findall(card["body"]))
    # Posted once: SQS delivering the paused result again changes nothing.
    edits = card["edits"]
    assert reporter.handler(sqs_event(result), CTX) == {"batchItemFailures": []}
    assert card["edits"] == edits and len(world.github.comments) == 1
    return approval_id, card


def pump_result(world: SimpleNamespace, job_id: str | None = None, *, timeout: float = 30.0) -> str:
    """Feed the events queue to the reporter until the result of ``job_id`` (any job's: ``None``) was handled; its
    body. Results of other jobs may come in between: SQS delivers at least once, so a job's result can come again
    after the test moved on, and the reporter handles it (it reports a result once)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for kind, body in pump_events(world, until="result", timeout=max(1.0, deadline - time.monotonic())):
            if kind == "result" and job_id in (None, json.loads(body)["job_id"]):
                return body
    raise AssertionError(f"no result of {job_id} within {timeout}s")


def answer(world: SimpleNamespace, text: str, comment_id: int, **who: Any) -> None:
    status, doc = call(comment_by(text, comment_id, **who))
    assert (status, doc["status"]) == (202, "queued"), doc
    run_worker(world)


def replies(world: SimpleNamespace) -> list[str]:
    """The comments other than the progress comment (refusals), oldest first."""
    return [str(c["body"]) for c in list(world.github.comments.values())[1:]]


def test_a_paused_fix_shows_the_card_once_and_an_approval_runs_exactly_that_edit(
    world: SimpleNamespace,
) -> None:
    approval_id, card = pause(world)
    body = card["body"]
    assert body.startswith("**Waiting for approval.**") and "`Edit`" in body and "src/**" in body
    assert '"new_string": "a + b"' in body and "sha256:" in body and f"/agent approve {approval_id}" in body
    assert not world.github.pulls
    item = paused_job(world)
    assert item["status"]["S"] == "awaiting_approval"
    record = json.loads(item["approval"]["S"])
    assert record["id"] == approval_id and record["tool"] == "Edit" and record["requester"] == "carol"
    assert record["input_hash"].startswith("sha256:") and record["expires_at"] > record["requested_at"]

    # dave (another member) approves; the note carries the scripted model's repeat of the call.
    answer(world, f"/agent approve {approval_id} go ahead {EDIT}", 102)
    resumed = world.plane.calls[-1]
    sent = json.loads(resumed["body"])
    assert (
        "prompt" not in sent
        and sent["approve"]["id"] == approval_id
        and sent["approve"]["by"] == "github:dave"
    )
    assert sent["job"]["id"] == approval_id and sent["async"] is True
    assert resumed["session"] == world.plane.calls[0]["session"] and resumed["status"] == 202
    assert card["body"].startswith("Approved by `@dave`")
    decided = paused_job(world)
    assert decided["status"]["S"] == "answered"
    decision = json.loads(decided["approval_decision"]["S"])
    assert (decision["outcome"], decision["by"]) == ("approved", "github:dave")

    pump_result(world, approval_id)
    [pull] = world.github.pulls
    assert world.github.branch_changes(pull["head"]["ref"]) == {"src/calc.py": FIXED}
    assert pull["html_url"] in card["body"]  # the same comment, now the answer
    assert items(world)[f"reply#{approval_id}"]["status"]["S"] == "done"
    assert len(world.github.comments) == 1  # no other comment was posted
    assert_no_token_reached_the_runtime(world)

    # A replay of the approval (another comment, same id) is refused and starts nothing.
    calls = len(world.plane.calls)
    answer(world, f"/agent approve {approval_id} {EDIT}", 103, login="erin")
    assert len(world.plane.calls) == calls
    [refusal] = replies(world)
    assert "answered already" in refusal and "used once" in refusal
    # On another issue the id names nothing.
    answer(world, f"/agent approve {approval_id} {EDIT}", 104, login="erin", issue=8)
    assert len(world.plane.calls) == calls
    assert "no tool call waiting for approval" in replies(world)[-1]


def test_a_denial_reaches_the_agent_and_nothing_changes(world: SimpleNamespace) -> None:
    approval_id, card = pause(world)
    answer(world, f"/agent deny {approval_id} not on a Friday", 111)
    sent = json.loads(world.plane.calls[-1]["body"])
    assert sent["deny"] == {"id": approval_id, "by": "github:dave", "reason": "not on a Friday"}
    assert card["body"].startswith("Denied by `@dave`") and "not on a Friday" in card["body"]
    result = pump_result(world, approval_id)
    assert "was denied" in json.loads(result)["result"]["text"]
    assert not world.github.pulls
    assert "No change to propose" in card["body"]
    decision = json.loads(paused_job(world)["approval_decision"]["S"])
    assert (decision["outcome"], decision["reason"]) == ("denied", "not on a Friday")


def test_the_requester_cannot_approve_their_own_run(world: SimpleNamespace) -> None:
    approval_id, _ = pause(world)
    calls = len(world.plane.calls)
    answer(world, f"/agent approve {approval_id} {EDIT}", 121, login="carol")  # carol asked for the fix
    assert len(world.plane.calls) == calls
    [refusal] = replies(world)
    assert "two-person rule" in refusal
    assert paused_job(world)["status"]["S"] == "awaiting_approval"
    # Another maintainer still can.
    answer(world, f"/agent approve {approval_id} {EDIT}", 122)
    assert len(world.plane.calls) == calls + 1


def test_the_two_person_rule_can_be_turned_off(
    world: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPROVAL_TWO_PERSON", "false")
    worker.configure(None)
    approval_id, _ = pause(world)
    answer(world, f"/agent approve {approval_id} {EDIT}", 131, login="carol")
    assert json.loads(world.plane.calls[-1]["body"])["approve"]["by"] == "github:carol"


def test_an_outsider_a_reader_an_unknown_id_and_a_malformed_answer_start_nothing(
    world: SimpleNamespace,
) -> None:
    approval_id, _ = pause(world)
    calls = len(world.plane.calls)
    # An outsider (no association with the repository) is not even queued.
    status, doc = call(comment_by(f"/agent approve {approval_id}", 141, login="mallory", association="NONE"))
    assert (status, doc["status"]) == (202, "ignored")
    # A collaborator with read permission is admitted by the receiver (COLLABORATOR), but cannot answer.
    answer(world, f"/agent approve {approval_id} {EDIT}", 144, login="rita", association="COLLABORATOR")
    answer(world, "/agent approve apv-00000000000000000000", 142)
    answer(world, "/agent approve it please", 143)
    assert len(world.plane.calls) == calls
    not_writer, unknown, malformed = replies(world)
    assert "Only someone with write permission" in not_writer
    asked = [r["path"] for r in world.github.requests if "/collaborators/" in r["path"]]
    # The fix's own start asked about its requester (the gate); the answer asked about rita.
    assert asked[-1] == "/repos/octo/kit/collaborators/rita/permission"
    assert "no tool call waiting for approval `apv-00000000000000000000`" in unknown
    assert "`/agent approve <id>`" in malformed
    assert paused_job(world)["status"]["S"] == "awaiting_approval"


def direct(world: SimpleNamespace, body: dict[str, Any]) -> Any:
    """``body`` sent straight to the runtime on the issue's session, as the issue's actor (the identity headers the
    data plane forwarded with the job): what ``agentkit approve`` or an InvokeAgentRuntime of its own would do,
    past the webhook's checks."""
    session = world.plane.calls[0]["session"]
    return world.runtime.invoke(
        session=session, body=json.dumps(body).encode(), headers=world.plane.identity[session]
    )


def test_stop_while_waiting_ends_the_job_and_refuses_a_later_approval(world: SimpleNamespace) -> None:
    approval_id, card = pause(world)
    answer(world, "/agent stop", 151)
    assert card["body"].startswith("Stopped by `@dave`")
    assert paused_job(world)["status"]["S"] == "stopped"
    # The stop withdrew the request on the runtime (an invocation that starts no turn), then stopped the session.
    withdraw = world.plane.calls[-1]
    assert json.loads(withdraw["body"])["withdraw"]["id"] == approval_id and withdraw["status"] == 200
    assert withdraw["session"] == world.plane.calls[0]["session"] == world.plane.stops[-1]["session"]
    calls = len(world.plane.calls)
    answer(world, f"/agent approve {approval_id} {EDIT}", 152, login="erin")
    assert len(world.plane.calls) == calls
    [refusal] = replies(world)
    assert "was stopped" in refusal and card["body"].startswith("Stopped by")
    # Past the webhook, straight to the runtime: its record is withdrawn, so the approval is refused there too.
    approved = direct(world, {"approve": {"id": approval_id, "note": EDIT}, "stream": False})
    assert (approved.status, approved.body["code"]) == (410, "approval_withdrawn"), approved.body
    record = direct(world, {"withdraw": {"id": approval_id}})  # a repeat answers the first withdrawal
    assert record.status == 200 and record.body["approval"]["status"] == "withdrawn"
    assert (
        record.body["withdrawn"]["by"] == "github:dave"
        and "/agent stop" in record.body["withdrawn"]["reason"]
    )
    assert not world.github.pulls


def turn_fix_jobs_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """``FIX_JOBS=off`` from now on (the worker is built again from its environment, as a new Lambda is)."""
    monkeypatch.setenv(ENV["fix_jobs"], "off")
    worker.configure(None)


def test_with_fix_jobs_turned_off_an_approval_is_refused_and_a_denial_ends_the_job(
    world: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    approval_id, card = pause(world)
    session = world.plane.calls[0]["session"]
    turn_fix_jobs_off(monkeypatch)
    calls = len(world.plane.calls)
    answer(world, f"/agent approve {approval_id} {EDIT}", 201)
    assert len(world.plane.calls) == calls  # the paused fix is not resumed
    [refusal] = replies(world)
    assert "Fix jobs are turned off" in refusal and f"/agent deny {approval_id}" in refusal
    assert paused_job(world)["status"]["S"] == "awaiting_approval"
    assert card["body"].startswith("**Waiting for approval.**")
    # A denial still ends the job, without a turn: the agent going on could still end in a pull request. The
    # runtime's request is withdrawn (an invocation that starts no turn), so an approval sent there runs nothing.
    answer(world, f"/agent deny {approval_id} not now", 202)
    [withdraw] = world.plane.calls[calls:]
    assert list(json.loads(withdraw["body"])) == ["withdraw", "stream"] and withdraw["status"] == 200
    calls += 1
    assert len(replies(world)) == 1
    item = paused_job(world)
    assert (item["status"]["S"], item["error_code"]["S"]) == ("done", "fix_jobs_off")
    decision = json.loads(item["approval_decision"]["S"])
    assert (decision["outcome"], decision["by"], decision["reason"]) == ("denied", "github:dave", "not now")
    assert card["body"].startswith("Denied by `@dave`") and "the job ended" in card["body"]
    assert items(world)["reply#approvals#pending"]["pending"]["M"] == {}
    assert "job_key" not in items(world)[f"reply#active#{session}"]  # the issue is free again
    # Answered once: a later approval finds nothing to run, on the issue or on the runtime.
    answer(world, f"/agent approve {approval_id} {EDIT}", 203, login="erin")
    assert len(world.plane.calls) == calls and not world.github.pulls
    approved = direct(world, {"approve": {"id": approval_id, "note": EDIT}, "stream": False})
    assert (approved.status, approved.body["code"]) == (410, "approval_withdrawn"), approved.body


def test_with_fix_jobs_turned_off_stop_still_ends_a_waiting_job(
    world: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    approval_id, card = pause(world)
    turn_fix_jobs_off(monkeypatch)
    answer(world, f"/agent approve {approval_id} {EDIT}", 211)
    answer(world, "/agent stop", 212)
    assert card["body"].startswith("Stopped by `@dave`")
    assert paused_job(world)["status"]["S"] == "stopped"
    assert not any("approve" in json.loads(c["body"]) for c in world.plane.calls if c["body"])
    assert not world.github.pulls


def test_an_expired_approval_ends_the_job(
    tmp_path: Path, moto_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 0.0003 h ≈ 1.1 s: the request expires while nobody answers.
    with make_world(
        tmp_path, moto_server, monkeypatch, {"paths": ["src/**"], "expiry_hours": 0.0003}
    ) as world:
        world.github.permissions.update(PERMISSIONS)
        approval_id, card = pause(world)
        expires_at = json.loads(paused_job(world)["approval"]["S"])["expires_at"]
        while time.time() < expires_at + 0.1:
            time.sleep(0.1)
        calls = len(world.plane.calls)
        answer(world, f"/agent approve {approval_id} {EDIT}", 161)
        assert len(world.plane.calls) == calls
        [refusal] = replies(world)
        assert "expired" in refusal
        item = paused_job(world)
        assert item["status"]["S"] == "expired"
        assert json.loads(item["approval_decision"]["S"])["outcome"] == "expired"
        assert "expired at" in card["body"] and "did not run" in card["body"]
        assert not world.github.pulls


def gitlab_note(text: str, user_id: int, username: str, delivery: str) -> dict[str, Any]:
    note = fixture("gitlab", "note_on_issue")
    note["object_attributes"]["note"] = text
    note["object_attributes"]["author_id"] = user_id
    note["user"].update(id=user_id, username=username)
    return gitlab_event(
        json.dumps(note).encode(), **{"x-gitlab-event-uuid": delivery, "idempotency-key": delivery}
    )


def test_gitlab_a_maintainer_approves_and_a_reporter_level_member_cannot(world: SimpleNamespace) -> None:
    assert call(gitlab_note(f"/agent fix it please {EDIT}", 1, "root", "u-1"))[0] == 202
    run_worker(world)
    pump_result(world)
    [card] = world.gitlab.notes.values()
    [approval_id] = set(APPROVAL.findall(card["body"]))
    assert card["body"].startswith("**Waiting for approval.**") and not world.gitlab.merge_requests
    # Access level 20 (Reporter) may not answer: the receiver does not queue it.
    status, doc = call(gitlab_note(f"/agent approve {approval_id} {EDIT}", 9, "rep", "u-2"))
    assert (status, doc["status"]) == (202, "ignored")
    # The requester may not either (two-person rule), a Maintainer may.
    assert call(gitlab_note(f"/agent approve {approval_id} {EDIT}", 1, "root", "u-3"))[0] == 202
    run_worker(world)
    assert call(gitlab_note(f"/agent approve {approval_id} {EDIT}", 3, "maint", "u-4"))[0] == 202
    run_worker(world)
    refusals = [str(n["body"]) for n in list(world.gitlab.notes.values())[1:]]
    assert len(refusals) == 1 and "two-person rule" in refusals[0]
    # The runtime records the GitLab user id with the username (a username can be changed and then reused).
    assert json.loads(world.plane.calls[-1]["body"])["approve"]["by"] == "gitlab:maint (3)"
    pump_result(world, approval_id)
    [mr] = world.gitlab.merge_requests
    assert world.gitlab.branch_changes(mr["source_branch"]) == {"src/calc.py": FIXED}
    assert mr["web_url"] in card["body"]
    assert_no_token_reached_the_runtime(world)


class WorkerDied(Exception):
    """The worker ended there (a crash, a throttled runtime): SQS redelivers the record."""


def test_an_answer_whose_start_failed_is_sent_again_by_its_redelivery_once(
    world: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    approval_id, _ = pause(world)
    assert call(comment_by(f"/agent approve {approval_id} {EDIT}", 171))[0] == 202
    [msg] = world.aws.sqs.receive_message(QueueUrl=world.tasks)["Messages"]
    deps = worker._get_deps()
    assert deps.approver is not None
    invoke = deps.approver.invoker.invoke
    failures: list[str] = []

    def fails_once(*args: Any, **kwargs: Any) -> Any:
        if not failures:
            failures.append("once")
            raise WorkerDied  # after the decision was recorded, before the runtime was asked
        return invoke(*args, **kwargs)

    monkeypatch.setattr(deps.approver.invoker, "invoke", fails_once)
    assert worker.handler(sqs_event(msg["Body"]), CTX) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert paused_job(world)["status"]["S"] == "answered"  # the decision stays
    assert items(world)[f"reply#{approval_id}"]["status"]["S"] == "released"
    for _ in range(2):  # SQS's redelivery, then a duplicate of it
        assert worker.handler(sqs_event(msg["Body"]), CTX) == {"batchItemFailures": []}
    approvals = [c for c in world.plane.calls if "approve" in json.loads(c["body"])]
    assert len(approvals) == 1 and approvals[0]["status"] == 202
    assert not replies(world)  # no refusal: it was this answer's own retry
    pump_result(world, approval_id)
    [pull] = world.github.pulls
    assert world.github.branch_changes(pull["head"]["ref"]) == {"src/calc.py": FIXED}


def test_a_different_input_after_an_approval_waits_for_its_own_approval(world: SimpleNamespace) -> None:
    approval_id, card = pause(world)
    other = EDIT.replace("a + b", "b + a")  # the model asks for another input than the one approved
    answer(world, f"/agent approve {approval_id} {other}", 181)
    pump_result(world, approval_id)
    [second_id] = set(APPROVAL.findall(card["body"])) - {approval_id}
    assert card["body"].startswith("**Waiting for approval.**") and '"new_string": "b + a"' in card["body"]
    assert not world.github.pulls
    continuation = items(world)[f"reply#{approval_id}"]
    assert continuation["status"]["S"] == "awaiting_approval"
    assert json.loads(continuation["approval"]["S"])["id"] == second_id
    assert json.loads(continuation["approval"]["S"])["requester"] == "carol"  # still who asked for the run
    # The first approval is used up; the second one is answered in its turn and the change it names is proposed.
    answer(world, f"/agent approve {approval_id} {EDIT}", 182, login="erin")
    answer(world, f"/agent approve {second_id} {other}", 183, login="erin")
    [used] = replies(world)
    assert "answered already" in used
    assert json.loads(world.plane.calls[-1]["body"])["job"]["id"] == second_id
    pump_result(world, second_id)
    [pull] = world.github.pulls
    assert world.github.branch_changes(pull["head"]["ref"]) == {
        "src/calc.py": ("100644", b"def add(a, b):\n    return b + a\n")
    }
    assert pull["html_url"] in card["body"]


def test_the_sweepers_run_expires_an_unanswered_approval(
    tmp_path: Path, moto_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with make_world(
        tmp_path, moto_server, monkeypatch, {"paths": ["src/**"], "expiry_hours": 0.0003}
    ) as world:
        world.github.permissions.update(PERMISSIONS)
        scheduled = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
        sweeper.configure(None)  # built from the world's environment, as the Lambda is
        try:

            def sweep() -> int:
                summary = sweeper.handler(scheduled, CTX)
                assert not summary["approvals_failed"] and not summary["timed_out"]
                return int(summary["approvals_expired"])

            approval_id, card = pause(world)
            key = paused_job(world)["id"]["S"].removeprefix("reply#")
            listed = items(world)["reply#approvals#pending"]["pending"]["M"]
            assert list(listed) == [key]
            assert sweep() == 0  # not yet
            assert paused_job(world)["status"]["S"] == "awaiting_approval"
            expires_at = json.loads(paused_job(world)["approval"]["S"])["expires_at"]
            while time.time() < expires_at + 0.1:
                time.sleep(0.1)
            assert sweep() == 1
            assert sweep() == 0  # once
            assert paused_job(world)["status"]["S"] == "expired"
            assert "expired at" in card["body"] and "did not run" in card["body"]
            assert items(world)["reply#approvals#pending"]["pending"]["M"] == {}
            calls = len(world.plane.calls)
            answer(world, f"/agent approve {approval_id} {EDIT}", 191)
            assert len(world.plane.calls) == calls and "expired" in replies(world)[-1]
            assert not world.github.pulls
        finally:
            sweeper.configure(None)
