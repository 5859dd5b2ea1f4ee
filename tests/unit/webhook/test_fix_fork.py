"""The agent's branch lives in a bot-owned fork by default: through the real reporter handler against the
GitHub repository stand-in (real git objects, a fork network sharing them), the fork is created or reused, the
draft pull request comes from it, and nothing is pushed to the repository itself. The same-repository opt-in
marks its commit [skip ci] and refuses CI configuration, composite actions and CODEOWNERS unless allowed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from harness.gitlab_repo_api import GitLabRepoApi
from tests.unit.webhook import test_fix_reporter as base
from tests.unit.webhook.support import GITLAB_TOKEN, TOKEN, fix_job, start_fix_job
from webhook import reporter, trackers
from webhook.fix.config import FixSettings, fix_settings
from webhook.fix.jobs import JobStore
from webhook.fix.repos import TrackerComments, TrackerRepos
from webhook.repo import GitHubRepo, GitLabRepo, git_blob_sha
from webhook.trackers import TrackerApiError, TrackerConfigError

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
# The reporter's world (a recorded job, the repository stand-in, the handler configured) and its helpers.
api, world, _base_sha, event, deliver = base.api, base.world, base._base_sha, base.event, base.deliver
FORK = "agentkit-bot/kit"


def _writes_to_base(world: SimpleNamespace) -> list[str]:
    """Requests that would write into the repository itself (not its pull requests and comments)."""
    return [r["path"] for r in world.api.calls("POST", r"/repos/octo/kit/git/.*")]


def test_the_branch_is_committed_in_a_new_fork_and_the_draft_comes_from_it(world: SimpleNamespace) -> None:
    world.api.fork_delay_requests = 2  # the fork is not readable at once: the reporter waits for it
    slept: list[float] = []
    reporter._get_deps().repos = TrackerRepos(
        tokens={"github": lambda: TOKEN}, api_urls={"github": world.api.url}, sleep=slept.append
    )
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert pull["draft"] and pull["head"]["repo"]["full_name"] == FORK and pull["base"]["ref"] == "main"
    assert world.api.branch_changes(pull["head"]["ref"]) == {"src/calc.py": ("100644", base.NEW)}
    assert world.api.base_branches() == {"main"} and _writes_to_base(world) == []
    # Each miss also reads the fork's branch (404 while the fork is being made): two 404s, one wait, no sync.
    assert pull["head"]["ref"] in world.api.forks[FORK].refs and slept == [3.0]
    assert world.api.calls("POST", r"/repos/.*/merge-upstream") == []
    assert "[skip ci]" not in world.api.git.commits[pull["head"]["sha"]].message
    [create] = world.api.calls("POST", r"/repos/octo/kit/pulls")
    assert json.loads(create["body"])["head"] == f"agentkit-bot:{pull['head']['ref']}"


def test_an_existing_fork_is_reused(world: SimpleNamespace) -> None:
    earlier = GitHubRepo("octo/kit", token=lambda: TOKEN, api_url=world.api.url).ensure_fork(
        world.api.base_commit
    )
    assert earlier.repository == FORK
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert list(world.api.forks) == [FORK] and pull["head"]["repo"]["full_name"] == FORK
    assert world.api.base_branches() == {"main"} and _writes_to_base(world) == []


def _rebase_job(world: SimpleNamespace, base_sha: str, key: str = base.KEY) -> None:
    """The recorded job ``key`` now starts from ``base_sha`` (as a job started after the repository moved on)."""
    world.job = world.job.model_copy(update={"base_sha": base_sha})
    world.jobs._client.update_item(
        TableName="idem",
        Key={"id": {"S": f"reply#{key}"}},
        UpdateExpression="SET job = :j",
        ExpressionAttributeValues={":j": {"S": world.job.model_dump_json()}},
    )


def _stale_fork(world: SimpleNamespace, fork_edit: dict[str, bytes] | None = None) -> tuple[str, str]:
    """The bot's fork made earlier, then the repository moved on (README rewritten, a file added) and the job
    starts from there; with ``fork_edit`` the fork's main got a commit of its own too. The fork answers only
    for commits its branches reach. Returns (the repository's new head, the fork's head)."""
    GitHubRepo("octo/kit", token=lambda: TOKEN, api_url=world.api.url).ensure_fork(world.api.base_commit)
    git, files = world.api.git, dict(base.FILES)
    files.update({"README.md": ("100644", b"# calc, upstream\n"), "src/more.py": ("100644", b"x = 1\n")})
    head = git.commit_files(files, [world.api.base_commit], "upstream moves on")
    git.refs["main"] = head
    fork = world.api.fork_of(FORK)
    if fork_edit:
        mine = dict(base.FILES) | {path: ("100644", data) for path, data in fork_edit.items()}
        fork.refs["main"] = git.commit_files(mine, [world.api.base_commit], "the fork's own commit")
    world.api.fork_reads_network = False
    _rebase_job(world, head)
    slept: list[float] = []
    world.slept = slept
    reporter._get_deps().repos = TrackerRepos(
        tokens={"github": lambda: TOKEN}, api_urls={"github": world.api.url}, sleep=slept.append
    )
    return head, fork.refs["main"]


def test_a_stale_fork_is_synced_and_the_draft_holds_exactly_the_change(world: SimpleNamespace) -> None:
    head, _ = _stale_fork(world)
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert pull["head"]["repo"]["full_name"] == FORK and pull["draft"]
    assert world.api.branch_changes(pull["head"]["ref"], base=head) == {"src/calc.py": ("100644", base.NEW)}
    assert world.api.git.commits[pull["head"]["sha"]].parents == (head,)
    [sync] = world.api.calls("POST", rf"/repos/{FORK}/merge-upstream")
    assert json.loads(sync["body"]) == {"branch": "main"}
    assert world.api.fork_of(FORK).refs["main"] == head  # fast-forwarded, no merge commit
    assert world.slept == [] and world.api.base_branches() == {"main"} and _writes_to_base(world) == []


def test_a_fork_with_commits_of_its_own_is_merged_never_reset(world: SimpleNamespace) -> None:
    head, own = _stale_fork(world, {"NOTES.md": b"the bot's notes\n"})
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert world.api.branch_changes(pull["head"]["ref"], base=head) == {"src/calc.py": ("100644", base.NEW)}
    merge = world.api.git.commits[world.api.fork_of(FORK).refs["main"]]
    assert merge.parents == (own, head)  # GitHub's sync merged; the fork's own commit is kept
    assert world.api.branch_files("main")["README.md"] == (  # this repository's main, unchanged
        "100644",
        b"# calc, upstream\n",
    )


def test_a_diverged_fork_that_conflicts_fails_the_job_once_with_a_clear_code(
    world: SimpleNamespace, caplog: pytest.LogCaptureFixture
) -> None:
    _, own = _stale_fork(world, {"README.md": b"# calc, the bot's edition\n"})
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}  # final: not retried
    assert world.api.pulls == [] and set(world.api.fork_of(FORK).refs) == {"main"}
    assert world.api.fork_of(FORK).refs["main"] == own  # left as it was: never reset, never forced
    assert len(world.api.calls("POST", rf"/repos/{FORK}/merge-upstream")) == 1
    comment = world.api.comments[world.comment_id]["body"]
    assert "`fork_out_of_sync`" in comment
    # what to do, in the kit's fixed words; the error's own message (GitHub's answer) stays in the log
    assert "whoever owns the fork syncs it or deletes it" in comment and "Sync fork" not in comment
    state = world.jobs.get(base.KEY)
    assert state is not None and state.error_code == "fork_out_of_sync"
    detail = [r for r in caplog.records if r.getMessage() == "fix job failed"]
    assert detail and "Sync fork" in str(detail[0].__dict__.get("detail"))
    # The same result again finds the job finished: nothing is retried or opened.
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}
    assert len(world.api.calls("POST", rf"/repos/{FORK}/merge-upstream")) == 1 and world.api.pulls == []


def test_the_same_repository_opt_in_marks_the_commit_skip_ci(world: SimpleNamespace, monkeypatch) -> None:
    monkeypatch.setattr(reporter._get_deps(), "settings", FixSettings(branch_in="same_repository"))
    assert deliver(event(world, 2, "result")) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert pull["head"]["repo"]["full_name"] == "octo/kit" and not world.api.forks
    head = world.api.git.commits[world.api.git.refs[pull["head"]["ref"]]]
    assert head.message.splitlines()[0].endswith("[skip ci]")


def _create(path: str, text: bytes = b"x\n") -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..{git_blob_sha(text)}\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{text.decode().rstrip()}\n"
    )


@pytest.mark.parametrize(
    ("path", "cls"),
    [
        (".github/workflows/ci.yml", "ci_config"),
        (".GitHub/Workflows/x.yml", "ci_config"),
        (".gitlab-ci.yml", "ci_config"),
        (".gitlab/ci/deploy.yml", "ci_config"),
        (".github/actions/setup/action.yml", "ci_action"),
        ("docs/CODEOWNERS", "code_owners"),
    ],
)
@pytest.mark.parametrize("branch_in", ["same_repository", "fork"])
def test_what_ci_runs_is_refused_in_either_mode_unless_allowed(
    world: SimpleNamespace, monkeypatch, path: str, cls: str, branch_in: str
) -> None:
    # The protected-path policy applies in every mode; the fork path keeps CI's secrets away, and the refusal
    # still keeps CI configuration out of a change a person may merge without reading it closely.
    deps = reporter._get_deps()
    monkeypatch.setattr(deps, "settings", FixSettings(branch_in=branch_in))  # type: ignore[arg-type]
    result = {"type": "result", "text": "x", "cost_usd": 0.1, "patch": base.PATCH + _create(path)}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [comment] = world.api.comments.values()
    assert f"`patch_refused: {cls}`" in comment["body"] and not world.api.pulls
    assert world.api.base_branches() == {"main"}
    assert world.jobs.get(base.KEY).error_code == f"patch_refused: {cls}"


def test_an_allowed_class_goes_through_in_the_opt_in(world: SimpleNamespace, monkeypatch) -> None:
    settings = fix_settings({"FIX_BRANCHES": "same_repository", "PATCH_ALLOW_PROTECTED": "ci_config"})
    deps = reporter._get_deps()
    monkeypatch.setattr(deps, "settings", settings)
    monkeypatch.setattr(deps.repos, "allow_protected", settings.allow_protected)
    result = {"type": "result", "text": "x", "cost_usd": 0.1, "patch": base.PATCH + _create(".gitlab-ci.yml")}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    assert ".gitlab-ci.yml" in world.api.branch_changes(pull["head"]["ref"])


def test_the_settings_refuse_unknown_values() -> None:
    assert fix_settings({}).branch_in == "fork"
    with pytest.raises(TrackerConfigError, match="FIX_BRANCHES"):
        fix_settings({"FIX_BRANCHES": "upstream"})
    with pytest.raises(TrackerConfigError, match="PATCH_ALLOW_PROTECTED"):
        fix_settings({"PATCH_ALLOW_PROTECTED": "everything"})


# --------------------------------------------------------------------------------------------- GitLab
#: The GitHub world of this module (autouse) holds base.KEY; the GitLab job is another.
GITLAB_KEY = "c" * 64


@pytest.fixture
def gitlab_world(aws: SimpleNamespace) -> Iterator[SimpleNamespace]:
    with GitLabRepoApi(token=GITLAB_TOKEN, project_id=5, path="g/p", files=dict(base.FILES)) as gl:
        adapter = trackers.GitLabTracker(
            trackers.TrackerOptions(token=lambda: GITLAB_TOKEN, api_url=gl.api_url), project_ids="5"
        )
        jobs = JobStore(client=aws.ddb, table_name="idem")
        job = fix_job(
            tracker="gitlab",
            repository="g/p",
            scope_id="5",
            issue_number=3,
            issue_id="3",
            issue_ref="#3",
            session_id="gitlab-" + "e" * 64,
            target_tracker="gitlab",
            target_repository="g/p",
            target_project_id="5",
            base_sha=gl.base_commit,
        )
        doc, _ = start_fix_job(jobs, adapter, GITLAB_KEY, job)
        slept: list[float] = []
        reporter.configure(
            reporter.ReporterDeps(
                jobs=jobs,
                comments=TrackerComments({"gitlab": adapter}),
                repos=TrackerRepos(
                    tokens={"gitlab": lambda: GITLAB_TOKEN},
                    api_urls={"gitlab": gl.api_url},
                    sleep=slept.append,
                ),
                trackers={"gitlab": adapter},
                settings=FixSettings(),
            )
        )
        yield SimpleNamespace(api=gl, jobs=jobs, job=doc, slept=slept)
        reporter.configure(None)


def _gitlab_event(world: SimpleNamespace) -> str:
    result = {"type": "result", "text": "Fixed add.", "cost_usd": 0.1, "patch": base.PATCH}
    return json.dumps(
        {
            "v": 1,
            "job_id": GITLAB_KEY,
            "session_id": world.job.session_id,
            "seq": 2,
            "kind": "result",
            "at": 1.0,
            "context": world.job.model_dump(),
            "result": result,
        }
    )


def test_gitlab_commits_in_a_fork_and_opens_the_merge_request_into_the_project(
    gitlab_world: SimpleNamespace,
) -> None:
    gl = gitlab_world.api
    gl.fork_import_polls = 2  # GitLab forks asynchronously: the reporter waits for the import
    assert deliver(_gitlab_event(gitlab_world)) == {"batchItemFailures": []}
    [mr] = gl.merge_requests
    [(fork_id, (fork_path, fork_git))] = gl.forks.items()
    assert mr["source_project_id"] == fork_id and mr["target_project_id"] == 5 and mr["draft"]
    assert mr["source_branch"] in fork_git.refs and set(gl.base_git.refs) == {"main"}
    assert gl.branch_changes(mr["source_branch"]) == {"src/calc.py": ("100644", base.NEW)}
    assert gitlab_world.slept == [3.0, 3.0] and fork_path == "agentkit-bot/p"
    [commit] = gl.calls("POST", r"/api/v4/projects/\d+/repository/commits")
    assert commit["path"] == f"/api/v4/projects/{fork_id}/repository/commits"
    assert json.loads(commit["body"])["start_project"] == 5
    assert not gl.calls("POST", r"/api/v4/projects/5/repository/commits")


def test_gitlab_reuses_its_fork(gitlab_world: SimpleNamespace) -> None:
    gl = gitlab_world.api
    GitLabRepo(5, token=lambda: GITLAB_TOKEN, api_url=gl.api_url).ensure_fork()
    assert deliver(_gitlab_event(gitlab_world)) == {"batchItemFailures": []}
    assert len(gl.forks) == 1 and len(gl.merge_requests) == 1
    assert len(gl.calls("POST", r"/api/v4/projects/5/fork")) == 1


def test_gitlab_a_fork_behind_its_project_needs_no_sync_start_project_starts_from_the_project(
    gitlab_world: SimpleNamespace,
) -> None:
    gl = gitlab_world.api
    old_fork = GitLabRepo(5, token=lambda: GITLAB_TOKEN, api_url=gl.api_url).ensure_fork()
    files = {**base.FILES, "README.md": ("100644", b"# calc, upstream\n")}
    head = gl.base_git.commit_files(files, [gl.base_commit], "the project moves on")
    gl.base_git.refs["main"] = head
    gl.fork_reads_network = False  # the fork knows only what its own branches reach
    _rebase_job(gitlab_world, head, GITLAB_KEY)
    # Without start_project the stale fork cannot start a branch at the project's newer commit ...
    with pytest.raises(TrackerApiError, match="Invalid start"):
        old_fork.rest.call(
            "POST",
            f"/projects/{old_fork.project_id}/repository/commits",
            {"branch": "probe", "commit_message": "m", "start_sha": head, "actions": [_readme_action()]},
        )
    # ... the reporter's commit names the project to start from, so the merge request holds exactly the change.
    assert deliver(_gitlab_event(gitlab_world)) == {"batchItemFailures": []}
    [mr] = gl.merge_requests
    [(_, (_, fork_git))] = gl.forks.items()
    assert gl.branch_changes(mr["source_branch"], base=head) == {"src/calc.py": ("100644", base.NEW)}
    assert fork_git.commits[fork_git.refs[mr["source_branch"]]].parents == (head,)
    assert fork_git.refs["main"] == gl.base_commit  # the fork's own branch is left behind, untouched


def _readme_action() -> dict[str, str]:
    return {"action": "update", "file_path": "README.md", "content": "x\n"}
