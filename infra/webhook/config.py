"""Typed settings of the issue webhook (``agentkit.webhook`` in ``cdk.json``), validated by ``load_config``.

:class:`WebhookConfig` is a part of :class:`infra.config.AppConfig`; it lives here, next to nothing else, so the
webhook's keys read in one place. This module imports no other module of
``infra`` but :mod:`infra.config_base`, so it adds no import cycle.

Raises (through :func:`infra.config.load_config`): ``ConfigError`` naming ``agentkit.webhook.<key>``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from infra.config_base import ConfigModel as _Model
from webhook.trackers.base import TrackerName


class GitLabWebhookConfig(_Model):
    """GitLab adapter settings (used when ``"gitlab"`` is in ``webhook.trackers``)."""

    api_url: str = Field(default="https://gitlab.com/api/v4", pattern=r"^https://[^\s]+/api/v4$")
    trigger_label: str = "agent"
    trigger_mention: str = "/agent"
    bot_username: str = ""
    # GitLab access levels: 10 Guest, 15 Planner, 20 Reporter, 30 Developer, 40 Maintainer, 50 Owner.
    min_access_level: Literal[10, 15, 20, 30, 40, 50] = 30
    fix_min_access_level: Literal[30, 40, 50] = 30
    """The access level that may start or stop a fix (``GITLAB_FIX_MIN_ACCESS_LEVEL``): the bot pushes with
    Developer rights, so asking for a fix needs at least that, even when ``min_access_level`` lets Reporters ask."""
    project_ids: tuple[PositiveInt, ...] = ()
    """Numeric ids of the projects served (Settings → General); events of any other project are
    ignored. Empty: none is served."""


class JiraWebhookConfig(_Model):
    """Jira Cloud adapter settings (used when ``"jira"`` is in ``webhook.trackers``)."""

    site_url: str | None = Field(default=None, pattern=r"^https://[A-Za-z0-9.-]+$")
    api_url: str | None = Field(default=None, pattern=r"^https://[^\s]+$")
    trigger_label: str = "agent"
    trigger_mention: str = "/agent"
    bot_account_id: str = ""
    repositories: dict[str, dict[str, str | int | list[str]]] = {}
    """Fix jobs of Jira issues: project key → ``{"tracker": "github", "repository": "owner/repo"}`` or
    ``{"tracker": "gitlab", "project_id": 5, "repository": "group/project"}``, with who may start and stop a fix:
    ``"fix_account_ids": [...]`` and/or ``"fix_group": "<Jira group>"`` (neither: nobody; checked by the webhook
    construct)."""


class WebhookConfig(_Model):
    """Hook for ``infra.webhook.construct.IssueWebhook`` (built when ``enabled``).

    ``trigger_label`` / ``trigger_mention`` / ``bot_login`` / ``allowed_author_associations`` are the GitHub
    adapter's settings (names kept from the GitHub-only release); ``gitlab`` and ``jira`` hold the others.
    """

    enabled: bool = False
    trackers: tuple[TrackerName, ...] = ("github",)
    trigger_label: str = "agent"
    trigger_mention: str = "/agent"
    bot_login: str = ""
    create_secrets: bool = True
    read_tokens: bool = False
    """A read token per tracker that pushes code (``<prefix>/<tracker>-read-token``, for the worker) and a
    ``read_api`` ``<prefix>/gitlab-members-token`` (the receiver's): only the reporter reads the token that pushes.
    Off: one token per tracker (docs/webhook/setup.md)."""
    # Who may trigger a run by mention: GitHub author associations, or ["*"] for anyone (public repos: don't).
    allowed_author_associations: tuple[str, ...] = ("OWNER", "MEMBER", "COLLABORATOR")
    repository_ids: tuple[PositiveInt, ...] = ()
    """GitHub: numeric ids of the repositories served (``gh api repos/OWNER/REPO --jq .id``); events of
    any other repository are ignored. Empty: none is served."""
    gitlab: GitLabWebhookConfig = GitLabWebhookConfig()
    jira: JiraWebhookConfig = JiraWebhookConfig()
    fix_label: str = "agent-fix"
    """The label that asks the agent for a change (a draft pull/merge request) on every tracker; ``""``: only
    ``/agent fix …`` does."""
    pr_mode: Literal["draft_pr", "branch"] = "draft_pr"
    """``draft_pr``: open a draft pull/merge request; ``branch``: push the branch and link "create PR"."""
    fix_jobs: bool = True
    """``false``: every fix is refused with ``fix_jobs_off`` (``FIX_JOBS=off``); stops still work."""
    fix_branches: Literal["fork", "same_repository"] = "fork"
    """Where a fix's branch lives (``FIX_BRANCHES``): the bot's fork, or (opt-in) a branch of the repository,
    which the repository's CI runs with its secrets (docs/fix-trust.md)."""
    fix_max_per_actor_per_hour: NonNegativeInt = 5
    """Fixes one person may start per hour (``FIX_MAX_PER_ACTOR_PER_HOUR``; 0: no limit)."""
    fix_max_per_repository_per_hour: NonNegativeInt = 20
    """Fixes per repository and hour (``FIX_MAX_PER_REPOSITORY_PER_HOUR``; 0: no limit)."""
    approval_two_person: bool = True
    """``/agent approve|deny`` of a tool call waiting for approval by the person who asked for the run is refused
    (another maintainer must answer); ``false`` allows it."""

    @model_validator(mode="after")
    def _trackers_usable(self) -> WebhookConfig:
        if not self.trackers or len(set(self.trackers)) != len(self.trackers):
            raise ValueError(
                "webhook.trackers must list each of github, gitlab, jira at most once (at least one)"
            )
        if self.enabled and "jira" in self.trackers and not self.jira.site_url:
            others = ",".join(t for t in self.trackers if t != "jira") or "github"
            raise ValueError(
                "webhook.jira.site_url (https://<site>.atlassian.net) is required when 'jira' is in "
                "webhook.trackers: set it (-c webhook.jira.site_url=https://<site>.atlassian.net), or remove "
                f"jira from webhook.trackers (-c webhook.trackers={others})"
            )
        return self
