"""The seam between a tracker's webhooks/API and the agent: errors, the task, the adapter protocol.

The receiver and worker Lambdas only talk to the :class:`IssueTracker` protocol:

* ``parse_request(request)`` verifies an inbound webhook request (signature, size, headers) and turns
  it into a :class:`Decision` — ``ping``, ``ignored`` (with a reason) or ``accepted`` with an
  :class:`AgentTask`;
* ``format_reply(text, footer=...)`` turns the agent's Markdown into the comment text to store and post
  (tracker limits, footer, loop-guard marker);
* ``post_reply(task, text)`` posts that comment back on the issue.

Adapters: :mod:`.github`, :mod:`.gitlab`, :mod:`.jira`. Errors are :class:`WebhookError` subclasses
carrying ``code`` and ``http_status``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import json_limits

TrackerName = Literal["github", "gitlab", "jira"]
TRACKER_NAMES: tuple[TrackerName, ...] = ("github", "gitlab", "jira")
DEFAULT_MAX_BODY_BYTES = 1024 * 1024


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


class StaleDeliveryError(WebhookError):
    """The signed payload is older than the replay window (a captured delivery sent again)."""

    code, http_status = "stale_delivery", 400


class SignatureError(WebhookError):
    code, http_status = "invalid_signature", 401


class NotFoundError(WebhookError):
    code, http_status = "not_found", 404


class PayloadTooLargeError(WebhookError):
    code, http_status = "payload_too_large", 413


class UnsupportedMediaTypeError(WebhookError):
    code, http_status = "unsupported_media_type", 415


class TrackerConfigError(WebhookError):
    code, http_status = "misconfigured", 500


class TrackerApiError(WebhookError):
    """A call to the tracker's API failed (``retryable`` tells the worker to let SQS retry)."""

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

    def content_type(self) -> str:
        return self.headers.get("content-type", "application/json").split(";")[0].strip().lower()


class AgentTask(BaseModel):
    """One unit of agent work, the SQS message body (JSON).

    ``repository`` is the GitHub ``owner/repo``, the GitLab project path (``group/sub/project``) or the
    Jira project key; ``issue_number`` the issue number, GitLab ``iid`` or the number in the Jira key.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tracker: TrackerName = "github"
    repository: str = Field(min_length=1, max_length=512)
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
    def issue_ref(self) -> str:
        """How people name the issue: ``#7`` (GitHub, GitLab) or ``PROJ-7`` (Jira)."""
        return f"{self.repository}-{self.issue_number}" if self.tracker == "jira" else f"#{self.issue_number}"

    @property
    def runtime_session_id(self) -> str:
        """Deterministic AgentCore runtime session id: one continuing conversation per issue and tracker.

        ``<prefix>-`` + sha256("<repository>#<number>") hex, prefix ``gh`` (GitHub, kept from the first
        release so existing conversations continue), ``gitlab`` or ``jira``: 67-71 characters
        (AgentCore requires 33-256). The same path on two trackers never shares a session.
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

    @property
    def name(self) -> TrackerName: ...

    def parse_request(self, request: InboundRequest) -> Decision:
        """Verify and parse a webhook request. Raises :class:`WebhookError` subclasses."""
        ...

    def format_reply(self, text: str, *, footer: str = "") -> str:
        """The comment to store and post for the agent's Markdown ``text``."""
        ...

    def post_reply(self, task: AgentTask, text: str) -> ReplyRef:
        """Post ``text`` (from :meth:`format_reply`) on the task's issue. Raises :class:`TrackerApiError`."""
        ...


def check_size(request: InboundRequest, limit: int) -> None:
    """Raises :class:`PayloadTooLargeError` when the body is over ``limit`` bytes (checked first of all)."""
    if len(request.body) > limit:
        raise PayloadTooLargeError(f"body is {len(request.body)} bytes; the limit is {limit}")


def require_json(request: InboundRequest) -> dict[str, object]:
    """The body as a JSON object. Raises 415 for another content type, 400 for bad JSON."""
    content_type = request.content_type()
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
    return payload


def shape_error(event: str, exc: Exception) -> BadRequestError:
    """A 400 naming up to five fields of a pydantic ``ValidationError``."""
    errors: list[dict[str, Any]] = getattr(exc, "errors", list)()
    fields = ", ".join(".".join(str(p) for p in e["loc"]) for e in errors[:5])
    return BadRequestError(f"{event} payload does not match the expected shape ({fields})")


def dispatch_event(
    event: str, payload: dict[str, object], handlers: Mapping[str, Callable[[dict[str, object]], Decision]]
) -> Decision:
    """Run the handler for ``event`` (it validates ``payload`` into its model); ignore other events.

    A pydantic ``ValidationError`` raised by the handler becomes a 400 (:func:`shape_error`).
    """
    handler = handlers.get(event)
    if handler is None:
        return Decision("ignored", reason=f"event {event!r} is not handled")
    try:
        return handler(payload)
    except ValidationError as exc:
        raise shape_error(event, exc) from None


def body_delivery_id(prefix: str, body: bytes) -> str:
    """A delivery id derived from the body, for deliveries that carry no id header: ``<prefix>-<32 hex>``."""
    return f"{prefix}-" + hashlib.sha256(body).hexdigest()[:32]


# --------------------------------------------------------------------------- prompt
_FLAVOUR = {
    "github": ("repository", "GitHub-flavoured Markdown", "a comment"),
    "gitlab": ("project", "GitLab-flavoured Markdown", "a note"),
    "jira": (
        "project",
        "Markdown (headings, lists, code blocks, links, bold and italics; it is converted to Jira's format)",
        "a comment",
    ),
}


def render_prompt(task: AgentTask, *, max_chars: int = 20_000) -> str:
    """The prompt the agent receives for one issue turn (documented in docs/webhook.md)."""

    def clip(text: str) -> str:
        return text if len(text) <= max_chars else text[:max_chars] + "\n[... truncated ...]"

    noun, markup, post = _FLAVOUR[task.tracker]
    lines = [
        f"You are answering issue {task.issue_ref} in the {task.tracker} {noun} {task.repository}.",
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
        f"Reply in {markup}. Your reply is posted verbatim as {post} on the issue;"
        " keep it focused and say so when you are unsure.",
    ]
    return "\n".join(lines)


def clip_reply(text: str, limit: int) -> str:
    """The agent's text, stripped, never empty, clipped to ``limit`` characters with a note."""
    body = text.strip() or "_(the agent returned an empty answer)_"
    if len(body) > limit:
        body = body[:limit] + "\n\n_[reply truncated]_"
    return body
