"""The repository library against the GitHub stand-in: snapshot → the REAL runtime's unpack and patch →
pure-Python apply → git data API commit on a new branch → one draft pull request; retries, modes, conflicts."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.github_repo_api import GitHubRepoApi
from runtime.guard.policy import is_sensitive_name
from runtime.workspace.archive import SnapshotLimits, unpack
from runtime.workspace.baseline import Baseline
from tests.unit.webhook.repo_trees import git, view_of, write_tree
from webhook.errors import TrackerApiError
from webhook.repo import (
    ChangeConflict,
    ChangeRequest,
    ForkOutOfSync,
    GitHubRepo,
    PatchRefused,
    apply_patch,
    branch_name,
)

TOKEN = "ghp_repo_token_123"
FILES = {
    "src/calc.py": ("100644", b"def add(a, b):\n    return a - b\n"),
    "tests/test_calc.py": (
        "100644",
        b"from src.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    ),
    "run.sh": ("100755", b"#!/bin/sh\npytest\n"),
    "logo.bin": ("100644", b"\0\x01\x02" * 100),
    "link": ("120000", b"src/calc.py"),
    "old.txt": ("100644", b"obsolete\n"),
}
LIMITS = SnapshotLimits(
    max_archive_bytes=20 << 20, max_unpacked_bytes=200 << 20, max_files=50_000, max_file_bytes=25 << 20
)


@pytest.fixture
def api() -> Iterator[GitHubRepoApi]:
    with GitHubRepoApi(token=TOKEN, repository="octo/app", files=dict(FILES)) as server:
        yield server


def _repo(api: GitHubRepoApi, token: str = TOKEN) -> GitHubRepo:
    return GitHubRepo("octo/app", token=lambda: token, api_url=api.url, sleep=lambda _s: None)


def _agent_patch(tmp: Path, archive: bytes) -> str:
    """What the runtime does with the snapshot: unpack it (real unpacker), record it, let the "agent" edit,
    and compute the patch (real baseline)."""
    work = tmp / "ws"
    work.mkdir()
    unpack(archive, work, LIMITS)
    baseline = Baseline(
        git_dir=tmp / "snap", work_tree=work, withhold=is_sensitive_name, max_patch_bytes=1 << 20
    )
    baseline.record()
    (work / "src/calc.py").write_text("def add(a, b):\n    return a + b\n")
    (work / "old.txt").unlink()
    (work / "logo.bin").write_bytes(b"\0\x09\x02" * 100)
    (work / "NOTES.md").write_text("fixed add\n")
    (work / "run.sh").chmod(0o644)
    (work / ".env").write_text("SECRET=1\n")  # withheld by the runtime: never reaches the branch
    return baseline.changes().patch


EXPECTED = {
    "src/calc.py": ("100644", b"def add(a, b):\n    return a + b\n"),
    "old.txt": None,
    "logo.bin": ("100644", b"\0\x09\x02" * 100),
    "NOTES.md": ("100644", b"fixed add\n"),
    "run.sh": ("100644", b"#!/bin/sh\npytest\n"),
}


def _request(repo: GitHubRepo, snapshot_sha: str, mode: str = "pull_request") -> ChangeRequest:
    # The same-repository opt-in (what these tests inspect: the repository's own branches); the fork path,
    # the default, is tested in test_fix_fork.py.
    branch = branch_name("github", "1296269", "7", "delivery-1", label="7")
    return ChangeRequest(
        branch_in="same_repository",
        branch=branch,
        base_branch=repo.default_branch(),
        base_sha=snapshot_sha,
        title="Fix add()",
        body="The agent's answer.",
        mode=mode,  # type: ignore[arg-type]
    )


def test_issue_to_draft_pull_request_with_exactly_the_agents_change(
    api: GitHubRepoApi, tmp_path: Path
) -> None:
    repo = _repo(api)
    snapshot = repo.fetch_snapshot()
    assert snapshot.commit_sha == api.base_commit and snapshot.ref == "main"
    assert {p: (e.mode, e.data) for p, e in snapshot.files.items()} == FILES
    changes = apply_patch(snapshot.files, _agent_patch(tmp_path, snapshot.archive))
    result = repo.open_change(_request(repo, snapshot.commit_sha), changes)
    assert result.kind == "pull_request" and result.created and result.number == 1
    assert result.url == "https://github.example/octo/app/pull/1"
    assert api.branch_changes(result.branch) == EXPECTED
    assert [p["draft"] for p in api.pulls] == [True]
    assert api.pulls[0]["base"]["ref"] == "main" and api.pulls[0]["head"]["ref"] == result.branch
    head = api.git.commits[api.git.refs[result.branch]]
    assert head.parents == (api.base_commit,) and "Agentkit-Change: " in head.message
    blobs = api.calls("POST", r"/repos/octo/app/git/blobs")
    assert blobs and all(json.loads(r["body"])["encoding"] == "base64" for r in blobs)


def test_the_archive_redirect_is_followed_without_the_token(api: GitHubRepoApi) -> None:
    _repo(api).fetch_snapshot()
    assert len(api.codeload_requests) == 1
    codeload = api.codeload_requests[0]
    assert codeload["host"].startswith("localhost:")
    assert "authorization" not in codeload["headers"]
    tarball_call = api.calls("GET", r"/repos/octo/app/tarball/.*")[0]
    assert tarball_call["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert tarball_call["path"].endswith(api.base_commit)  # fetched by the resolved commit, not the branch


def test_a_retried_run_reuses_its_branch_and_pull_request(api: GitHubRepoApi, tmp_path: Path) -> None:
    repo = _repo(api)
    snapshot = repo.fetch_snapshot()
    changes = apply_patch(snapshot.files, _agent_patch(tmp_path, snapshot.archive))
    first = repo.open_change(_request(repo, snapshot.commit_sha), changes)
    commits = len(api.calls("POST", r".*/git/commits"))
    again = repo.open_change(_request(repo, snapshot.commit_sha), changes)
    assert again.url == first.url and again.commit_sha == first.commit_sha and not again.created
    assert len(api.pulls) == 1 and len(api.calls("POST", r".*/git/commits")) == commits


def test_a_branch_pushed_without_pull_request_gets_one_on_the_next_call(
    api: GitHubRepoApi, tmp_path: Path
) -> None:
    repo = _repo(api)
    snapshot = repo.fetch_snapshot()
    changes = apply_patch(snapshot.files, _agent_patch(tmp_path, snapshot.archive))
    pushed = repo.open_change(_request(repo, snapshot.commit_sha, mode="branch"), changes)
    assert pushed.kind == "branch" and not api.pulls
    opened = repo.open_change(_request(repo, snapshot.commit_sha), changes)
    assert opened.kind == "pull_request" and opened.created and opened.commit_sha == pushed.commit_sha


def test_branch_mode_pushes_the_branch_and_returns_the_compare_link(
    api: GitHubRepoApi, tmp_path: Path
) -> None:
    repo = _repo(api)
    snapshot = repo.fetch_snapshot()
    changes = apply_patch(snapshot.files, _agent_patch(tmp_path, snapshot.archive))
    result = repo.open_change(_request(repo, snapshot.commit_sha, mode="branch"), changes)
    assert result.url == f"https://github.example/octo/app/compare/main...{result.branch}?expand=1"
    assert api.branch_changes(result.branch) == EXPECTED and not api.pulls


def test_a_branch_holding_other_commits_is_never_overwritten(api: GitHubRepoApi, tmp_path: Path) -> None:
    repo = _repo(api)
    snapshot = repo.fetch_snapshot()
    changes = apply_patch(snapshot.files, _agent_patch(tmp_path, snapshot.archive))
    request = _request(repo, snapshot.commit_sha)
    foreign = api.git.commit_files({"x": ("100644", b"someone else\n")}, [api.base_commit], "theirs")
    api.git.refs[request.branch] = foreign
    with pytest.raises(ChangeConflict, match="holds other commits"):
        repo.open_change(request, changes)
    assert api.git.refs[request.branch] == foreign and not api.pulls


def test_without_draft_support_the_branch_link_is_returned_with_a_note(tmp_path: Path) -> None:
    with GitHubRepoApi(token=TOKEN, repository="octo/app", files=dict(FILES), drafts_supported=False) as api:
        repo = _repo(api)
        snapshot = repo.fetch_snapshot()
        changes = apply_patch(snapshot.files, _agent_patch(tmp_path, snapshot.archive))
        result = repo.open_change(_request(repo, snapshot.commit_sha), changes)
    assert result.kind == "branch" and "draft" in result.note and "/compare/main..." in result.url


def test_a_server_error_is_retried_and_a_bad_token_is_not(api: GitHubRepoApi, tmp_path: Path) -> None:
    repo = _repo(api)
    api.script.append((502, {"message": "Bad Gateway"}))
    assert repo.default_branch() == "main"
    assert len(api.calls("GET", r"/repos/octo/app")) == 2  # the 502, then the answer
    with pytest.raises(TrackerApiError) as caught:
        _repo(api, token="wrong").resolve("main")
    assert caught.value.status == 401 and not caught.value.retryable


def test_an_empty_change_is_refused_before_any_write(api: GitHubRepoApi) -> None:
    repo = _repo(api)
    with pytest.raises(PatchRefused, match="changes nothing"):
        repo.open_change(_request(repo, api.base_commit), [])
    assert not api.calls("POST", r".*")


# ------------------------------------------------------------------------------- the stand-in itself
def test_the_standins_objects_have_the_ids_git_gives_them(api: GitHubRepoApi, tmp_path: Path) -> None:
    work = tmp_path / "r"
    work.mkdir()
    git(work, "init", "-q")
    write_tree(
        work,
        {p: d for p, (m, d) in FILES.items() if m != "120000"},
        executable=("run.sh",),
        links={"link": "src/calc.py"},
    )
    git(work, "add", "-A")
    assert git(work, "write-tree").strip() == api.git.commits[api.base_commit].tree
    assert view_of(work).keys() == FILES.keys()


@pytest.mark.parametrize(
    ("path", "payload", "message"),
    [
        ("/git/blobs", {"content": "not base64!", "encoding": "base64"}, "valid base64"),
        ("/git/blobs", {"encoding": "utf-8"}, "content is missing"),
        (
            "/git/trees",
            {"tree": [{"path": "nope", "mode": "100644", "type": "blob", "sha": None}]},
            "does not exist",
        ),
        (
            "/git/trees",
            {"tree": [{"path": "../x", "mode": "100644", "type": "blob", "content": "x"}]},
            "clean relative",
        ),
        (
            "/git/trees",
            {"tree": [{"path": "x", "mode": "100644", "type": "blob"}]},
            "exactly one of sha and content",
        ),
        ("/git/commits", {"message": "m", "tree": "0" * 40, "parents": []}, "not a valid tree"),
        ("/git/refs", {"ref": "heads/x", "sha": "0" * 40}, "fully qualified"),
        ("/pulls", {"head": "x", "base": "main"}, "title is missing"),
        ("/pulls", {"title": "t", "head": "main", "base": "main", "draft": "yes"}, "draft must be"),
    ],
)
def test_the_standin_refuses_malformed_requests(
    api: GitHubRepoApi, path: str, payload: dict, message: str
) -> None:  # type: ignore[type-arg]
    with pytest.raises(TrackerApiError, match=message) as caught:
        _repo(api).rest.call("POST", f"/repos/octo/app{path}", payload)
    assert caught.value.status == 422


def test_the_standin_serves_the_blob_it_was_given_in_base64(api: GitHubRepoApi) -> None:
    data = os.urandom(64)
    blob = _repo(api).rest.call(
        "POST",
        "/repos/octo/app/git/blobs",
        {"content": base64.b64encode(data).decode(), "encoding": "base64"},
    )
    assert api.git.objects[blob["sha"]] == ("blob", data)


# ---- an existing fork behind the repository (the reporter's side: test_fix_fork.py)
def _moved_on(api: GitHubRepoApi) -> str:
    """The bot's fork made at the first commit, then the repository's main moved on; returns the new head."""
    _repo(api).ensure_fork(api.base_commit)
    head = api.git.commit_files({**FILES, "old.txt": ("100644", b"newer\n")}, [api.base_commit], "moves on")
    api.git.refs["main"] = head
    return head


def test_a_fork_that_reads_its_network_is_used_without_a_sync(api: GitHubRepoApi) -> None:
    # GitHub's practice: the fork answers for the network's commits, so nothing is synced or written to it.
    head = _moved_on(api)
    fork = _repo(api).ensure_fork(head, "main")
    assert fork.repository == "agentkit-bot/app" and api.calls("POST", r"/repos/.*/merge-upstream") == []
    assert api.fork_of("agentkit-bot/app").refs["main"] == api.base_commit


def test_a_sync_refused_for_another_reason_is_final(api: GitHubRepoApi) -> None:
    head = _moved_on(api)
    api.fork_reads_network = False
    api.fork_of("agentkit-bot/app").refs["release"] = api.base_commit  # a branch upstream does not have
    with pytest.raises(ForkOutOfSync, match=r"syncing its branch 'release' failed \(422") as caught:
        _repo(api).ensure_fork(head, "release")
    assert caught.value.code == "fork_out_of_sync"
    assert len(api.calls("POST", r"/repos/agentkit-bot/app/merge-upstream")) == 1


def test_a_fork_without_the_branch_to_sync_is_final_and_one_still_being_made_is_retried(
    api: GitHubRepoApi,
) -> None:
    head = _moved_on(api)
    api.fork_reads_network = False
    with pytest.raises(ForkOutOfSync, match="has no branch 'fix-7' to sync"):
        _repo(api).ensure_fork(head, "fix-7")  # e.g. a pull request's branch made here after the fork
    assert api.calls("POST", r"/repos/.*/merge-upstream") == []
    api.forks.clear()
    api.fork_delay_requests = 1_000  # a new fork that GitHub is still making: retried, nothing final
    with pytest.raises(TrackerApiError, match="does not hold commit") as caught:
        _repo(api).ensure_fork(head, "main", polls=3)
    assert caught.value.retryable and api.calls("POST", r"/repos/.*/merge-upstream") == []
