"""Issue-tracker adapters: the seam between a tracker's webhooks/API and the agent.

The receiver and worker Lambdas only talk to the :class:`IssueTracker` protocol:

* ``parse_request(request)`` verifies an inbound webhook request (signature, size, headers) and
  turns it into a :class:`Decision` — ``ping``, ``ignored`` (with a reason) or ``accepted`` with an
  :class:`AgentTask` (repository, issue number, title, body/comment, author, delivery id);
* ``post_reply(task, text)`` posts the agent's answer back on the issue.

:class:`GitHubTracker` is the only adapter shipped. **Adding Jira or GitLab** means writing one
more class here (or in a sibling module) with the same two methods — e.g. a ``GitLabTracker``
that checks ``X-Gitlab-Token`` with ``hmac.compare_digest``, reads ``X-Gitlab-Event: Note Hook``
/ ``Issue Hook`` and posts to ``POST /projects/:id/issues/:iid/notes``; or a ``JiraTracker`` that
verifies the ``X-Hub-Signature`` of a Jira Cloud webhook and posts to
``POST /rest/api/3/issue/{key}/comment`` — then selecting it in ``receiver.build_tracker`` /
``worker.build_tracker`` (env ``TRACKER``). Queue, idempotency, session ids, prompt and
runtime invocation stay as they are. See ``docs/webhook.md``.

Errors are :class:`WebhookError` subclasses carrying ``code`` and ``http_status``.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

import json_limits
from github_models import AUTHOR_ASSOCIATIONS, IssueCommentEvent, IssuesEvent, PingEvent
from pydantic import BaseModel, ConfigDict, Field, ValidationError

#: Hidden marker appended to every reply; comments carrying it are never treated as triggers.
AGENT_REPLY_MARKER = "<!-- agentkit:reply -->"
#: GitHub rejects comment bodies above 65,536 characters.
MAX_COMMENT_CHARS = 65_000
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
#: Who may trigger a (paid) agent turn by default: people with a role in the repository or its organization.
DEFAULT_ALLOWED_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


# --------------------------------------------------------------------------- errors
class WebhookError(Exception):
    """Base error: ``code`` (machine-readable), ``http_status`` and a human message."""

    code = "webhook_error"
    http_status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequestError(WebhookError):
    code, http_status = "bad_request", 400


class SignatureError(WebhookError):
    code, http_status = "invalid_signature", 401


class PayloadTooLargeError(WebhookError):
    code, http_status = "payload_too_large", 413


class UnsupportedMediaTypeError(WebhookError):
    code, http_status = "unsupported_media_type", 415


class TrackerConfigError(WebhookError):
    code, http_status = "misconfigured", 500


class TrackerApiError(WebhookError):
    """Posting to the tracker's API failed (``retryable`` tells the worker to let SQS retry)."""

    code, http_status = "tracker_api_error", 502

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


# --------------------------------------------------------------------------- data
@dataclass(frozen=True)
class InboundRequest:
    """A raw webhook request: header names lower-cased, body exactly as received (bytes)."""

    headers: Mapping[str, str]
    body: bytes

    @classmethod
    def create(cls, headers: Mapping[str, str] | None, body: bytes) -> InboundRequest:
        return cls(headers={k.lower(): v for k, v in (headers or {}).items()}, body=body)


class AgentTask(BaseModel):
    """One unit of agent work, the SQS message body (JSON)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tracker: str = "github"
    repository: str = Field(min_length=1)
    issue_number: int = Field(gt=0)
    title: str
    body: str = ""
    comment: str | None = None
    author: str  # who triggered this turn (labeler or commenter)
    issue_author: str = ""
    delivery_id: str = Field(min_length=1)
    event: str
    html_url: str = ""
    #: Set by the receiver: sha256 hex of the signature-verified body. The worker stores the finished
    #: reply under it, so a redelivered task re-posts that reply instead of running the turn again.
    idempotency_key: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.:-]{1,128}$")

    @property
    def runtime_session_id(self) -> str:
        """Deterministic AgentCore runtime session id: one continuing conversation per issue.

        ``gh-`` + sha256("owner/repo#number") hex = 67 chars (AgentCore requires 33-256).
        """
        prefix = "gh" if self.tracker == "github" else self.tracker
        digest = hashlib.sha256(f"{self.repository}#{self.issue_number}".encode()).hexdigest()
        return f"{prefix}-{digest}"

    @property
    def actor(self) -> str:
        """Actor signal sent to the runtime: the repository, so every commenter shares the issue's session."""
        return f"{self.tracker}:{self.repository}"


@dataclass(frozen=True)
class Decision:
    kind: Literal["accepted", "ignored", "ping"]
    reason: str = ""
    task: AgentTask | None = None


@dataclass(frozen=True)
class ReplyRef:
    url: str
    id: int | str | None = None


class IssueTracker(Protocol):
    """What the receiver and worker need from a tracker adapter."""

    name: str

    def parse_request(self, request: InboundRequest) -> Decision:
        """Verify and parse a webhook request. Raises :class:`WebhookError` subclasses."""
        ...

    def post_reply(self, task: AgentTask, text: str) -> ReplyRef:
        """Post ``text`` on the task's issue. Raises :class:`TrackerApiError`."""
        ...


# --------------------------------------------------------------------------- prompt
def render_prompt(task: AgentTask, *, max_chars: int = 20_000) -> str:
    """The prompt the agent receives for one issue turn (documented in docs/webhook.md)."""

    def clip(text: str) -> str:
        return text if len(text) <= max_chars else text[:max_chars] + "\n[... truncated ...]"

    lines = [
        f"You are answering issue #{task.issue_number} in the {task.tracker} repository {task.repository}.",
        f"Title: {task.title}",
    ]
    if task.html_url:
        lines.append(f"URL: {task.html_url}")
    if task.comment is None:
        lines += [f"Opened by @{task.issue_author or task.author}. Issue description:", "", clip(task.body)]
    else:
        lines += [f"New comment from @{task.author}:", "", clip(task.comment)]
    lines += [
        "",
        "Reply in GitHub-flavoured Markdown. Your reply is posted verbatim as a comment on the issue;"
        " keep it focused and say so when you are unsure.",
    ]
    return "\n".join(lines)


def format_reply(text: str, *, footer: str = "") -> str:
    """Clip to GitHub's limit and append the footer and the loop-guard marker."""
    body = text.strip() or "_(the agent returned an empty answer)_"
    if len(body) > MAX_COMMENT_CHARS:
        body = body[:MAX_COMMENT_CHARS] + "\n\n_[reply truncated]_"
    parts = [body]
    if footer:
        parts.append(f"<sub>{footer}</sub>")
    parts.append(AGENT_REPLY_MARKER)
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- GitHub
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


def _mention_pattern(mention: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w/@])" + re.escape(mention) + r"(?![\w-])", re.IGNORECASE)


class GitHubTracker:
    """GitHub adapter: verifies ``X-Hub-Signature-256`` and posts replies through the REST API.

    Triggers: ``issues.labeled`` with ``trigger_label`` as the added label, ``issues.opened`` with
    ``trigger_mention`` in the body, and ``issue_comment.created`` with ``trigger_mention`` in the
    comment. An issue opened *with* the label triggers once, through the ``labeled`` event GitHub sends
    after ``opened``. An empty label or mention disables that trigger. Comments by ``bot_login``, by
    accounts of type ``Bot``, or carrying :data:`AGENT_REPLY_MARKER` are ignored (no reply loops).

    Mention triggers (issue body, comment) are accepted only from authors whose ``author_association``
    is in ``allowed_associations`` (default OWNER, MEMBER, COLLABORATOR), so strangers on a public
    repository cannot start paid runs. The label trigger needs no check: only accounts with triage
    access or more can label an issue.
    """

    name = "github"

    def __init__(
        self,
        *,
        webhook_secret: Callable[[], str] | None = None,
        token: Callable[[], str] | None = None,
        trigger_label: str = "agent",
        trigger_mention: str = "/agent",
        bot_login: str = "",
        allowed_associations: str | Collection[str] = DEFAULT_ALLOWED_ASSOCIATIONS,
        api_url: str = "https://api.github.com",
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        http_timeout: float = 15.0,
        post_attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not trigger_label and not trigger_mention:
            raise TrackerConfigError("set TRIGGER_LABEL and/or TRIGGER_MENTION; both are empty")
        self._secret = webhook_secret
        self._token = token
        self.trigger_label = trigger_label
        self.trigger_mention = trigger_mention
        self._mention = _mention_pattern(trigger_mention) if trigger_mention else None
        self.bot_login = bot_login.lower()
        self.allowed_associations = parse_associations(allowed_associations)
        self.api_url = api_url.rstrip("/")
        self.max_body_bytes = max_body_bytes
        self.http_timeout = http_timeout
        self.post_attempts = max(1, post_attempts)
        self._sleep = sleep

    # ---- inbound
    def parse_request(self, request: InboundRequest) -> Decision:
        if len(request.body) > self.max_body_bytes:
            raise PayloadTooLargeError(
                f"body is {len(request.body)} bytes; the limit is {self.max_body_bytes}"
            )
        if self._secret is None:
            raise TrackerConfigError("GitHubTracker was built without a webhook secret provider")
        verify_github_signature(
            secret=self._secret(), body=request.body, header=request.headers.get("x-hub-signature-256")
        )
        event = request.headers.get("x-github-event")
        delivery = request.headers.get("x-github-delivery")
        missing = [h for h, v in (("X-GitHub-Event", event), ("X-GitHub-Delivery", delivery)) if not v]
        if missing:
            raise BadRequestError(f"missing header(s): {', '.join(missing)}")
        assert event is not None and delivery is not None
        content_type = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise UnsupportedMediaTypeError(
                f"content type {content_type!r}; set the webhook's content type to application/json"
            )
        try:
            payload = json_limits.loads(request.body)
        except ValueError as exc:  # not UTF-8, not JSON, or nested too deep (json_limits.JsonTooDeep)
            raise BadRequestError(f"body is not valid JSON: {exc}") from None
        if not isinstance(payload, dict):
            raise BadRequestError("body must be a JSON object")
        try:
            if event == "ping":
                PingEvent.model_validate(payload)
                return Decision("ping", reason="pong")
            if event == "issues":
                return self._on_issues(IssuesEvent.model_validate(payload), delivery)
            if event == "issue_comment":
                return self._on_comment(IssueCommentEvent.model_validate(payload), delivery)
        except ValidationError as exc:
            fields = ", ".join(".".join(str(p) for p in e["loc"]) for e in exc.errors()[:5])
            raise BadRequestError(f"{event} payload does not match the expected shape ({fields})") from None
        return Decision("ignored", reason=f"event {event!r} is not handled")

    def _on_issues(self, ev: IssuesEvent, delivery: str) -> Decision:
        label = self.trigger_label.lower()
        if ev.action == "labeled":
            # The label added by *this* event; labels already on the issue do not count.
            triggered = bool(label) and ev.label is not None and ev.label.name.lower() == label
        elif ev.action == "opened":
            # Only the mention: an issue opened with the label also gets a ``labeled`` event, which triggers.
            triggered = self._mention is not None and bool(self._mention.search(ev.issue.body or ""))
        else:
            triggered = False
        if not triggered:
            return Decision("ignored", reason=f"issues.{ev.action} without the trigger")
        if self._is_own(ev.sender.login, ev.sender.type):
            return Decision("ignored", reason="sent by the bot itself")
        if ev.action == "opened" and not self._allowed(ev.issue.author_association):
            return self._not_allowed(ev.issue.author_association)
        return Decision(
            "accepted",
            task=AgentTask(
                repository=ev.repository.full_name,
                issue_number=ev.issue.number,
                title=ev.issue.title,
                body=ev.issue.body or "",
                author=ev.sender.login,
                issue_author=ev.issue.user.login,
                delivery_id=delivery,
                event=f"issues.{ev.action}",
                html_url=ev.issue.html_url,
            ),
        )

    def _on_comment(self, ev: IssueCommentEvent, delivery: str) -> Decision:
        if ev.action != "created":
            return Decision("ignored", reason=f"issue_comment.{ev.action} is not handled")
        text = ev.comment.body or ""
        if self._is_own(ev.comment.user.login, ev.comment.user.type) or AGENT_REPLY_MARKER in text:
            return Decision("ignored", reason="comment authored by the bot itself")
        if self._mention is None or not self._mention.search(text):
            return Decision("ignored", reason="comment does not mention the agent")
        if not self._allowed(ev.comment.author_association):
            return self._not_allowed(ev.comment.author_association)
        return Decision(
            "accepted",
            task=AgentTask(
                repository=ev.repository.full_name,
                issue_number=ev.issue.number,
                title=ev.issue.title,
                body=ev.issue.body or "",
                comment=text,
                author=ev.comment.user.login,
                issue_author=ev.issue.user.login,
                delivery_id=delivery,
                event="issue_comment.created",
                html_url=ev.comment.html_url or ev.issue.html_url,
            ),
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
    def post_reply(self, task: AgentTask, text: str) -> ReplyRef:
        """``POST {api}/repos/{owner}/{repo}/issues/{n}/comments``.

        Retried (up to ``post_attempts``) only when GitHub cannot have created the comment: a 429/5xx
        answer, or a failure while connecting/sending (``URLError``). A failure *after* the request was
        sent — read timeout, reset, no status line — is not retried, since GitHub may have posted the
        comment already; it raises a non-retryable :class:`TrackerApiError` with ``status=None``.
        """
        if self._token is None:
            raise TrackerConfigError("GitHubTracker was built without a token provider")
        token = self._token()
        if not token:
            raise TrackerConfigError("GitHub token secret is empty; put a token into it")
        url = f"{self.api_url}/repos/{task.repository}/issues/{task.issue_number}/comments"
        data = json.dumps({"body": text}).encode()
        headers = {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "User-Agent": "agentcore-claude-kit-webhook",
            "X-GitHub-Api-Version": "2022-11-28",
        }
        last: TrackerApiError | None = None
        for attempt in range(self.post_attempts):
            if attempt:
                self._sleep(min(8.0, 0.5 * 2**attempt))
            req = urllib.request.Request(url, data=data, headers=headers, method="POST")  # noqa: S310
            try:
                with urllib.request.urlopen(req, timeout=self.http_timeout) as resp:  # noqa: S310
                    doc = json.loads(resp.read() or b"{}")
                    return ReplyRef(url=str(doc.get("html_url", url)), id=doc.get("id"))
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:300].decode(errors="replace")
                retryable = exc.code == 429 or exc.code >= 500
                last = TrackerApiError(
                    f"GitHub answered {exc.code} on {url}: {detail}", status=exc.code, retryable=retryable
                )
                if not retryable:
                    raise last from None
            except urllib.error.URLError as exc:  # connect / send failed: nothing was posted
                last = TrackerApiError(f"GitHub API unreachable at {url}: {exc.reason}")
            except (TimeoutError, OSError, http.client.HTTPException) as exc:
                raise TrackerApiError(
                    f"no answer from GitHub after sending the comment to {url} ({type(exc).__name__}: {exc});"
                    " not retried because the comment may have been posted",
                    retryable=False,
                ) from None
        assert last is not None
        raise last
