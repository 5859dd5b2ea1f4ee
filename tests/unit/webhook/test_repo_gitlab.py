"""The repository library against the GitLab stand-in: snapshot → the REAL runtime's unpack and patch →
pure-Python apply → one commit with actions on a new branch → one Draft: merge request; retries, modes."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gitlab_repo_api import GitLabRepoApi
from runtime.guard.policy import is_sensitive_name
from runtime.workspace.archive import SnapshotLimits, unpack
from runtime.workspace.baseline import Baseline
from webhook.errors import TrackerApiError
from webhook.repo import (
    ChangeConflict,
    ChangeRequest,
    FileChange,
    GitLabRepo,
    PatchRefused,
    SnapshotError,
    apply_patch,
    branch_name,
)
from webhook.repo.gitlab_repo import _actions

TOKEN = "glpat-repo-token"
FILES = {
    "app/main.py": ("100644", b"print('helo')\n"),
    "build.sh": ("100644", b"#!/bin/sh\nmake\n"),
    "image.png": ("100644", b"\x89PNG\0\0" + bytes(range(256))),
    "gone.txt": ("100644", b"bye\n"),
}
LIMITS = SnapshotLimits(
    max_archive_bytes=20 << 20, max_unpacked_bytes=200 << 20, max_files=50_000, max_file_bytes=25 << 20
)
EXPECTED = {
    "app/main.py": ("100644", b"print('hello')\n"),
    "build.sh": ("100755", b"#!/bin/sh\nmake\n"),
    "image.png": ("100644", b"\x89PNG\0\1" + bytes(range(256))),
    "gone.txt": None,
    "tools/new.sh": ("100755", b"#!/bin/sh\necho new\n"),
}


@pytest.fixture
def api() -> Iterator[GitLabRepoApi]:
    with GitLabRepoApi(token=TOKEN, project_id=42, path="group/app", files=dict(FILES)) as server:
        yield server


EXECUTABLE = frozenset({"executable"})


def _repo(api: GitLabRepoApi) -> GitLabRepo:
    return GitLabRepo(42, token=lambda: TOKEN, api_url=api.api_url, sleep=lambda _s: None)


def _agent_patch(tmp: Path, archive: bytes) -> str:
    work = tmp / "ws"
    work.mkdir()
    unpack(archive, work, LIMITS)
    # new executable bits allowed on both sides: these tests are about committing them (chmod actions)
    baseline = Baseline(
        git_dir=tmp / "snap",
        work_tree=work,
        withhold=is_sensitive_name,
        max_patch_bytes=1 << 20,
        allow_protected=EXECUTABLE,
    )
    baseline.record()
    (work / "app/main.py").write_text("print('hello')\n")
    (work / "build.sh").chmod(0o755)
    (work / "image.png").write_bytes(b"\x89PNG\0\1" + bytes(range(256)))
    (work / "gone.txt").unlink()
    (work / "tools").mkdir()
    (work / "tools/new.sh").write_text("#!/bin/sh\necho new\n")
    (work / "tools/new.sh").chmod(0o755)
    return baseline.changes().patch


def _request(api: GitLabRepoApi, base_sha: str, mode: str = "pull_request") -> ChangeRequest:
    # The same-repository opt-in (what these tests inspect: the project's own branches); the fork path, the
    # default, is tested in test_fix_fork.py.
    return ChangeRequest(
        branch_in="same_repository",
        branch=branch_name("gitlab", "42", "3", "run-9", label="3"),
        base_branch="main",
        base_sha=base_sha,
        title="Fix the greeting",
        body="The agent's answer.",
        mode=mode,  # type: ignore[arg-type]
    )


def test_issue_to_draft_merge_request_with_exactly_the_agents_change(
    api: GitLabRepoApi, tmp_path: Path
) -> None:
    repo = _repo(api)
    snapshot = repo.fetch_snapshot()
    assert snapshot.commit_sha == api.base_commit
    assert {p: (e.mode, e.data) for p, e in snapshot.files.items()} == FILES
    changes = apply_patch(
        snapshot.files, _agent_patch(tmp_path, snapshot.archive), allow_protected=EXECUTABLE
    )
    result = repo.open_change(_request(api, snapshot.commit_sha), changes)
    assert result.kind == "pull_request" and result.created and result.number == 1
    assert result.url == "https://gitlab.example/group/app/-/merge_requests/1"
    assert api.branch_changes(result.branch) == EXPECTED
    assert [(mr["draft"], mr["title"]) for mr in api.merge_requests] == [(True, "Draft: Fix the greeting")]
    (commit_call,) = api.calls("POST", r"/api/v4/projects/42/repository/commits")
    sent = json.loads(commit_call["body"])
    assert sent["start_sha"] == api.base_commit and sent["branch"] == result.branch
    writes = [a for a in sent["actions"] if a["action"] in ("create", "update")]
    assert writes and all(a["encoding"] == "base64" for a in writes)
    assert {a["file_path"] for a in sent["actions"] if a["action"] == "chmod"} == {"build.sh", "tools/new.sh"}
    archive_call = api.calls("GET", r".*/repository/archive\.tar\.gz")[0]
    assert archive_call["query"] == {"sha": api.base_commit}


def test_a_retried_run_reuses_its_branch_and_merge_request(api: GitLabRepoApi, tmp_path: Path) -> None:
    repo = _repo(api)
    snapshot = repo.fetch_snapshot()
    changes = apply_patch(
        snapshot.files, _agent_patch(tmp_path, snapshot.archive), allow_protected=EXECUTABLE
    )
    first = repo.open_change(_request(api, snapshot.commit_sha), changes)
    again = repo.open_change(_request(api, snapshot.commit_sha), changes)
    assert (again.url, again.commit_sha, again.created) == (first.url, first.commit_sha, False)
    assert len(api.merge_requests) == 1 and len(api.calls("POST", r".*/repository/commits")) == 1


def test_branch_mode_returns_the_new_merge_request_link(api: GitLabRepoApi, tmp_path: Path) -> None:
    repo = _repo(api)
    snapshot = repo.fetch_snapshot()
    changes = apply_patch(
        snapshot.files, _agent_patch(tmp_path, snapshot.archive), allow_protected=EXECUTABLE
    )
    result = repo.open_change(_request(api, snapshot.commit_sha, mode="branch"), changes)
    assert result.url == (
        "https://gitlab.example/group/app/-/merge_requests/new?"
        f"merge_request%5Bsource_branch%5D={result.branch.replace('/', '%2F')}&merge_request%5Btarget_branch%5D=main"
    )
    assert api.branch_changes(result.branch) == EXPECTED and not api.merge_requests


def test_a_branch_holding_other_commits_is_never_overwritten(api: GitLabRepoApi, tmp_path: Path) -> None:
    repo = _repo(api)
    snapshot = repo.fetch_snapshot()
    changes = apply_patch(
        snapshot.files, _agent_patch(tmp_path, snapshot.archive), allow_protected=EXECUTABLE
    )
    request = _request(api, snapshot.commit_sha)
    api.git.refs[request.branch] = api.git.commit_files({}, [api.base_commit], "theirs")
    with pytest.raises(ChangeConflict):
        repo.open_change(request, changes)
    assert not api.calls("POST", r".*/repository/commits")


def test_symbolic_links_are_refused_for_gitlab_before_any_write(api: GitLabRepoApi) -> None:
    link = FileChange("l", "create", b"app/main.py", "120000")
    with pytest.raises(PatchRefused, match="symbolic link"):
        _repo(api).open_change(_request(api, api.base_commit), [link])
    assert not api.calls("POST", r".*")


def test_actions_carry_binary_content_in_base64_and_modes_through_chmod() -> None:
    actions = _actions(
        [
            FileChange("a.bin", "update", b"\0\xff", "100644", "100755"),
            FileChange("d", "delete", old_mode="100644"),
        ]
    )
    assert actions == [
        {
            "action": "update",
            "file_path": "a.bin",
            "content": base64.b64encode(b"\0\xff").decode(),
            "encoding": "base64",
        },
        {"action": "chmod", "file_path": "a.bin", "execute_filemode": False},
        {"action": "delete", "file_path": "d"},
    ]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"branch": "b", "commit_message": "m", "actions": []}, "actions is empty"),
        (
            {
                "branch": "b",
                "commit_message": "m",
                "actions": [{"action": "create", "file_path": "x", "content": "x"}],
            },
            "on a branch",
        ),
        (
            {
                "branch": "main",
                "commit_message": "m",
                "start_sha": "0" * 40,
                "actions": [{"action": "delete", "file_path": "gone.txt"}],
            },
            "already exists",
        ),
        (
            {
                "branch": "b",
                "commit_message": "m",
                "start_branch": "main",
                "actions": [{"action": "create", "file_path": "gone.txt", "content": "x"}],
            },
            "already exists",
        ),
        (
            {
                "branch": "b",
                "commit_message": "m",
                "start_branch": "main",
                "actions": [{"action": "update", "file_path": "nope", "content": "x"}],
            },
            "doesn't exist",
        ),
        (
            {
                "branch": "b",
                "commit_message": "m",
                "start_branch": "main",
                "actions": [{"action": "create", "file_path": "x", "content": "!!", "encoding": "base64"}],
            },
            "base64",
        ),
        (
            {
                "branch": "b",
                "commit_message": "m",
                "start_branch": "main",
                "actions": [{"action": "chmod", "file_path": "build.sh"}],
            },
            "execute_filemode",
        ),
    ],
)
def test_the_standin_refuses_malformed_commits(api: GitLabRepoApi, payload: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(TrackerApiError, match=message) as caught:
        _repo(api).rest.call("POST", "/projects/42/repository/commits", payload)
    assert caught.value.status == 400 and "b" not in api.git.refs


def test_the_standin_needs_the_token_and_the_numeric_project(api: GitLabRepoApi) -> None:
    bad = GitLabRepo(42, token=lambda: "wrong", api_url=api.api_url, sleep=lambda _s: None)
    with pytest.raises(TrackerApiError) as caught:
        bad.default_branch()
    assert caught.value.status == 401
    with pytest.raises(TrackerApiError) as caught:
        GitLabRepo(43, token=lambda: TOKEN, api_url=api.api_url, sleep=lambda _s: None).default_branch()
    assert caught.value.status == 404


def test_an_archive_of_another_commit_than_asked_is_refused(
    api: GitLabRepoApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = api.git.commit_files({"x": ("100644", b"x\n")}, [api.base_commit], "other")
    real = api.git.tarball
    monkeypatch.setattr(api.git, "tarball", lambda _sha, prefix: real(other, prefix))
    with pytest.raises(SnapshotError, match="not of commit"):
        _repo(api).fetch_snapshot()
