"""The reporter on its own: job events (as the runtime sends them) against a recorded job, the GitHub stand-in
(repository, pull requests, comments) and moto DynamoDB. What a message claims is checked against the job."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from harness.github_repo_api import GitHubRepoApi
from harness.webhook_scene import LAMBDA_CONTEXT, sqs_event
from tests.unit.webhook.support import JIRA_SITE, JIRA_TOKEN, TOKEN, emf_lines, fix_job, start_fix_job
from webhook import reporter, trackers
from webhook.fix.config import FixSettings
from webhook.fix.jobs import DONE, JobStore
from webhook.fix.repos import TrackerComments, TrackerRepos
from webhook.repo import git_blob_sha
from webhook.trackers.targets import RepoTarget

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
OLD, NEW = b"def add(a, b):\n    return a - b\n", b"def add(a, b):\n    return a + b\n"
FILES = {"src/calc.py": ("100644", OLD), "README.md": ("100644", b"# calc\n")}
PATCH = (
    "diff --git a/src/calc.py b/src/calc.py\n"
    f"index {git_blob_sha(OLD)}..{git_blob_sha(NEW)} 100644\n"
    "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n"
)
KEY = "d" * 64


@pytest.fixture
def api() -> Iterator[GitHubRepoApi]:
    with GitHubRepoApi(token=TOKEN, repository="octo/kit", files=dict(FILES)) as server:
        yield server


@pytest.fixture
def world(aws: SimpleNamespace, api: GitHubRepoApi) -> Iterator[SimpleNamespace]:
    adapter = trackers.GitHubTracker(trackers.TrackerOptions(token=lambda: TOKEN, api_url=api.url))
    jobs = JobStore(client=aws.ddb, table_name="idem")
    comments = TrackerComments({"github": adapter})
    doc, progress = start_fix_job(jobs, adapter, KEY, fix_job())
    reporter.configure(
        reporter.ReporterDeps(
            jobs=jobs,
            comments=comments,
            repos=TrackerRepos(tokens={"github": lambda: TOKEN}, api_urls={"github": api.url}),
            trackers={"github": adapter},
            settings=FixSettings(progress_min_seconds=60, workspace_s3_uri="s3://kit-bucket/dev/"),
        )
    )
    yield SimpleNamespace(api=api, jobs=jobs, job=doc, comment_id=progress.id)
    reporter.configure(None)


def event(world: SimpleNamespace, seq: int, kind: str, **fields: Any) -> str:
    doc = world.job.model_dump()
    if kind == "result":
        fields.setdefault(
            "result",
            {"type": "result", "text": "Fixed add.", "cost_usd": 0.42, "duration_ms": 65_000, "patch": PATCH},
        )
    return json.dumps(
        {
            "v": 1,
            "job_id": KEY,
            "session_id": world.job.session_id,
            "seq": seq,
            "kind": kind,
            "at": 1.0,
            "context": doc,
            **fields,
        }
    )


def deliver(body: str) -> dict[str, Any]:
    return dict(reporter.handler(sqs_event(body), LAMBDA_CONTEXT))


@pytest.fixture(autouse=True)
def _base_sha(world: SimpleNamespace) -> None:
    # The job's base is the stand-in's real first commit.
    world.job = world.job.model_copy(update={"base_sha": world.api.base_commit})
    world.jobs._client.update_item(
        TableName="idem",
        Key={"id": {"S": f"reply#{KEY}"}},
        UpdateExpression="SET job = :j",
        ExpressionAttributeValues={":j": {"S": world.job.model_dump_json()}},
    )


def test_a_result_opens_one_draft_pull_request_and_its_duplicate_nothing(
    world: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    body = event(world, 3, "result")
    assert deliver(body) == {"batchItemFailures": []}
    assert deliver(body) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert pull["draft"] and world.api.branch_changes(pull["head"]["ref"]) == {"src/calc.py": ("100644", NEW)}
    [comment] = world.api.comments.values()
    assert comment["edits"] == 1 and comment["body"].startswith("Fixed add.")
    assert pull["html_url"] in comment["body"] and "cost $0.4200 · 1m 05s" in comment["body"]
    state = world.jobs.get(KEY)
    assert state.status == DONE and state.pr_url == pull["html_url"]
    emitted = {name: doc for doc in emf_lines(capsys.readouterr().out) for name in doc if name[0].isupper()}
    for name in ("PullRequestsOpened", "PatchesApplied", "PullRequestCostUSD", "FixResultDuplicate"):
        assert emitted[name]["Tracker"] == "github", name
    assert emitted["PullRequestCostUSD"]["PullRequestCostUSD"] == [0.42]


def test_a_message_that_does_not_match_the_recorded_job_changes_nothing(world: SimpleNamespace) -> None:
    doc = json.loads(event(world, 3, "result"))
    doc["context"]["target_repository"] = "evil/other"  # forged: point the token at another repository
    assert deliver(json.dumps(doc)) == {"batchItemFailures": []}
    doc = json.loads(event(world, 3, "result"))
    doc["job_id"] = "f" * 64  # a job nobody started
    assert deliver(json.dumps(doc)) == {"batchItemFailures": []}
    assert not world.api.pulls and not any(c["edits"] for c in world.api.comments.values())
    assert world.jobs.get(KEY).status == "job"  # the real result can still come


def test_a_patch_outside_the_jobs_own_object_is_refused(world: SimpleNamespace) -> None:
    result = {
        "type": "result",
        "text": "x",
        "cost_usd": 0.1,
        "patch_s3_uri": "s3://kit-bucket/jobs/other/patch.diff",
    }
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [comment] = world.api.comments.values()
    assert "`patch_location_refused`" in comment["body"] and not world.api.pulls
    assert world.jobs.get(KEY).error_code == "patch_location_refused"


def test_an_error_result_becomes_a_short_comment_with_its_code(world: SimpleNamespace) -> None:
    result = {"type": "error", "code": "turn_timeout", "message": "arn:aws:secret detail", "cost_usd": 0.3}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [comment] = world.api.comments.values()
    assert (
        "`turn_timeout`" in comment["body"]
        and "arn:aws" not in comment["body"]
        and "$0.3000" in comment["body"]
    )


def test_no_change_means_no_pull_request(world: SimpleNamespace) -> None:
    result = {"type": "result", "text": "Nothing to fix.", "cost_usd": 0.1, "patch": ""}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    assert not world.api.pulls
    assert "No change to propose" in next(iter(world.api.comments.values()))["body"]


def test_progress_edits_are_throttled_and_stale_events_ignored(world: SimpleNamespace) -> None:
    progress = {"elapsed_s": 75.0, "tool_calls": 3, "last_tool": "Bash", "cost_usd": 0.05}
    assert deliver(event(world, 2, "progress", **progress)) == {"batchItemFailures": []}
    assert deliver(event(world, 3, "progress", **progress)) == {
        "batchItemFailures": []
    }  # within 60 s: kept, not shown
    assert deliver(event(world, 1, "progress", **progress)) == {"batchItemFailures": []}  # older: ignored
    [comment] = world.api.comments.values()
    assert comment["edits"] == 1 and "1m 15s so far, 3 tool calls (last: `Bash`)" in comment["body"]
    assert world.jobs.get(KEY).last_seq == 3


def test_a_result_before_the_job_is_recorded_is_retried(aws: SimpleNamespace, world: SimpleNamespace) -> None:
    other = "9" * 64
    assert world.jobs.claim(other)  # claimed, the runtime's 202 not yet recorded
    doc = json.loads(event(world, 1, "result"))
    doc["job_id"] = other
    assert deliver(json.dumps(doc)) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}


def test_branch_mode_pushes_the_branch_and_links_create_pr(
    world: SimpleNamespace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    deps = reporter._get_deps()
    monkeypatch.setattr(deps, "settings", FixSettings(pr_mode="branch"))
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}
    assert not world.api.pulls
    # The branch lives in the bot's fork (the default): nothing is pushed to the repository itself.
    assert not [name for name in world.api.git.refs if name.startswith("agent/")]
    [branch] = [
        name for name in world.api.forks["agentkit-bot/kit"].refs if name.startswith("agent/issue-7-")
    ]
    assert world.api.branch_changes(branch) == {"src/calc.py": ("100644", NEW)}
    [comment] = world.api.comments.values()
    assert (
        f"/compare/main...agentkit-bot:{branch}?expand=1" in comment["body"]
        and "create the pull request" in comment["body"]
    )
    names = {name for doc in emf_lines(capsys.readouterr().out) for name in doc if name[0].isupper()}
    assert "PatchesApplied" in names and "PullRequestsOpened" not in names


def test_a_fix_on_a_pull_request_starts_from_its_head_and_targets_its_branch(world: SimpleNamespace) -> None:
    api = world.api
    head = api.git.commit_files({**FILES, "NOTES.md": ("100644", b"wip\n")}, [api.base_commit], "wip")
    api.git.refs["feature"] = head
    api.pulls.append(
        {
            "number": 1,
            "html_url": f"{api.html_url}/pull/1",
            "state": "open",
            "draft": False,
            "title": "wip",
            "body": "",
            "head": {"ref": "feature", "sha": head},
            "base": {"ref": "main"},
        }
    )
    repos = reporter._get_deps().repos
    fetched = repos.fetch(RepoTarget("github", "octo/kit"), pull_request=1)
    assert (fetched.commit_sha, fetched.branch, fetched.pr_base) == (head, "feature", "feature")
    proposal = repos.propose(
        world.job.model_copy(update={"base_sha": head, "base_branch": "feature", "pr_base": "feature"}),
        KEY,
        PATCH,
        mode="draft_pr",
        title="t",
        body="b",
    )
    assert proposal is not None
    pull = api.pulls[-1]
    assert pull["base"]["ref"] == "feature" and pull["html_url"] == proposal.result.url
    assert api.branch_changes(pull["head"]["ref"], base=head) == {"src/calc.py": ("100644", NEW)}


def test_a_jira_issue_gets_the_pull_request_link_in_its_comment(
    aws: SimpleNamespace, world: SimpleNamespace, jira_api: Any
) -> None:
    jira = trackers.JiraTracker(
        trackers.TrackerOptions(api_url=jira_api.url, token=lambda: JIRA_TOKEN), site_url=JIRA_SITE
    )
    deps = reporter._get_deps()
    deps.trackers["jira"] = jira
    deps.comments = TrackerComments(deps.trackers)
    task = trackers.AgentTask(
        tracker="jira",
        repository="OPS",
        issue_number=3,
        scope_id="example.atlassian.net",
        issue_id="10003",
        title="",
        author="x",
        delivery_id="d",
        event="e",
    )
    posted = jira.post_reply(task, "Working on it…")
    key = "7" * 64
    doc = world.job.model_copy(
        update={
            "tracker": "jira",
            "repository": "OPS",
            "issue_number": 3,
            "issue_id": "10003",
            "scope_id": "example.atlassian.net",
            "issue_ref": "OPS-3",
            "comment_id": str(posted.id),
            "session_id": "jira-" + "8" * 64,
        }
    )
    assert world.jobs.claim(key)
    assert world.jobs.started(key, doc, claimed_at=world.jobs.get(key).stored_at)
    body = json.loads(event(world, 1, "result"))
    body.update(job_id=key, session_id=doc.session_id, context=doc.model_dump())
    assert deliver(json.dumps(body)) == {"batchItemFailures": []}
    [pull] = world.api.pulls  # on the mapped GitHub repository
    [comment] = jira_api.replies
    assert comment["issue"] == "OPS-3" and comment["edits"] == 1
    assert pull["html_url"] in json.dumps(comment["body"])


def test_the_pull_request_text_is_made_inert_like_a_comment(world: SimpleNamespace) -> None:
    text = "Fixed. cc @octo-org/admins ![t](https://evil.example/pixel.png) <img src=x>"
    result = {"type": "result", "text": text, "cost_usd": 0.1, "duration_ms": 10, "patch": PATCH}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert "`@octo-org/admins`" in pull["body"] and "![" not in pull["body"] and "<img" not in pull["body"]


def test_a_deleted_progress_comment_gets_the_answer_as_a_new_comment(world: SimpleNamespace) -> None:
    world.api.comments.clear()  # someone deleted it while the agent worked
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    [comment] = world.api.comments.values()
    assert comment["edits"] == 0 and pull["html_url"] in comment["body"]
    assert world.jobs.get(KEY).status == DONE


def test_a_result_of_a_prepared_job_whose_worker_died_is_recorded_and_reported_once(
    world: SimpleNamespace,
) -> None:
    other = "8" * 64
    assert world.jobs.claim(other)
    claim = world.jobs.get(other)
    # The worker kept the job on its claim, invoked the runtime and died before recording the 202.
    assert world.jobs.prepared(other, world.job, claimed_at=claim.stored_at)
    doc = json.loads(event(world, 2, "result"))
    doc["job_id"] = other
    for _ in range(2):
        assert deliver(json.dumps(doc)) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    state = world.jobs.get(other)
    assert state.status == DONE and state.pr_url == pull["html_url"]
    assert world.jobs.active_job(world.job.session_id) == other


def test_a_prepared_job_is_not_recorded_from_an_event_of_another_document_or_after_a_stop_request(
    world: SimpleNamespace,
) -> None:
    other = "7" * 64
    assert world.jobs.claim(other)
    claim = world.jobs.get(other)
    assert world.jobs.prepared(other, world.job, claimed_at=claim.stored_at)
    doc = json.loads(event(world, 2, "result"))
    doc["job_id"], doc["context"]["repository"] = other, "evil/repo"
    assert deliver(json.dumps(doc)) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert world.jobs.request_stop(other, by="bob", stop_key="s" * 64)
    doc["context"]["repository"] = "octo/kit"
    assert deliver(json.dumps(doc)) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert world.jobs.get(other).status == "running" and not world.api.pulls


def test_a_start_the_reporter_records_is_counted_once(
    world: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    other = "6" * 64
    assert world.jobs.claim(other)
    claim = world.jobs.get(other)
    # The worker kept the job on its claim, invoked the runtime and died before recording the 202: only the
    # reporter records the start, and the redelivered worker task then finds the job started and counts nothing.
    assert world.jobs.prepared(other, world.job, claimed_at=claim.stored_at)
    capsys.readouterr()
    for seq, kind in ((1, "progress"), (2, "result"), (2, "result")):
        doc = json.loads(event(world, seq, kind))
        doc["job_id"] = other
        assert deliver(json.dumps(doc)) == {"batchItemFailures": []}
    counted = [doc for doc in emf_lines(capsys.readouterr().out) if "FixJobsStarted" in doc]
    assert len(counted) == 1 and counted[0]["Tracker"] == "github"


ON_PUSH = b"on: push\n"
WORKFLOW = (
    "diff --git a/.github/workflows/x.yml b/.github/workflows/x.yml\nnew file mode 100644\n"
    f"index {'0' * 40}..{git_blob_sha(ON_PUSH)}\n"
    "--- /dev/null\n+++ b/.github/workflows/x.yml\n@@ -0,0 +1 @@\n+on: push\n"
)


def test_a_protected_change_is_refused_with_its_class_and_nothing_is_pushed(world: SimpleNamespace) -> None:
    result = {"type": "result", "text": "Fixed.", "cost_usd": 0.1, "patch": PATCH + WORKFLOW}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    assert not world.api.pulls and not [n for n in world.api.git.refs if n.startswith("agent/")]
    [comment] = world.api.comments.values()
    assert "`patch_refused: ci_config`" in comment["body"], comment["body"]
    assert world.jobs.get(KEY).error_code == "patch_refused: ci_config"


def test_a_class_the_deployment_allows_is_proposed(
    world: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    deps = reporter._get_deps()
    monkeypatch.setattr(deps.repos, "allow_protected", frozenset({"ci_config"}))
    result = {"type": "result", "text": "Fixed.", "cost_usd": 0.1, "patch": PATCH + WORKFLOW}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert world.api.branch_changes(pull["head"]["ref"]) == {
        "src/calc.py": ("100644", NEW),
        ".github/workflows/x.yml": ("100644", b"on: push\n"),
    }


def test_a_large_patch_is_read_only_from_its_sessions_and_jobs_key(
    world: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions may send the same job id: the runtime keys the object by session and job, and the reporter
    reads only the key of the session the worker recorded, so another session's object is never proposed."""
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="kit-bucket")
    own, other = f"jobs/{world.job.session_id}/{KEY}/patch.diff", f"jobs/gh-{'f' * 64}/{KEY}/patch.diff"
    s3.put_object(Bucket="kit-bucket", Key=own, Body=PATCH.encode())
    s3.put_object(Bucket="kit-bucket", Key=other, Body=PATCH.replace("a + b", "a * b").encode())
    monkeypatch.setattr(reporter._get_deps(), "s3", s3)
    stolen = {"type": "result", "text": "x", "cost_usd": 0.1, "patch_s3_uri": f"s3://kit-bucket/{other}"}
    assert deliver(event(world, 2, "result", result=stolen)) == {"batchItemFailures": []}
    assert not world.api.pulls and world.jobs.get(KEY).error_code == "patch_location_refused"


def test_a_large_patch_under_its_own_session_and_job_is_proposed(
    world: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="kit-bucket")
    own = f"jobs/{world.job.session_id}/{KEY}/patch.diff"
    s3.put_object(Bucket="kit-bucket", Key=own, Body=PATCH.encode())
    monkeypatch.setattr(reporter._get_deps(), "s3", s3)
    result = {"type": "result", "text": "x", "cost_usd": 0.1, "patch_s3_uri": f"s3://kit-bucket/{own}"}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert world.api.branch_changes(pull["head"]["ref"]) == {"src/calc.py": ("100644", NEW)}
