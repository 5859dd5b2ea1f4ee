"""Pydantic models for the Jira Cloud webhook payloads the receiver understands.

Only the fields the kit reads are declared (``extra="ignore"``). Reference: Atlassian developer docs,
*Jira Cloud platform → Webhooks* ("Example callback for an issue-related event", "Example callback for a
comment-related event"): every callback has ``timestamp`` (epoch milliseconds) and ``webhookEvent``
(``jira:issue_created``, ``jira:issue_updated``, ``comment_created``, …); issue events carry ``user`` (who
acted), ``issue`` (``id``, ``key``, ``fields``: ``summary``, ``description``, ``labels``) and, for updates,
``changelog.items`` (``field``, ``fromString``, ``toString``; labels as space-separated strings); comment
events carry ``comment`` (``id``, ``body``, ``author``) and a shortened ``issue``. User objects carry
``accountId``, ``displayName`` and ``accountType`` (``atlassian`` | ``app`` | ``customer``). Rich-text
fields arrive as wiki-markup strings; an ADF object is accepted too.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: ``PROJ-123``: project key (upper-case letter first) and issue number.
ISSUE_KEY_PATTERN = r"^[A-Z][A-Z0-9_]{0,254}-[1-9][0-9]{0,17}$"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class JiraUser(_Model):
    accountId: str = Field(min_length=1)
    displayName: str = ""
    accountType: str = ""


class JiraIssueFields(_Model):
    summary: str = ""
    description: str | dict[str, Any] | None = None
    labels: list[str] = Field(default_factory=list)


class JiraIssue(_Model):
    #: Immutable (the key changes when the issue moves to another project); sessions use it.
    id: str = Field(pattern=r"^[0-9]{1,18}$")
    key: str = Field(pattern=ISSUE_KEY_PATTERN)
    #: The issue's REST URL on the site that sent the event (checked against the configured site).
    self_url: str = Field(default="", alias="self")
    fields: JiraIssueFields = JiraIssueFields()


class JiraComment(_Model):
    id: str
    body: str | dict[str, Any]
    author: JiraUser
    #: Jira Service Management: ``false`` for an internal comment (not shown to the customer).
    jsdPublic: bool = True
    #: Set when the comment is restricted to a role or group (``{"type": "role", "value": ...}``).
    visibility: dict[str, Any] | None = None


class ChangeItem(_Model):
    field: str
    fromString: str | None = None
    toString: str | None = None


class Changelog(_Model):
    items: list[ChangeItem] = Field(default_factory=list)


class JiraEvent(_Model):
    """Any Jira callback; ``webhookEvent`` says which of the optional parts are present."""

    #: Epoch milliseconds; bounded so the age computation cannot overflow (year 2286 at most).
    timestamp: int = Field(ge=0, le=10**13)
    webhookEvent: str
    user: JiraUser | None = None
    issue: JiraIssue | None = None
    comment: JiraComment | None = None
    changelog: Changelog | None = None
