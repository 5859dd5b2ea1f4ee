"""Fix jobs' settings as the worker and the reporter use them, taken from :class:`webhook.settings.WebhookSettings`
(which declares and checks the variables: ``PR_MODE``, ``JIRA_REPOSITORIES``, ``WORKSPACE_S3_URI``,
``INLINE_SNAPSHOT_MAX_BYTES``, ``PROGRESS_MIN_SECONDS``, ``JOB_LEASE_SECONDS``, ``FIX_BRANCHES``,
``PATCH_ALLOW_PROTECTED``, ``JOB_DEADLINE_SECONDS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from webhook.repo.change import BranchIn
from webhook.settings import (
    DEFAULT_INLINE_SNAPSHOT_MAX_BYTES,
    DEFAULT_JOB_DEADLINE_SECONDS,
    S3_URI,
    WebhookSettings,
)
from webhook.trackers.targets import PrMode, RepoTarget


@dataclass(frozen=True)
class FixSettings:
    pr_mode: PrMode = "draft_pr"
    jira_repositories: Mapping[str, RepoTarget] = field(default_factory=dict)
    workspace_s3_uri: str = ""
    inline_snapshot_max_bytes: int = DEFAULT_INLINE_SNAPSHOT_MAX_BYTES
    progress_min_seconds: float = 20.0
    job_lease_seconds: float = 300.0
    allow_protected: frozenset[str] = frozenset()
    #: Where the fix branch lives: ``fork`` (the bot's fork, the default) or ``same_repository`` (opt-in).
    branch_in: BranchIn = "fork"
    #: ``/agent approve|deny`` by the person who asked for the run is refused (two-person rule).
    approval_two_person: bool = True
    #: ``JOB_DEADLINE_SECONDS``: how long a job may run; the reporter holds the issue's active-fix marker of a job
    #: waiting for an approval until the request's expiry plus this (the answer's continuation may run as long).
    job_deadline_seconds: int = DEFAULT_JOB_DEADLINE_SECONDS

    @property
    def s3_location(self) -> tuple[str, str] | None:
        """``(bucket, prefix)`` of :attr:`workspace_s3_uri`, or ``None`` when not set."""
        match = S3_URI.match(self.workspace_s3_uri)
        return (match.group(1), match.group(2)) if match else None


def fix_settings(env: Mapping[str, str] | WebhookSettings) -> FixSettings:
    """The fix settings of ``env`` (or of settings already read). Raises ``TrackerConfigError`` naming the
    variable."""
    s = env if isinstance(env, WebhookSettings) else WebhookSettings.from_env(env)
    return FixSettings(
        pr_mode=s.pr_mode,
        jira_repositories=s.jira_repositories,
        workspace_s3_uri=s.workspace_s3_uri,
        inline_snapshot_max_bytes=int(s.inline_snapshot_max_bytes),
        progress_min_seconds=s.progress_min_seconds,
        job_lease_seconds=s.job_lease_seconds,
        allow_protected=s.patch_allow_protected,
        branch_in=s.fix_branches,
        approval_two_person=s.approval_two_person,
        job_deadline_seconds=s.job_deadline_seconds,
    )
