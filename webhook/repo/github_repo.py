"""A GitHub repository through the REST API: fetch a snapshot, commit a change to a branch, open a draft PR.

Endpoints (GitHub REST API, version ``2022-11-28``; docs.github.com/rest):

- ``GET /repos/{o}/{r}`` (repos#get-a-repository): ``default_branch``, ``html_url``;
- ``GET /repos/{o}/{r}/pulls/{n}`` (pulls#get-a-pull-request): a pull request's head;
- ``GET /repos/{o}/{r}/commits/{ref}`` (commits#get-a-commit): the ref's commit id and root tree;
- ``GET /repos/{o}/{r}/tarball/{sha}`` (repos/contents#download-a-repository-archive-tar): a 302 to a
  short-lived archive URL, followed without the token (:mod:`.rest`);
- git data API: ``POST .../git/trees`` (``base_tree`` plus entries ``{path, mode, type: "blob", content}``
  for text, ``sha`` of a ``POST .../git/blobs`` (base64: binary-safe) for binary files; ``sha: null``
  deletes a path): one tree call per change, blob calls only for binaries (:func:`.change.check_size`), ``POST .../git/commits`` (``message``, ``tree``, ``parents``), ``POST .../git/refs``
  (``ref: "refs/heads/<branch>"``, ``sha``), ``GET .../git/ref/heads/{branch}``, ``GET .../git/commits/{sha}``;
- ``POST /repos/{o}/{r}/forks`` (repos/forks#create-a-fork): the bot's fork, where the branch is committed by
  default (the git data calls above then go to the fork); ``POST /repos/{fork}/merge-upstream``
  (branches#sync-a-fork-branch-with-the-upstream-repository, ``branch``): an existing fork that lacks the base
  commit is synced once (:meth:`GitHubRepo.ensure_fork`);
- ``GET /repos/{o}/{r}/collaborators/{user}/permission``: who may ask for a fix (:mod:`webhook.fix.gate`);
- ``GET /repos/{o}/{r}/pulls?head=<owner>:<branch>&state=open`` and ``POST /repos/{o}/{r}/pulls``
  (``title``, ``head``, ``base``, ``body``, ``draft: true``) (pulls#create-a-pull-request).

Token: with the fork path (the default) the token of a bot *user* (the fork is created in the token owner's
account) with ``contents: read`` and ``pull_requests: write`` on the repository and write access to its fork;
with ``same_repository`` ``contents: write`` and ``pull_requests: write`` (``contents: read`` only for
snapshots). Raises :class:`webhook.errors.TrackerApiError` for API failures,
:class:`repo.errors.ChangeConflict`, :class:`repo.errors.ForkOutOfSync`, :class:`repo.errors.SnapshotError` and
:class:`repo.errors.PatchRefused`.
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
    github_compare_url,
    holds_change,
    is_text,
)
from .errors import ChangeConflict, ForkOutOfSync
from .files import FileChange
from .hosted import HostedRepo
from .rest import quote
from .snapshot import DEFAULT_LIMITS, Snapshot, SnapshotLimits

#: How often, and how far apart, a new fork is checked for the base commit (30 s in all).
FORK_POLLS = 10
FORK_POLL_SECONDS = 3.0


@dataclass(frozen=True)
class PullHead:
    """A pull request's head: branch, commit, and whether it lives in the same repository (not a fork)."""

    ref: str
    sha: str
    same_repository: bool
    base_ref: str


class GitHubRepo(HostedRepo):
    """``owner/repo`` on ``api_url`` with the token ``token()`` returns (read on every call)."""

    service = "GitHub"
    token_kind = "a token"

    def __init__(
        self,
        repository: str,
        *,
        token: Callable[[], str],
        api_url: str = "https://api.github.com",
        timeout: float = 30.0,
        attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if repository.count("/") != 1 or not all(repository.split("/")):
            raise TrackerConfigError(f"GitHub repository {repository!r} must be owner/name")
        self.repository = repository
        self._args = {
            "token": token,
            "api_url": api_url,
            "timeout": timeout,
            "attempts": attempts,
            "sleep": sleep,
        }
        self._sleep = sleep
        super().__init__(
            token=token,
            api_url=api_url,
            timeout=timeout,
            attempts=attempts,
            sleep=sleep,
            extra_headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"},
        )

    def _token_headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    @property
    def _base(self) -> str:
        """``/repos/{o}/{r}``: :meth:`info` reads it."""
        return f"/repos/{self.repository}"

    def pull_request_head(self, number: int) -> PullHead:
        """The head of pull request ``number`` (a comment on a pull request works on its head)."""
        doc = self.rest.call("GET", f"{self._base}/pulls/{number}")
        head = doc["head"]
        same = (head.get("repo") or {}).get("full_name", "").lower() == self.repository.lower()
        return PullHead(ref=head["ref"], sha=head["sha"], same_repository=same, base_ref=doc["base"]["ref"])

    def collaborator_permission(self, username: str) -> str:
        """``GET /repos/{o}/{r}/collaborators/{user}/permission`` (collaborators#get-repository-permissions-for-a-
        user): ``admin``, ``write`` (also for the maintain role), ``read`` (also for triage) or ``none``; a user
        GitHub does not know (404) is ``none``. ``author_association`` carries no permission: this does."""
        doc = self.rest.call(
            "GET", f"{self._base}/collaborators/{quote(username)}/permission", allow_404=True
        )
        return str((doc or {}).get("permission") or "none")

    def resolve(self, ref: str) -> tuple[str, str]:
        """``(commit id, root tree id)`` of ``ref`` (a branch, tag or commit id)."""
        doc = self.rest.call("GET", f"{self._base}/commits/{quote(ref, keep_slashes=True)}")
        return str(doc["sha"]), str(doc["commit"]["tree"]["sha"])

    def _commit_id(self, ref: str) -> str:
        return self.resolve(ref)[0]

    def _archive_path(self, sha: str) -> tuple[str, Mapping[str, str] | None]:
        return f"{self._base}/tarball/{sha}", None

    def fetch_snapshot(
        self,
        ref: str | None = None,
        *,
        limits: SnapshotLimits = DEFAULT_LIMITS,
        archive: bool = True,
        into: IO[bytes] | None = None,
        spool_dir: str | None = None,
    ) -> Snapshot:
        """The repository at ``ref`` (default: the default branch) as a workspace snapshot.

        The ref is resolved to a commit first and the archive fetched by that commit id, so the snapshot
        is the commit the change will be based on even when the branch moves meanwhile. With ``into`` the
        snapshot is streamed into that file through spool files in ``spool_dir`` (the result holds no archive
        and no files: :meth:`.hosted.HostedRepo._archive`).
        """
        ref = ref or self.default_branch()
        sha, tree = self.resolve(ref)
        repacked = self._archive(sha, limits=limits, archive=archive, into=into, spool_dir=spool_dir)
        return Snapshot(
            sha, repacked.archive, repacked.files, ref=ref, tree_sha=tree, archive_comment=repacked.comment
        )

    # ---- the fork
    def ensure_fork(
        self,
        base_sha: str,
        base_branch: str | None = None,
        *,
        polls: int = FORK_POLLS,
        interval: float = FORK_POLL_SECONDS,
    ) -> GitHubRepo:
        """The bot's fork of this repository, created when missing, once the base commit is readable in it.

        ``POST /repos/{o}/{r}/forks`` (repos/forks#create-a-fork) answers 202 with the fork (also when it exists
        already: the same fork). Forking is asynchronous ("you may have to wait a short period of time before you
        can access the git objects"): ``GET /repos/{fork}/git/commits/{base_sha}`` is polled until it answers.

        A fork that exists already may be far behind this repository. A fork belongs to its upstream's
        "repository network" (docs.github.com, "About permissions and visibility of forks"), and in practice it
        answers for the network's commits, but the REST reference promises nothing about a commit no branch of
        the fork holds. So when the commit is missing while the fork's ``base_branch`` is readable (an
        existing, populated fork, not one still being made), the branch is synced once with
        ``POST /repos/{fork}/merge-upstream`` (branches#sync-a-fork-branch-with-the-upstream-repository: a
        fast-forward, or a merge commit when the fork's branch has commits of its own; 409 "could not be synced
        because of a merge conflict", 422 "for some other reason") and the polling goes on. The fork's branch
        is never reset or force-pushed: it is the bot account's, and may hold someone's work.

        Raises :class:`.errors.ForkOutOfSync` (final) when GitHub refuses the sync or the populated fork has no
        such branch, :class:`TrackerApiError` (retryable) when the fork is not ready in time: the result is
        retried."""
        doc = self.rest.call("POST", f"{self._base}/forks", {"default_branch_only": False}, idempotent=True)
        fork = GitHubRepo(str(doc["full_name"]), **self._args)  # type: ignore[arg-type]
        synced = base_branch is None
        for attempt in range(polls):
            if fork._holds(base_sha):
                return fork
            if not synced and fork._has_branch(base_branch or ""):
                fork._sync_branch(base_branch or "", upstream=self.repository, base_sha=base_sha)
                synced = True
                if fork._holds(base_sha):  # a fast-forward makes it readable at once
                    return fork
            if attempt + 1 < polls:
                self._sleep(interval)
        if not synced and fork._has_branch(str(doc.get("default_branch") or "")):
            # Made and readable, yet without the branch to sync (one created here after the fork was): no
            # documented call brings the commit into it, and a retry would find the same.
            raise ForkOutOfSync(
                f"the bot's fork {fork.repository} does not hold commit {base_sha[:12]} of {self.repository} and "
                f"has no branch {base_branch!r} to sync. Nothing was pushed. Whoever owns the fork deletes it "
                "(the next run creates it again) or pushes that branch to it"
            )
        raise TrackerApiError(
            f"the fork {fork.repository} of {self.repository} does not hold commit {base_sha[:12]} yet",
            retryable=True,
        )

    def _holds(self, sha: str) -> bool:
        return self.rest.call("GET", f"{self._base}/git/commits/{sha}", allow_404=True) is not None

    def _has_branch(self, branch: str) -> bool:
        path = f"{self._base}/git/ref/heads/{quote(branch, keep_slashes=True)}"
        return self.rest.call("GET", path, allow_404=True) is not None

    def _sync_branch(self, branch: str, *, upstream: str, base_sha: str) -> None:
        """``POST /repos/{fork}/merge-upstream`` for ``branch``; a refusal is final (a retry gets the same)."""
        try:
            self.rest.call("POST", f"{self._base}/merge-upstream", {"branch": branch}, idempotent=True)
        except TrackerApiError as exc:
            if exc.status not in (409, 422):
                raise
            why = (
                "its branch has commits that conflict with the upstream branch"
                if exc.status == 409
                else "GitHub could not sync its branch"
            )
            raise ForkOutOfSync(
                f"the bot's fork {self.repository} does not hold commit {base_sha[:12]} of {upstream}, and "
                f"syncing its branch {branch!r} failed ({exc.status}: {why}). Nothing was pushed. Whoever owns "
                f'the fork syncs {branch!r} with {upstream} (GitHub: "Sync fork") or deletes the fork; the next '
                "run then creates it again"
            ) from exc

    # ---- the change
    def open_change(self, request: ChangeRequest, changes: Sequence[FileChange]) -> ChangeResult:
        """Commit ``changes`` on ``request.base_sha`` to ``request.branch`` — in the bot's fork
        (``request.branch_in == "fork"``; nothing is pushed to this repository) or in this repository — then
        open a draft pull request into this repository (``mode="pull_request"``; an open one for the branch is
        returned as is) or return GitHub's compare link (``mode="branch"``). Safe to call again for the same
        request (a retried run)."""
        check_size(changes)
        message = commit_message(request, changes)
        home = (
            self.ensure_fork(request.base_sha, request.base_branch) if request.branch_in == "fork" else self
        )
        commit = home._existing_branch(request, changes)
        if commit is None:
            commit = home._commit(request, changes, message)
            commit = home._create_ref(request, changes, commit)
        owner = home.repository.split("/")[0] if home is not self else ""
        if request.mode == "branch":
            return self._branch_result(request, commit, head_owner=owner)
        return self._pull_request(request, commit, head_owner=owner)

    def _existing_branch(self, request: ChangeRequest, changes: Sequence[FileChange]) -> str | None:
        """The branch head when the branch holds exactly this change; ``None`` when there is no branch."""
        ref = self.rest.call(
            "GET", f"{self._base}/git/ref/heads/{quote(request.branch, keep_slashes=True)}", allow_404=True
        )
        if ref is None:
            return None
        head = str(ref["object"]["sha"])
        doc = self.rest.call("GET", f"{self._base}/git/commits/{head}")
        parents = [str(p["sha"]) for p in doc.get("parents", [])]
        if not holds_change(str(doc.get("message", "")), parents, request, changes):
            raise ChangeConflict(
                f"branch {request.branch!r} exists in {self.repository} and holds other commits; it is left "
                "as it is (delete it, or run again to get a new branch)"
            )
        return head

    def _commit(self, request: ChangeRequest, changes: Sequence[FileChange], message: str) -> str:
        base = self.rest.call("GET", f"{self._base}/git/commits/{request.base_sha}")
        entries: list[dict[str, Any]] = []
        for change in changes:
            if change.action == "delete":
                entries.append(
                    {"path": change.path, "mode": change.old_mode or "100644", "type": "blob", "sha": None}
                )
                continue
            if is_text(change):
                # Text goes inline: GitHub writes the blob itself, so 600 text files cost one tree call, not
                # 600 content-creating requests against its secondary rate limit (git/trees: "content").
                content = (change.content or b"").decode("utf-8")
                entries.append({"path": change.path, "mode": change.mode, "type": "blob", "content": content})
                continue
            blob = self.rest.call(
                "POST",
                f"{self._base}/git/blobs",
                {"content": base64.b64encode(change.content or b"").decode(), "encoding": "base64"},
                idempotent=True,  # content-addressed: the same blob again
            )
            entries.append({"path": change.path, "mode": change.mode, "type": "blob", "sha": blob["sha"]})
        tree = self.rest.call(
            "POST",
            f"{self._base}/git/trees",
            {"base_tree": base["tree"]["sha"], "tree": entries},
            idempotent=True,
        )
        commit = self.rest.call(
            "POST",
            f"{self._base}/git/commits",
            {"message": message, "tree": tree["sha"], "parents": [request.base_sha]},
            idempotent=True,  # an unreferenced commit is harmless
        )
        return str(commit["sha"])

    def _create_ref(self, request: ChangeRequest, changes: Sequence[FileChange], commit: str) -> str:
        try:
            self.rest.call(
                "POST", f"{self._base}/git/refs", {"ref": f"refs/heads/{request.branch}", "sha": commit}
            )
        except TrackerApiError as exc:
            if exc.status != 422:  # 422: the ref exists (a concurrent attempt of the same run)
                raise
            existing = self._existing_branch(request, changes)
            if existing is None:
                raise
            return existing
        return commit

    def _branch_result(
        self, request: ChangeRequest, commit: str, note: str = "", *, head_owner: str = ""
    ) -> ChangeResult:
        url = github_compare_url(
            str(self.info()["html_url"]), request.base_branch, request.branch, head_owner
        )
        return ChangeResult(kind="branch", url=url, branch=request.branch, commit_sha=commit, note=note)

    def _open_pull(self, request: ChangeRequest, commit: str, head_owner: str = "") -> ChangeResult | None:
        owner = head_owner or self.repository.split("/")[0]
        found = self.rest.call(
            "GET", f"{self._base}/pulls", query={"head": f"{owner}:{request.branch}", "state": "open"}
        )
        if isinstance(found, list) and found:
            pull = found[0]
            return ChangeResult("pull_request", pull["html_url"], request.branch, commit, int(pull["number"]))
        return None

    def _pull_request(self, request: ChangeRequest, commit: str, *, head_owner: str = "") -> ChangeResult:
        existing = self._open_pull(request, commit, head_owner)
        if existing is not None:
            return existing
        payload = {
            "title": request.title,
            # A fork's branch is named ``owner:branch`` (pulls#create-a-pull-request, ``head``).
            "head": f"{head_owner}:{request.branch}" if head_owner else request.branch,
            "base": request.base_branch,
            "body": request.body,
            "draft": True,
        }
        try:
            pull = self.rest.call("POST", f"{self._base}/pulls", payload)
        except TrackerApiError as exc:
            # Draft pull requests need a public repository or a paid plan; GitHub answers 422 otherwise.
            if exc.status == 422 and "draft" in exc.message.lower():
                return self._branch_result(
                    request,
                    commit,
                    note="draft pull requests are not available in this repository",
                    head_owner=head_owner,
                )
            raced = self._open_pull(request, commit, head_owner) if exc.status == 422 else None
            if raced is None:
                raise
            return raced
        return ChangeResult(
            "pull_request", pull["html_url"], request.branch, commit, int(pull["number"]), created=True
        )
