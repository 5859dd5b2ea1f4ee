"""What opening a change needs and gives, shared by the GitHub and GitLab implementations.

A change is proposed on a branch whose name is derived from the issue and the run (:func:`branch_name`), so
a retried run finds its own branch instead of making a second one; the commit message carries a trailer
(:data:`CHANGE_TRAILER`) with a digest of the base commit and the file changes (:func:`change_id`), so the
retry can tell "this branch already holds exactly this change" (reuse it) from "someone else's commits"
(refuse: :class:`repo.errors.ChangeConflict`, never overwritten).
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .errors import PatchRefused, TooManyChangedFiles
from .files import FileChange

#: The most files one proposed change may touch. GitHub commits them in one tree call (text inline) plus one
#: blob call per binary file; GitLab in one commit call. A patch over it is refused whole.
MAX_CHANGED_FILES = 1000
#: The most binary files (one ``POST …/git/blobs`` each on GitHub, a content-creating request that counts
#: against GitHub's secondary rate limit of 80 per minute) one change may add or modify.
MAX_BINARY_FILES = 50

ChangeMode = Literal["pull_request", "branch"]
BranchIn = Literal["fork", "same_repository"]
BRANCH_LOCATIONS: tuple[BranchIn, ...] = ("fork", "same_repository")
#: Skips GitHub's push and pull_request workflow runs and GitLab's branch pipelines for the commit — not
#: GitHub's pull_request_target workflows nor GitLab's merged-results pipelines (docs/fix-trust.md).
SKIP_CI_MARKER = "[skip ci]"
CHANGE_MODES: tuple[ChangeMode, ...] = ("pull_request", "branch")
CHANGE_TRAILER = "Agentkit-Change"
DEFAULT_BRANCH_PREFIX = "agent/"
_BRANCH_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,40}$")
_BRANCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")


@dataclass(frozen=True)
class ChangeRequest:
    """Where and how to propose a change.

    ``base_sha`` is the snapshot's commit (:attr:`repo.snapshot.Snapshot.commit_sha`), the new commit's
    parent; ``base_branch`` the pull request's target; ``mode`` ``pull_request`` (open a draft) or
    ``branch`` (push the branch and return a "create pull request" link).
    """

    branch: str
    base_branch: str
    base_sha: str
    title: str
    body: str = ""
    commit_message: str = ""
    mode: ChangeMode = "pull_request"
    #: Where the branch lives: ``fork`` (a fork the bot owns: CI of the base repository runs with a fork's
    #: rights, without its secrets) or ``same_repository`` (an opt-in: CI runs with the repository's secrets;
    #: the commit message then carries :data:`SKIP_CI_MARKER`).
    branch_in: BranchIn = "fork"

    def __post_init__(self) -> None:
        if (
            not _BRANCH.match(self.branch)
            or ".." in self.branch
            or "//" in self.branch
            or self.branch.endswith((".lock", "/", "."))
        ):
            raise ValueError(f"branch {self.branch!r} is not a plain branch name (letters, digits, . _ - /)")
        if self.mode not in CHANGE_MODES:
            raise ValueError(f"change mode {self.mode!r} is not one of {', '.join(CHANGE_MODES)}")
        if not re.fullmatch(r"[0-9a-f]{40}", self.base_sha):
            raise ValueError(f"base_sha {self.base_sha!r} is not a full commit id")


@dataclass(frozen=True)
class ChangeResult:
    """The proposed change: ``kind`` ``pull_request`` (``url`` the draft's page, ``number`` its number or
    GitLab iid) or ``branch`` (``url`` the tracker's "create pull request" page for the branch).

    ``created`` is false when the pull request existed already (a retried run); ``note`` says why a
    ``pull_request`` request ended as ``branch`` (drafts not available in the repository)."""

    kind: ChangeMode
    url: str
    branch: str
    commit_sha: str
    number: int | None = None
    created: bool = False
    note: str = ""


def branch_name(
    tracker: str, scope_id: str, issue_id: str, run_id: str, *, label: str = "", prefix: str = ""
) -> str:
    """``<prefix>issue-<label>-<12 hex>``: the same issue and run always give the same branch.

    ``label`` is how people name the issue (``7``, ``PROJ-7``; only ``[A-Za-z0-9-]`` kept), the hex a
    digest of tracker, scope, issue and run (``run_id``: e.g. the task's idempotency key). Raises
    :class:`ValueError` for a prefix git would not accept in a branch name.
    """
    prefix = prefix or DEFAULT_BRANCH_PREFIX
    if not _BRANCH_PREFIX.match(prefix) or ".." in prefix or "//" in prefix or not prefix.endswith("/"):
        raise ValueError(f"branch prefix {prefix!r} must look like 'agent/' (letters, digits, . _ - /)")
    digest = hashlib.sha256(f"{tracker}\0{scope_id}\0{issue_id}\0{run_id}".encode()).hexdigest()[:12]
    shown = re.sub(r"[^A-Za-z0-9-]+", "-", label).strip("-").lower()[:40]
    return f"{prefix}issue-{shown}-{digest}" if shown else f"{prefix}issue-{digest}"


def change_id(base_sha: str, changes: Sequence[FileChange]) -> str:
    """A digest of the base commit and the file changes (paths, actions, modes, contents)."""
    digest = hashlib.sha256(base_sha.encode())
    for change in sorted(changes, key=lambda c: c.path):
        content = hashlib.sha256(change.content or b"").hexdigest()
        digest.update(f"\0{change.path}\0{change.action}\0{change.mode}\0{content}".encode())
    return digest.hexdigest()[:24]


def commit_message(request: ChangeRequest, changes: Sequence[FileChange]) -> str:
    """The request's message (or its title) with the change trailer appended."""
    if not changes:
        raise PatchRefused("the patch changes nothing; there is no change to propose")
    text = (request.commit_message or request.title).strip() or "Change proposed by the agent"
    if request.branch_in == "same_repository":
        text = f"{text} {SKIP_CI_MARKER}"
    return f"{text}\n\n{CHANGE_TRAILER}: {change_id(request.base_sha, changes)}\n"


def holds_change(
    message: str, parents: Sequence[str], request: ChangeRequest, changes: Sequence[FileChange]
) -> bool:
    """Whether a branch head (its commit message and parents) is this very change on this base."""
    wanted = f"{CHANGE_TRAILER}: {change_id(request.base_sha, changes)}"
    return list(parents) == [request.base_sha] and wanted in message.splitlines()


def github_compare_url(html_url: str, base: str, branch: str, head_owner: str = "") -> str:
    """GitHub's "Open a pull request" page for ``branch`` (of ``head_owner``'s fork, when given) into ``base``."""
    head = f"{_q(head_owner)}:{_q(branch)}" if head_owner else _q(branch)
    return f"{html_url.rstrip('/')}/compare/{_q(base)}...{head}?expand=1"


def gitlab_new_mr_url(web_url: str, base: str, branch: str) -> str:
    """GitLab's "New merge request" page for ``branch`` into ``base``."""
    query = urllib.parse.urlencode(
        {"merge_request[source_branch]": branch, "merge_request[target_branch]": base}
    )
    return f"{web_url.rstrip('/')}/-/merge_requests/new?{query}"


def _q(value: str) -> str:
    return urllib.parse.quote(value, safe="/")


def is_text(change: FileChange) -> bool:
    """Whether the change's content goes into a tree or commit call as text: UTF-8 without NUL bytes."""
    data = change.content or b""
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def check_size(changes: Sequence[FileChange]) -> None:
    """Raises :class:`TooManyChangedFiles` over :data:`MAX_CHANGED_FILES` files or :data:`MAX_BINARY_FILES`
    binary ones (before anything is pushed)."""
    if len(changes) > MAX_CHANGED_FILES:
        raise TooManyChangedFiles(
            f"the patch changes {len(changes)} files; one change may touch at most {MAX_CHANGED_FILES}"
        )
    binary = sum(1 for c in changes if c.action != "delete" and not is_text(c))
    if binary > MAX_BINARY_FILES:
        raise TooManyChangedFiles(
            f"the patch adds or changes {binary} binary files; one change may hold at most {MAX_BINARY_FILES}"
        )
