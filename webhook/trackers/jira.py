"""Jira Cloud adapter: signed admin webhooks in, issue comments (Atlassian Document Format) out.

**Verification.** Atlassian's *Jira Cloud platform → Webhooks → Secure admin webhooks*: an admin webhook
(Jira administration or ``/rest/webhooks/1.0/webhook``) registered with a secret signs each request with
HMAC-SHA256 over the raw body, keyed with that secret, and sends it as ``X-Hub-Signature:
sha256=<hex>`` (the WebSub ``method=signature`` form). Unsigned calls are refused: webhooks of Connect
or OAuth apps are not signed this way and cannot be used. The signed body carries ``timestamp``
(epoch ms); a delivery older than ``max_age_seconds`` (the receiver passes its idempotency window) or
more than five minutes in the future is refused, so a captured body cannot be replayed after its
idempotency record expired.

**Triggers.** ``jira:issue_updated`` whose changelog adds ``trigger_label`` to ``labels``;
``jira:issue_created`` with the label, or with ``trigger_mention`` in the description; ``comment_created``
with ``trigger_mention`` or an @mention of the bot account (``[~accountid:<bot>]``) — outside
``{quote}``, ``{code}``, ``{noformat}``, ``bq.`` and ``{{monospace}}`` (:mod:`.triggers`). Only users of
``accountType`` ``atlassian`` (licensed users, not JSM portal customers, not apps) trigger. Skipped:
comments by ``bot_account_id``, by apps, or carrying any tracker's reply marker, internal Jira Service
Management comments (``jsdPublic: false``) and comments restricted to a role or group (``visibility``):
the reply would be public. Events whose issue ``self`` URL is not on ``site_url`` are ignored (a secret
registered on two sites must not answer one site's event on the other's issue of the same key).

**Reply.** ``POST {api_url}/rest/api/3/issue/{key}/comment`` with ``{"body": <ADF>}`` (:mod:`.adf`).
The token secret is JSON: ``{"email": ..., "api_token": ...}`` (basic auth with an Atlassian API token)
or ``{"access_token": ...}`` (OAuth 2.0 bearer; then ``api_url`` is
``https://api.atlassian.com/ex/jira/<cloud id>``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import urllib.parse
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from webhook.errors import SignatureError, StaleDeliveryError, TrackerApiError, TrackerConfigError

from .adapter import TrackerAdapter, TrackerOptions
from .adf import markdown_to_adf, plain_adf
from .base import (
    AgentTask,
    Decision,
    InboundRequest,
    Intent,
    ReplyRef,
    require_json,
    shape_error,
)
from .delivery import safe_delivery_id
from .http import get_json_list
from .jira_models import JiraEvent, JiraIssue, JiraUser
from .reply_marks import JIRA_REPLY_MARKER, is_agent_reply
from .reply_text import clip_reply, neutralise
from .triggers import adf_unquoted, may_contain, mention_intent, wiki_unquoted

#: Jira Cloud rejects comment bodies over 32,767 characters; leave room for the ADF structure.
MAX_COMMENT_CHARS = 20_000
FUTURE_SKEW_SECONDS = 300
_KEY = re.compile(r"^([A-Z][A-Z0-9_]*)-(\d+)$")

if TYPE_CHECKING:
    from webhook.settings import WebhookSettings


def verify_jira_signature(*, secret: str, body: bytes, header: str | None) -> None:
    """Check ``X-Hub-Signature: sha256=<hex>`` in constant time. Raises :class:`SignatureError`."""
    if not secret.strip():
        raise TrackerConfigError("Jira webhook secret is blank; put the webhook's secret into it")
    if not header:
        raise SignatureError("missing X-Hub-Signature header (register the Jira webhook with a secret)")
    method, _, signature = header.strip().partition("=")
    if method.lower() != "sha256" or not signature:
        raise SignatureError(f"X-Hub-Signature method {method!r} is not sha256")
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), signature.lower().encode()):
        raise SignatureError("X-Hub-Signature does not match the payload")


def jira_auth_header(secret_value: str) -> str:
    """``Authorization`` value from the token secret. Raises :class:`TrackerConfigError`."""
    try:
        doc = json.loads(secret_value)
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict):
        raise TrackerConfigError(
            'Jira token secret must be JSON: {"email": ..., "api_token": ...} or {"access_token": ...}'
        )
    if doc.get("access_token"):
        return f"Bearer {doc['access_token']}"
    if doc.get("email") and doc.get("api_token"):
        pair = f"{doc['email']}:{doc['api_token']}".encode()
        return "Basic " + base64.b64encode(pair).decode()
    raise TrackerConfigError("Jira token secret has neither access_token nor email + api_token")


def _text_of(value: str | dict[str, Any] | None) -> tuple[str, str]:
    """``(full text, unquoted text)`` of a wiki-markup string or an ADF document."""
    if value is None:
        return "", ""
    if isinstance(value, dict):
        text = adf_unquoted({"type": "doc", "content": value.get("content") or []})
        return text, text  # quotes and code are already left out of the ADF walk
    return value, wiki_unquoted(value)


class JiraTracker(TrackerAdapter):
    """Jira Cloud issues: see the module docstring for verification, triggers and replies."""

    name: Literal["jira"] = "jira"

    @classmethod
    def from_settings(cls, s: WebhookSettings, options: TrackerOptions) -> JiraTracker:
        """The adapter the Lambdas build: ``options`` and its own settings (``JIRA_SITE_URL``,
        ``JIRA_BOT_ACCOUNT_ID``)."""
        return cls(options, site_url=s.jira_site_url, bot_account_id=s.jira_bot_account_id)

    def __init__(self, options: TrackerOptions, *, site_url: str, bot_account_id: str = "") -> None:
        if not options.trigger_label and not options.trigger_mention and not bot_account_id:
            raise TrackerConfigError("set the Jira trigger label, mention or bot account; all are empty")
        if not site_url.startswith("https://") and not site_url.startswith("http://127.0.0.1"):
            raise TrackerConfigError(f"Jira site URL {site_url!r} must be https://<site>.atlassian.net")
        super().__init__(options)
        self.site_url = site_url.rstrip("/")
        #: The REST API root; without one, the site's (a Jira Cloud site serves its own API).
        self.api_url = (options.api_url or site_url).rstrip("/")
        self.bot_account_id = bot_account_id

    # ---- inbound
    def parse_request(self, request: InboundRequest) -> Decision:
        verify_jira_signature(
            secret=self._webhook_secret(request),
            body=request.body,
            header=request.headers.get("x-hub-signature"),
        )
        payload = require_json(request)
        try:
            ev = JiraEvent.model_validate(payload)
        except ValidationError as exc:
            raise shape_error("Jira", exc) from None
        self._check_fresh(ev.timestamp)
        if ev.issue is not None and not ev.issue.self_url.startswith(self.site_url + "/rest/"):
            # One secret can be registered on several sites: an event of another site names an issue
            # key that may exist here too, and would be answered on the wrong issue.
            return Decision("ignored", reason=f"issue is not on the configured site {self.site_url}")
        delivery = safe_delivery_id(
            request.headers.get("x-atlassian-webhook-identifier"), "jira", request.body
        )
        if ev.webhookEvent == "comment_created":
            return self._on_comment(ev, delivery)
        if ev.webhookEvent in ("jira:issue_created", "jira:issue_updated"):
            return self._on_issue(ev, delivery)
        return Decision("ignored", reason=f"event {ev.webhookEvent!r} is not handled")

    def _check_fresh(self, timestamp_ms: int) -> None:
        """Refuse a delivery the idempotency record may no longer remember.

        The record of a delivery expires ``max_age_seconds`` after it was *received*, and a timestamp
        may lie up to :data:`FUTURE_SKEW_SECONDS` ahead of the receiver's clock; so the age limit is
        the window minus that skew, and no replay is accepted after its record expired.
        """
        age = self._clock() - timestamp_ms / 1000
        limit = self.max_age_seconds - FUTURE_SKEW_SECONDS
        if age > limit or age < -FUTURE_SKEW_SECONDS:
            raise StaleDeliveryError(f"delivery timestamp is {age:.0f}s old; accepted: up to {limit}s")

    def _may_mention(self, raw: str | dict[str, Any] | None) -> bool:
        """Cheap check before any parsing: can ``raw`` (wiki string or ADF) hold a trigger at all?"""
        if raw is None:
            return False
        text = raw if isinstance(raw, str) else json.dumps(raw)
        return may_contain(text, self._mention_text) or (
            bool(self.bot_account_id) and self.bot_account_id in text
        )

    def _intent(self, unquoted: str) -> Intent | None:
        """What the first mention (``trigger_mention`` or an @mention of the bot) asks for, or ``None``."""
        patterns = [self._mention] if self._mention is not None else []
        if self.bot_account_id:
            patterns.append(re.compile(re.escape(f"[~accountid:{self.bot_account_id}]")))
        found = [(m.start(), p) for p in patterns for m in [p.search(unquoted)] if m is not None]
        if not found:
            return None
        return mention_intent(min(found, key=lambda f: f[0])[1], unquoted)  # type: ignore[return-value]

    def _refused(self, user: JiraUser | None) -> Decision | None:
        if user is None:
            return Decision("ignored", reason="event names no user")
        if user.accountType == "app" or (self.bot_account_id and user.accountId == self.bot_account_id):
            return Decision("ignored", reason="sent by the bot itself or by an app")
        if user.accountType != "atlassian":
            return Decision(
                "ignored",
                reason=f"account type {user.accountType or 'unknown'!r} may not trigger the agent (atlassian only)",
            )
        return None

    def _on_issue(self, ev: JiraEvent, delivery: str) -> Decision:
        if ev.issue is None:
            return Decision("ignored", reason=f"{ev.webhookEvent} without an issue")
        fields = ev.issue.fields
        if ev.webhookEvent == "jira:issue_created":
            added = {x.lower() for x in fields.labels}
        else:
            added = {
                name
                for item in (ev.changelog.items if ev.changelog else [])
                if item.field == "labels"
                for name in set((item.toString or "").lower().split())
                - set((item.fromString or "").lower().split())
            }
        by_label = {self._label_intent(name) for name in added}
        intent: Intent | None = "fix" if "fix" in by_label else "answer" if "answer" in by_label else None
        if (
            intent is None
            and ev.webhookEvent == "jira:issue_created"
            # Who created it first (cheap): a customer's or an app's description is never parsed.
            and self._refused(ev.user) is None
            and self._may_mention(fields.description)
        ):
            intent = self._intent(_text_of(fields.description)[1])
        if intent is None:
            return Decision("ignored", reason=f"{ev.webhookEvent} without the trigger")
        refused = self._refused(ev.user)
        if refused:
            return refused
        assert ev.user is not None
        return Decision("accepted", task=self._task(ev.issue, ev, delivery, author=ev.user, intent=intent))

    def _on_comment(self, ev: JiraEvent, delivery: str) -> Decision:
        if ev.comment is None or ev.issue is None:
            return Decision("ignored", reason="comment_created without a comment or issue")
        # Cheap checks first: who wrote it and who may see it, before the text is parsed at all.
        refused = self._refused(ev.comment.author)
        if refused:
            return refused
        if not ev.comment.jsdPublic:  # the reply would be public: never answer an internal note in public
            return Decision("ignored", reason="internal (JSM) comments are not answered")
        if ev.comment.visibility is not None:  # restricted to a role or group: the reply would be public
            return Decision("ignored", reason="comments restricted to a role or group are not answered")
        if not self._may_mention(ev.comment.body):
            return Decision("ignored", reason="comment does not mention the agent")
        text, unquoted = _text_of(ev.comment.body)
        if is_agent_reply(text):
            return Decision("ignored", reason="comment authored by the bot itself")
        intent = self._intent(unquoted)
        if intent is None:
            return Decision("ignored", reason="comment does not mention the agent")
        return Decision(
            "accepted",
            task=self._task(ev.issue, ev, delivery, author=ev.comment.author, comment=text, intent=intent),
        )

    def _task(
        self,
        issue: JiraIssue,
        ev: JiraEvent,
        delivery: str,
        *,
        author: JiraUser,
        comment: str | None = None,
        intent: Intent = "answer",
    ) -> AgentTask:
        match = _KEY.match(issue.key)
        assert match is not None  # the model's pattern guarantees it
        return AgentTask(
            tracker="jira",
            repository=match.group(1),
            issue_number=int(match.group(2)),
            scope_id=urllib.parse.urlsplit(self.site_url).hostname or "jira",
            issue_id=issue.id,
            title=issue.fields.summary or issue.key,
            body=_text_of(issue.fields.description)[0],
            comment=comment,
            author=author.displayName or author.accountId,
            author_id=author.accountId or "",
            delivery_id=delivery,
            event=ev.webhookEvent,
            html_url=f"{self.site_url}/browse/{issue.key}",
            intent=intent,
        )

    # ---- outbound
    def format_reply(self, text: str, *, footer: str = "") -> str:
        """Markdown: the clipped answer, then an italic last line with the marker and the footer."""
        tail = footer.removeprefix("agentkit · ") if footer else "agentkit"
        body = clip_reply(neutralise(text, markdown_html=False), MAX_COMMENT_CHARS)
        return f"{body}\n\n_{JIRA_REPLY_MARKER} {tail}_"

    def user_groups(self, account_id: str) -> list[str]:
        """The names of the Jira groups ``account_id`` belongs to: ``GET {api}/rest/api/3/user/groups?accountId=``
        (Jira Cloud REST v3, "Get user groups"). Raises :class:`TrackerApiError`."""
        auth = jira_auth_header(self._read_token())
        url = f"{self.api_url}/rest/api/3/user/groups?accountId={urllib.parse.quote(account_id, safe='')}"
        listed = get_json_list(
            url, headers={"Authorization": auth, "Accept": "application/json"}, service="Jira"
        )
        return [str(g.get("name")) for g in listed if isinstance(g, dict) and g.get("name")]

    def post_reply(self, task: AgentTask, text: str) -> ReplyRef:
        """``POST {api}/rest/api/3/issue/{key}/comment`` with the ADF body (retry policy: :mod:`.http`)."""
        auth = jira_auth_header(self._read_token())
        key = f"{task.repository}-{task.issue_number}"
        url = f"{self.api_url}/rest/api/3/issue/{key}/comment"
        headers = {"Authorization": auth, "Accept": "application/json"}
        try:
            doc = self._post(url, {"body": markdown_to_adf(text)}, headers=headers, service="Jira")
        except TrackerApiError as exc:
            if exc.status != 400:
                raise
            # Jira refused the converted document (an ADF rule the converter missed): the paid answer
            # is still posted, as plain paragraphs, which are always valid ADF.
            doc = self._post(url, {"body": plain_adf(text)}, headers=headers, service="Jira")
        comment_id = doc.get("id")
        link = f"{self.site_url}/browse/{key}?focusedCommentId={comment_id}" if comment_id else url
        return ReplyRef(url=link, id=comment_id)

    def edit_reply(self, task: AgentTask, reply_id: int | str, text: str) -> ReplyRef:
        """Replace comment ``reply_id``: ``PUT {api}/rest/api/3/issue/{key}/comment/{id}`` with
        ``{"body": <ADF>}`` (developer.atlassian.com, Jira Cloud REST v3, "Update comment"); a body Jira
        refuses (400) is sent again as plain paragraphs, as :meth:`post_reply` does. Raises
        :class:`TrackerApiError`."""
        if not str(reply_id).isdigit():
            raise TrackerConfigError(f"Jira comment id {reply_id!r} is not numeric")
        auth = jira_auth_header(self._read_token())
        key = f"{task.repository}-{task.issue_number}"
        url = f"{self.api_url}/rest/api/3/issue/{key}/comment/{reply_id}"
        headers = {"Authorization": auth, "Accept": "application/json"}
        try:
            self._send("PUT", url, {"body": markdown_to_adf(text)}, headers=headers, service="Jira")
        except TrackerApiError as exc:
            if exc.status != 400:
                raise
            self._send("PUT", url, {"body": plain_adf(text)}, headers=headers, service="Jira")
        return ReplyRef(url=f"{self.site_url}/browse/{key}?focusedCommentId={reply_id}", id=str(reply_id))
