"""Who may start and stop fixes, whether they run at all and how many: fix and stop tasks through the real
worker handler with its gate (moto DynamoDB; the GitHub repository stand-in answering the collaborator-permission
endpoint; the Jira stand-in answering group membership; an AgentCore stand-in accepting jobs)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from types import SimpleNamespace

import boto3
import pytest

from harness.webhook_scene import LAMBDA_CONTEXT, REGION, sqs_event
from tests.unit.webhook import test_fix_worker as base
from tests.unit.webhook.support import (
    JIRA_SITE,
    call,
    configure_receiver,
    fixture,
    github_event,
    gitlab_event,
    queued,
    task_json,
)
from webhook import worker
from webhook.errors import TrackerConfigError
from webhook.fix.config import FixSettings
from webhook.fix.gate import FixGate, GateSettings, TrackerPermissions, gate_settings
from webhook.settings import ENV
from webhook.trackers import AgentTask
from webhook.trackers.targets import RepoTarget

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
# The worker set up for fix jobs (a GitHub repository stand-in, a runtime stand-in accepting jobs).
api, setup, accept, fix_task = base.api, base.setup, base.accept, base.fix_task
JIRA_ID = "5b10ac8d82e05b22cc7d4ef5"


def gated(setup: SimpleNamespace, settings: GateSettings | None = None, **fix: object) -> None:
    deps = worker._get_deps()
    fx = deps.fix.fx  # type: ignore[union-attr]
    if fix:
        fx.settings = FixSettings(**fix)  # type: ignore[arg-type]
    deps.gate = FixGate(
        settings=settings or GateSettings(),
        fix=fx.settings,
        jobs=fx.jobs,
        permissions=TrackerPermissions(repos=fx.repos, trackers=deps.trackers),
        client=boto3.client("dynamodb", region_name=REGION),  # moto, the table of ``fx.jobs``
    )


def task(
    number: int = 7, *, author: str = "octocat", intent: str = "fix", delivery: str = ""
) -> tuple[str, str]:
    doc = json.loads(
        task_json(number, comment=f"/agent {intent}", delivery=delivery or f"d-{number}-{author}")
    )
    key = hashlib.sha256(f"{number}-{author}-{delivery}-{intent}".encode()).hexdigest()
    doc.update(intent=intent, idempotency_key=key, author=author)
    return json.dumps(doc), key


def replies(setup: SimpleNamespace) -> list[str]:
    return [str(c["body"]) for c in setup.api.comments.values()]


@pytest.mark.parametrize("role", ["read", "triage", "none"])
def test_a_commenter_or_labeler_without_write_permission_starts_no_fix(
    setup: SimpleNamespace, role: str
) -> None:
    gated(setup)
    setup.api.permissions["octocat"] = role
    body, key = task()
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.runtime.requests == [] and setup.jobs.get(key) is None
    [reply] = replies(setup)
    assert "Only people with write access" in reply


@pytest.mark.parametrize("role", ["write", "maintain", "admin"])
def test_a_writer_starts_one(setup: SimpleNamespace, role: str) -> None:
    gated(setup)
    setup.api.permissions["octocat"] = role
    body, key = task()
    accept(setup, key)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(setup.runtime.requests) == 1 and setup.jobs.get(key).status == "job"


def test_a_reader_cannot_stop_a_fix(setup: SimpleNamespace) -> None:
    gated(setup)
    setup.api.permissions.update(octocat="write", lurker="read")
    body, key = task()
    accept(setup, key)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    stop, _ = task(author="lurker", intent="stop")
    assert worker.handler(sqs_event(stop), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.jobs.get(key).status == "job"
    assert any("may stop a fix" in r for r in replies(setup))


def test_a_second_fix_on_the_same_issue_is_refused_while_one_runs(setup: SimpleNamespace) -> None:
    gated(setup)
    setup.api.permissions["octocat"] = "write"
    first, key = task(delivery="a")
    accept(setup, key)
    assert worker.handler(sqs_event(first), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    second, other = task(delivery="b")
    assert worker.handler(sqs_event(second), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(setup.runtime.requests) == 1 and setup.jobs.get(other) is None
    assert any("A fix is already running" in r and "/agent stop" in r for r in replies(setup))


def test_fixes_are_rate_limited_per_person_and_counted_once_per_task(setup: SimpleNamespace) -> None:
    gated(setup, GateSettings(max_per_actor_per_hour=2, max_per_repository_per_hour=10))
    setup.api.permissions["octocat"] = "write"
    started = []
    for number in (1, 2, 3):
        body, key = task(number)
        accept(setup, key)
        for _ in range(2):  # a redelivery is not counted again
            assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        started.append(setup.jobs.get(key))
    assert [s is not None for s in started] == [True, True, False]
    assert any("Too many fixes this hour for you" in r for r in replies(setup))


def test_fix_jobs_switched_off_refuse_with_a_clear_reply(setup: SimpleNamespace) -> None:
    gated(setup, gate_settings({"FIX_JOBS": "off"}))
    setup.api.permissions["octocat"] = "admin"
    body, key = task()
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.runtime.requests == [] and setup.jobs.get(key) is None
    assert any("Fix jobs are turned off" in r for r in replies(setup))
    with pytest.raises(TrackerConfigError):
        gate_settings({"FIX_JOBS": "maybe"})


def _jira_fix(author_id: str) -> tuple[str, str]:
    doc = json.loads(task_json(3, comment="/agent fix", tracker="jira", repository="OPS"))
    key = hashlib.sha256(f"jira-{author_id}".encode()).hexdigest()
    doc.update(
        intent="fix",
        idempotency_key=key,
        author="Some Name",
        author_id=author_id,
        scope_id=JIRA_SITE.split("//")[1],
    )
    return json.dumps(doc), key


@pytest.mark.parametrize(
    ("mapping", "author", "groups", "allowed"),
    [
        ({}, JIRA_ID, [], False),
        ({"fix_account_ids": (JIRA_ID,)}, JIRA_ID, [], True),
        ({"fix_account_ids": ("someone-else",)}, JIRA_ID, [], False),
        ({"fix_group": "kit-maintainers"}, JIRA_ID, ["kit-maintainers"], True),
        ({"fix_group": "kit-maintainers"}, JIRA_ID, ["jira-users"], False),
    ],
)
def test_a_jira_mapping_hands_the_repository_only_to_its_allow_list(
    setup: SimpleNamespace, mapping: dict, author: str, groups: list[str], allowed: bool
) -> None:
    gated(setup, jira_repositories={"OPS": RepoTarget("github", "octo/kit", **mapping)})  # type: ignore[arg-type]
    setup.jira.groups[author] = groups
    body, key = _jira_fix(author)
    accept(setup, key)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert (setup.jobs.get(key) is not None) is allowed
    if not allowed:
        assert "mapping names" in json.dumps(setup.jira.replies)


@pytest.mark.parametrize(
    ("note", "queued_expected"), [("/agent fix it", False), ("/agent stop", False), ("/agent why?", True)]
)
def test_a_gitlab_reporter_may_ask_but_not_fix_or_stop_even_when_reporters_may_trigger(
    aws: SimpleNamespace, note: str, queued_expected: bool
) -> None:
    env = {**aws.tracker_env, ENV["gitlab_min_access_level"]: "20"}  # a documented setting: Reporters may ask
    configure_receiver(aws, env)
    payload = fixture("gitlab", "note_on_issue")
    payload["object_attributes"]["note"] = note
    payload["user"]["id"] = 9  # a Reporter (20) of project 5
    status, doc = call(gitlab_event(json.dumps(payload).encode()))
    assert status == 202 and (doc["status"] == "queued") is queued_expected, doc


def test_a_triager_labelling_an_outsiders_issue_agent_fix_starts_nothing(
    aws: SimpleNamespace, setup: SimpleNamespace
) -> None:
    configure_receiver(aws, {**aws.tracker_env, ENV["fix_trigger_label"]: "agent-fix"})
    gated(setup)
    setup.api.permissions.update(bob="triage", alice="none")  # bob labels alice's (an outsider's) issue
    payload = fixture("github", "issues_labeled")
    payload["label"]["name"] = "agent-fix"
    status, doc = call(github_event(json.dumps(payload).encode(), path="/github"))
    assert (status, doc["status"]) == (202, "queued")
    [message] = queued(aws)
    assert json.loads(message["Body"])["author"] == "bob"  # the label's sender, not the issue's author
    assert worker.handler(sqs_event(message["Body"]), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.runtime.requests == []
    assert any("@bob" in r and "write access" in r for r in replies(setup))


def test_a_job_waiting_for_approval_is_the_issues_running_fix(setup: SimpleNamespace) -> None:
    """Its answer resumes it and may open a change, so a second fix meanwhile would race it."""
    gated(setup)
    setup.api.permissions["octocat"] = "write"
    first, key = task(delivery="a")
    accept(setup, key)
    assert worker.handler(sqs_event(first), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.jobs.begin_report(key, lease_seconds=60)
    approval = {"id": "apv-0123456789abcdef0123", "tool": "Edit", "expires_at": 4_000_000_000.0}
    assert setup.jobs.await_approval(key, approval, cost_usd=0.01, hold_seconds=3600)
    second, other = task(delivery="b")
    assert worker.handler(sqs_event(second), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(setup.runtime.requests) == 1 and setup.jobs.get(other) is None
    assert any("A fix is already running" in r for r in replies(setup))


def test_two_fixes_for_one_issue_at_the_same_instant_start_one_job(
    setup: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both tasks pass the writer check together and meet again before the rate counters (which come after the
    one-active-fix check): on a check that only reads the issue's newest job both would pass. A task that is
    refused never reaches the second meeting point, so the other one goes on after a short wait."""
    gated(setup)
    setup.api.permissions["octocat"] = "write"
    gate = worker._get_deps().gate
    assert gate is not None
    meet = threading.Barrier(2)
    counted = gate._rate_limited

    def rate_limited(t: AgentTask, k: str) -> object:
        with contextlib.suppress(threading.BrokenBarrierError):
            meet.wait(timeout=3)
        return counted(t, k)

    monkeypatch.setattr(gate, "_rate_limited", rate_limited)
    # DynamoDB applies each request atomically (a conditional write is checked and written as one step); moto
    # in-process checks and writes without a lock, so two threads could both pass one condition. One request
    # at a time restores the service's guarantee; the two tasks still interleave between requests.
    one_at_a_time = threading.Lock()
    for client in {id(c): c for c in (gate._client, gate.jobs._client)}.values():
        call_api = client._make_api_call

        def serialised(operation: str, params: dict, _call: object = call_api) -> object:  # type: ignore[type-arg]
            with one_at_a_time:
                return _call(operation, params)  # type: ignore[operator]

        monkeypatch.setattr(client, "_make_api_call", serialised)
    (first, a), (second, b) = task(delivery="a"), task(delivery="b")
    setup.runtime.default = (
        202,
        "application/json",
        {"type": "job_accepted", "job_id": a, "session_id": "s"},
    )
    deps = worker._get_deps()
    results: dict[str, object] = {}

    def deliver(body: str, key: str) -> None:
        try:
            results[key] = worker.dispatch(AgentTask.model_validate_json(body), deps, key)
        except Exception as exc:  # recorded and asserted below
            results[key] = exc

    threads = [threading.Thread(target=deliver, args=args) for args in ((first, a), (second, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(isinstance(r, Exception) for r in results.values()), results
    assert len(setup.runtime.requests) == 1
    states = {k: setup.jobs.get(k) for k in (a, b)}
    assert sorted(s is not None for s in states.values()) == [False, True]
    assert sum("A fix is already running" in r and "/agent stop" in r for r in replies(setup)) == 1


def test_after_the_active_fix_ends_a_new_one_is_accepted(setup: SimpleNamespace) -> None:
    gated(setup)
    setup.api.permissions["octocat"] = "write"
    first, a = task(delivery="a")
    accept(setup, a)
    assert worker.handler(sqs_event(first), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.jobs.begin_report(a, lease_seconds=60)
    assert setup.jobs.finish(a, pr_url="https://example.test/pr/1")  # the reporter's final write
    second, b = task(delivery="b")
    accept(setup, b)
    assert worker.handler(sqs_event(second), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.jobs.get(b).status == "job" and len(setup.runtime.requests) == 2
    assert not any("A fix is already running" in r for r in replies(setup))


def test_a_stale_marker_whose_job_ended_is_taken_over(setup: SimpleNamespace) -> None:
    """A marker left behind (its release lost, e.g. a crash right after the final write) names a finished job."""
    gated(setup)
    setup.api.permissions["octocat"] = "write"
    first, a = task(delivery="a")
    accept(setup, a)
    assert worker.handler(sqs_event(first), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    session = AgentTask.model_validate_json(first).runtime_session_id
    ddb = boto3.client("dynamodb", region_name=REGION)
    marker = {"id": {"S": f"reply#active#{session}"}}
    held = ddb.get_item(TableName="idem", Key=marker, ConsistentRead=True)["Item"]
    assert held["job_key"]["S"] == a
    assert setup.jobs.stop(a, by="octocat", stop_key="s1")
    ddb.put_item(TableName="idem", Item=held)  # the stale marker, as if its release never happened
    second, b = task(delivery="b")
    accept(setup, b)
    assert worker.handler(sqs_event(second), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.jobs.get(b).status == "job"
    assert ddb.get_item(TableName="idem", Key=marker, ConsistentRead=True)["Item"]["job_key"]["S"] == b
