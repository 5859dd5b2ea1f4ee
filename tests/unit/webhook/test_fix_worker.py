"""The worker's start of fix jobs: one progress comment, one accepted job per task, final errors on the issue,
transient ones retried without a second comment. moto DynamoDB; the GitHub stand-in (repository and comments);
an AgentCore stand-in answering as the runtime does (202 job_accepted, or an error status)."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from harness.adf_check import adf_errors
from harness.github_repo_api import GitHubRepoApi
from harness.tracker_apis import JiraApi
from harness.webhook_scene import LAMBDA_CONTEXT, sqs_event
from tests.unit.webhook.support import (
    JIRA_SITE,
    JIRA_TOKEN,
    TOKEN,
    emf_lines,
    runtime_client_error,
    task_json,
    worker_client,
    worker_deps,
)
from webhook import trackers, worker
from webhook.fix.config import FixSettings
from webhook.fix.jobs import DONE, JOB, JobStore
from webhook.fix.repos import TrackerComments, TrackerRepos
from webhook.fix.worker import FixDeps, FixRunner
from webhook.trackers.targets import RepoTarget
from webhook.webhook_metrics import TrackerMetrics

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
FILES = {"src/calc.py": ("100644", b"def add(a, b):\n    return a - b\n")}


def fix_task(number: int = 7, *, tracker: str = "github", repository: str = "octo/kit") -> tuple[str, str]:
    """A fix task's SQS body and its key (as the receiver would have set it)."""
    doc = json.loads(task_json(number, comment="/agent fix it", tracker=tracker, repository=repository))
    key = hashlib.sha256(f"signed-{tracker}-{number}".encode()).hexdigest()
    doc.update(intent="fix", idempotency_key=key)
    return json.dumps(doc), key


@pytest.fixture
def api() -> Iterator[GitHubRepoApi]:
    with GitHubRepoApi(token=TOKEN, repository="octo/kit", files=dict(FILES)) as server:
        yield server


@pytest.fixture
def setup(aws: SimpleNamespace, api: GitHubRepoApi, stand_in: Any, jira_api: JiraApi) -> SimpleNamespace:
    runtime = stand_in((202, "application/json", {"type": "job_accepted", "job_id": "x", "session_id": "s"}))
    deps = worker_deps(worker_client(runtime.url), api.url, jira_url=jira_api.url)
    adapters = dict(deps.trackers)
    jobs = JobStore(client=aws.ddb, table_name="idem")
    deps.fix = FixRunner(
        fx=FixDeps(
            jobs=jobs,
            repos=TrackerRepos(tokens={"github": lambda: TOKEN}, api_urls={"github": api.url}),
            comments=TrackerComments(adapters),
            settings=FixSettings(jira_repositories={"OPS": RepoTarget("github", "octo/kit")}),
        ),
        invoker=deps.invoker,
        trackers=adapters,
        metrics=TrackerMetrics(service="test"),
        logger=worker.logger,
    )
    worker.configure(deps)
    return SimpleNamespace(runtime=runtime, api=api, jobs=jobs, jira=jira_api)


def accept(setup: SimpleNamespace, key: str) -> None:
    setup.runtime.default = (
        202,
        "application/json",
        {"type": "job_accepted", "job_id": key, "session_id": "s"},
    )


def test_a_fix_task_posts_one_comment_and_starts_one_job(setup: SimpleNamespace) -> None:
    body, key = fix_task()
    accept(setup, key)
    for _ in range(2):  # SQS delivers it twice: one job, one comment
        assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    [invocation] = setup.runtime.requests
    sent = json.loads(invocation["body"])
    assert sent["async"] is True and sent["job"]["id"] == key and sent["stream"] is False
    assert sent["job"]["context"]["base_sha"] == setup.api.base_commit
    assert "<tracker-text-" in sent["prompt"] and "/agent fix it" in sent["prompt"]
    assert TOKEN not in invocation["body"].decode()
    [comment] = setup.api.comments.values()
    assert comment["body"].startswith("Working on it") and trackers.AGENT_REPLY_MARKER in comment["body"]
    state = setup.jobs.get(key)
    assert state.status == JOB and state.progress_comment_id == str(comment["id"])


def test_a_busy_session_is_retried_with_the_same_progress_comment(setup: SimpleNamespace) -> None:
    body, key = fix_task()
    setup.runtime.script = [runtime_client_error("Received error (429) from runtime. Please check your logs")]
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    assert setup.jobs.get(key).status == "released"
    accept(setup, key)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(setup.runtime.requests) == 2 and setup.jobs.get(key).status == JOB
    [comment] = setup.api.comments.values()  # not a second "working…" comment
    assert comment["edits"] == 0


def test_a_refused_job_becomes_a_short_error_and_is_not_retried(setup: SimpleNamespace) -> None:
    body, key = fix_task()
    setup.runtime.script = [runtime_client_error("Received error (400) from runtime. Please check your logs")]
    for _ in range(2):
        assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(setup.runtime.requests) == 1
    [comment] = setup.api.comments.values()
    assert "(`invalid_request`)" in comment["body"] and comment["edits"] == 1
    assert setup.jobs.get(key).status == DONE and setup.jobs.get(key).error_code == "invalid_request"


def test_a_jira_issue_without_a_mapped_repository_says_so(setup: SimpleNamespace) -> None:
    body, key = fix_task(9, tracker="jira", repository="SP")
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert not setup.runtime.requests
    [reply] = setup.jira.replies
    assert reply["issue"] == "SP-9" and "no_repository_mapped" in json.dumps(reply["body"])
    # the hint names the setting to map the project in, and the comment is still valid ADF
    assert "webhook.jira.repositories" in json.dumps(reply["body"]) and adf_errors(reply["body"]) == []
    assert setup.jobs.get(key).error_code == "no_repository_mapped"


def test_a_jira_issue_of_a_mapped_project_works_on_its_repository(setup: SimpleNamespace) -> None:
    body, key = fix_task(3, tracker="jira", repository="OPS")
    accept(setup, key)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    context = json.loads(setup.runtime.requests[0]["body"])["job"]["context"]
    assert (context["tracker"], context["target_tracker"], context["target_repository"]) == (
        "jira",
        "github",
        "octo/kit",
    )
    assert context["comment_url"].startswith(JIRA_SITE + "/browse/OPS-3")
    assert trackers.jira_auth_header(JIRA_TOKEN) not in json.dumps(setup.runtime.requests[0]["headers"])


def test_without_fix_support_the_task_fails_instead_of_answering(
    setup: SimpleNamespace, monkeypatch: Any
) -> None:
    body, _ = fix_task()
    deps = worker._get_deps()
    monkeypatch.setattr(deps, "fix", None)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    assert not setup.runtime.requests


def test_a_snapshot_over_the_inline_cap_goes_through_the_workspace_bucket(
    setup: SimpleNamespace, monkeypatch: Any
) -> None:
    import boto3

    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="kit-ws")
    fx = worker._get_deps().fix.fx  # type: ignore[union-attr]
    monkeypatch.setattr(fx, "s3", s3)
    monkeypatch.setattr(
        fx, "settings", FixSettings(workspace_s3_uri="s3://kit-ws/dev/", inline_snapshot_max_bytes=10)
    )
    body, key = fix_task()
    accept(setup, key)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    workspace = json.loads(setup.runtime.requests[0]["body"])["workspace"]
    assert workspace == {"s3_uri": f"s3://kit-ws/dev/jobs/{key}/workspace.tar.gz"}
    archive = s3.get_object(Bucket="kit-ws", Key=f"dev/jobs/{key}/workspace.tar.gz")["Body"].read()
    assert archive[:2] == b"\x1f\x8b"  # the gzip snapshot itself


def test_the_snapshot_is_streamed_through_spool_files_that_are_gone_afterwards(
    setup: SimpleNamespace, monkeypatch: Any, tmp_path: Any
) -> None:
    """The worker downloads, checks and writes the snapshot on disk (its /tmp) and removes every spool file,
    whether the runtime took the job or refused it; the runtime gets the same snapshot as an in-memory repack."""
    fx = worker._get_deps().fix.fx  # type: ignore[union-attr]
    monkeypatch.setattr(fx.repos, "spool_dir", str(tmp_path))
    body, key = fix_task()
    accept(setup, key)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    sent = base64.b64decode(json.loads(setup.runtime.requests[0]["body"])["workspace"]["tar_gz_b64"])
    base = fx.repos.repo("github", "octo/kit").fetch_snapshot(setup.api.base_commit)  # type: ignore[union-attr]
    assert sent == base.archive and list(tmp_path.iterdir()) == []
    other, other_key = fix_task(8)
    setup.runtime.script = [runtime_client_error("Received error (400) from runtime. Please check your logs")]
    assert worker.handler(sqs_event(other), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.jobs.get(other_key).error_code == "invalid_request" and list(tmp_path.iterdir()) == []


class WorkerDied(Exception):
    """The Lambda ended right there (timeout or crash): nothing after it ran, the SQS record is redelivered."""


def test_a_worker_that_died_after_the_202_is_taken_over_with_the_same_job(
    setup: SimpleNamespace, monkeypatch: Any
) -> None:
    body, key = fix_task()
    accept(setup, key)
    fx = worker._get_deps().fix.fx  # type: ignore[union-attr]

    def died(*args: Any, **kwargs: Any) -> bool:
        raise WorkerDied

    monkeypatch.setattr(setup.jobs, "started", died)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    assert setup.jobs.get(key).status == "running"  # the claim the dead worker left
    monkeypatch.undo()
    # Meanwhile the default branch moved on: the retry still sends the job the runtime may already have.
    api = setup.api
    api.git.refs["main"] = api.git.commit_files({"new.txt": ("100644", b"x\n")}, [api.base_commit], "later")
    # Within the lease the task is still being started: retried later, nothing sent.
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    assert len(setup.runtime.requests) == 1
    monkeypatch.setattr(fx, "clock", lambda: time.time() + 901)  # the lease (900 s) is over
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    first, again = (json.loads(r["body"]) for r in setup.runtime.requests)
    assert again["job"] == first["job"] and again["job"]["id"] == key  # the runtime accepts it idempotently
    assert again["workspace"] == first["workspace"]  # the same snapshot (of the first base commit)
    assert first["job"]["context"]["base_sha"] == api.base_commit
    state = setup.jobs.get(key)
    assert state.status == JOB and state.job.model_dump() == first["job"]["context"]
    [comment] = setup.api.comments.values()  # the one progress comment, untouched
    assert comment["edits"] == 0 and str(comment["id"]) == state.progress_comment_id
    # recorded once: nothing more
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(setup.runtime.requests) == 2


def test_a_worker_that_died_before_it_invoked_is_taken_over_and_starts_the_job_once(
    setup: SimpleNamespace, monkeypatch: Any
) -> None:
    body, key = fix_task()
    accept(setup, key)
    fx = worker._get_deps().fix.fx  # type: ignore[union-attr]

    def died(*args: Any, **kwargs: Any) -> Any:
        raise WorkerDied

    monkeypatch.setattr(fx.repos, "fetch", died)  # while fetching the snapshot
    monkeypatch.setattr(setup.jobs, "release", lambda key: None)  # a dead worker releases nothing
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    monkeypatch.undo()
    monkeypatch.setattr(fx, "clock", lambda: time.time() + 901)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    [invocation] = setup.runtime.requests
    assert json.loads(invocation["body"])["job"]["id"] == key
    assert setup.jobs.get(key).status == JOB
    [comment] = setup.api.comments.values()
    assert comment["body"].startswith("Working on it") and comment["edits"] == 0


def pr_fix_task(number: int) -> tuple[str, str]:
    body, key = fix_task(number)
    doc = json.loads(body)
    doc["pull_request"] = True
    return json.dumps(doc), key


def test_a_fix_on_a_pull_request_from_a_fork_is_refused_with_a_clear_comment(setup: SimpleNamespace) -> None:
    setup.api.open_pull_request("patch-1", dict(FILES), number=12, fork="mallory/kit")
    body, key = pr_fix_task(12)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert not setup.runtime.requests and not setup.api.codeload_requests  # nothing fetched, nothing sent
    [comment] = setup.api.comments.values()
    assert comment["issue"] == 12 and "(`fork_pull_request`)" in comment["body"]
    state = setup.jobs.get(key)
    assert state.status == DONE and state.error_code == "fork_pull_request"


def test_a_fix_on_a_pull_request_works_on_its_head(setup: SimpleNamespace) -> None:
    head_files = {**FILES, "src/extra.py": ("100644", b"X = 1\n")}
    pull = setup.api.open_pull_request("feature", head_files, number=12)
    body, key = pr_fix_task(12)
    accept(setup, key)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    context = json.loads(setup.runtime.requests[0]["body"])["job"]["context"]
    assert context["base_sha"] == pull["head"]["sha"] != setup.api.base_commit
    assert (context["base_branch"], context["pr_base"], context["pull_request"]) == (
        "feature",
        "feature",
        True,
    )


def started_counts(out: str) -> int:
    return sum(1 for doc in emf_lines(out) if "FixJobsStarted" in doc)


def test_a_job_started_by_a_delivery_that_took_the_claim_over_is_counted_once(
    setup: SimpleNamespace, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    body, key = fix_task()
    accept(setup, key)
    fx = worker._get_deps().fix.fx  # type: ignore[union-attr]
    real_started = setup.jobs.started
    nested: list[bool] = []

    def slow_started(*args: Any, **kwargs: Any) -> bool:
        # The first worker stalls after the 202 until the lease is over and a redelivery takes the claim over.
        if not nested:
            nested.append(True)
            with monkeypatch.context() as later:
                later.setattr(fx, "clock", lambda: time.time() + 901)
                assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        return bool(real_started(*args, **kwargs))

    monkeypatch.setattr(setup.jobs, "started", slow_started)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.jobs.get(key).status == JOB and len(setup.runtime.requests) == 2
    assert started_counts(capsys.readouterr().out) == 1


def test_a_job_the_reporter_recorded_first_is_not_counted_again_by_the_worker(
    setup: SimpleNamespace, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    body, key = fix_task()
    accept(setup, key)
    real_started = setup.jobs.started

    def reporter_first(k: str, job: Any, *, claimed_at: int) -> bool:
        assert real_started(k, job, claimed_at=claimed_at)  # the job's first event reached the reporter first
        return bool(real_started(k, job, claimed_at=claimed_at))

    monkeypatch.setattr(setup.jobs, "started", reporter_first)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.jobs.get(key).status == JOB
    assert started_counts(capsys.readouterr().out) == 0  # the reporter's write counted it (test_fix_reporter)
