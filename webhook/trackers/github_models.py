"""Pydantic (Powertools Parser) models for the GitHub webhook payloads the receiver understands.

Only the fields the kit reads are declared; GitHub sends many more and they are ignored
(``extra="ignore"``), so a new GitHub field never breaks parsing. Payload reference:
``issues`` and ``issue_comment`` events of the GitHub webhooks documentation.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

#: Every value GitHub sends in ``author_association`` (how the author relates to the repository).
AUTHOR_ASSOCIATIONS = frozenset(
    {
        "COLLABORATOR",
        "CONTRIBUTOR",
        "FIRST_TIMER",
        "FIRST_TIME_CONTRIBUTOR",
        "MANNEQUIN",
        "MEMBER",
        "NONE",
        "OWNER",
    }
)
#: Who may trigger a (paid) agent turn by default: people with a role in the repository or its organization.
DEFAULT_ALLOWED_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class GitHubUser(_Model):
    login: str
    type: str = "User"  # "User" | "Bot" | "Organization"


class GitHubLabel(_Model):
    name: str


class GitHubRepository(_Model):
    #: Immutable (a name can be renamed away and re-created); sessions and the allowlist use it.
    id: int = Field(gt=0)
    full_name: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class GitHubIssue(_Model):
    number: int = Field(gt=0)
    title: str
    body: str | None = None
    user: GitHubUser
    labels: list[GitHubLabel] = Field(default_factory=list)
    html_url: str = ""
    state: str = "open"
    # The issue author's relation to the repository. Missing means "NONE" (fail closed).
    author_association: str = "NONE"
    #: Signed with the body: when the issue last changed (labelling it changes it too).
    updated_at: datetime | None = None
    #: Present (links to the pull request) when the "issue" is a pull request.
    pull_request: dict[str, object] | None = None


class GitHubComment(_Model):
    id: int
    body: str | None = None
    user: GitHubUser
    html_url: str = ""
    # The commenter's relation to the repository. Missing means "NONE" (fail closed).
    author_association: str = "NONE"
    #: Signed with the body: when the comment was last changed.
    updated_at: datetime | None = None


class IssuesEvent(_Model):
    """``X-GitHub-Event: issues`` (actions: opened, labeled, edited, closed, ...)."""

    action: str
    issue: GitHubIssue
    repository: GitHubRepository
    sender: GitHubUser
    label: GitHubLabel | None = None  # present on labeled / unlabeled


class IssueCommentEvent(_Model):
    """``X-GitHub-Event: issue_comment`` (actions: created, edited, deleted)."""

    action: str
    issue: GitHubIssue
    comment: GitHubComment
    repository: GitHubRepository
    sender: GitHubUser


class PingEvent(_Model):
    """``X-GitHub-Event: ping``, sent once when the webhook is created."""

    zen: str = ""
    hook_id: int | None = None
