"""What the runtime sends the reporter is untrusted: the patch object's size is checked before it is read,
and numbers and ids are validated. Driven through the real reporter handler (the GitHub repository stand-in
with real git objects, moto DynamoDB and S3)."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import boto3
import pytest

from harness.webhook_scene import REGION
from tests.unit.webhook import test_fix_reporter as base
from tests.unit.webhook.support import TOKEN
from webhook import reporter
from webhook.fix.repos import TrackerRepos
from webhook.repo import SnapshotLimits
from webhook.repo.patch_apply import DEFAULT_MAX_PATCH_BYTES

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
# The reporter's world (a recorded job, the repository stand-in, the handler configured) and its helpers.
api, world, _base_sha, event, deliver = base.api, base.world, base._base_sha, base.event, base.deliver
KEY = base.KEY


def test_a_patch_object_over_the_cap_is_refused_without_reading_it_whole(
    aws: SimpleNamespace, world: SimpleNamespace
) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="kit-bucket")
    big = DEFAULT_MAX_PATCH_BYTES + 4 * 1024 * 1024
    s3.put_object(Bucket="kit-bucket", Key=f"jobs/{world.job.session_id}/{KEY}/patch.diff", Body=b"x" * big)
    transferred: list[int] = []
    s3.meta.events.register(
        "after-call.s3.GetObject",
        lambda http_response, **_: transferred.append(int(http_response.headers.get("content-length", 0))),
    )
    reporter._get_deps().s3 = s3
    result = {
        "type": "result",
        "text": "x",
        "cost_usd": 0.1,
        "patch_s3_uri": f"s3://kit-bucket/jobs/{world.job.session_id}/{KEY}/patch.diff",
    }
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [comment] = world.api.comments.values()
    assert "`patch_refused`" in comment["body"] and not world.api.pulls
    assert transferred and max(transferred) <= DEFAULT_MAX_PATCH_BYTES + 1


def test_a_patch_object_under_the_cap_is_applied(aws: SimpleNamespace, world: SimpleNamespace) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="kit-bucket")
    s3.put_object(
        Bucket="kit-bucket", Key=f"jobs/{world.job.session_id}/{KEY}/patch.diff", Body=base.PATCH.encode()
    )
    reporter._get_deps().s3 = s3
    result = {
        "type": "result",
        "text": "x",
        "cost_usd": 0.1,
        "patch_s3_uri": f"s3://kit-bucket/jobs/{world.job.session_id}/{KEY}/patch.diff",
    }
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert world.api.branch_changes(pull["head"]["ref"]) == {"src/calc.py": ("100644", base.NEW)}


@pytest.mark.parametrize(
    "figures",
    [
        {"cost_usd": float("nan"), "duration_ms": float("inf")},
        {"cost_usd": 1e300, "duration_ms": 1e300},
        {"cost_usd": float("-inf"), "duration_ms": -5},
    ],
)
def test_figures_that_are_no_numbers_leave_the_job_done_with_its_pull_request(
    world: SimpleNamespace, figures: dict[str, float]
) -> None:
    result = {"type": "result", "text": "Fixed add.", "patch": base.PATCH, **figures}
    body = json.loads(event(world, 2, "result", result=result))
    body.update(cost_usd=figures["cost_usd"], elapsed_s=figures["duration_ms"], at=float("nan"))
    assert deliver(json.dumps(body)) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    state = world.jobs.get(KEY)
    assert state.status == base.DONE and state.pr_url == pull["html_url"] and state.cost_usd is None


def test_a_negative_cost_never_reaches_the_cost_metrics(
    world: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    result = {"type": "result", "text": "Fixed add.", "patch": base.PATCH, "cost_usd": -1000}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    assert world.api.pulls and world.jobs.get(KEY).status == base.DONE
    costs = [
        doc
        for doc in base.emf_lines(capsys.readouterr().out)
        if "IssueCostUSD" in doc or "PullRequestCostUSD" in doc
    ]
    assert costs == []


def test_progress_figures_that_are_no_numbers_are_kept_as_zero(world: SimpleNamespace) -> None:
    doc = json.loads(event(world, 2, "progress", elapsed_s=1e300, tool_calls=1e300, last_tool="Bash"))
    doc["cost_usd"] = float("nan")
    assert deliver(json.dumps(doc)) == {"batchItemFailures": []}
    state = world.jobs.get(KEY)
    assert state.last_seq == 2 and state.cost_so_far == 0 and state.tool_calls == 0


def test_a_sequence_number_beyond_what_dynamodb_holds_is_dropped_not_retried(world: SimpleNamespace) -> None:
    doc = json.loads(event(world, 2, "progress"))
    doc["seq"] = 10**40
    assert deliver(json.dumps(doc)) == {"batchItemFailures": []}
    assert world.jobs.get(KEY).last_seq == 0


def test_an_answers_reply_key_used_as_a_job_id_is_dropped_not_retried(
    aws: SimpleNamespace, world: SimpleNamespace
) -> None:
    answer = "a" * 64
    item = {"id": {"S": f"reply#{answer}"}, "status": {"S": "posted"}, "comment": {"S": "an answer"}}
    aws.ddb.put_item(TableName="idem", Item=item)
    doc = json.loads(event(world, 2, "result"))
    doc["job_id"] = answer
    assert deliver(json.dumps(doc)) == {"batchItemFailures": []}
    assert not world.api.pulls


def _new_files_patch(count: int, *, binary: int = 0) -> str:
    sections = []
    for i in range(count):
        sections.append(
            f"diff --git a/gen/f{i}.txt b/gen/f{i}.txt\nnew file mode 100644\n--- /dev/null\n+++ b/gen/f{i}.txt\n"
            f"@@ -0,0 +1 @@\n+line {i}\n"
        )
    for i in range(binary):
        sections.append(
            f"diff --git a/bin/b{i}.bin b/bin/b{i}.bin\nnew file mode 100644\nGIT binary patch\nliteral 2\n"
            "JcmZQz1ONa700IC2\n\nliteral 0\nHcmV?d00001\n\n"
        )
    return "".join(sections)


CREATING = r"/repos/[^/]+/kit/(forks|git/(blobs|trees|commits|refs)|pulls|issues/\d+/comments)"


def test_six_hundred_changed_files_cost_a_bounded_number_of_content_creating_calls(
    world: SimpleNamespace,
) -> None:
    result = {"type": "result", "text": "many", "cost_usd": 0.1, "patch": _new_files_patch(600, binary=2)}
    world.api.requests.clear()  # the fixture's progress comment
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    changed = world.api.branch_changes(pull["head"]["ref"])
    assert len(changed) == 602 and changed["gen/f599.txt"] == ("100644", b"line 599\n")
    creating = world.api.calls("POST", CREATING)
    # The fork, one tree, one commit, one ref, one pull request, one blob per binary file: independent of the
    # number of text files.
    assert len(creating) == 7, [r["path"] for r in creating]


def test_more_changed_files_than_a_change_may_hold_is_refused_with_a_clear_code(
    world: SimpleNamespace,
) -> None:
    result = {"type": "result", "text": "many", "cost_usd": 0.1, "patch": _new_files_patch(1001)}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [comment] = world.api.comments.values()
    assert "`too_many_changed_files`" in comment["body"] and not world.api.pulls
    assert not world.api.calls("POST", r"/repos/[^/]+/kit/git/.*")
    assert world.jobs.get(KEY).error_code == "too_many_changed_files"


def test_a_rate_limited_call_waits_as_long_as_github_says(world: SimpleNamespace) -> None:
    slept: list[float] = []
    deps = reporter._get_deps()
    deps.repos = TrackerRepos(
        tokens={"github": lambda: TOKEN}, api_urls={"github": world.api.url}, sleep=slept.append
    )
    limited = {"message": "You have exceeded a secondary rate limit"}
    world.api.faults.append(
        ("POST", r"/repos/agentkit-bot/kit/git/trees", 403, limited, {"retry-after": "7"})
    )
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}
    assert slept == [7.0] and len(world.api.pulls) == 1


def test_a_rate_limit_longer_than_a_call_may_wait_gives_the_result_back_to_the_queue(
    world: SimpleNamespace,
) -> None:
    slept: list[float] = []
    deps = reporter._get_deps()
    deps.repos = TrackerRepos(
        tokens={"github": lambda: TOKEN}, api_urls={"github": world.api.url}, sleep=slept.append
    )
    limited = {"message": "API rate limit exceeded"}
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 3600)}
    world.api.faults.append(("POST", r"/repos/agentkit-bot/kit/git/trees", 403, limited, headers))
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    assert slept == [] and not world.api.pulls and world.jobs.get(KEY).status == "job"
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}
    assert len(world.api.pulls) == 1


def test_the_reporter_keeps_the_file_view_only_and_is_not_bound_by_the_runtimes_snapshot_cap(
    world: SimpleNamespace,
) -> None:
    deps = reporter._get_deps()
    tiny = SnapshotLimits(max_archive_bytes=100)  # any real snapshot compresses to more than this
    deps.repos = TrackerRepos(
        tokens={"github": lambda: TOKEN}, api_urls={"github": world.api.url}, limits=tiny
    )
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert world.api.branch_changes(pull["head"]["ref"]) == {"src/calc.py": ("100644", base.NEW)}
