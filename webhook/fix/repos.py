"""The trusted side's repository work for fix jobs, on :mod:`repo` and the tracker adapters.

:class:`TrackerRepos` fetches snapshots (worker) and proposes changes (reporter) with the GitHub / GitLab
tokens, which stay in the Lambdas: the runtime gets files and gives back a patch. :class:`TrackerComments`
posts and edits the progress comment through the adapters (``post_reply`` / ``edit_reply``).

Token scopes: GitHub ``contents: write`` + ``pull_requests: write`` (+ ``issues: write`` for comments);
GitLab a project access token with ``api`` and the Developer role (see docs/webhook/fix-jobs.md).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.errors import TrackerApiError, TrackerConfigError
from webhook.fix.jobs import FixJob
from webhook.fix.worker import CommentRef, FetchedRepo, FixRefused, IssueRef
from webhook.repo import (
    DEFAULT_LIMITS,
    ChangeRequest,
    ChangeResult,
    GitHubRepo,
    GitLabRepo,
    SnapshotLimits,
    apply_parsed,
    branch_name,
    parse_patch,
)
from webhook.repo.change import MAX_CHANGED_FILES, BranchIn
from webhook.repo.errors import TooManyChangedFiles
from webhook.trackers import AgentTask, IssueTracker
from webhook.trackers.base import enabled_tracker
from webhook.trackers.targets import PrMode, RepoTarget


def issue_task(issue: IssueRef) -> AgentTask:
    """A task naming only ``issue`` (what the adapters' ``post_reply`` / ``edit_reply`` read)."""
    return AgentTask(
        tracker=issue.tracker,  # type: ignore[arg-type]
        repository=issue.repository,
        issue_number=issue.issue_number,
        scope_id=issue.scope_id,
        issue_id=issue.issue_id,
        title="",
        author="agentkit",
        delivery_id="progress",
        event="progress",
        html_url=issue.html_url,
        pull_request=issue.pull_request,
    )


class TrackerComments:
    """Progress comments through the adapters of ``trackers``."""

    def __init__(self, trackers: Mapping[str, IssueTracker]) -> None:
        self.trackers = trackers

    def _adapter(self, name: str) -> IssueTracker:
        return enabled_tracker(self.trackers, name)

    def post(self, issue: IssueRef, text: str) -> CommentRef:
        ref = self._adapter(issue.tracker).post_reply(issue_task(issue), text)
        return CommentRef(id=str(ref.id or ""), url=ref.url)

    def edit(self, issue: IssueRef, comment_id: str, text: str) -> None:
        """Replace the progress comment's text; when it is gone (someone deleted it: 404), post ``text`` as a new
        comment instead, so a paid result is never lost to a missing comment."""
        adapter: Any = self._adapter(issue.tracker)
        try:
            if not comment_id:
                raise TrackerApiError("no progress comment to edit", status=404, retryable=False)
            if issue.tracker == "gitlab" and issue.pull_request:
                adapter.edit_reply(issue_task(issue), comment_id, text, noteable="merge_requests")
            else:
                adapter.edit_reply(issue_task(issue), comment_id, text)
        except TrackerApiError as exc:
            if exc.status != 404:
                raise
            self.post(issue, text)


@dataclass(frozen=True)
class Proposal:
    result: ChangeResult
    files: int


class TrackerRepos:
    """Snapshots and changes on GitHub and GitLab: ``tokens`` maps ``github`` / ``gitlab`` to a token provider
    (the one the tracker adapter uses); ``api_urls`` their REST API roots."""

    def __init__(
        self,
        *,
        tokens: Mapping[str, Callable[[], str]],
        api_urls: Mapping[str, str],
        limits: SnapshotLimits = DEFAULT_LIMITS,
        allow_protected: frozenset[str] = frozenset(),
        sleep: Callable[[float], None] = time.sleep,
        spool_dir: str | None = None,
    ) -> None:
        """``spool_dir``: where the worker's snapshots are downloaded, checked and written, and where the
        reporter downloads the archive it reads its patch's files from (default: the system's temporary
        directory, ``/tmp`` — a Lambda's ephemeral storage)."""
        self.spool_dir = spool_dir
        self.allow_protected = (
            allow_protected  # protected-path classes a patch may change (PATCH_ALLOW_PROTECTED)
        )
        self.tokens = tokens
        self.api_urls = api_urls
        self.limits = limits
        self._sleep = sleep

    def repo(self, tracker: str, repository: str, project_id: str = "") -> GitHubRepo | GitLabRepo:
        token = self.tokens.get(tracker)
        if token is None:
            raise TrackerConfigError(
                f"no {tracker} token is configured for fix jobs (enable the {tracker} tracker)"
            )
        if tracker == "github":
            return GitHubRepo(
                repository,
                token=token,
                api_url=self.api_urls.get("github", "https://api.github.com"),
                sleep=self._sleep,
            )
        return GitLabRepo(
            project_id,
            token=token,
            api_url=self.api_urls.get("gitlab", "https://gitlab.com/api/v4"),
            sleep=self._sleep,
        )

    def fetch(self, target: RepoTarget, *, pull_request: int | None) -> FetchedRepo:
        """The snapshot a fix starts from: the default branch, or the head of pull/merge request
        ``pull_request`` (only one in the same repository: a fork's branch cannot be pushed to)."""
        repo = self.repo(target.tracker, target.repository, target.project_id)
        if pull_request is None:
            branch = repo.default_branch()
            return self._spooled(repo, branch, branch=branch, pr_base=branch)
        if isinstance(repo, GitHubRepo):
            head = repo.pull_request_head(pull_request)
            same, ref, sha = head.same_repository, head.ref, head.sha
        else:
            mr = repo.merge_request_head(pull_request)
            same, ref, sha = mr.same_project, mr.ref, mr.sha
        if not same:
            raise FixRefused(
                "fork_pull_request", "the pull request's head is in a fork; its branch cannot be pushed to"
            )
        return self._spooled(repo, sha, branch=ref, pr_base=ref)

    def refetch(self, job: FixJob) -> FetchedRepo:
        """The snapshot of ``job``'s base commit (a retried start re-sends exactly the job it prepared)."""
        repo = self.repo(job.target_tracker, job.target_repository, job.target_project_id)
        return self._spooled(repo, job.base_sha, branch=job.base_branch, pr_base=job.pr_base)

    def _spooled(self, repo: GitHubRepo | GitLabRepo, ref: str, *, branch: str, pr_base: str) -> FetchedRepo:
        """The snapshot of ``ref`` streamed to a file in :attr:`spool_dir` (never held whole in memory); the
        caller removes it (:meth:`FetchedRepo.discard`). Removed here when fetching fails."""
        out = tempfile.NamedTemporaryFile(  # noqa: SIM115 - handed to the caller, which removes it
            dir=self.spool_dir, prefix="snapshot-", suffix=".tar.gz", delete=False
        )
        try:
            with out:
                snap = repo.fetch_snapshot(ref, limits=self.limits, into=out, spool_dir=self.spool_dir)
        except BaseException:
            os.unlink(out.name)
            raise
        return FetchedRepo(
            archive=b"", commit_sha=snap.commit_sha, branch=branch, pr_base=pr_base, archive_path=out.name
        )

    def propose(
        self,
        job: FixJob,
        job_key: str,
        patch: str,
        *,
        mode: PrMode,
        title: str,
        body: str,
        branch_in: BranchIn = "fork",
    ) -> Proposal | None:
        """Apply ``patch`` to the job's base commit and open the change; ``None`` when it changes nothing.

        Raises ``repo`` errors (``PatchRefused``, ``ChangeConflict``, ``SnapshotError``) and
        ``TrackerApiError``."""
        repo = self.repo(job.target_tracker, job.target_repository, job.target_project_id)
        # The patch is read first, so only the files it reads keep their bytes: the archive is spooled to
        # spool_dir (/tmp) and read past entry by entry, every entry checked as the worker checks it, and memory
        # holds names and modes plus what the patch touches, whatever the repository's size.
        parsed = parse_patch(patch)
        if len(parsed.reads) > MAX_CHANGED_FILES:  # each is changed or copied: bounded before any download
            raise TooManyChangedFiles(
                f"the patch modifies, deletes, renames or copies {len(parsed.reads)} files of the repository; "
                f"one change may touch at most {MAX_CHANGED_FILES}"
            )
        view = repo.fetch_view(job.base_sha, reads=parsed.reads, limits=self.limits, spool_dir=self.spool_dir)
        changes = apply_parsed(view, parsed, allow_protected=self.allow_protected)
        if not changes:
            return None
        label = job.issue_ref.lstrip("#")
        request = ChangeRequest(
            branch=branch_name(job.tracker, job.scope_id, job.issue_id, job_key, label=label),
            base_branch=job.pr_base,
            base_sha=job.base_sha,
            title=title,
            body=body,
            mode="branch" if mode == "branch" else "pull_request",
            branch_in=branch_in,
        )
        return Proposal(result=repo.open_change(request, changes), files=len(changes))
