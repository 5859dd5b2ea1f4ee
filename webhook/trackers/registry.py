"""The trackers the webhook serves, one entry each: every other list of trackers derives from this one.

An entry names the adapter class (built by the Lambdas from :class:`webhook.settings.WebhookSettings`: the shared
:class:`~.adapter.TrackerOptions`, read per tracker from the fields ``<name>_…``, and the adapter's ``from_settings``
for its own), how its Lambdas read its two secrets, and the CDK parts the construct makes for it (the construct
ids of its secrets, its stack outputs). The settings' ``TRACKERS`` check, the receiver's routes, the worker's and the
reporter's adapters, the construct's secrets, outputs and environment, and the conformance suite
(``tests/unit/webhook/test_tracker_conformance.py``) all read it. Adding a tracker: ``docs/webhook/adding-a-tracker.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from .adapter import TrackerAdapter, tracker_setting
from .base import TRACKER_NAMES, TrackerName
from .github import GitHubTracker
from .gitlab import GitLabTracker
from .jira import JiraTracker


@dataclass(frozen=True)
class TrackerEntry:
    """One tracker: its name (the URL path ``/<name>``, the ``TRACKERS`` value, the ``Tracker`` metric
    dimension), title, adapter, how its token secret is read and its CDK parts."""

    name: TrackerName
    title: str
    adapter: type[TrackerAdapter]
    #: How the prompt names where the issue lives, the markup the reply is written in, and what it is posted as.
    noun: str = "project"
    markup: str = "Markdown"
    posted_as: str = "a comment"
    #: The receiver reads the token too (GitLab: a webhook carries no role, only the members API says whether the
    #: author may trigger). With a read token it reads that one, never the token that pushes code.
    receiver_reads_token: bool = False
    #: The token secret is handed over as stored (Jira: JSON with an e-mail and an API token) instead of as
    #: one token (a plain string or ``{"token": …}``).
    raw_token: bool = False
    #: Construct ids of its secrets. They are part of the secrets' logical ids, so they stay as first deployed (a
    #: new id would make CloudFormation replace the secret and lose its value); GitHub's carry no prefix from the
    #: GitHub-only release.
    webhook_secret_id: str = ""
    token_secret_id: str = ""
    #: Trackers whose token pushes fix branches and opens pull/merge requests may get a second, lesser token:
    #: the read token (reads code, posts and edits the bot's comments, pushes nothing). With it the receiver and
    #: the worker read only that one and the reporter the token for the push. Its construct id; "" (Jira, which
    #: pushes no code): no read token.
    read_token_secret_id: str = ""
    #: The stack output naming the read token secret (stack scope, no hash suffix).
    read_token_output: str = ""
    #: With read tokens, a receiver that reads a token (``receiver_reads_token``) gets its own read-only one, the
    #: members token (GitLab: ``read_api``, enough for the members API, can change nothing): its construct id and
    #: stack output.
    members_token_secret_id: str = ""
    members_token_output: str = ""
    #: Stack outputs (URL, webhook secret name, token secret name; stack scope, no hash suffix). GitHub's are the
    #: stack's own ``WebhookUrl`` / ``WebhookSecretName`` / ``GitHubTokenSecretName``, made by the construct.
    outputs: tuple[str, str, str] | None = None

    @property
    def webhook_secret_setting(self) -> str:
        """The :class:`~webhook.settings.WebhookSettings` field naming its webhook secret."""
        return tracker_setting(self.name, "webhook_secret_name")

    @property
    def token_secret_setting(self) -> str:
        """The :class:`~webhook.settings.WebhookSettings` field naming its token secret."""
        return tracker_setting(self.name, "token_secret_name")

    @property
    def read_token_secret_setting(self) -> str | None:
        """The :class:`~webhook.settings.WebhookSettings` field naming its read token secret (``None``: it has
        none)."""
        return tracker_setting(self.name, "read_token_secret_name") if self.read_token_secret_id else None

    @property
    def members_token_secret_setting(self) -> str | None:
        """The :class:`~webhook.settings.WebhookSettings` field naming its members token secret (``None``: none)."""
        return (
            tracker_setting(self.name, "members_token_secret_name") if self.members_token_secret_id else None
        )


REGISTRY: dict[str, TrackerEntry] = {
    entry.name: entry
    for entry in (
        TrackerEntry(
            "github",
            "GitHub",
            GitHubTracker,
            webhook_secret_id="WebhookSecret",
            token_secret_id="GitHubToken",
            read_token_secret_id="GitHubReadToken",
            read_token_output="GitHubReadTokenSecretName",
        ),
        TrackerEntry(
            "gitlab",
            "GitLab",
            GitLabTracker,
            markup="GitLab-flavoured Markdown",
            posted_as="a note",
            receiver_reads_token=True,
            webhook_secret_id="GitLabWebhookSecret",
            token_secret_id="GitLabToken",
            read_token_secret_id="GitLabReadToken",
            read_token_output="GitLabReadTokenSecretName",
            members_token_secret_id="GitLabMembersToken",
            members_token_output="GitLabMembersTokenSecretName",
            outputs=("GitLabWebhookUrl", "GitLabWebhookSecretName", "GitLabTokenSecretName"),
        ),
        TrackerEntry(
            "jira",
            "Jira",
            JiraTracker,
            markup="Markdown (headings, lists, code blocks, links, bold and italics; it is converted to Jira's format)",
            raw_token=True,
            webhook_secret_id="JiraWebhookSecret",
            token_secret_id="JiraToken",
            outputs=("JiraWebhookUrl", "JiraWebhookSecretName", "JiraTokenSecretName"),
        ),
    )
}

# The tracker type (``TrackerName``, a Literal the models validate with) must name exactly the registered ones.
assert tuple(REGISTRY) == TRACKER_NAMES == get_args(TrackerName), "TrackerName and REGISTRY differ"
# An adapter names itself (its ``name`` is the task's ``tracker``) as its entry does.
assert all(entry.adapter.name == name for name, entry in REGISTRY.items()), (
    "an adapter's name is not its entry's"
)
