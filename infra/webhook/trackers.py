"""Per-tracker settings of the issue webhook construct, and the Lambda environment they become.

The variable names are those declared in ``webhook/settings.py``. Secrets (names under the
construct's ``name_prefix``): GitHub ``github-webhook-secret`` + ``github-token``; GitLab
``gitlab-webhook-secret`` (the ``X-Gitlab-Token`` value, or JSON with a ``signing_token``) +
``gitlab-token`` (project access token); Jira ``jira-webhook-secret`` (the admin webhook's secret) +
``jira-token`` (JSON ``{"email", "api_token"}`` or ``{"access_token"}``); with ``read_tokens`` also
``github-read-token`` / ``gitlab-read-token`` and ``gitlab-members-token``. The receiver reads the webhook
secrets (and the GitLab members token, or the token without read tokens, for the members API); the worker the read tokens (or the tokens); the reporter the
tokens and the read tokens (``infra/webhook/secrets.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from webhook.settings import ENV
from webhook.trackers.github_models import AUTHOR_ASSOCIATIONS  # the values GitHub sends
from webhook.trackers.gitlab_models import ACCESS_LEVELS  # the levels GitLab knows
from webhook.trackers.registry import REGISTRY

TRACKERS: tuple[str, ...] = tuple(REGISTRY)  # the adapters the Lambdas have
GITLAB_ACCESS_LEVELS = tuple(sorted(ACCESS_LEVELS.values()))
_HTTPS = re.compile(r"^https://[^\s/]+(?:/[^\s]*)?$")


class TrackerSecrets(NamedTuple):
    """A tracker's two secrets: its title (descriptions, outputs), their construct ids and the variables
    that name them to the Lambdas (``webhook/settings.py``)."""

    title: str
    webhook_id: str
    token_id: str
    webhook_var: str
    token_var: str
    #: The optional read token (``WebhookProps.read_tokens``): construct id and variable ("" for Jira: none).
    read_id: str = ""
    read_var: str = ""
    #: GitLab's members token (the receiver's, with read tokens on): construct id and variable.
    members_id: str = ""
    members_var: str = ""


#: Each tracker's secrets, from the tracker registry (whose entries keep the construct ids as first deployed).
TRACKER_SECRETS: dict[str, TrackerSecrets] = {
    name: TrackerSecrets(
        entry.title,
        entry.webhook_secret_id,
        entry.token_secret_id,
        ENV[entry.webhook_secret_setting],
        ENV[entry.token_secret_setting],
        entry.read_token_secret_id,
        ENV[entry.read_token_secret_setting] if entry.read_token_secret_setting else "",
        entry.members_token_secret_id,
        ENV[entry.members_token_secret_setting] if entry.members_token_secret_setting else "",
    )
    for name, entry in REGISTRY.items()
}
#: Stack outputs of the trackers that have their own (stack scope, these names as ids: no hash suffix).
TRACKER_OUTPUTS = {name: entry.outputs for name, entry in REGISTRY.items() if entry.outputs is not None}


@dataclass(frozen=True)
class GitHubSettings:
    """GitHub adapter. ``allowed_author_associations``: who may trigger by mention (``["*"]``: anyone)."""

    api_url: str = "https://api.github.com"
    trigger_label: str = "agent"
    trigger_mention: str = "/agent"
    bot_login: str = ""
    allowed_author_associations: Sequence[str] = ("OWNER", "MEMBER", "COLLABORATOR")
    #: Immutable ``repository.id`` values served; events of other repositories are ignored (empty: none).
    repository_ids: Sequence[int] = ()


@dataclass(frozen=True)
class GitLabSettings:
    """GitLab adapter. ``min_access_level``: 30 (Developer) by default; ``api_url`` for self-managed GitLab."""

    api_url: str = "https://gitlab.com/api/v4"
    trigger_label: str = "agent"
    trigger_mention: str = "/agent"
    bot_username: str = ""
    min_access_level: int = 30
    #: The access level that may start or stop a fix (Developer or above: the bot pushes).
    fix_min_access_level: int = 30
    #: Immutable ``project.id`` values served; events of other projects are ignored (empty: none).
    project_ids: Sequence[int] = ()


@dataclass(frozen=True)
class JiraSettings:
    """Jira Cloud adapter. ``site_url``: ``https://<site>.atlassian.net``; ``api_url`` only for OAuth
    (``https://api.atlassian.com/ex/jira/<cloud id>``)."""

    site_url: str
    api_url: str = ""
    trigger_label: str = "agent"
    trigger_mention: str = "/agent"
    bot_account_id: str = ""


def check_trackers(trackers: Sequence[str]) -> tuple[str, ...]:
    """Validated, ordered tracker names. Raises ``ValueError``."""
    if isinstance(trackers, str):
        raise ValueError("trackers must be a list, e.g. ['github', 'gitlab']")
    names = [t.strip().lower() for t in trackers]
    unknown = sorted(set(names) - set(TRACKERS))
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(f"trackers {list(trackers)!r}: list each of {', '.join(TRACKERS)} at most once")
    return tuple(t for t in TRACKERS if t in names)


def associations(values: Sequence[str]) -> str:
    """Validate the GitHub allowlist; returns the receiver's ``ALLOWED_ASSOCIATIONS`` value."""
    if isinstance(values, str):
        raise ValueError("allowed_author_associations must be a list, e.g. ['OWNER', 'MEMBER']")
    names = sorted({v.strip().upper() for v in values if v.strip()})
    if not names:
        raise ValueError("allowed_author_associations is empty; no mention could trigger the agent")
    if "*" in names:
        return "*"
    unknown = [n for n in names if n not in AUTHOR_ASSOCIATIONS]
    if unknown:
        raise ValueError(
            f"unknown author association(s) {unknown}; use {sorted(AUTHOR_ASSOCIATIONS)} or ['*']"
        )
    return ",".join(names)


def id_list(values: Sequence[int], setting: str) -> str:
    """Validate an allowlist of numeric ids; returns the comma-separated Lambda variable value."""
    if isinstance(values, str) or any(
        isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in values
    ):
        raise ValueError(f"{setting} must be a list of positive numeric ids, e.g. [123456]")
    return ",".join(str(v) for v in sorted(set(values)))


def github_env(s: GitHubSettings, *, receiver: bool) -> dict[str, str]:
    if not s.trigger_label and not s.trigger_mention:
        raise ValueError("the GitHub adapter needs trigger_label and/or trigger_mention")
    env = {ENV["github_api_url"]: s.api_url}
    if receiver:
        env |= {
            ENV["github_trigger_label"]: s.trigger_label,
            ENV["github_trigger_mention"]: s.trigger_mention,
            ENV["github_bot_login"]: s.bot_login,
            ENV["github_allowed_associations"]: associations(s.allowed_author_associations),
            ENV["github_repository_ids"]: id_list(s.repository_ids, "repository_ids"),
        }
    return env


def gitlab_env(s: GitLabSettings, *, receiver: bool) -> dict[str, str]:
    if not s.trigger_label and not s.trigger_mention:
        raise ValueError("the GitLab adapter needs trigger_label and/or trigger_mention")
    if s.min_access_level not in GITLAB_ACCESS_LEVELS:
        raise ValueError(f"GitLab min_access_level {s.min_access_level} is not one of {GITLAB_ACCESS_LEVELS}")
    if s.fix_min_access_level not in GITLAB_ACCESS_LEVELS or s.fix_min_access_level < 30:
        raise ValueError(
            f"GitLab fix_min_access_level {s.fix_min_access_level} must be 30 (Developer), 40 or 50: a fix pushes"
        )
    if not _HTTPS.match(s.api_url):
        raise ValueError(f"GitLab api_url {s.api_url!r} must be https://…/api/v4")
    env = {ENV["gitlab_api_url"]: s.api_url}
    if receiver:
        env |= {
            ENV["gitlab_trigger_label"]: s.trigger_label,
            ENV["gitlab_trigger_mention"]: s.trigger_mention,
            ENV["gitlab_bot_username"]: s.bot_username,
            ENV["gitlab_min_access_level"]: str(s.min_access_level),
            ENV["gitlab_fix_min_access_level"]: str(s.fix_min_access_level),
            ENV["gitlab_project_ids"]: id_list(s.project_ids, "gitlab project_ids"),
        }
    return env


def jira_env(s: JiraSettings, *, receiver: bool) -> dict[str, str]:
    if not s.trigger_label and not s.trigger_mention and not s.bot_account_id:
        raise ValueError("the Jira adapter needs a trigger_label, trigger_mention or bot_account_id")
    if not _HTTPS.match(s.site_url) or (s.api_url and not _HTTPS.match(s.api_url)):
        raise ValueError(f"Jira site_url {s.site_url!r} (and api_url) must be https:// URLs")
    env = {ENV["jira_site_url"]: s.site_url, ENV["jira_api_url"]: s.api_url}
    if receiver:
        env |= {
            ENV["jira_trigger_label"]: s.trigger_label,
            ENV["jira_trigger_mention"]: s.trigger_mention,
            ENV["jira_bot_account_id"]: s.bot_account_id,
        }
    return env
