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
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from webhook.errors import (
    BadRequestError,
    PayloadTooLargeError,
    TrackerConfigError,
    UnsupportedMediaTypeError,
)

from . import json_limits
from .delivery import DELIVERY_ID_PATTERN, sqs_safe

TrackerName = Literal["github", "gitlab", "jira"]
#: What a trigger asks for: a reply on the issue, a change proposed as a pull/merge request, a stop of
#: the issue's running session, or the answer to a tool call waiting for approval (:func:`.triggers.mention_intent`,
#: the fix label).
Intent = Literal["answer", "fix", "stop", "approve", "deny"]
#: The names of :data:`TrackerName`, in order; :mod:`.registry` holds one entry for each.
TRACKER_NAMES: tuple[TrackerName, ...] = get_args(TrackerName)
DEFAULT_MAX_BODY_BYTES = 1024 * 1024


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
    Those names can change hands (a repository renamed and another created under the old name, a GitLab
    path reused, a Jira issue moved), so sessions and actors are keyed on immutable ids instead:
    ``scope_id`` is the GitHub ``repository.id``, the GitLab ``project.id`` or the Jira site's host name,
    ``issue_id`` the GitHub issue number, the GitLab ``iid`` or the Jira ``issue.id``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tracker: TrackerName = "github"
    repository: str = Field(min_length=1, max_length=512)
    issue_number: int = Field(gt=0)
    scope_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]{0,254}$")
    issue_id: str = Field(pattern=r"^[0-9]{1,20}$")
    title: str
    body: str = ""
    comment: str | None = None
    author: str  # who triggered this turn (labeler or commenter)
    #: Their immutable id where the tracker gives one (Jira ``accountId``, GitLab user id): fix allow-lists
    #: name people by it, never by a display name anyone can choose.
    author_id: str = Field(default="", max_length=128)
    issue_author: str = ""
    delivery_id: str = Field(pattern=DELIVERY_ID_PATTERN)
    event: str
    html_url: str = ""
    #: Set by the receiver: sha256 hex of the signature-verified body. The worker stores the finished
    #: reply under it, so a redelivered task re-posts that reply instead of running the turn again.
    idempotency_key: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.:-]{1,128}$")
    #: ``answer`` (the reply on the issue, as always), ``fix`` (snapshot in, patch out, a draft pull/merge
    #: request) or ``stop`` (stop the issue's running session). Tasks queued before it existed answer.
    intent: Intent = "answer"
    #: The comment was made on a pull request (GitHub) or merge request (GitLab): ``issue_number`` is its
    #: number/iid, and a fix starts from its head instead of the default branch.
    pull_request: bool = False

    @field_validator("title", "body", "comment", "author", "issue_author", "html_url", mode="before")
    @classmethod
    def _sqs_text(cls, value: object) -> object:
        return sqs_safe(value) if isinstance(value, str) else value

    @property
    def issue_ref(self) -> str:
        """How people name the issue: ``#7`` (GitHub, GitLab) or ``PROJ-7`` (Jira)."""
        return f"{self.repository}-{self.issue_number}" if self.tracker == "jira" else f"#{self.issue_number}"

    @property
    def runtime_session_id(self) -> str:
        """Deterministic AgentCore runtime session id: one continuing conversation per issue and tracker.

        ``<prefix>-`` + sha256("<scope_id>#<issue_id>") hex, prefix ``gh``, ``gitlab`` or ``jira``: 67-71
        characters (AgentCore requires 33-256). Immutable ids only, so a renamed or re-created
        repository never resumes another one's conversation; the same ids on two trackers never share
        a session (the prefix).
        """
        prefix = "gh" if self.tracker == "github" else self.tracker
        # GitLab numbers issues and merge requests separately (#3 and !3 both exist): a merge request's
        # session is keyed apart. GitHub's pull requests share the issues' numbers, so they need nothing.
        item = f"mr{self.issue_id}" if self.tracker == "gitlab" and self.pull_request else self.issue_id
        digest = hashlib.sha256(f"{self.scope_id}#{item}".encode()).hexdigest()
        return f"{prefix}-{digest}"

    @property
    def actor(self) -> str:
        """Actor signal sent to the runtime: the repository's immutable id, so every commenter shares the
        issue's session and a re-created repository of the same name is another actor."""
        return f"{self.tracker}:{self.scope_id}"


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

    def check_webhook_secret(self) -> None:
        """Read and validate the webhook secret (receiver start-up). Raises :class:`WebhookError`."""
        ...

    def format_reply(self, text: str, *, footer: str = "") -> str:
        """The comment to store and post for the agent's Markdown ``text``."""
        ...

    def post_reply(self, task: AgentTask, text: str) -> ReplyRef:
        """Post ``text`` (from :meth:`format_reply`) on the task's issue. Raises :class:`TrackerApiError`."""
        ...


def enabled_tracker(trackers: Mapping[str, IssueTracker], name: str) -> IssueTracker:
    """The adapter of tracker ``name`` among the enabled ``trackers`` (the ``TRACKERS`` setting).

    Raises :class:`TrackerConfigError` when it is not enabled here (a task or job of a tracker this function is not
    set up for: a set-up error, so the record fails and is retried after the fix)."""
    tracker = trackers.get(name)
    if tracker is None:
        raise TrackerConfigError(f"no {name!r} tracker adapter here (enabled: {sorted(trackers)})")
    return tracker


def check_secret_text(value: str, what: str) -> None:
    """Refuse a blank secret, or one with whitespace around it (a newline stored with it would make
    every signature mismatch, silently). Raises :class:`TrackerConfigError`."""
    if not value.strip():
        raise TrackerConfigError(f"{what} is blank; put a value into it")
    if value != value.strip():
        raise TrackerConfigError(
            f"{what} has leading or trailing whitespace (a newline stored with it?); store the exact value"
        )


def parse_id_allowlist(value: str | Collection[int | str], *, setting: str) -> frozenset[int]:
    """Numeric ids from a comma-separated string or a collection. Raises :class:`TrackerConfigError`."""
    items = value.split(",") if isinstance(value, str) else list(value)
    try:
        ids = frozenset(int(str(item).strip()) for item in items if str(item).strip())
    except ValueError:
        raise TrackerConfigError(f"{setting} must be a comma-separated list of numeric ids") from None
    if any(i <= 0 for i in ids):
        raise TrackerConfigError(f"{setting} holds a non-positive id")
    return ids


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
