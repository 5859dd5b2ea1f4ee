"""The sweeper through its real handler: jobs recorded in moto DynamoDB, the GitHub stand-in for the progress
comment, and the real reporter for results that arrive late or race the sweep. A job past its deadline with no
result is ended once; whichever of the sweep and a result moves the job first, the issue gets one final answer."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from harness.github_repo_api import GitHubRepoApi
from harness.webhook_scene import LAMBDA_CONTEXT, sqs_event
from tests.unit.webhook.support import TOKEN, emf_lines, fix_job, start_fix_job
from webhook import reporter, sweeper, trackers
from webhook.fix.approvals import Sweeper as ApprovalExpiry
from webhook.fix.config import FixSettings
from webhook.fix.jobs import DONE, EXPIRED, JOB, TIMED_OUT, FixJob, JobStore
from webhook.fix.repos import TrackerComments, TrackerRepos
from webhook.repo import git_blob_sha
from webhook.settings import WebhookSettings

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
KEY = "a" * 64
DEADLINE = 3600
T0 = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def api() -> Iterator[GitHubRepoApi]:
    with GitHubRepoApi(
        token=TOKEN, repository="octo/kit", files={"README.md": ("100644", b"# kit\n")}
    ) as srv:
        yield srv


def job_doc(api: GitHubRepoApi, **update: Any) -> FixJob:
    """A job on the stand-in's first commit."""
    return fix_job(**{"base_sha": api.base_commit, **update})


def start_job(world: SimpleNamespace, key: str) -> FixJob:
    """A job as the worker leaves it: claimed, progress comment posted, started at the clock's time."""
    doc, progress = start_fix_job(world.jobs, world.adapter, key, job_doc(world.api))
    world.comment_ids[key] = progress.id
    return doc


def sweeper_deps(
    world: SimpleNamespace, *, jobs: JobStore | None = None, api_url: str = ""
) -> sweeper.SweeperDeps:
    adapter = trackers.GitHubTracker(
        trackers.TrackerOptions(token=lambda: TOKEN, api_url=api_url or world.api.url)
    )
    settings = WebhookSettings(job_deadline_seconds=DEADLINE)
    comments = TrackerComments({"github": adapter})
    return sweeper.SweeperDeps(
        jobs=jobs or world.jobs,
        comments=comments,
        trackers={"github": adapter},
        rules=sweeper.deadline_rules(settings),
        deadline_seconds=DEADLINE,
        clock=world.clock,
        approvals=ApprovalExpiry(
            jobs=jobs or world.jobs,
            comments=comments,
            trackers={"github": adapter},
            metrics=sweeper.metrics,
            logger=sweeper.logger,
            clock=world.clock,
        ),
    )


@pytest.fixture
def world(aws: SimpleNamespace, api: GitHubRepoApi) -> Iterator[SimpleNamespace]:
    clock = Clock()
    adapter = trackers.GitHubTracker(trackers.TrackerOptions(token=lambda: TOKEN, api_url=api.url))
    jobs = JobStore(client=aws.ddb, table_name="idem", clock=clock)
    w = SimpleNamespace(api=api, aws=aws, adapter=adapter, jobs=jobs, clock=clock, comment_ids={})
    reporter.configure(
        reporter.ReporterDeps(
            jobs=jobs,
            comments=TrackerComments({"github": adapter}),
            repos=TrackerRepos(tokens={"github": lambda: TOKEN}, api_urls={"github": api.url}),
            trackers={"github": adapter},
            settings=FixSettings(progress_min_seconds=0),
        )
    )
    sweeper.configure(sweeper_deps(w))
    yield w
    sweeper.configure(None)
    reporter.configure(None)


def sweep() -> dict[str, Any]:
    return sweeper.handler({"source": "aws.events"}, LAMBDA_CONTEXT)


def deliver_result(world: SimpleNamespace, key: str, doc: FixJob, *, patch: str = "") -> dict[str, Any]:
    body = json.dumps(
        {
            "v": 1,
            "job_id": key,
            "session_id": doc.session_id,
            "seq": 9,
            "kind": "result",
            "at": 1.0,
            "context": doc.model_dump(),
            "result": {
                "type": "result",
                "text": "Done late.",
                "cost_usd": 0.5,
                "duration_ms": 1000,
                "patch": patch,
            },
        }
    )
    return dict(reporter.handler(sqs_event(body), LAMBDA_CONTEXT))


LATE = b"late\n"
PATCH = (
    "diff --git a/NOTES.md b/NOTES.md\nnew file mode 100644\n"
    f"index {'0' * 40}..{git_blob_sha(LATE)}\n"
    "--- /dev/null\n+++ b/NOTES.md\n@@ -0,0 +1 @@\n+late\n"
)


def comment(world: SimpleNamespace, key: str = KEY) -> dict[str, Any]:
    return world.api.comments[world.comment_ids[key]]


def metric_names(out: str) -> list[str]:
    return [name for doc in emf_lines(out) for name in doc if name[0].isupper()]


def test_an_overdue_job_is_ended_once_and_its_comment_says_so(
    world: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    start_job(world, KEY)
    world.clock.now = T0 + DEADLINE + 1
    assert sweep()["timed_out"] == 1
    state = world.jobs.get(KEY)
    assert state is not None and state.status == TIMED_OUT and state.error_code == "timed_out"
    assert state.notified_at == world.clock.now
    body = comment(world)["body"]
    assert comment(world)["edits"] == 1
    assert "`timed_out`" in body and "`/agent fix`" in body and "1.0 hours" in body
    world.clock.now += 3 * 900  # later runs: nothing more to do
    assert sweep() == {
        "timed_out": 0,
        "notified": 0,
        "lost_race": 0,
        "failed": 0,
        "within_deadline": 0,
        "complete": True,
        "approvals_expired": 0,
        "approvals_failed": False,
    }
    assert comment(world)["edits"] == 1
    assert metric_names(capsys.readouterr().out).count("JobsTimedOut") == 1


def test_a_job_within_its_deadline_is_untouched(world: SimpleNamespace) -> None:
    start_job(world, KEY)
    world.clock.now = T0 + DEADLINE - 1
    summary = sweep()
    assert summary["timed_out"] == 0 and summary["within_deadline"] == 1
    assert world.jobs.get(KEY).status == JOB and comment(world)["edits"] == 0


def test_states_without_a_deadline_rule_are_never_swept(world: SimpleNamespace) -> None:
    """A claim, a result being reported, a job waiting for an approval: each has its own expiry elsewhere."""
    start_job(world, KEY)
    world.jobs.begin_report(KEY, lease_seconds=300)  # reporting
    for i, status in enumerate(("running", "awaiting_approval")):
        world.aws.ddb.put_item(
            TableName="idem",
            Item={
                "id": {"S": f"reply#{str(i) * 64}"},
                "status": {"S": status},
                "stored_at": {"N": str(int(T0))},
                "started_at": {"N": str(T0)},
            },
        )
    world.clock.now = T0 + 10 * DEADLINE
    assert sweep()["timed_out"] == 0
    assert world.jobs.get(KEY).status == "reporting"
    statuses = {
        i["id"]["S"]: i["status"]["S"] for i in world.aws.ddb.scan(TableName="idem")["Items"] if "status" in i
    }
    assert statuses[f"reply#{'0' * 64}"] == "running"
    assert statuses[f"reply#{'1' * 64}"] == "awaiting_approval"


def test_a_late_result_after_the_sweep_opens_nothing(
    world: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = start_job(world, KEY)
    world.clock.now = T0 + DEADLINE + 1
    sweep()
    told = comment(world)["body"]
    assert deliver_result(world, KEY, doc, patch=PATCH) == {"batchItemFailures": []}
    assert deliver_result(world, KEY, doc, patch=PATCH) == {"batchItemFailures": []}  # and its redelivery
    assert not world.api.pulls
    assert comment(world)["body"] == told and comment(world)["edits"] == 1
    assert world.jobs.get(KEY).status == TIMED_OUT
    assert metric_names(capsys.readouterr().out).count("ResultsAfterTimeout") == 2


class ResultBetweenScanAndWrite(JobStore):
    """The reporter takes the result after the sweep read the job as open, before the sweep's write."""

    world: SimpleNamespace
    doc: FixJob

    def open_jobs(self, *args: Any, **kwargs: Any) -> Any:
        found = super().open_jobs(*args, **kwargs)
        assert deliver_result(self.world, KEY, self.doc, patch=PATCH) == {"batchItemFailures": []}
        return found


def test_a_result_that_wins_the_race_is_the_one_answer(world: SimpleNamespace) -> None:
    doc = start_job(world, KEY)
    world.clock.now = T0 + DEADLINE + 1
    racing = ResultBetweenScanAndWrite(client=world.aws.ddb, table_name="idem", clock=world.clock)
    racing.world, racing.doc = world, doc
    sweeper.configure(sweeper_deps(world, jobs=racing))
    summary = sweep()
    assert summary["timed_out"] == 0 and summary["lost_race"] == 1
    [pull] = world.api.pulls
    state = world.jobs.get(KEY)
    assert state.status == DONE and state.pr_url == pull["html_url"]
    assert comment(world)["edits"] == 1 and pull["html_url"] in comment(world)["body"]
    assert "timed_out" not in comment(world)["body"]


class SweepBetweenReadAndTake(JobStore):
    """The sweep ends the job after the reporter read it as running, before the reporter takes the result."""

    world: SimpleNamespace

    def begin_report(self, key: str, *, lease_seconds: float) -> bool:
        assert sweeper.handler({}, LAMBDA_CONTEXT)["timed_out"] == 1
        return super().begin_report(key, lease_seconds=lease_seconds)


def test_a_sweep_that_wins_the_race_is_the_one_answer(world: SimpleNamespace) -> None:
    doc = start_job(world, KEY)
    world.clock.now = T0 + DEADLINE + 1
    racing = SweepBetweenReadAndTake(client=world.aws.ddb, table_name="idem", clock=world.clock)
    deps = reporter._get_deps()
    reporter.configure(reporter.ReporterDeps(**{**deps.__dict__, "jobs": racing}))
    assert deliver_result(world, KEY, doc, patch=PATCH) == {"batchItemFailures": []}
    assert not world.api.pulls
    assert world.jobs.get(KEY).status == TIMED_OUT
    assert comment(world)["edits"] == 1 and "`timed_out`" in comment(world)["body"]


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_a_comment_edit_that_fails_is_retried_by_the_next_run_and_counted_once(
    world: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    start_job(world, KEY)
    world.clock.now = T0 + DEADLINE + 1
    sweeper.configure(sweeper_deps(world, api_url=_closed_port()))  # the tracker's API is down
    summary = sweep()
    assert summary["timed_out"] == 1 and summary["failed"] == 1 and summary["notified"] == 0
    assert world.jobs.get(KEY).status == TIMED_OUT and comment(world)["edits"] == 0
    sweeper.configure(sweeper_deps(world))  # it is back
    world.clock.now += 900
    assert sweep()["notified"] == 1
    assert comment(world)["edits"] == 1 and "`timed_out`" in comment(world)["body"]
    assert sweep()["notified"] == 0
    assert metric_names(capsys.readouterr().out).count("JobsTimedOut") == 1


def test_one_overdue_job_of_many_and_the_page_bound(world: SimpleNamespace) -> None:
    """Only the overdue job is ended among many items; a bound too small for the table says so."""
    start_job(world, KEY)
    world.clock.now = T0 + 2 * DEADLINE
    other = "b" * 64
    start_job(world, other)  # started later: within its deadline
    for i in range(30):  # other items of the table (stored replies, receiver records)
        world.aws.ddb.put_item(TableName="idem", Item={"id": {"S": f"reply#r{i}"}, "status": {"S": "posted"}})
    summary = sweep()
    assert summary["timed_out"] == 1 and summary["within_deadline"] == 1 and summary["complete"]
    assert world.jobs.get(KEY).status == TIMED_OUT and world.jobs.get(other).status == JOB
    bounded = sweeper_deps(world)
    bounded.page_size, bounded.max_pages = 5, 2
    sweeper.configure(bounded)
    assert sweep()["complete"] is False


def test_a_job_waiting_for_approval_outlives_the_deadline_and_ends_at_its_own_expiry(
    world: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same run times out started jobs and expires approvals: a waiting job is never ``timed_out`` (nothing
    is due from the runtime while it waits), and once its card's expiry passes it ends ``expired``, once."""
    start_job(world, KEY)
    # The worker keeps the progress comment's id with its claim: the card is that comment.
    world.aws.ddb.update_item(
        TableName="idem",
        Key={"id": {"S": f"reply#{KEY}"}},
        UpdateExpression="SET progress_comment_id = :c",
        ExpressionAttributeValues={":c": {"S": str(world.comment_ids[KEY])}},
    )
    assert world.jobs.begin_report(KEY, lease_seconds=300)
    approval = {"id": "apv-0123456789abcdef0123", "tool": "Edit", "expires_at": T0 + 3 * DEADLINE}
    assert world.jobs.await_approval(KEY, approval, cost_usd=0.25, hold_seconds=DEADLINE)
    world.clock.now = T0 + 2 * DEADLINE  # past the job deadline, before the approval's expiry
    summary = sweep()
    assert summary["timed_out"] == 0 and summary["approvals_expired"] == 0
    assert world.jobs.get(KEY).status == "awaiting_approval" and comment(world)["edits"] == 0
    world.clock.now = T0 + 3 * DEADLINE + 1
    summary = sweep()
    assert summary["timed_out"] == 0 and summary["approvals_expired"] == 1
    assert not summary["approvals_failed"]
    assert world.jobs.get(KEY).status == EXPIRED
    assert "apv-0123456789abcdef0123" in comment(world)["body"] and "expired at" in comment(world)["body"]
    world.clock.now += 900
    assert sweep()["approvals_expired"] == 0 and comment(world)["edits"] == 1
    names = metric_names(capsys.readouterr().out)
    assert names.count("ApprovalsExpired") == 1 and "JobsTimedOut" not in names


def test_an_expiry_whose_comment_edit_failed_is_told_by_the_next_run_and_counted_once(
    world: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tracker is down: the overdue job is still ended, the expired job stays on the pending list, and the
    next run edits its card (once) without counting it again."""
    start_job(world, "c" * 64)
    start_job(world, KEY)
    world.aws.ddb.update_item(
        TableName="idem",
        Key={"id": {"S": f"reply#{KEY}"}},
        UpdateExpression="SET progress_comment_id = :c",
        ExpressionAttributeValues={":c": {"S": str(world.comment_ids[KEY])}},
    )
    assert world.jobs.begin_report(KEY, lease_seconds=300)
    approval = {"id": "apv-0123456789abcdef0123", "tool": "Edit", "expires_at": T0 + 1.0}
    assert world.jobs.await_approval(KEY, approval, cost_usd=None, hold_seconds=DEADLINE)
    world.clock.now = T0 + DEADLINE + 1
    sweeper.configure(sweeper_deps(world, api_url=_closed_port()))
    summary = sweep()
    assert summary["timed_out"] == 1 and summary["approvals_failed"]
    assert world.jobs.get("c" * 64).status == TIMED_OUT
    assert world.jobs.get(KEY).status == EXPIRED and KEY in world.jobs.pending_approvals()
    assert comment(world)["edits"] == 0
    sweeper.configure(sweeper_deps(world))  # it is back
    summary = sweep()
    assert not summary["approvals_failed"] and summary["approvals_expired"] == 0  # counted before
    assert comment(world)["edits"] == 1 and "expired at" in comment(world)["body"]
    assert KEY not in world.jobs.pending_approvals()
    sweep()
    assert comment(world)["edits"] == 1
    assert metric_names(capsys.readouterr().out).count("ApprovalsExpired") == 1


def test_a_job_waiting_past_its_deadline_keeps_its_issue_until_the_approval_expires(
    world: SimpleNamespace,
) -> None:
    """The reporter that records the pause holds the issue's one-active-fix marker until the approval's expiry
    plus the job deadline (``JOB_DEADLINE_SECONDS``): a second fix cannot start while the first one waits; the
    sweep's expiry gives the issue up."""
    reporter.configure(
        reporter.ReporterDeps(
            jobs=world.jobs,
            comments=TrackerComments({"github": world.adapter}),
            repos=TrackerRepos(tokens={"github": lambda: TOKEN}, api_urls={"github": world.api.url}),
            trackers={"github": world.adapter},
            settings=FixSettings(progress_min_seconds=0, job_deadline_seconds=DEADLINE),
        )
    )
    doc = job_doc(world.api)
    hold = {"hold_seconds": DEADLINE, "claim_grace_seconds": 600}
    assert world.jobs.take_active(doc.session_id, KEY, **hold)
    doc = start_job(world, KEY)
    card = {
        "id": "apv-0123456789abcdef0123",
        "tool": "Edit",
        "input": {"file_path": "src/calc.py"},
        "input_hash": "sha256:" + "ab" * 32,
        "rule": "paths: src/**",
        "cost_usd": 0.1,
        "created_at": T0,
        "expires_at": T0 + 3 * DEADLINE,
    }
    event = {
        "v": 1,
        "job_id": KEY,
        "session_id": doc.session_id,
        "seq": 9,
        "kind": "result",
        "at": T0,
        "context": doc.model_dump(),
        "result": {
            "type": "result",
            "subtype": "awaiting_approval",
            "text": "",
            "cost_usd": 0.1,
            "approval": card,
        },
    }
    assert reporter.handler(sqs_event(json.dumps(event)), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert world.jobs.get(KEY).status == "awaiting_approval"
    world.clock.now = T0 + 2 * DEADLINE  # the marker's own deadline passed; the fix still waits
    assert not world.jobs.take_active(doc.session_id, "other", **hold)
    world.clock.now = T0 + 3 * DEADLINE + 1
    assert sweep()["approvals_expired"] == 1
    assert world.jobs.take_active(doc.session_id, "other", **hold)
