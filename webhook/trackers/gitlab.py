"""GitLab adapter: ``X-Gitlab-Token`` (and GitLab's signed webhooks) in, issue notes out.

**Verification.** GitLab's webhook docs (``doc/user/project/integrations/webhooks.md``, "Secret token"
and "Delivery headers") describe one mechanism: the secret token is sent *as is* in ``X-Gitlab-Token``.
It is compared with :func:`hmac.compare_digest`. It is a shared bearer secret, not a signature: it does
not cover the body. GitLab is adding HMAC *signing tokens* (merge request gitlab-org/gitlab!230944,
behind the ``webhook_signing_token`` feature flag, not in the stable docs yet): following the Standard
Webhooks specification it sends ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature: v1,<base64
HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>">``, keyed with the base64 key of a
``whsec_<base64>`` signing token. When the webhook secret holds a signing token, that signature is
required as well and its timestamp must be within :data:`SIGNATURE_TOLERANCE_SECONDS`.

The webhook secret in Secrets Manager is either the token as a plain string, or JSON
``{"token": "...", "signing_token": "whsec_..."}`` (either key may be left out; at least one is needed).

**Pinned.** Only projects whose immutable ``project.id`` is in ``project_ids`` are served; events of any
other project (a group webhook, a secret reused across projects) are ignored before anything else.

**Triggers.** ``Issue Hook`` whose ``changes.labels`` add ``trigger_label``; ``Issue Hook`` ``open`` with
``trigger_mention`` in the description; ``Note Hook`` on an issue (``noteable_type`` ``Issue``, action
``create``) with ``trigger_mention`` — outside quotes and code (:mod:`.triggers`). Every trigger also
needs its author to hold at least ``min_access_level`` (default 30, Developer) in the project: one call
to ``GET /projects/:id/members/all/:user_id`` (inherited members included). Skipped: system notes,
internal notes, confidential issues, merge request / commit / snippet notes, notes by ``bot_username``
or by project/group access-token bots (``project_<id>_bot…``), notes carrying the reply marker.

**Reply.** ``POST /projects/:id/issues/:iid/notes`` (by the project's id) with ``PRIVATE-TOKEN`` (a project
access token with the ``api`` scope, Reporter role or more). Lines starting with ``/`` are indented so
GitLab runs no quick action with the bot's role, and mentions become code (:mod:`.reply_text`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from webhook.errors import (
    BadRequestError,
    SignatureError,
    StaleDeliveryError,
    TrackerApiError,
    TrackerConfigError,
)

from .adapter import TrackerAdapter, TrackerOptions
from .base import (
    AgentTask,
    Decision,
    InboundRequest,
    Intent,
    ReplyRef,
    dispatch_event,
    parse_id_allowlist,
    require_json,
)
from .delivery import safe_delivery_id
from .gitlab_models import ACCESS_LEVELS, GitLabUser, IssueHook, NoteHook
from .http import get_json
from .reply_marks import is_agent_reply
from .reply_text import format_markdown_reply

#: GitLab's note limit is 1,000,000 characters; the stored reply must also fit a DynamoDB item (400 KB).
MAX_NOTE_CHARS = 60_000
#: Standard Webhooks' suggested tolerance for ``webhook-timestamp``.
SIGNATURE_TOLERANCE_SECONDS = 300
DEVELOPER = ACCESS_LEVELS["developer"]
#: Access-token bots: ``project_<id>_bot_<hex>`` today, ``project_<id>_bot`` and ``project_<id>_bot1``,
#: ``…_bot2`` (a number added when the name was taken) on older GitLab versions: every ``…_bot`` name.
_TOKEN_BOT = re.compile(r"^(?:project|group)_\d+_bot\w*$", re.IGNORECASE)
_EMPTY_TOKEN = "GitLab token secret is empty; put a project access token into it"

if TYPE_CHECKING:
    from webhook.settings import WebhookSettings


@dataclass(frozen=True)
class GitLabWebhookSecret:
    """What the webhook secret holds: the ``X-Gitlab-Token`` value and/or a ``whsec_`` signing token."""

    token: str = ""
    signing_key: bytes = b""

    @classmethod
    def parse(cls, value: str) -> GitLabWebhookSecret:
        """Plain token, or JSON ``{"token", "signing_token"}``. Raises :class:`TrackerConfigError`."""
        value = value.strip()
        token, signing = value, ""
        if value.startswith("{"):
            try:
                doc = json.loads(value)
            except json.JSONDecodeError as exc:
                raise TrackerConfigError(f"GitLab webhook secret is not valid JSON: {exc.msg}") from None
            token, signing = str(doc.get("token") or ""), str(doc.get("signing_token") or "")
            for what, item in (("token", token), ("signing_token", signing)):
                if item != item.strip():  # compared or decoded as is: would fail every delivery
                    raise TrackerConfigError(f"GitLab webhook secret's {what} has surrounding whitespace")
        key = b""
        if signing:
            if not signing.startswith("whsec_"):
                raise TrackerConfigError("GitLab signing_token must look like whsec_<base64 key>")
            try:
                key = base64.b64decode(signing[len("whsec_") :], validate=True)
            except (binascii.Error, ValueError):
                raise TrackerConfigError("GitLab signing_token is not valid base64 after whsec_") from None
            if not key:  # an empty key would switch signature checking off without a word
                raise TrackerConfigError("GitLab signing_token holds no key after whsec_")
        if not token and not key:
            raise TrackerConfigError("GitLab webhook secret is blank; put a token (or signing_token) into it")
        return cls(token=token, signing_key=key)


def verify_gitlab_request(
    secret: GitLabWebhookSecret, request: InboundRequest, *, now: float, tolerance: int
) -> None:
    """Check ``X-Gitlab-Token`` and, with a signing key, ``webhook-signature``. Raises :class:`SignatureError`."""
    if secret.token:
        sent = request.headers.get("x-gitlab-token")
        if not sent:
            raise SignatureError("missing X-Gitlab-Token header")
        if not hmac.compare_digest(secret.token.encode(), sent.encode()):
            raise SignatureError("X-Gitlab-Token does not match the webhook secret")
    if not secret.signing_key:
        return
    wid, stamp = request.headers.get("webhook-id"), request.headers.get("webhook-timestamp")
    signatures = request.headers.get("webhook-signature")
    if not wid or not stamp or not signatures:
        raise SignatureError("missing webhook-id / webhook-timestamp / webhook-signature (signed webhook)")
    signed = f"{wid}.{stamp}.".encode() + request.body
    expected = base64.b64encode(hmac.new(secret.signing_key, signed, hashlib.sha256).digest())
    candidates = [part.split(",", 1)[1] for part in signatures.split() if part.startswith("v1,")]
    if not any(hmac.compare_digest(expected, c.encode()) for c in candidates):
        raise SignatureError("webhook-signature does not match the payload")
    try:
        age = now - int(stamp)
    except ValueError:
        raise SignatureError("webhook-timestamp is not a number") from None
    if abs(age) > tolerance:
        raise StaleDeliveryError(f"webhook-timestamp is {age:.0f}s from now (tolerance {tolerance}s)")


class GitLabTracker(TrackerAdapter):
    """GitLab issues: see the module docstring for verification, triggers and replies."""

    name: Literal["gitlab"] = "gitlab"

    default_api_url = "https://gitlab.com/api/v4"

    @classmethod
    def from_settings(cls, s: WebhookSettings, options: TrackerOptions) -> GitLabTracker:
        """The adapter the Lambdas build: ``options`` and its own settings (``GITLAB_BOT_USERNAME``, the access
        levels, ``GITLAB_PROJECT_IDS``)."""
        return cls(
            options,
            bot_username=s.gitlab_bot_username,
            min_access_level=s.gitlab_min_access_level,
            fix_min_access_level=s.gitlab_fix_min_access_level,
            project_ids=s.gitlab_project_ids,
        )

    def __init__(
        self,
        options: TrackerOptions,
        *,
        bot_username: str = "",
        min_access_level: int = DEVELOPER,
        fix_min_access_level: int = DEVELOPER,
        project_ids: str | Collection[int] = (),
        signature_tolerance: int = SIGNATURE_TOLERANCE_SECONDS,
    ) -> None:
        if not options.trigger_label and not options.trigger_mention:
            raise TrackerConfigError("set the GitLab trigger label and/or mention; both are empty")
        if fix_min_access_level not in ACCESS_LEVELS.values() or fix_min_access_level < DEVELOPER:
            raise TrackerConfigError(
                f"GitLab fix min access level {fix_min_access_level} must be one of "
                f"{sorted(v for v in ACCESS_LEVELS.values() if v >= DEVELOPER)} (a fix pushes as the bot: "
                "only people who could push themselves may ask for one)"
            )
        if min_access_level not in ACCESS_LEVELS.values():
            raise TrackerConfigError(
                f"GitLab min access level {min_access_level} is not one of {sorted(ACCESS_LEVELS.values())}"
            )
        super().__init__(options)
        self.bot_username = bot_username.lower()
        self.min_access_level = min_access_level
        self.fix_min_access_level = fix_min_access_level
        self.project_ids = parse_id_allowlist(project_ids, setting="GITLAB_PROJECT_IDS")
        self.signature_tolerance = signature_tolerance

    # ---- inbound
    def _validate_secret(self, value: str) -> None:
        GitLabWebhookSecret.parse(value)

    def parse_request(self, request: InboundRequest) -> Decision:
        secret = GitLabWebhookSecret.parse(self._webhook_secret(request))
        verify_gitlab_request(secret, request, now=self._clock(), tolerance=self.signature_tolerance)
        event = request.headers.get("x-gitlab-event")
        if not event:
            raise BadRequestError("missing header: X-Gitlab-Event")
        payload = require_json(request)
        delivery = safe_delivery_id(
            request.headers.get("idempotency-key")
            or request.headers.get("x-gitlab-event-uuid")
            or request.headers.get("webhook-id"),
            "gitlab",
            request.body,
        )
        if event.startswith("Confidential "):
            return Decision("ignored", reason="confidential issues and notes are not answered")
        return dispatch_event(
            event,
            payload,
            {
                "Issue Hook": lambda p: self._on_issue(IssueHook.model_validate(p), delivery),
                "Note Hook": lambda p: self._on_note(NoteHook.model_validate(p), delivery),
            },
        )

    def _is_own(self, username: str, text: str = "") -> bool:
        name = username.lower()
        return (
            (bool(self.bot_username) and name == self.bot_username)
            or bool(_TOKEN_BOT.match(name))
            or is_agent_reply(text)
        )

    def _unpinned(self, project_id: int) -> Decision | None:
        """Refuse a project this deployment does not serve (by immutable id), before any cost.

        A group webhook, or one secret reused across projects, signs events of other projects too.
        """
        if project_id in self.project_ids:
            return None
        return Decision(
            "ignored",
            reason=f"project id {project_id} is not in GITLAB_PROJECT_IDS"
            + ("" if self.project_ids else " (empty: no project is served)"),
        )

    def _on_issue(self, ev: IssueHook, delivery: str) -> Decision:
        refused = self._unpinned(ev.project.id)
        if refused:
            return refused
        attrs = ev.object_attributes
        if attrs.confidential:
            return Decision("ignored", reason="confidential issues are not answered")
        labels = ev.changes.labels
        added = (
            {label.title.lower() for label in labels.current}
            - {label.title.lower() for label in labels.previous}
            if labels is not None
            else set()
        )
        # The fix label wins over the trigger label when one event adds both (one run, the larger one).
        by_label = {self._label_intent(name) for name in added}
        intent: Intent | None = "fix" if "fix" in by_label else "answer" if "answer" in by_label else None
        if intent is None and attrs.action == "open":
            intent = self._markdown_intent(attrs.description or "")
        if intent is None:
            return Decision("ignored", reason=f"issue {attrs.action or 'event'} without the trigger")
        if self._is_own(ev.user.username):
            return Decision("ignored", reason="sent by the bot itself")
        refused = self._refuse_non_member(ev.project.id, ev.user, intent)
        if refused:
            return refused
        return Decision(
            "accepted",
            task=AgentTask(
                tracker="gitlab",
                repository=ev.project.path_with_namespace,
                issue_number=attrs.iid,
                scope_id=str(ev.project.id),
                issue_id=str(attrs.iid),
                title=attrs.title,
                body=attrs.description or "",
                author=ev.user.username,
                author_id=str(ev.user.id),
                delivery_id=delivery,
                event=f"issue.{attrs.action or 'update'}",
                html_url=attrs.url or f"{ev.project.web_url}/-/issues/{attrs.iid}",
                intent=intent,
            ),
        )

    def _on_note(self, ev: NoteHook, delivery: str) -> Decision:
        refused = self._unpinned(ev.project.id)
        if refused:
            return refused
        note = ev.object_attributes
        # Merge request notes may ask for a fix on the merge request's head, or a stop; never for an answer.
        on_mr = note.noteable_type == "MergeRequest" and ev.merge_request is not None
        if not on_mr and (note.noteable_type != "Issue" or ev.issue is None):
            return Decision("ignored", reason=f"notes on a {note.noteable_type} are not handled")
        if note.action != "create":
            return Decision("ignored", reason=f"note.{note.action} is not handled")
        if note.system or self._is_own(ev.user.username, note.note):
            return Decision("ignored", reason="note authored by the bot itself or by the system")
        if note.internal or (ev.issue is not None and ev.issue.confidential):
            return Decision("ignored", reason="internal notes and confidential issues are not answered")
        intent = self._markdown_intent(note.note)
        if intent is None:
            return Decision("ignored", reason="note does not mention the agent")
        if on_mr and intent == "answer":
            return Decision(
                "ignored", reason="notes on a MergeRequest are not answered (only /agent fix and /agent stop)"
            )
        refused = self._refuse_non_member(ev.project.id, ev.user, intent)
        if refused:
            return refused
        item = ev.merge_request if on_mr else ev.issue
        assert item is not None
        kind = "merge_requests" if on_mr else "issues"
        issue_url = note.url.split("#", 1)[0] if note.url else f"{ev.project.web_url}/-/{kind}/{item.iid}"
        return Decision(
            "accepted",
            task=AgentTask(
                tracker="gitlab",
                repository=ev.project.path_with_namespace,
                issue_number=item.iid,
                scope_id=str(ev.project.id),
                issue_id=str(item.iid),
                title=item.title,
                body=item.description or "",
                pull_request=on_mr,
                comment=note.note,
                author=ev.user.username,
                author_id=str(ev.user.id),
                delivery_id=delivery,
                event="note.create",
                html_url=issue_url,
                intent=intent,
            ),
        )

    def _refuse_non_member(self, project_id: int, user: GitLabUser, intent: Intent) -> Decision | None:
        """``None`` when ``user`` holds at least ``min_access_level`` in the project — for a fix or a stop at
        least ``fix_min_access_level`` too (a fix pushes with the bot's Developer token: asking must need the
        right to push) — else an ignore decision."""
        username = user.username
        needed = self.min_access_level
        if intent in ("fix", "stop"):
            needed = max(needed, self.fix_min_access_level)
        level = self.access_level(project_id, user.id)
        if level is not None and level >= needed:
            return None
        shown = "not a member" if level is None else f"access level {level}"
        what = "the agent" if intent == "answer" else f"a {intent}"
        return Decision("ignored", reason=f"@{username} ({shown}) may not ask for {what} (needs {needed}+)")

    def access_level(self, project_id: int, user_id: int) -> int | None:
        """The user's effective access level in the project (``None``: not a member). One API call.

        Raises:
            TrackerApiError: GitLab could not be asked (the receiver answers 502; GitLab retries).
            TrackerConfigError: no token to ask with.
        """
        token = self._read_token(if_empty=_EMPTY_TOKEN)
        url = f"{self.api_url}/projects/{project_id}/members/all/{user_id}"
        status, doc = get_json(url, headers={"PRIVATE-TOKEN": token}, service="GitLab", timeout=5.0)
        if status == 404:
            return None
        level = doc.get("access_level")
        if not isinstance(level, int):
            raise TrackerApiError(f"GitLab members API answered without an access_level on {url}")
        return level

    # ---- outbound
    def format_reply(self, text: str, *, footer: str = "") -> str:
        return format_markdown_reply(text, footer=footer, limit=MAX_NOTE_CHARS, quick_actions=True)

    def post_reply(self, task: AgentTask, text: str) -> ReplyRef:
        """``POST {api}/projects/{project id}/issues/{iid}/notes`` (``merge_requests/{iid}/notes`` for a task on a
        merge request; retry policy: :mod:`.http`).

        By the project's immutable id: a path can be renamed away and taken by another project."""
        token = self._read_token(if_empty=_EMPTY_TOKEN)
        noteable = "merge_requests" if task.pull_request else "issues"
        url = f"{self.api_url}/projects/{task.scope_id}/{noteable}/{task.issue_id}/notes"
        doc = self._post(
            url,
            {"body": text},
            headers={"PRIVATE-TOKEN": token, "Accept": "application/json"},
            service="GitLab",
        )
        note_id = doc.get("id")
        link = f"{task.html_url}#note_{note_id}" if task.html_url and note_id is not None else url
        return ReplyRef(url=link, id=note_id)

    def edit_reply(
        self,
        task: AgentTask,
        reply_id: int | str,
        text: str,
        *,
        noteable: Literal["issues", "merge_requests"] = "issues",
    ) -> ReplyRef:
        """Replace the text of note ``reply_id``: ``PUT {api}/projects/{id}/{issues|merge_requests}/{iid}/
        notes/{note_id}`` with ``{"body"}`` (docs.gitlab.com/api/notes, "Modify existing issue note" and
        "Modify existing merge request note"). Raises :class:`TrackerApiError`."""
        if noteable not in ("issues", "merge_requests"):
            raise TrackerConfigError(f"GitLab noteable {noteable!r} is not issues or merge_requests")
        token = self._read_token(if_empty=_EMPTY_TOKEN)
        url = f"{self.api_url}/projects/{task.scope_id}/{noteable}/{task.issue_id}/notes/{int(reply_id)}"
        doc = self._send(
            "PUT",
            url,
            {"body": text},
            headers={"PRIVATE-TOKEN": token, "Accept": "application/json"},
            service="GitLab",
        )
        link = f"{task.html_url}#note_{reply_id}" if task.html_url else url
        return ReplyRef(url=link, id=doc.get("id", reply_id))
