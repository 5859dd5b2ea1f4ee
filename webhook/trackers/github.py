"""GitHub adapter: ``X-Hub-Signature-256`` in, issue comments out (REST ``/repos/{o}/{r}/issues/{n}/comments``).

Payload models: :mod:`.github_models`. GitHub rejects comment bodies above 65,536 characters.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Collection
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

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
from .github_models import (
    AUTHOR_ASSOCIATIONS,
    DEFAULT_ALLOWED_ASSOCIATIONS,
    GitHubIssue,
    GitHubRepository,
    IssueCommentEvent,
    IssuesEvent,
    PingEvent,
)
from .http import get_json_list
from .reply_marks import is_agent_reply
from .reply_text import format_markdown_reply

#: How far a signed timestamp may lie ahead of the receiver's clock.
FUTURE_SKEW_SECONDS = 300
#: GitHub rejects comment bodies above 65,536 characters.
MAX_COMMENT_CHARS = 65_000

if TYPE_CHECKING:
    from webhook.settings import WebhookSettings


def verify_github_signature(*, secret: str, body: bytes, header: str | None) -> None:
    """Check ``X-Hub-Signature-256: sha256=<hex>`` in constant time. Raises :class:`SignatureError`."""
    if not secret.strip():
        raise TrackerConfigError("webhook secret is blank; put a value into the webhook secret")
    if not header:
        raise SignatureError("missing X-Hub-Signature-256 header")
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), header.strip().encode()):
        raise SignatureError("X-Hub-Signature-256 does not match the payload")


def parse_associations(value: str | Collection[str]) -> frozenset[str]:
    """Normalise an author-association allowlist (comma-separated string or collection).

    ``*`` allows every association (anyone who can comment on a public repository can then start paid
    agent runs). Raises :class:`TrackerConfigError` on an empty list or an unknown value.
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    names = frozenset(item.strip().upper() for item in items if item.strip())
    if not names:
        raise TrackerConfigError(
            "ALLOWED_ASSOCIATIONS is empty; list e.g. OWNER,MEMBER,COLLABORATOR or use *"
        )
    if "*" in names:
        return AUTHOR_ASSOCIATIONS
    unknown = sorted(names - AUTHOR_ASSOCIATIONS)
    if unknown:
        raise TrackerConfigError(
            f"unknown author association(s) {', '.join(unknown)} in ALLOWED_ASSOCIATIONS; "
            f"allowed: {', '.join(sorted(AUTHOR_ASSOCIATIONS))} or *"
        )
    return names


class GitHubTracker(TrackerAdapter):
    """GitHub adapter: verifies ``X-Hub-Signature-256`` and posts replies through the REST API.

    Triggers: ``issues.labeled`` with ``trigger_label`` as the added label, ``issues.opened`` with
    ``trigger_mention`` in the body, and ``issue_comment.created`` with ``trigger_mention`` in the
    comment. An issue opened *with* the label triggers once, through the ``labeled`` event GitHub sends
    after ``opened`` (the ``opened`` event of such an issue is ignored). An empty label or mention
    disables that trigger. Comments by ``bot_login``, by accounts of type ``Bot``, or carrying any
    tracker's reply marker (:func:`.base.is_agent_reply`) are ignored (no reply loops).

    Only repositories whose immutable ``repository.id`` is in ``repository_ids`` are served (empty:
    none), checked before anything else. Mention triggers (issue body, comment) are accepted only from
    authors whose ``author_association`` is in ``allowed_associations`` (default OWNER, MEMBER,
    COLLABORATOR), so strangers on a public repository cannot start paid runs. A label added by someone
    else than the issue's author needs triage access, so it triggers; a label the author added (an issue
    template or form applies labels for any author) is held to the author's association like a mention.
    """

    name: Literal["github"] = "github"

    default_api_url = "https://api.github.com"

    @classmethod
    def from_settings(cls, s: WebhookSettings, options: TrackerOptions) -> GitHubTracker:
        """The adapter the Lambdas build: ``options`` and its own settings (``BOT_LOGIN``, ``ALLOWED_ASSOCIATIONS``,
        ``GITHUB_REPOSITORY_IDS``)."""
        return cls(
            options,
            bot_login=s.github_bot_login,
            allowed_associations=s.github_allowed_associations,
            repository_ids=s.github_repository_ids,
        )

    def __init__(
        self,
        options: TrackerOptions,
        *,
        bot_login: str = "",
        allowed_associations: str | Collection[str] = DEFAULT_ALLOWED_ASSOCIATIONS,
        repository_ids: str | Collection[int] = (),
    ) -> None:
        if not options.trigger_label and not options.trigger_mention:
            raise TrackerConfigError("set TRIGGER_LABEL and/or TRIGGER_MENTION; both are empty")
        super().__init__(options)
        self.bot_login = bot_login.lower()
        self.allowed_associations = parse_associations(allowed_associations)
        self.repository_ids = parse_id_allowlist(repository_ids, setting="GITHUB_REPOSITORY_IDS")

    # ---- inbound
    def parse_request(self, request: InboundRequest) -> Decision:
        verify_github_signature(
            secret=self._webhook_secret(request),
            body=request.body,
            header=request.headers.get("x-hub-signature-256"),
        )
        event = request.headers.get("x-github-event")
        delivery = request.headers.get("x-github-delivery")
        missing = [h for h, v in (("X-GitHub-Event", event), ("X-GitHub-Delivery", delivery)) if not v]
        if missing:
            raise BadRequestError(f"missing header(s): {', '.join(missing)}")
        assert event is not None and delivery is not None
        delivery = safe_delivery_id(delivery, "github", request.body)
        return dispatch_event(
            event,
            require_json(request),
            {
                "ping": _on_ping,
                "issues": lambda p: self._on_issues(IssuesEvent.model_validate(p), delivery),
                "issue_comment": lambda p: self._on_comment(IssueCommentEvent.model_validate(p), delivery),
            },
        )

    def _on_issues(self, ev: IssuesEvent, delivery: str) -> Decision:
        refused = self._unpinned(ev.repository)
        if refused:
            return refused
        self._check_fresh(ev.issue.updated_at)
        intent: Intent | None = None
        if ev.action == "labeled":
            # The label added by *this* event; labels already on the issue do not count.
            intent = self._label_intent(ev.label.name) if ev.label is not None else None
        elif ev.action == "opened":
            # Only the mention, and only when the issue was not opened with a trigger label: GitHub then
            # also sends ``labeled``, and that event is the one that triggers (one run, not two).
            opened_with_label = any(self._label_intent(x.name) for x in ev.issue.labels)
            intent = None if opened_with_label else self._markdown_intent(ev.issue.body or "")
        if intent is None:
            return Decision("ignored", reason=f"issues.{ev.action} without the trigger")
        if self._is_own(ev.sender.login, ev.sender.type):
            return Decision("ignored", reason="sent by the bot itself")
        # Labels need triage access, except the ones an issue template or form applies for its author:
        # then the author's association decides, as for a mention.
        by_author = ev.action == "opened" or ev.sender.login.lower() == ev.issue.user.login.lower()
        if by_author and not self._allowed(ev.issue.author_association):
            return self._not_allowed(ev.issue.author_association)
        return _accept(
            ev.repository,
            ev.issue,
            author=ev.sender.login,
            delivery=delivery,
            event=f"issues.{ev.action}",
            html_url=ev.issue.html_url,
            intent=intent,
        )

    def _on_comment(self, ev: IssueCommentEvent, delivery: str) -> Decision:
        refused = self._unpinned(ev.repository)
        if refused:
            return refused
        if ev.action != "created":
            return Decision("ignored", reason=f"issue_comment.{ev.action} is not handled")
        self._check_fresh(ev.comment.updated_at)
        text = ev.comment.body or ""
        if self._is_own(ev.comment.user.login, ev.comment.user.type) or is_agent_reply(text):
            return Decision("ignored", reason="comment authored by the bot itself")
        intent = self._markdown_intent(text)
        if intent is None:
            return Decision("ignored", reason="comment does not mention the agent")
        if not self._allowed(ev.comment.author_association):
            return self._not_allowed(ev.comment.author_association)
        return _accept(
            ev.repository,
            ev.issue,
            author=ev.comment.user.login,
            delivery=delivery,
            event="issue_comment.created",
            html_url=ev.comment.html_url or ev.issue.html_url,
            comment=text,
            intent=intent,
        )

    def _check_fresh(self, signed: datetime | None) -> None:
        """Refuse a delivery older than the idempotency window less the clock skew (a captured body
        replayed after its idempotency record expired would otherwise start a new paid run).

        GitHub signs no delivery timestamp, but the body's ``updated_at`` of the issue or comment is
        signed with it. Raises :class:`StaleDeliveryError`.
        """
        if signed is None:
            raise StaleDeliveryError("the payload has no updated_at to check its age against")
        stamp = signed if signed.tzinfo else signed.replace(tzinfo=UTC)
        age = self._clock() - stamp.timestamp()
        limit = self.max_age_seconds - FUTURE_SKEW_SECONDS
        if age > limit or age < -FUTURE_SKEW_SECONDS:
            raise StaleDeliveryError(f"payload updated_at is {age:.0f}s old; accepted: up to {limit}s")

    def _unpinned(self, repository: GitHubRepository) -> Decision | None:
        """Refuse a repository this deployment does not serve (by immutable id), before any cost.

        One webhook secret can sign events of many repositories (an organisation hook, a GitHub App).
        """
        if repository.id in self.repository_ids:
            return None
        return Decision(
            "ignored",
            reason=f"repository id {repository.id} is not in GITHUB_REPOSITORY_IDS"
            + ("" if self.repository_ids else " (empty: no repository is served)"),
        )

    def _allowed(self, association: str) -> bool:
        return association.upper() in self.allowed_associations

    def _not_allowed(self, association: str) -> Decision:
        return Decision(
            "ignored",
            reason=f"author association {association.upper()} may not trigger the agent"
            f" (allowed: {', '.join(sorted(self.allowed_associations))})",
        )

    def _is_own(self, login: str, account_type: str) -> bool:
        return account_type == "Bot" or (bool(self.bot_login) and login.lower() == self.bot_login)

    # ---- outbound
    def format_reply(self, text: str, *, footer: str = "") -> str:
        return format_markdown_reply(text, footer=footer, limit=MAX_COMMENT_CHARS)

    def _api_headers(self) -> dict[str, str]:
        """The REST API's headers with the token (read now). Raises :class:`TrackerConfigError` when empty."""
        token = self._read_token(if_empty="GitHub token secret is empty; put a token into it")
        return {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {token}",
            "X-GitHub-Api-Version": "2022-11-28",
        }

    def post_reply(self, task: AgentTask, text: str) -> ReplyRef:
        """``POST {api}/repos/{owner}/{repo}/issues/{n}/comments`` (retry policy: :mod:`.http`).

        Before a retry after a 5xx the issue's comments since the first attempt are listed (``GET …/comments
        ?since=``, docs.github.com/rest/issues/comments#list-issue-comments): a comment of exactly this text
        (it ends with the reply marker and its session's footer) is the one GitHub created behind the 5xx,
        and is returned instead of being posted twice."""
        url = f"{self.api_url}/repos/{task.repository}/issues/{task.issue_number}/comments"
        # Wall-clock time with five minutes' margin for skew between this Lambda's clock and GitHub's.
        since = datetime.fromtimestamp(time.time() - 300, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

        def find_posted() -> dict[str, Any] | None:
            try:
                listed = get_json_list(
                    f"{url}?since={since}&per_page=100", headers=self._api_headers(), service="GitHub"
                )
            except TrackerApiError:
                return None  # cannot tell: post again (the tracker answered 5xx, most likely nothing exists)
            mine = [c for c in listed if isinstance(c, dict) and c.get("body") == text]
            return mine[-1] if mine else None

        doc = self._post(
            url,
            {"body": text},
            headers=self._api_headers(),
            service="GitHub",
            find_posted=find_posted,
        )
        return ReplyRef(url=str(doc.get("html_url", url)), id=doc.get("id"))

    def edit_reply(self, task: AgentTask, reply_id: int | str, text: str) -> ReplyRef:
        """Replace the text of comment ``reply_id`` (from :meth:`post_reply`): ``PATCH {api}/repos/{owner}/
        {repo}/issues/comments/{id}`` with ``{"body"}`` (docs.github.com/rest/issues/comments#update-an-issue-
        comment). Used for progress: one comment, edited as the run goes. Raises :class:`TrackerApiError`."""
        url = f"{self.api_url}/repos/{task.repository}/issues/comments/{int(reply_id)}"
        doc = self._send(
            "PATCH",
            url,
            {"body": text},
            headers=self._api_headers(),
            service="GitHub",
        )
        return ReplyRef(url=str(doc.get("html_url", url)), id=doc.get("id", reply_id))


def _on_ping(payload: dict[str, object]) -> Decision:
    PingEvent.model_validate(payload)
    return Decision("ping", reason="pong")


def _accept(
    repository: GitHubRepository,
    issue: GitHubIssue,
    *,
    author: str,
    delivery: str,
    event: str,
    html_url: str,
    comment: str | None = None,
    intent: Intent = "answer",
) -> Decision:
    """Accept a turn on ``issue``: the task with the issue's fields and who triggered it.

    A comment on a pull request arrives as ``issue_comment`` too, its issue carrying ``pull_request``."""
    return Decision(
        "accepted",
        task=AgentTask(
            repository=repository.full_name,
            issue_number=issue.number,
            scope_id=str(repository.id),
            issue_id=str(issue.number),
            title=issue.title,
            body=issue.body or "",
            comment=comment,
            author=author,
            issue_author=issue.user.login,
            delivery_id=delivery,
            event=event,
            html_url=html_url,
            intent=intent,
            pull_request=issue.pull_request is not None,
        ),
    )
