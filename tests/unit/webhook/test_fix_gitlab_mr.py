"""A fix asked for on a GitLab merge request: the snapshot is the merge request's head, the change targets its
source branch, and the progress note lives on the merge request (the GitLab stand-in checks the endpoints)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.gitlab_repo_api import GitLabRepoApi
from tests.unit.webhook.support import GITLAB_TOKEN
from webhook import trackers
from webhook.fix.repos import TrackerComments, TrackerRepos
from webhook.fix.worker import IssueRef
from webhook.trackers.targets import RepoTarget

FILES = {"src/calc.py": ("100644", b"def add(a, b):\n    return a - b\n")}


@pytest.fixture
def api() -> Iterator[GitLabRepoApi]:
    with GitLabRepoApi(token=GITLAB_TOKEN, project_id=5, path="g/p", files=dict(FILES)) as server:
        yield server


def test_the_snapshot_is_the_merge_requests_head(api: GitLabRepoApi) -> None:
    head = api.git.commit_files({**FILES, "NOTES.md": ("100644", b"wip\n")}, [api.base_commit], "wip")
    api.git.refs["feature"] = head
    api.merge_requests.append(
        {
            "iid": 1,
            "web_url": f"{api.web_url}/-/merge_requests/1",
            "state": "opened",
            "title": "wip",
            "description": "",
            "draft": False,
            "work_in_progress": False,
            "source_branch": "feature",
            "target_branch": "main",
            "source_project_id": 5,
            "sha": head,
        }
    )
    repos = TrackerRepos(tokens={"gitlab": lambda: GITLAB_TOKEN}, api_urls={"gitlab": api.api_url})
    fetched = repos.fetch(RepoTarget("gitlab", "g/p", "5"), pull_request=1)
    assert (fetched.commit_sha, fetched.branch, fetched.pr_base) == (head, "feature", "feature")


def test_the_progress_note_is_posted_and_edited_on_the_merge_request(api: GitLabRepoApi) -> None:
    adapter = trackers.GitLabTracker(trackers.TrackerOptions(token=lambda: GITLAB_TOKEN, api_url=api.api_url))
    comments = TrackerComments({"gitlab": adapter})
    mr = IssueRef("gitlab", "g/p", "5", 1, "1", f"{api.web_url}/-/merge_requests/1", pull_request=True)
    posted = comments.post(mr, "Working on it…")
    comments.edit(mr, posted.id, "Done.")
    [note] = api.notes.values()
    assert (note["noteable"], note["iid"], note["body"], note["edits"]) == ("merge_requests", 1, "Done.", 1)
    assert posted.url == f"{api.web_url}/-/merge_requests/1#note_{note['id']}"
