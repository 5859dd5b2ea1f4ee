"""The worker's start of fix jobs: one progress comment, one accepted job per task, final errors on the issue,
transient ones retried without a second comment. moto DynamoDB; the GitHub stand-in (repository and comments);
an AgentCore stand-in answering as the runtime does (202 job_accepted, or an error status)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import trackers
import worker
from fix_config import FixSettings, RepoTarget
from fix_jobs import DONE, JOB, JobStore
from fix_repos import TrackerComments, TrackerRepos
from fix_worker import FixDeps, FixRunner
from webhook_metrics import TrackerMetrics

from harness.github_repo_api import GitHubRepoApi
from harness.tracker_apis import JiraApi
from tests.unit.webhook.support import (
    CTX,
    JIRA_SITE,
    JIRA_TOKEN,
    TOKEN,
    runtime_client_error,
    sqs_event,
    task_json,
    worker_client,
    worker_deps,
)

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
        assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": []}
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
    assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert setup.jobs.get(key).status == "released"
    accept(setup, key)
    assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": []}
    assert len(setup.runtime.requests) == 2 and setup.jobs.get(key).status == JOB
    [comment] = setup.api.comments.values()  # not a second "working…" comment
    assert comment["edits"] == 0


def test_a_refused_job_becomes_a_short_error_and_is_not_retried(setup: SimpleNamespace) -> None:
    body, key = fix_task()
    setup.runtime.script = [runtime_client_error("Received error (400) from runtime. Please check your logs")]
    for _ in range(2):
        assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": []}
    assert len(setup.runtime.requests) == 1
    [comment] = setup.api.comments.values()
    assert "(`invalid_request`)" in comment["body"] and comment["edits"] == 1
    assert setup.jobs.get(key).status == DONE and setup.jobs.get(key).error_code == "invalid_request"


def test_a_jira_issue_without_a_mapped_repository_says_so(setup: SimpleNamespace) -> None:
    body, key = fix_task(9, tracker="jira", repository="SP")
    assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": []}
    assert not setup.runtime.requests
    [reply] = setup.jira.replies
    assert reply["issue"] == "SP-9" and "no_repository_mapped" in json.dumps(reply["body"])
    assert setup.jobs.get(key).error_code == "no_repository_mapped"


def test_a_jira_issue_of_a_mapped_project_works_on_its_repository(setup: SimpleNamespace) -> None:
    body, key = fix_task(3, tracker="jira", repository="OPS")
    accept(setup, key)
    assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": []}
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
    assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
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
    assert worker.handler(sqs_event(body), CTX) == {"batchItemFailures": []}
    workspace = json.loads(setup.runtime.requests[0]["body"])["workspace"]
    assert workspace == {"s3_uri": f"s3://kit-ws/dev/jobs/{key}/workspace.tar.gz"}
    archive = s3.get_object(Bucket="kit-ws", Key=f"dev/jobs/{key}/workspace.tar.gz")["Body"].read()
    assert archive[:2] == b"\x1f\x8b"  # the gzip snapshot itself
