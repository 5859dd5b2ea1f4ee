"""From an issue comment to a draft pull/merge request, through the REAL runtime, with no token on its side.

A signed GitHub issue comment ``/agent fix …`` and a signed GitLab note drive: the receiver → SQS → the worker
(it claims the task, posts one progress comment, fetches the repository snapshot from the GitHub / GitLab
stand-in with the token, and invokes the runtime with ``async: true`` through the AgentCore data-plane stand-in,
which checks SigV4) → the real ``python -m runtime`` with the fake CLI, whose turn edits ``src/calc.py`` in the
session's workspace → the runtime's job events on an SQS queue → the reporter (it applies the patch to the base
commit and opens a draft pull/merge request on the stand-in, then edits the progress comment). Every AWS API is
a moto server on loopback; the Lambdas are built from their environment, as in Lambda.

The worker's invocation has ended before the result exists (the job answers 202): the result arrives later and
is reported exactly once, even when SQS delivers it twice. ``/agent stop`` stops a run mid-way: no pull request,
the comment says so, a second stop answers once. The tracker tokens never reach the runtime: not its
environment, not the requests it received, not its logs.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.webhook_scene import LAMBDA_CONTEXT, sqs_event
from tests.functional.fix_flow import (
    EDIT,
    FILES,
    FIXED,
    TOKEN_CHECKED_MARKS,
    assert_no_token_reached_the_runtime,
    github_comment,
    job_item,
    make_world,
    pump_events,
    run_worker,
)
from tests.unit.webhook.support import call, fixture, github_event, gitlab_event
from webhook import reporter, worker

pytest_plugins = ["tests.functional.fix_flow"]  # the fixture TOKEN_CHECKED_MARKS names
pytestmark = [pytest.mark.timeout(180), *TOKEN_CHECKED_MARKS]


@pytest.fixture
def world(tmp_path: Path, moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    with make_world(tmp_path, moto_server, monkeypatch) as world:
        yield world


def test_github_comment_becomes_one_draft_pull_request_with_exactly_the_change(
    world: SimpleNamespace,
) -> None:
    event, raw = github_comment(f"/agent fix the add function {EDIT} [slow:3000]")
    status, doc = call(event)
    assert (status, doc["status"]) == (202, "queued")
    run_worker(world)
    # The worker's invocation is over before the turn's 3 s of work: the runtime accepted the job (202) and works
    # on; no result exists yet, it arrives on the events queue later.
    peek = world.aws.sqs.receive_message(QueueUrl=world.events, MaxNumberOfMessages=10, VisibilityTimeout=0)
    assert not [m for m in peek.get("Messages", []) if json.loads(m["Body"])["kind"] == "result"]
    assert job_item(world, "gh-")["status"]["S"] == "job"
    [invocation] = world.plane.calls
    assert invocation["status"] == 202 and invocation["session"].startswith("gh-")
    body = json.loads(invocation["body"])
    assert body["async"] is True and body["job"]["id"] == hashlib.sha256(raw).hexdigest()
    assert body["workspace"]["tar_gz_b64"] and body["job"]["context"]["base_sha"] == world.github.base_commit
    [progress] = world.github.comments.values()
    assert progress["body"].startswith("Working on it")
    [result] = [body for kind, body in pump_events(world, until="result") if kind == "result"]
    [reported] = world.github.comments.values()
    edits = reported["edits"]
    # SQS delivers the result again (at least once): nothing more happens.
    assert reporter.handler(sqs_event(result), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    [pull] = world.github.pulls
    assert pull["draft"] is True and pull["base"]["ref"] == "main"
    assert world.github.branch_changes(pull["head"]["ref"]) == {"src/calc.py": FIXED}
    [final] = world.github.comments.values()  # the same comment, edited into the answer once
    assert final["edits"] == edits
    assert pull["html_url"] in final["body"] and "cost $" in final["body"]
    item = job_item(world, "gh-")
    assert item["status"]["S"] == "done" and item["pr_url"]["S"] == pull["html_url"]
    assert_no_token_reached_the_runtime(world)


def test_gitlab_note_becomes_one_draft_merge_request(world: SimpleNamespace) -> None:
    note = fixture("gitlab", "note_on_issue")
    note["object_attributes"]["note"] = f"/agent fix it please {EDIT}"
    status, doc = call(gitlab_event(json.dumps(note).encode()))
    assert (status, doc["status"]) == (202, "queued")
    run_worker(world)
    pump_events(world, until="result")
    [mr] = world.gitlab.merge_requests
    assert mr["title"].startswith("Draft:") and mr["target_branch"] == "main"
    assert world.gitlab.branch_changes(mr["source_branch"]) == {"src/calc.py": FIXED}
    [progress] = world.gitlab.notes.values()
    assert mr["web_url"] in progress["body"]
    assert_no_token_reached_the_runtime(world)


def test_stop_mid_run_opens_nothing_and_a_second_stop_answers_once(world: SimpleNamespace) -> None:
    assert call(github_comment(f"/agent fix slowly [read:README.md] [slow:20000] {EDIT}", 201)[0])[0] == 202
    run_worker(world)
    pump_events(world, until="progress")  # running: a tool call was reported
    assert call(github_comment("/agent stop", 202)[0])[1]["status"] == "queued"
    run_worker(world)
    [stop] = world.plane.stops
    assert stop["status"] == 200 and stop["session"].startswith("gh-")
    item = job_item(world, "gh-")
    assert item["status"]["S"] == "stopped" and item["stopped_by"]["S"]
    [stopped] = [
        str(c["body"]) for c in world.github.comments.values()
    ]  # a copy: the stand-in edits in place
    assert stopped.startswith("Stopped by `@carol`") and "Cost so far: $0.0" in stopped
    # The runtime reports the stopped turn; the reporter opens nothing for it.
    [(_, result)] = [e for e in pump_events(world, until="result") if e[0] == "result"]
    assert json.loads(result)["result"]["code"] == "stopped"
    assert not world.github.pulls
    assert next(iter(world.github.comments.values()))["body"] == stopped  # still says so
    # A second stop finds nothing running: one short comment, once, even when delivered twice.
    assert call(github_comment("/agent stop", 203)[0])[1]["status"] == "queued"
    out = world.aws.sqs.receive_message(QueueUrl=world.tasks)
    [msg] = out["Messages"]
    for _ in range(2):
        assert worker.handler(sqs_event(msg["Body"]), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    nothing = [c for c in world.github.comments.values() if c["body"].startswith("Nothing to stop")]
    assert len(nothing) == 1 and len(world.plane.stops) == 1
    assert_no_token_reached_the_runtime(world)


class WorkerDied(Exception):
    """The worker Lambda ended there (timeout or crash): nothing after it ran, SQS redelivers the record."""


def test_a_worker_that_died_after_the_runtime_accepted_is_taken_over_without_a_second_turn(
    world: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webhook.fix import jobs as fix_jobs

    monkeypatch.setenv("TURN_LEASE_SECONDS", "0")  # the redelivery comes after the lease
    record_started = fix_jobs.JobStore.started
    deaths: list[str] = []

    def dies_once(self: fix_jobs.JobStore, key: str, *args: Any, **kwargs: Any) -> bool:
        if not deaths:
            deaths.append(key)
            raise WorkerDied  # right after the runtime's 202, before the job is recorded
        return record_started(self, key, *args, **kwargs)

    monkeypatch.setattr(fix_jobs.JobStore, "started", dies_once)
    event, raw = github_comment(f"/agent fix the add function {EDIT} [slow:1500]", 301)
    assert call(event)[0] == 202
    [msg] = world.aws.sqs.receive_message(QueueUrl=world.tasks)["Messages"]
    assert worker.handler(sqs_event(msg["Body"]), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    assert job_item(world, "gh-")["status"]["S"] == "running"  # what the dead worker left
    # SQS's redelivery
    assert worker.handler(sqs_event(msg["Body"]), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    first, again = world.plane.calls
    assert first["status"] == again["status"] == 202
    assert json.loads(again["body"])["job"] == json.loads(first["body"])["job"]
    assert json.loads(first["body"])["job"]["id"] == deaths[0] == hashlib.sha256(raw).hexdigest()
    events = pump_events(world, until="result")
    time.sleep(1.0)  # a second turn would send a second result: none comes
    events += [
        (json.loads(m["Body"])["kind"], m["Body"])
        for m in world.aws.sqs.receive_message(QueueUrl=world.events, MaxNumberOfMessages=10).get(
            "Messages", []
        )
    ]
    assert [kind for kind, _ in events].count("result") == 1
    assert "already accepted; not run again" in world.runtime.log_path.read_text()
    [pull] = world.github.pulls
    assert world.github.branch_changes(pull["head"]["ref"]) == {"src/calc.py": FIXED}
    [comment] = world.github.comments.values()  # one progress comment, edited into the answer
    assert pull["html_url"] in comment["body"]
    assert job_item(world, "gh-")["status"]["S"] == "done"


def test_a_fix_asked_on_a_pull_request_works_on_its_head_and_proposes_into_its_branch(
    world: SimpleNamespace,
) -> None:
    head_calc = b'def add(a, b):\n    """The sum."""\n    return a - b\n'
    opened = world.github.open_pull_request(
        "feature/sum", {**FILES, "src/calc.py": ("100644", head_calc)}, number=7, title="Document add"
    )
    _, raw = github_comment(f"/agent fix the add function {EDIT}", 401)
    payload = json.loads(raw)
    payload["issue"]["pull_request"] = {"url": "https://api.github.example/repos/octo/kit/pulls/7"}
    body = json.dumps(payload).encode()
    assert call(github_event(body, event="issue_comment", path="/github", delivery="d-401"))[0] == 202
    run_worker(world)
    context = json.loads(world.plane.calls[0]["body"])["job"]["context"]
    assert context["base_sha"] == opened["head"]["sha"] and context["pr_base"] == "feature/sum"
    pump_events(world, until="result")
    [pull] = [p for p in world.github.pulls if p["number"] != 7]
    assert pull["draft"] is True and pull["base"]["ref"] == "feature/sum"
    fixed = b'def add(a, b):\n    """The sum."""\n    return a + b\n'  # the head's file, fixed
    assert world.github.branch_changes(pull["head"]["ref"], opened["head"]["sha"]) == {
        "src/calc.py": ("100644", fixed)
    }
    [comment] = world.github.comments.values()
    assert comment["issue"] == 7 and pull["html_url"] in comment["body"]
    assert_no_token_reached_the_runtime(world)


def test_a_stop_that_lands_while_the_runtime_is_invoked_stops_the_accepted_job(
    world: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert call(github_comment(f"/agent fix slowly [read:README.md] [slow:20000] {EDIT}", 501)[0])[0] == 202
    deps = worker._get_deps()
    assert deps.fix is not None
    invoke = deps.fix.invoker.invoke

    def invoke_then_stop(*args: Any, **kwargs: Any) -> Any:
        reply = invoke(*args, **kwargs)  # the runtime has accepted the job (202) ...
        # ... and before the worker records it, `/agent stop` arrives and another worker handles it.
        assert call(github_comment("/agent stop", 502)[0])[0] == 202
        [msg] = world.aws.sqs.receive_message(QueueUrl=world.tasks)["Messages"]
        stop = worker.AgentTask.model_validate_json(msg["Body"])
        worker.dispatch(stop, deps, worker.task_key(stop, msg["Body"]))
        world.aws.sqs.delete_message(QueueUrl=world.tasks, ReceiptHandle=msg["ReceiptHandle"])
        return reply

    monkeypatch.setattr(deps.fix.invoker, "invoke", invoke_then_stop)
    run_worker(world)
    [accepted] = world.plane.calls
    [stop] = world.plane.stops  # the worker stopped the session it had just started a job on
    assert accepted["status"] == 202 and stop["status"] == 200 and stop["session"] == accepted["session"]
    item = job_item(world, "gh-")
    assert item["status"]["S"] == "stopped" and item["stopped_by"]["S"] == "carol"
    [comment] = [str(c["body"]) for c in world.github.comments.values()]  # no "Nothing to stop"
    assert comment.startswith("Stopped by `@carol` while the agent was starting.")
    # The runtime reports the stopped turn; the reporter opens nothing for it.
    [(_, result)] = [e for e in pump_events(world, until="result") if e[0] == "result"]
    assert json.loads(result)["result"]["code"] == "stopped"
    assert not world.github.pulls
    assert next(iter(world.github.comments.values()))["body"] == comment
    assert_no_token_reached_the_runtime(world)
