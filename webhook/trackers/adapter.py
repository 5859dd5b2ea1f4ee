"""What the GitHub, GitLab and Jira adapters share: their common options and the steps built on them.

Every adapter takes one :class:`TrackerOptions`: a webhook-secret provider (receiver), a token provider (worker;
GitLab's receiver too), the REST API root, the trigger label and mention, the fix label, a body limit, how old a
delivery may be, and the REST posting policy (timeout, attempts, sleep). The Lambdas read them per tracker from
:class:`webhook.settings.WebhookSettings` with :meth:`TrackerOptions.from_settings`. Each adapter subclasses
:class:`TrackerAdapter` and keeps only what is its own: its few other arguments, how its webhooks are verified,
which events trigger, how a reply is formatted and where it is posted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from webhook.errors import TrackerConfigError

from .base import DEFAULT_MAX_BODY_BYTES, InboundRequest, Intent, check_secret_text, check_size
from .http import post_json, send_json
from .triggers import markdown_unquoted, may_contain, mention_intent, mention_pattern

if TYPE_CHECKING:
    from webhook.settings import WebhookSettings

#: How old a delivery's signed timestamp may be (the receiver passes its idempotency window).
DEFAULT_MAX_AGE_SECONDS = 7 * 24 * 3600
#: The shared settings each tracker sets for itself: ``WebhookSettings`` fields named ``<tracker>_<field>``
#: (:func:`tracker_setting`), read into the :class:`TrackerOptions` fields of the same name.
PER_TRACKER_SETTINGS = ("api_url", "trigger_label", "trigger_mention")


def tracker_setting(tracker: str, field: str) -> str:
    """The :class:`~webhook.settings.WebhookSettings` field holding ``tracker``'s own ``field``
    (``github_api_url``, ``jira_webhook_secret_name``, …)."""
    return f"{tracker}_{field}"


@dataclass(frozen=True)
class TrackerOptions:
    """The arguments every adapter takes; the defaults are the settings' defaults."""

    #: Reads the webhook secret (the receiver's); ``None`` where requests are not verified.
    webhook_secret: Callable[[], str] | None = None
    #: Reads the API token (the worker's, the reporter's; GitLab's receiver too); ``None`` where nothing is posted.
    token: Callable[[], str] | None = None
    #: The REST API root; empty: the adapter's ``default_api_url``.
    api_url: str = ""
    #: The label that asks for a reply; empty: no label trigger.
    trigger_label: str = "agent"
    #: The mention that triggers in a body or comment; empty: no mention trigger.
    trigger_mention: str = "/agent"
    #: The label that asks for a change (a draft pull/merge request); empty: only ``/agent fix`` does.
    fix_label: str = ""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: How old a delivery's signed timestamp may be (GitHub, Jira; GitLab's signatures carry their own tolerance).
    max_age_seconds: int = DEFAULT_MAX_AGE_SECONDS
    http_timeout: float = 15.0
    post_attempts: int = 3
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep

    @classmethod
    def from_settings(
        cls,
        settings: WebhookSettings,
        tracker: str,
        *,
        webhook_secret: Callable[[], str] | None,
        token: Callable[[], str] | None,
    ) -> TrackerOptions:
        """``tracker``'s options from the Lambdas' settings: its own :data:`PER_TRACKER_SETTINGS` and the shared
        fix label, body limit and idempotency window (a delivery older than that could be replayed)."""

        def own(field: str) -> Any:
            return getattr(settings, tracker_setting(tracker, field))

        return cls(
            webhook_secret=webhook_secret,
            token=token,
            api_url=own("api_url"),
            trigger_label=own("trigger_label"),
            trigger_mention=own("trigger_mention"),
            fix_label=settings.fix_trigger_label,
            max_body_bytes=settings.max_body_bytes,
            max_age_seconds=settings.idempotency_ttl_seconds,
        )


class TrackerAdapter:
    """Base of the adapters: secret/token providers, the mention trigger, body limit, posting policy."""

    name: str
    #: The REST API root when the options name none (empty: the adapter needs one, e.g. Jira's site).
    default_api_url: str = ""

    @classmethod
    def from_settings(cls, settings: WebhookSettings, options: TrackerOptions) -> TrackerAdapter:
        """The adapter the Lambdas build: ``options`` (:meth:`TrackerOptions.from_settings`) and, in an adapter
        that has settings of its own, those (it overrides this to read them)."""
        return cls(options)

    def __init__(self, options: TrackerOptions) -> None:
        self.options = options
        self._secret = options.webhook_secret
        self._token = options.token
        self.api_url = (options.api_url or self.default_api_url).rstrip("/")
        #: The label that asks for a reply (empty: no label trigger).
        self.trigger_label = options.trigger_label.lower()
        self._mention = mention_pattern(options.trigger_mention) if options.trigger_mention else None
        self._mention_text = options.trigger_mention
        #: The label that asks for a change (a draft pull/merge request); empty: only ``/agent fix`` does.
        self.fix_label = options.fix_label.strip().lower()
        self.max_body_bytes = options.max_body_bytes
        self.max_age_seconds = options.max_age_seconds
        self.http_timeout = options.http_timeout
        self.post_attempts = max(1, options.post_attempts)
        self._clock = options.clock
        self._sleep = options.sleep

    # ---- inbound
    def _webhook_secret(self, request: InboundRequest) -> str:
        """The body size checked (first of all), then the webhook secret's value. Raises ``WebhookError``."""
        check_size(request, self.max_body_bytes)
        return self._checked_secret()

    def check_webhook_secret(self) -> None:
        """Read and validate the webhook secret (the receiver calls it at start-up, to log a bad one
        at once). Raises :class:`TrackerConfigError`."""
        self._checked_secret()

    def _checked_secret(self) -> str:
        if self._secret is None:
            raise TrackerConfigError(f"{type(self).__name__} was built without a webhook secret provider")
        value = self._secret()
        self._validate_secret(value)
        return value

    def _validate_secret(self, value: str) -> None:
        """A secret used as an HMAC key as is: refuse blanks and surrounding whitespace."""
        check_secret_text(value, f"{self.name} webhook secret")

    def _mentioned(self, unquoted: str) -> bool:
        """The mention trigger in ``unquoted`` (text with quotes and code already left out)."""
        return self._mention is not None and bool(self._mention.search(unquoted))

    def _mentions_markdown(self, text: str) -> bool:
        """The mention trigger in Markdown ``text`` outside quotes and code (see :mod:`.triggers`).

        A text that cannot hold the mention at all is not parsed (a substring check first)."""
        return may_contain(text, self._mention_text) and self._mentioned(markdown_unquoted(text))

    def _markdown_intent(self, text: str) -> Intent | None:
        """What the first mention in Markdown ``text`` (outside quotes and code) asks for; ``None`` when
        the text does not mention the agent (:func:`.triggers.mention_intent`)."""
        if self._mention is None or not may_contain(text, self._mention_text):
            return None
        return mention_intent(self._mention, markdown_unquoted(text))  # type: ignore[return-value]

    def _label_intent(self, added: str) -> Intent | None:
        """``fix`` for the fix label, ``answer`` for the trigger label ``trigger``, else ``None``."""
        name = added.strip().lower()
        if self.fix_label and name == self.fix_label:
            return "fix"
        return "answer" if name and name == self.trigger_label.lower() else None

    # ---- outbound
    def _read_token(self, *, if_empty: str = "") -> str:
        """The API token's value. Raises :class:`TrackerConfigError` without a provider, or with
        ``if_empty`` (when given) for an empty value."""
        if self._token is None:
            raise TrackerConfigError(f"{type(self).__name__} was built without a token provider")
        token = self._token()
        if not token and if_empty:
            raise TrackerConfigError(if_empty)
        return token

    def _post(
        self,
        url: str,
        payload: Any,
        *,
        headers: Mapping[str, str],
        service: str,
        find_posted: Callable[[], dict[str, Any] | None] | None = None,
    ) -> dict[str, Any]:
        """POST JSON with this adapter's timeout, attempts and sleep (retry policy: :mod:`.http`)."""
        return post_json(
            url,
            payload,
            headers=headers,
            service=service,
            attempts=self.post_attempts,
            timeout=self.http_timeout,
            sleep=self._sleep,
            find_posted=find_posted,
        )

    def _send(
        self, method: str, url: str, payload: Any, *, headers: Mapping[str, str], service: str
    ) -> dict[str, Any]:
        """PATCH/PUT JSON (an edit) with this adapter's timeout, attempts and sleep (:func:`.http.send_json`)."""
        return send_json(
            method,
            url,
            payload,
            headers=headers,
            service=service,
            attempts=self.post_attempts,
            timeout=self.http_timeout,
            sleep=self._sleep,
        )
