"""Environment variable names (all of them, in one place) and the tracker adapters built from them.

The construct (``infra/webhook.py``) sets these; the receiver gets each enabled tracker's webhook secret
(and, for GitLab, the token it needs for the members API), the worker gets the tokens only.

Common: ``TRACKERS`` (comma-separated ``github,gitlab,jira``; default ``github``), ``MAX_BODY_BYTES``,
``SECRET_MAX_AGE_SECONDS`` (secret cache lifetime, default 300), ``IDEMPOTENCY_TTL_SECONDS``,
``FIX_TRIGGER_LABEL`` (receiver: the label that asks for a change on every tracker; empty: only ``/agent fix``).

Fix jobs (worker and reporter; :mod:`fix_config`): ``PR_MODE`` (``draft_pr`` | ``branch``),
``JIRA_REPOSITORIES`` (JSON: Jira project key → the GitHub repository or GitLab project a fix goes to),
``WORKSPACE_S3_URI`` (where snapshots over ``INLINE_SNAPSHOT_MAX_BYTES`` are uploaded), ``JOB_EVENTS_QUEUE_URL``
(the runtime's events queue; reporter), ``PROGRESS_MIN_SECONDS`` (reporter: progress edit throttle),
``JOB_LEASE_SECONDS``.

GitHub: ``WEBHOOK_SECRET_NAME``, ``GITHUB_TOKEN_SECRET_NAME``, ``GITHUB_API_URL``, ``TRIGGER_LABEL``,
``TRIGGER_MENTION``, ``BOT_LOGIN``, ``ALLOWED_ASSOCIATIONS`` (names kept from the GitHub-only release),
``GITHUB_REPOSITORY_IDS`` (receiver: comma-separated ``repository.id`` values served; empty serves none).

GitLab: ``GITLAB_WEBHOOK_SECRET_NAME``, ``GITLAB_TOKEN_SECRET_NAME``, ``GITLAB_API_URL``,
``GITLAB_TRIGGER_LABEL``, ``GITLAB_TRIGGER_MENTION``, ``GITLAB_BOT_USERNAME``, ``GITLAB_MIN_ACCESS_LEVEL``,
``GITLAB_FIX_MIN_ACCESS_LEVEL``,
``GITLAB_PROJECT_IDS`` (receiver: comma-separated ``project.id`` values served; empty serves none).

Jira: ``JIRA_WEBHOOK_SECRET_NAME``, ``JIRA_TOKEN_SECRET_NAME``, ``JIRA_SITE_URL``, ``JIRA_API_URL``,
``JIRA_TRIGGER_LABEL``, ``JIRA_TRIGGER_MENTION``, ``JIRA_BOT_ACCOUNT_ID``. ``JIRA_SITE_URL`` pins the site:
events whose issue is not on it are ignored.

Secrets are read through Powertools' ``SecretsProvider`` (cached ``SECRET_MAX_AGE_SECONDS``), never logged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any, Literal

from aws_lambda_powertools.utilities.parameters import SecretsProvider

from webhook.trackers import (
    DEFAULT_ALLOWED_ASSOCIATIONS,
    DEFAULT_MAX_BODY_BYTES,
    TRACKER_NAMES,
    GitHubTracker,
    GitLabTracker,
    IssueTracker,
    JiraTracker,
    TrackerConfigError,
    TrackerName,
)

TRACKERS = "TRACKERS"
MAX_BODY_BYTES = "MAX_BODY_BYTES"
SECRET_MAX_AGE_SECONDS = "SECRET_MAX_AGE_SECONDS"
IDEMPOTENCY_TTL_SECONDS = "IDEMPOTENCY_TTL_SECONDS"
FIX_TRIGGER_LABEL = "FIX_TRIGGER_LABEL"
PR_MODE = "PR_MODE"
JIRA_REPOSITORIES = "JIRA_REPOSITORIES"
WORKSPACE_S3_URI = "WORKSPACE_S3_URI"
INLINE_SNAPSHOT_MAX_BYTES = "INLINE_SNAPSHOT_MAX_BYTES"
JOB_EVENTS_QUEUE_URL = "JOB_EVENTS_QUEUE_URL"
PROGRESS_MIN_SECONDS = "PROGRESS_MIN_SECONDS"
JOB_LEASE_SECONDS = "JOB_LEASE_SECONDS"
AGENT_RUNTIME_ARN = "AGENT_RUNTIME_ARN"
AGENT_RUNTIME_QUALIFIER = "AGENT_RUNTIME_QUALIFIER"
IDEMPOTENCY_TABLE = "IDEMPOTENCY_TABLE"
GITHUB_WEBHOOK_SECRET_NAME = "WEBHOOK_SECRET_NAME"
GITHUB_TOKEN_SECRET_NAME = "GITHUB_TOKEN_SECRET_NAME"
GITHUB_API_URL = "GITHUB_API_URL"
GITHUB_TRIGGER_LABEL = "TRIGGER_LABEL"
GITHUB_TRIGGER_MENTION = "TRIGGER_MENTION"
GITHUB_BOT_LOGIN = "BOT_LOGIN"
GITHUB_ALLOWED_ASSOCIATIONS = "ALLOWED_ASSOCIATIONS"
GITHUB_REPOSITORY_IDS = "GITHUB_REPOSITORY_IDS"
GITLAB_WEBHOOK_SECRET_NAME = "GITLAB_WEBHOOK_SECRET_NAME"
GITLAB_TOKEN_SECRET_NAME = "GITLAB_TOKEN_SECRET_NAME"
GITLAB_API_URL = "GITLAB_API_URL"
GITLAB_TRIGGER_LABEL = "GITLAB_TRIGGER_LABEL"
GITLAB_TRIGGER_MENTION = "GITLAB_TRIGGER_MENTION"
GITLAB_BOT_USERNAME = "GITLAB_BOT_USERNAME"
GITLAB_MIN_ACCESS_LEVEL = "GITLAB_MIN_ACCESS_LEVEL"
#: The access level a GitLab fix or stop needs (default 30, Developer; never lower).
GITLAB_FIX_MIN_ACCESS_LEVEL = "GITLAB_FIX_MIN_ACCESS_LEVEL"
GITLAB_PROJECT_IDS = "GITLAB_PROJECT_IDS"
JIRA_WEBHOOK_SECRET_NAME = "JIRA_WEBHOOK_SECRET_NAME"
JIRA_TOKEN_SECRET_NAME = "JIRA_TOKEN_SECRET_NAME"
JIRA_SITE_URL = "JIRA_SITE_URL"
JIRA_API_URL = "JIRA_API_URL"
JIRA_TRIGGER_LABEL = "JIRA_TRIGGER_LABEL"
JIRA_TRIGGER_MENTION = "JIRA_TRIGGER_MENTION"
JIRA_BOT_ACCOUNT_ID = "JIRA_BOT_ACCOUNT_ID"

#: How long the receiver remembers a body hash; also the Jira replay window (a delivery older than the
#: receiver's memory must not be accepted again).
DEFAULT_IDEMPOTENCY_TTL_SECONDS = 7 * 24 * 3600

Role = Literal["receiver", "worker"]


def enabled_trackers(env: Mapping[str, str]) -> tuple[TrackerName, ...]:
    """The ``TRACKERS`` list. Raises :class:`TrackerConfigError` on an unknown or empty list."""
    names = [n.strip().lower() for n in env.get(TRACKERS, "github").split(",") if n.strip()]
    unknown = sorted(set(names) - set(TRACKER_NAMES))
    if unknown or not names:
        raise TrackerConfigError(
            f"{TRACKERS}={env.get(TRACKERS)!r}: use a comma list of {', '.join(TRACKER_NAMES)}"
        )
    return tuple(n for n in TRACKER_NAMES if n in names)  # type: ignore[misc]


def idempotency_ttl_seconds(env: Mapping[str, str]) -> int:
    """``IDEMPOTENCY_TTL_SECONDS`` (default :data:`DEFAULT_IDEMPOTENCY_TTL_SECONDS`)."""
    return int(env.get(IDEMPOTENCY_TTL_SECONDS, str(DEFAULT_IDEMPOTENCY_TTL_SECONDS)))


def _token_value(raw: Any) -> str:
    """A token secret: a plain string or ``{"token": ...}``."""
    value = raw.decode() if isinstance(raw, bytes) else str(raw or "")
    if value.lstrip().startswith("{"):
        return str(json.loads(value).get("token", ""))
    return value.strip()


class SecretReader:
    """Reads named secrets through Powertools' cache; a missing name is a configuration error."""

    def __init__(self, env: Mapping[str, str], client: Any) -> None:
        self._env = env
        self._provider = SecretsProvider(boto3_client=client)
        self._max_age = int(env.get(SECRET_MAX_AGE_SECONDS, "300"))

    def raw(self, var: str) -> Callable[[], str]:
        name = self._env.get(var, "")
        if not name:
            raise TrackerConfigError(f"environment variable {var} is required")

        def read() -> str:
            value = self._provider.get(name, max_age=self._max_age)
            return value.decode() if isinstance(value, bytes) else str(value or "")

        return read

    def token(self, var: str) -> Callable[[], str]:
        raw = self.raw(var)
        return lambda: _token_value(raw())


def build_trackers(
    role: Role, *, env: Mapping[str, str] | None = None, secrets_client: Any
) -> dict[str, IssueTracker]:
    """The enabled adapters, keyed by name, wired for ``role`` (receiver: webhook secrets; worker: tokens).

    Raises:
        TrackerConfigError: a required variable is missing or a setting is invalid.
    """
    env = os.environ if env is None else env
    secrets = SecretReader(env, secrets_client)
    receiver = role == "receiver"
    max_body = int(env.get(MAX_BODY_BYTES, str(DEFAULT_MAX_BODY_BYTES)))
    fix_label = env.get(FIX_TRIGGER_LABEL, "")
    built: dict[str, IssueTracker] = {}
    for name in enabled_trackers(env):
        if name == "github":
            built[name] = GitHubTracker(
                webhook_secret=secrets.raw(GITHUB_WEBHOOK_SECRET_NAME) if receiver else None,
                token=None if receiver else secrets.token(GITHUB_TOKEN_SECRET_NAME),
                api_url=env.get(GITHUB_API_URL, "https://api.github.com"),
                trigger_label=env.get(GITHUB_TRIGGER_LABEL, "agent"),
                trigger_mention=env.get(GITHUB_TRIGGER_MENTION, "/agent"),
                fix_label=fix_label,
                bot_login=env.get(GITHUB_BOT_LOGIN, ""),
                allowed_associations=env.get(
                    GITHUB_ALLOWED_ASSOCIATIONS, ",".join(sorted(DEFAULT_ALLOWED_ASSOCIATIONS))
                ),
                repository_ids=env.get(GITHUB_REPOSITORY_IDS, ""),
                max_age_seconds=idempotency_ttl_seconds(env),
                max_body_bytes=max_body,
            )
        elif name == "gitlab":
            built[name] = GitLabTracker(
                webhook_secret=secrets.raw(GITLAB_WEBHOOK_SECRET_NAME) if receiver else None,
                token=secrets.token(GITLAB_TOKEN_SECRET_NAME),  # the receiver asks the members API
                api_url=env.get(GITLAB_API_URL, "https://gitlab.com/api/v4"),
                trigger_label=env.get(GITLAB_TRIGGER_LABEL, "agent"),
                trigger_mention=env.get(GITLAB_TRIGGER_MENTION, "/agent"),
                fix_label=fix_label,
                bot_username=env.get(GITLAB_BOT_USERNAME, ""),
                min_access_level=int(env.get(GITLAB_MIN_ACCESS_LEVEL, "30")),
                fix_min_access_level=int(env.get(GITLAB_FIX_MIN_ACCESS_LEVEL, "30") or "30"),
                project_ids=env.get(GITLAB_PROJECT_IDS, ""),
                max_body_bytes=max_body,
            )
        else:
            built[name] = JiraTracker(
                site_url=env.get(JIRA_SITE_URL, ""),
                webhook_secret=secrets.raw(JIRA_WEBHOOK_SECRET_NAME) if receiver else None,
                token=None if receiver else secrets.raw(JIRA_TOKEN_SECRET_NAME),
                api_url=env.get(JIRA_API_URL, ""),
                trigger_label=env.get(JIRA_TRIGGER_LABEL, "agent"),
                trigger_mention=env.get(JIRA_TRIGGER_MENTION, "/agent"),
                fix_label=fix_label,
                bot_account_id=env.get(JIRA_BOT_ACCOUNT_ID, ""),
                max_body_bytes=max_body,
                max_age_seconds=idempotency_ttl_seconds(env),
            )
    return built


def token_providers(
    env: Mapping[str, str] | None = None, *, secrets_client: Any
) -> dict[str, Callable[[], str]]:
    """The GitHub / GitLab token providers of the enabled trackers (fix jobs fetch and push with them)."""
    env = os.environ if env is None else env
    secrets = SecretReader(env, secrets_client)
    names = enabled_trackers(env)
    out: dict[str, Callable[[], str]] = {}
    if "github" in names:
        out["github"] = secrets.token(GITHUB_TOKEN_SECRET_NAME)
    if "gitlab" in names:
        out["gitlab"] = secrets.token(GITLAB_TOKEN_SECRET_NAME)
    return out


def api_urls(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The GitHub and GitLab REST API roots (``GITHUB_API_URL``, ``GITLAB_API_URL``)."""
    env = os.environ if env is None else env
    return {
        "github": env.get(GITHUB_API_URL, "https://api.github.com"),
        "gitlab": env.get(GITLAB_API_URL, "https://gitlab.com/api/v4"),
    }
