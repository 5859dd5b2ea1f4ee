"""What the GitHub, GitLab and Jira adapters share: their common settings and the steps built on them.

Every adapter takes a webhook-secret provider (receiver), a token provider (worker; GitLab's receiver
too), a trigger mention, a body limit and the REST posting policy (timeout, attempts, sleep). Each
adapter subclasses :class:`TrackerAdapter` and keeps only what is its own: how its webhooks are verified,
which events trigger, how a reply is formatted and where it is posted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from webhook.errors import TrackerConfigError

from .base import DEFAULT_MAX_BODY_BYTES, InboundRequest, Intent, check_secret_text, check_size
from .http import post_json, send_json
from .triggers import markdown_unquoted, may_contain, mention_intent, mention_pattern


class TrackerAdapter:
    """Base of the adapters: secret/token providers, the mention trigger, body limit, posting policy."""

    name: str
    #: The label that asks for a reply (each adapter sets it; empty: no label trigger).
    trigger_label: str = ""

    def __init__(
        self,
        *,
        webhook_secret: Callable[[], str] | None,
        token: Callable[[], str] | None,
        trigger_mention: str,
        fix_label: str = "",
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        http_timeout: float = 15.0,
        post_attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._secret = webhook_secret
        self._token = token
        self._mention = mention_pattern(trigger_mention) if trigger_mention else None
        self._mention_text = trigger_mention
        #: The label that asks for a change (a draft pull/merge request); empty: only ``/agent fix`` does.
        self.fix_label = fix_label.strip().lower()
        self.max_body_bytes = max_body_bytes
        self.http_timeout = http_timeout
        self.post_attempts = max(1, post_attempts)
        self._sleep = sleep

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
