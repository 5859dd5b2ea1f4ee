"""Issue-tracker adapters behind one protocol (:class:`IssueTracker`): GitHub, GitLab, Jira Cloud.

The receiver and worker only see :mod:`.base` (task, decision, errors, prompt); each adapter verifies its
tracker's webhooks and posts replies through its REST API. See ``docs/webhook.md``.
"""

from webhook.errors import (
    BadRequestError,
    NotFoundError,
    PayloadTooLargeError,
    SignatureError,
    StaleDeliveryError,
    TrackerApiError,
    TrackerConfigError,
    UnsupportedMediaTypeError,
    WebhookError,
)

from .adapter import TrackerAdapter, TrackerOptions
from .base import (
    DEFAULT_MAX_BODY_BYTES,
    TRACKER_NAMES,
    AgentTask,
    Decision,
    InboundRequest,
    Intent,
    IssueTracker,
    ReplyRef,
    TrackerName,
)
from .github import (
    MAX_COMMENT_CHARS,
    GitHubTracker,
    parse_associations,
    verify_github_signature,
)
from .github_models import DEFAULT_ALLOWED_ASSOCIATIONS
from .gitlab import GitLabTracker, GitLabWebhookSecret, verify_gitlab_request
from .jira import JiraTracker, jira_auth_header, verify_jira_signature
from .reply_marks import AGENT_REPLY_MARKER, JIRA_REPLY_MARKER, REPLY_MARKERS

__all__ = [
    "AGENT_REPLY_MARKER",
    "DEFAULT_ALLOWED_ASSOCIATIONS",
    "DEFAULT_MAX_BODY_BYTES",
    "JIRA_REPLY_MARKER",
    "MAX_COMMENT_CHARS",
    "REPLY_MARKERS",
    "TRACKER_NAMES",
    "AgentTask",
    "BadRequestError",
    "Decision",
    "GitHubTracker",
    "GitLabTracker",
    "GitLabWebhookSecret",
    "InboundRequest",
    "Intent",
    "IssueTracker",
    "JiraTracker",
    "NotFoundError",
    "PayloadTooLargeError",
    "ReplyRef",
    "SignatureError",
    "StaleDeliveryError",
    "TrackerAdapter",
    "TrackerApiError",
    "TrackerConfigError",
    "TrackerName",
    "TrackerOptions",
    "UnsupportedMediaTypeError",
    "WebhookError",
    "jira_auth_header",
    "parse_associations",
    "verify_github_signature",
    "verify_gitlab_request",
    "verify_jira_signature",
]
