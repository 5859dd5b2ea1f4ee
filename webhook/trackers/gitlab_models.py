"""Pydantic models for the GitLab webhook payloads the receiver understands (``Issue Hook``, ``Note Hook``).

Only the fields the kit reads are declared; GitLab sends many more (``extra="ignore"``). Reference: GitLab
docs, *Webhook events* (``doc/user/project/integrations/webhook_events.md``): issue events carry
``object_attributes`` (``iid``, ``title``, ``description``, ``url``, ``action``) and ``changes.labels``
(``previous``/``current``); comment events carry the note in ``object_attributes`` (``note``,
``noteable_type``, ``system``, ``action`` since 16.11, ``url``) and the issue under ``issue``; both carry
``user`` (``id``, ``username``) and ``project`` (``id``, ``path_with_namespace``, ``web_url``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: GitLab access levels (members API ``access_level``).
ACCESS_LEVELS = {"guest": 10, "planner": 15, "reporter": 20, "developer": 30, "maintainer": 40, "owner": 50}


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class GitLabUser(_Model):
    id: int
    username: str
    name: str = ""


class GitLabProject(_Model):
    id: int
    path_with_namespace: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$")
    web_url: str = ""


class GitLabLabel(_Model):
    title: str


class LabelChange(_Model):
    previous: list[GitLabLabel] = Field(default_factory=list)
    current: list[GitLabLabel] = Field(default_factory=list)


class IssueChanges(_Model):
    labels: LabelChange | None = None


class IssueAttributes(_Model):
    iid: int = Field(gt=0)
    title: str
    description: str | None = None
    url: str = ""
    action: str = ""
    confidential: bool = False


class IssueHook(_Model):
    """``X-Gitlab-Event: Issue Hook`` (actions: open, close, reopen, update)."""

    object_kind: str
    user: GitLabUser
    project: GitLabProject
    object_attributes: IssueAttributes
    changes: IssueChanges = IssueChanges()


class NoteAttributes(_Model):
    id: int
    note: str
    noteable_type: str
    system: bool = False
    internal: bool = False
    action: str = "create"  # sent since GitLab 16.11; older notes are always new ones
    url: str = ""


class NoteIssue(_Model):
    iid: int = Field(gt=0)
    title: str
    description: str | None = None
    confidential: bool = False


class NoteMergeRequest(_Model):
    iid: int = Field(gt=0)
    title: str
    description: str | None = None


class NoteHook(_Model):
    """``X-Gitlab-Event: Note Hook`` (comments on commits, merge requests, issues, snippets)."""

    object_kind: str
    user: GitLabUser
    project: GitLabProject
    object_attributes: NoteAttributes
    issue: NoteIssue | None = None
    merge_request: NoteMergeRequest | None = None
