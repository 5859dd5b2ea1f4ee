"""Progress comments: post once, then edit in place (``edit_reply``) on GitHub, GitLab (issue and merge
request notes) and Jira (ADF), against the stand-ins that check the request shapes."""

from __future__ import annotations

import json

import pytest

from harness.github_repo_api import GitHubRepoApi
from harness.gitlab_repo_api import GitLabRepoApi
from harness.tracker_apis import JiraApi
from tests.unit.webhook.support import JIRA_SITE, JIRA_TOKEN, task_json
from webhook import trackers


def _task(tracker: str, **kw: object) -> trackers.AgentTask:
    return trackers.AgentTask.model_validate_json(task_json(tracker=tracker, **kw))  # type: ignore[arg-type]


def test_github_progress_comment_is_edited_in_place() -> None:
    with GitHubRepoApi(token="ghp_t", repository="octo/kit") as api:
        tracker = trackers.GitHubTracker(
            trackers.TrackerOptions(token=lambda: "ghp_t", api_url=api.url, sleep=lambda _s: None)
        )
        task = _task("github")
        ref = tracker.post_reply(task, "working…")
        assert ref.id is not None  # GitHub answers a comment with its id
        tracker.edit_reply(task, ref.id, "working… 2 tool calls, 0:12")
        done = tracker.edit_reply(task, ref.id, "Done: https://github.example/octo/kit/pull/1")
    assert done.id == ref.id and done.url == ref.url
    assert list(api.comments.values()) == [
        {"id": ref.id, "issue": 7, "body": "Done: https://github.example/octo/kit/pull/1", "edits": 2}
    ]
    (edit, _) = api.calls("PATCH", rf"/repos/octo/kit/issues/comments/{ref.id}")
    assert edit["headers"]["authorization"] == "Bearer ghp_t" and json.loads(edit["body"]) == {
        "body": "working… 2 tool calls, 0:12"
    }


def test_github_edit_of_an_unknown_comment_is_a_clear_error() -> None:
    with GitHubRepoApi(token="ghp_t", repository="octo/kit") as api:
        tracker = trackers.GitHubTracker(
            trackers.TrackerOptions(token=lambda: "ghp_t", api_url=api.url, sleep=lambda _s: None)
        )
        with pytest.raises(trackers.TrackerApiError) as caught:
            tracker.edit_reply(_task("github"), 999, "x")
    assert caught.value.status == 404 and not caught.value.retryable


def test_an_edit_is_retried_after_a_server_error() -> None:
    with GitHubRepoApi(token="ghp_t", repository="octo/kit") as api:
        slept: list[float] = []
        tracker = trackers.GitHubTracker(
            trackers.TrackerOptions(token=lambda: "ghp_t", api_url=api.url, sleep=slept.append)
        )
        task = _task("github")
        ref = tracker.post_reply(task, "working…")
        assert isinstance(ref.id, int)  # GitHub's comment ids are numbers
        api.script.append((503, {"message": "unavailable"}))
        tracker.edit_reply(task, ref.id, "still working")
    assert api.comments[ref.id]["body"] == "still working" and len(slept) == 1


@pytest.mark.parametrize("noteable", ["issues", "merge_requests"])
def test_gitlab_note_is_edited_in_place(noteable: str) -> None:
    with GitLabRepoApi(token="glpat-t", project_id=4242) as api:
        tracker = trackers.GitLabTracker(
            trackers.TrackerOptions(token=lambda: "glpat-t", api_url=api.api_url, sleep=lambda _s: None)
        )
        task = _task("gitlab", scope_id="4242")
        if noteable == "issues":
            ref = tracker.post_reply(task, "working…")
        else:  # a note on merge request !7, as a comment on a merge request would be answered
            doc = tracker._post(
                f"{api.api_url}/projects/4242/merge_requests/7/notes",
                {"body": "working…"},
                headers={"PRIVATE-TOKEN": "glpat-t"},
                service="GitLab",
            )
            ref = trackers.ReplyRef(url="", id=doc["id"])
        assert ref.id is not None
        edited = tracker.edit_reply(task, ref.id, "done", noteable=noteable)  # type: ignore[arg-type]
    assert edited.id == ref.id
    assert api.notes[int(ref.id)]["body"] == "done" and api.notes[int(ref.id)]["edits"] == 1
    assert api.calls("PUT", rf"/api/v4/projects/4242/{noteable}/7/notes/{ref.id}")


def test_jira_comment_is_edited_with_an_adf_body() -> None:
    key = "PROJ"
    with JiraApi(authorization=trackers.jira_auth_header(JIRA_TOKEN)) as api:
        tracker = trackers.JiraTracker(
            trackers.TrackerOptions(api_url=api.url, token=lambda: JIRA_TOKEN, sleep=lambda _s: None),
            site_url=JIRA_SITE,
        )
        task = _task("jira", repository=key)
        ref = tracker.post_reply(task, "working…")
        assert ref.id is not None
        edited = tracker.edit_reply(
            task, ref.id, "**Done**: see the [pull request](https://github.example/o/r/pull/1)"
        )
    assert edited.url == f"{JIRA_SITE}/browse/PROJ-7?focusedCommentId={ref.id}"
    (comment,) = api.replies
    assert comment["edits"] == 1 and comment["body"]["type"] == "doc"
    assert "pull request" in json.dumps(comment["body"])
    with pytest.raises(trackers.TrackerConfigError):
        tracker.edit_reply(task, "../../x", "no")
