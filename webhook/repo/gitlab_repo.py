"""A GitLab project through the REST API (v4): fetch a snapshot, commit a change to a branch, open a draft MR.

Endpoints (docs.gitlab.com/api), the project always by its immutable numeric id:

- ``GET /projects/:id`` (projects#get-a-single-project): ``default_branch``, ``web_url``;
- ``GET /projects/:id/merge_requests/:iid`` (merge_requests#get-single-mr): a merge request's head;
- ``GET /projects/:id/repository/commits/:sha`` (commits#get-a-single-commit): a ref's commit id;
- ``GET /projects/:id/repository/archive.tar.gz?sha=<commit>`` (repositories#get-file-archive);
- ``GET /projects/:id/repository/branches/:branch`` (branches#get-single-repository-branch);
- ``POST /projects/:id/repository/commits`` (commits#create-a-commit-with-multiple-files-and-actions):
  ``branch``, ``commit_message``, ``start_sha`` (the new branch starts at the snapshot's commit), and
  ``actions``: ``create``/``update`` with ``file_path``, ``content`` and ``encoding: "base64"`` (binary-safe),
  ``delete`` with ``file_path``, ``chmod`` with ``execute_filemode`` (GitLab sets the execute bit only
  through ``chmod``);
- ``GET /projects/:id/merge_requests?source_branch=<b>&state=opened`` and ``POST /projects/:id/merge_requests``
  (``source_branch``, ``target_branch``, ``title`` starting with ``Draft:`` (GitLab's way to create a
  draft), ``description``, ``remove_source_branch``).

The commits API has no action for symbolic links: a change that creates or edits one is refused
(:class:`repo.errors.PatchRefused`) rather than committed as a regular file.

Token: a project access token with the ``api`` scope and the Developer role (Reporter reads only).
Raises :class:`webhook.errors.TrackerApiError` for API failures, :class:`repo.errors.ChangeConflict`,
:class:`repo.errors.SnapshotError` and :class:`repo.errors.PatchRefused`.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from webhook.errors import TrackerApiError, TrackerConfigError

from .change import (
    ChangeRequest,
    ChangeResult,
    check_size,
    commit_message,
    gitlab_new_mr_url,
    holds_change,
)
from .errors import ChangeConflict, PatchRefused
from .files import MODE_EXECUTABLE, MODE_SYMLINK, FileChange
from .hosted import HostedRepo
from .rest import quote
from .snapshot import DEFAULT_LIMITS, Snapshot, SnapshotLimits

DRAFT_PREFIX = "Draft: "


@dataclass(frozen=True)
class MergeRequestHead:
    """A merge request's source branch and commit, and whether it lives in this project (not a fork)."""

    ref: str
    sha: str
    same_project: bool
    target_branch: str


#: How often, and how far apart, a new fork is checked for GitLab's import to finish (30 s in all).
FORK_POLLS = 10
FORK_POLL_SECONDS = 3.0


class GitLabRepo(HostedRepo):
    """Project ``project_id`` on ``api_url`` (``https://gitlab.com/api/v4``) with ``token()`` as
    ``PRIVATE-TOKEN`` (read on every call)."""

    service = "GitLab"
    token_kind = "a project access token"

    def __init__(
        self,
        project_id: int | str,
        *,
        token: Callable[[], str],
        api_url: str = "https://gitlab.com/api/v4",
        timeout: float = 30.0,
        attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not str(project_id).isdigit():
            raise TrackerConfigError(f"GitLab project id {project_id!r} must be the numeric id")
        self.project_id = str(project_id)
        self._args = {
            "token": token,
            "api_url": api_url,
            "timeout": timeout,
            "attempts": attempts,
            "sleep": sleep,
        }
        self._sleep = sleep
        super().__init__(token=token, api_url=api_url, timeout=timeout, attempts=attempts, sleep=sleep)

    def _token_headers(self, token: str) -> dict[str, str]:
        return {"PRIVATE-TOKEN": token}

    @property
    def _base(self) -> str:
        """``/projects/:id``: :meth:`info` reads it."""
        return f"/projects/{self.project_id}"

    def merge_request_head(self, iid: int) -> MergeRequestHead:
        doc = self.rest.call("GET", f"{self._base}/merge_requests/{iid}")
        same = str(doc.get("source_project_id")) == self.project_id
        return MergeRequestHead(
            ref=doc["source_branch"], sha=doc["sha"], same_project=same, target_branch=doc["target_branch"]
        )

    def resolve(self, ref: str) -> str:
        """The commit id of ``ref`` (a branch, tag or commit id)."""
        doc = self.rest.call("GET", f"{self._base}/repository/commits/{quote(ref)}")
        return str(doc["id"])

    def _commit_id(self, ref: str) -> str:
        return self.resolve(ref)

    def _archive_path(self, sha: str) -> tuple[str, Mapping[str, str] | None]:
        return f"{self._base}/repository/archive.tar.gz", {"sha": sha}

    def fetch_snapshot(
        self,
        ref: str | None = None,
        *,
        limits: SnapshotLimits = DEFAULT_LIMITS,
        archive: bool = True,
        into: IO[bytes] | None = None,
        spool_dir: str | None = None,
    ) -> Snapshot:
        """The project at ``ref`` (default: the default branch) as a workspace snapshot, fetched by the
        resolved commit id (see :meth:`repo.github_repo.GitHubRepo.fetch_snapshot`)."""
        ref = ref or self.default_branch()
        sha = self.resolve(ref)
        repacked = self._archive(sha, limits=limits, archive=archive, into=into, spool_dir=spool_dir)
        return Snapshot(sha, repacked.archive, repacked.files, ref=ref, archive_comment=repacked.comment)

    # ---- the fork
    def ensure_fork(self, *, polls: int = FORK_POLLS, interval: float = FORK_POLL_SECONDS) -> GitLabRepo:
        """The token user's fork of this project, created when missing, once GitLab finished making it.

        ``GET /projects/:id/forks?owned=true`` finds an existing one; else ``POST /projects/:id/fork`` (projects
        API, "Fork project"; 409 when the name is taken: listed again). Forking is asynchronous:
        ``GET /projects/:fork`` is polled until ``import_status`` is ``finished``. Raises :class:`TrackerApiError`
        (retryable) when it is not ready in time."""
        fork_id = self._owned_fork()
        if fork_id is None:
            try:
                fork_id = str(self.rest.call("POST", f"{self._base}/fork", {}, idempotent=False)["id"])
            except TrackerApiError as exc:
                fork_id = self._owned_fork() if exc.status == 409 else None
                if fork_id is None:
                    raise
        fork = GitLabRepo(fork_id, **self._args)  # type: ignore[arg-type]
        for attempt in range(polls):
            status = str(fork.rest.call("GET", fork._base).get("import_status") or "none")
            if status in ("finished", "none"):
                return fork
            if status == "failed":
                raise TrackerApiError(f"GitLab could not fork project {self.project_id}", retryable=False)
            if attempt + 1 < polls:
                self._sleep(interval)
        raise TrackerApiError(
            f"the fork {fork_id} of project {self.project_id} is not ready yet", retryable=True
        )

    def _owned_fork(self) -> str | None:
        found = self.rest.call("GET", f"{self._base}/forks", query={"owned": "true"})
        return str(found[0]["id"]) if isinstance(found, list) and found else None

    # ---- the change
    def open_change(self, request: ChangeRequest, changes: Sequence[FileChange]) -> ChangeResult:
        """Commit ``changes`` on ``request.base_sha`` to the new branch ``request.branch`` — in the token user's
        fork (``request.branch_in == "fork"``: nothing is pushed to this project; the commit starts from this
        project's commit with ``start_project``) or in this project — then open a draft merge request into this
        project (``target_project_id``; ``mode="pull_request"``; an open one for the branch is returned as is)
        or return GitLab's "new merge request" link (``mode="branch"``). Safe to call again (a retried run)."""
        check_size(changes)
        message = commit_message(request, changes)
        actions = _actions(changes)
        home = self.ensure_fork() if request.branch_in == "fork" else self
        commit = home._existing_branch(request, changes)
        if commit is None:
            payload: dict[str, Any] = {
                "branch": request.branch,
                "commit_message": message,
                "start_sha": request.base_sha,
                "actions": actions,
            }
            if home is not self:
                payload["start_project"] = int(self.project_id)
            try:
                doc = home.rest.call("POST", f"{home._base}/repository/commits", payload)
                commit = str(doc["id"])
            except TrackerApiError as exc:
                if exc.status != 400:  # 400: the branch exists (a concurrent attempt of the same run)
                    raise
                commit = home._existing_branch(request, changes)
                if commit is None:
                    raise
        if request.mode == "branch":
            return home._branch_result(request, commit)
        return self._merge_request(request, commit, source=home)

    def _existing_branch(self, request: ChangeRequest, changes: Sequence[FileChange]) -> str | None:
        doc = self.rest.call(
            "GET", f"{self._base}/repository/branches/{quote(request.branch)}", allow_404=True
        )
        if doc is None:
            return None
        head = doc["commit"]
        if not holds_change(str(head.get("message", "")), head.get("parent_ids") or [], request, changes):
            raise ChangeConflict(
                f"branch {request.branch!r} exists in project {self.project_id} and holds other commits; it is "
                "left as it is (delete it, or run again to get a new branch)"
            )
        return str(head["id"])

    def _branch_result(self, request: ChangeRequest, commit: str) -> ChangeResult:
        url = gitlab_new_mr_url(str(self.info()["web_url"]), request.base_branch, request.branch)
        return ChangeResult(kind="branch", url=url, branch=request.branch, commit_sha=commit)

    def _open_mr(self, request: ChangeRequest, commit: str, source: GitLabRepo) -> ChangeResult | None:
        found = self.rest.call(
            "GET", f"{self._base}/merge_requests", query={"source_branch": request.branch, "state": "opened"}
        )
        mine = [
            mr
            for mr in (found if isinstance(found, list) else [])
            if str(mr.get("source_project_id", self.project_id)) == source.project_id
        ]
        if mine:
            mr = mine[0]
            return ChangeResult("pull_request", mr["web_url"], request.branch, commit, int(mr["iid"]))
        return None

    def _merge_request(
        self, request: ChangeRequest, commit: str, *, source: GitLabRepo | None = None
    ) -> ChangeResult:
        source = source or self
        existing = self._open_mr(request, commit, source)
        if existing is not None:
            return existing
        title = request.title if request.title.startswith(DRAFT_PREFIX) else DRAFT_PREFIX + request.title
        payload = {
            "source_branch": request.branch,
            "target_branch": request.base_branch,
            "title": title,
            "description": request.body,
            "remove_source_branch": True,
        }
        if source is not self:
            payload["target_project_id"] = int(self.project_id)  # created in the fork, into this project
        try:
            mr = source.rest.call("POST", f"{source._base}/merge_requests", payload)
        except TrackerApiError as exc:
            raced = self._open_mr(request, commit, source) if exc.status == 409 else None
            if raced is None:
                raise
            return raced
        return ChangeResult(
            "pull_request", mr["web_url"], request.branch, commit, int(mr["iid"]), created=True
        )


def _actions(changes: Sequence[FileChange]) -> list[dict[str, Any]]:
    """The commits API's ``actions`` for ``changes``. Raises :class:`PatchRefused` for symbolic links."""
    actions: list[dict[str, Any]] = []
    for change in changes:
        if change.action == "delete":
            actions.append({"action": "delete", "file_path": change.path})
            continue
        if MODE_SYMLINK in (change.mode, change.old_mode):
            raise PatchRefused(
                f"the change makes or edits the symbolic link {change.path!r}; GitLab's commits API cannot "
                "write symbolic links"
            )
        actions.append(
            {
                "action": change.action,
                "file_path": change.path,
                "content": base64.b64encode(change.content or b"").decode(),
                "encoding": "base64",
            }
        )
        executable = change.mode == MODE_EXECUTABLE
        was_executable = change.old_mode == MODE_EXECUTABLE
        if executable != was_executable:
            actions.append({"action": "chmod", "file_path": change.path, "execute_filemode": executable})
    return actions
