"""The tracker adapters and secret readers built from :class:`webhook.settings.WebhookSettings`.

The construct (``infra/webhook/construct.py``) sets the variables; the receiver gets each enabled tracker's webhook
secret (and, for GitLab, the token it needs for the members API), the worker and the reporter the tokens only.
Secrets are read through Powertools' ``SecretsProvider`` (cached ``SECRET_MAX_AGE_SECONDS``), never logged.

Which token: replies, member look-ups and snapshot downloads use a tracker's *read* token secret when one is named
(``GITHUB_READ_TOKEN_SECRET_NAME``, ``GITLAB_READ_TOKEN_SECRET_NAME``), else its token secret; only pushing a fix
(the reporter: ``token_providers(access="write")``) uses the token secret itself; the receiver asks GitLab's members
API with ``GITLAB_MEMBERS_TOKEN_SECRET_NAME`` when it is named (a ``read_api`` token). So the bot's comments and notes
are always written by one identity (GitLab lets only a note's author, or a Maintainer, edit it), and a
deployment with one token works unchanged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any, Literal

from aws_lambda_powertools.utilities.parameters import SecretsProvider

from webhook.errors import TrackerConfigError
from webhook.settings import ENV, WebhookSettings
from webhook.trackers import IssueTracker
from webhook.trackers.adapter import TrackerOptions
from webhook.trackers.registry import REGISTRY

Role = Literal["receiver", "worker"]


def _settings(env: Mapping[str, str] | WebhookSettings | None) -> WebhookSettings:
    if isinstance(env, WebhookSettings):
        return env
    return WebhookSettings.from_env(os.environ if env is None else env)


def _token_value(raw: Any) -> str:
    """A token secret: a plain string or ``{"token": ...}``."""
    value = raw.decode() if isinstance(raw, bytes) else str(raw or "")
    if value.lstrip().startswith("{"):
        return str(json.loads(value).get("token", ""))
    return value.strip()


class SecretReader:
    """Reads named secrets through Powertools' cache; a missing name is a configuration error."""

    def __init__(self, settings: WebhookSettings, client: Any) -> None:
        self._settings = settings
        self._provider = SecretsProvider(boto3_client=client)
        self._max_age = settings.secret_max_age_seconds

    def raw(self, field: str) -> Callable[[], str]:
        """A reader of the secret named by the setting ``field`` (e.g. ``github_token_secret_name``)."""
        name = getattr(self._settings, field)
        if not name:
            raise TrackerConfigError(f"environment variable {ENV[field]} is required")

        def read() -> str:
            value = self._provider.get(name, max_age=self._max_age)
            return value.decode() if isinstance(value, bytes) else str(value or "")

        return read

    def token(self, field: str) -> Callable[[], str]:
        raw = self.raw(field)
        return lambda: _token_value(raw())


def build_trackers(
    role: Role, *, env: Mapping[str, str] | WebhookSettings | None = None, secrets_client: Any
) -> dict[str, IssueTracker]:
    """The enabled adapters, keyed by name, wired for ``role`` (receiver: webhook secrets; worker: tokens).

    Raises:
        TrackerConfigError: a required variable is missing or a setting is invalid.
    """
    s = _settings(env)
    secrets = SecretReader(s, secrets_client)
    receiver = role == "receiver"
    built: dict[str, IssueTracker] = {}
    for name in s.trackers:
        entry = REGISTRY[name]
        read_token = secrets.raw if entry.raw_token else secrets.token
        options = TrackerOptions.from_settings(
            s,
            name,
            webhook_secret=secrets.raw(entry.webhook_secret_setting) if receiver else None,
            token=read_token(s.receiver_token_field(name) if receiver else s.read_token_field(name))
            if entry.receiver_reads_token or not receiver
            else None,
        )
        # Every registered adapter implements IssueTracker (the conformance suite runs each through the receiver and
        # the worker); the TrackerAdapter base only holds what they share, so the checker cannot see it.
        built[name] = entry.adapter.from_settings(s, options)  # type: ignore[assignment]
    return built


def token_providers(
    env: Mapping[str, str] | WebhookSettings | None = None,
    *,
    secrets_client: Any,
    access: Literal["read", "write"],
) -> dict[str, Callable[[], str]]:
    """The token providers of the enabled trackers whose repositories fix jobs use (GitHub, GitLab): ``read``
    for the worker's snapshot downloads (the read token when one is named), ``write`` for the reporter's push
    and pull/merge request (always the token secret)."""
    s = _settings(env)
    secrets = SecretReader(s, secrets_client)
    out: dict[str, Callable[[], str]] = {}
    for name in s.trackers:
        entry = REGISTRY[name]
        if entry.read_token_secret_setting is None:  # Jira: its token pushes no code
            continue
        field = s.read_token_field(name) if access == "read" else entry.token_secret_setting
        out[name] = secrets.token(field)
    return out


def api_urls(env: Mapping[str, str] | WebhookSettings | None = None) -> dict[str, str]:
    """The GitHub and GitLab REST API roots (``GITHUB_API_URL``, ``GITLAB_API_URL``)."""
    s = _settings(env)
    return {"github": s.github_api_url, "gitlab": s.gitlab_api_url}
